"""Load balancing: the AWS Load Balancer Controller, which turns the gateway's Service into an NLB."""

from collections.abc import Mapping
from functools import partial
from typing import NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from llm_platform.components import child_options, typed_options
from llm_platform.components.identity import account_policy, service_account_identity
from llm_platform.components.specs import load_balancer as spec
from llm_platform.facts.addons import AWS_LOAD_BALANCER_CONTROLLER, version_of
from llm_platform.plan.naming import KUBE_SYSTEM_NAMESPACE


class LoadBalancerControllerArgs(TypedDict):
    """The AWS Load Balancer Controller of an EKS cluster (it makes the gateway's NLB)."""

    cluster_name: str
    region: str
    vpc_id: pulumi.Input[str]
    """The cluster's VPC, where the controller puts load balancers."""
    tags: NotRequired[dict[str, str]]
    """Tags of this component's own AWS resources, beyond the AWS provider's default_tags (the stack's tags)."""


class LoadBalancerController(pulumi.ComponentResource):
    """The controller's least-privilege role (EKS Pod Identity) and its Helm release in `kube-system`.

    Prerequisites: the EKS Pod Identity agent, subnets tagged for load balancer discovery.
    Its pods run on the add-on nodes (a cluster prerequisite): nodes labelled `llm-platform/node-role: addons` and
    tainted `llm-platform/addons: true` (NoSchedule), which LlmPlatform's AddonNodePool makes; on a cluster you
    run, label and taint a node group so."""

    release: k8s.helm.v3.Release

    def __init__(
        self,
        name: str,
        args: LoadBalancerControllerArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        versions: Mapping[str, str] | None = None,
    ) -> None:
        """`versions`: chart versions by add-on name (`llm_platform.facts.addons`) in place of the pinned ones
        (`LlmPlatform` passes its `addon_versions`)."""
        super().__init__(
            "llm-platform:index:LoadBalancerController",
            name,
            None,
            typed_options(opts, "llm-platform:gateway:LoadBalancerController"),
        )
        child = child_options(self, opts)
        policy = account_policy(self, partial(spec.controller_policy, region=args["region"]))
        association = service_account_identity(
            name,
            cluster_name=args["cluster_name"],
            namespace=KUBE_SYSTEM_NAMESPACE,
            service_account=spec.SERVICE_ACCOUNT,
            description=f"AWS Load Balancer Controller of {args['cluster_name']} (Pod Identity)",
            policy=policy,
            tags=args.get("tags", {}),
            opts=child,
        )
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name="aws-load-balancer-controller",
            chart="aws-load-balancer-controller",
            version=version_of(AWS_LOAD_BALANCER_CONTROLLER, AWS_LOAD_BALANCER_CONTROLLER.chart, versions),
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=AWS_LOAD_BALANCER_CONTROLLER.chart.repo),
            namespace=KUBE_SYSTEM_NAMESPACE,
            values=pulumi.Output.from_input(args["vpc_id"]).apply(
                lambda vpc: spec.helm_values(
                    cluster_name=args["cluster_name"], region=args["region"], vpc_id=vpc
                )
            ),
            opts=child_options(self, opts, association),
        )
        self.register_outputs({"release": self.release.name})
