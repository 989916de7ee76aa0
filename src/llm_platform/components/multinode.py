"""Multi-node replicas: what a stack with a model larger than one node adds (nothing otherwise).

- `EfaNetwork` (AWS): the EFA security group, which EFA requires to allow all traffic to and from itself (EC2
  User Guide, "Get started with EFA": a security group whose inbound and outbound rules allow all traffic from
  and to the group itself), put on the EC2NodeClasses of EFA pools; and one cluster placement group per EFA pool
  that does not launch into Capacity Blocks (plan.nodes.placement_group).
- `MultiNodeControllers` (Kubernetes): the LeaderWorkerSet controller and the EFA device plugin, each from its
  record's pinned chart (facts/addons.py), or the caller's version.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from llm_platform.components import child_options, typed_options
from llm_platform.components.kubernetes import apply_manifest
from llm_platform.components.specs import multinode as spec
from llm_platform.components.specs.common import namespace_manifest
from llm_platform.config.schema import GpuNodePool
from llm_platform.facts.addons import EFA_DEVICE_PLUGIN, LWS, version_of
from llm_platform.plan.naming import check_prefix
from llm_platform.plan.nodes import placement_group


@dataclass(frozen=True, kw_only=True)
class EfaNetworkArgs:
    cluster_name: str
    vpc_id: pulumi.Input[str]
    pools: Sequence[GpuNodePool]
    """The EFA pools (plan.nodes.efa_pool)."""
    tags: dict[str, str] = field(default_factory=dict)
    prefix: str = ""
    """A team's on a shared cluster (the same as its GpuNodePools'): the placement groups are
    `<cluster>-<prefix>-<pool>`. Default: none, `<cluster>-<pool>`."""


class EfaNetwork(pulumi.ComponentResource):
    security_group_id: pulumi.Output[str]
    placement_groups: list[aws.ec2.PlacementGroup]

    def __init__(self, name: str, args: EfaNetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(
            "llm-platform:index:EfaNetwork",
            name,
            None,
            typed_options(opts, "llm-platform:network:EfaNetwork"),
        )
        child = child_options(self, opts)
        sg = aws.ec2.SecurityGroup(
            f"{name}-efa",
            vpc_id=args.vpc_id,
            description="EFA between the GPU nodes of multi-node replicas: all traffic to and from itself",
            tags={**args.tags, "Name": f"{name}-efa"},
            opts=child,
        )
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-efa-ingress-self",
            security_group_id=sg.id,
            referenced_security_group_id=sg.id,
            ip_protocol="-1",
            description="EFA: all traffic from the group itself",
            opts=child,
        )
        aws.vpc.SecurityGroupEgressRule(
            f"{name}-efa-egress-self",
            security_group_id=sg.id,
            referenced_security_group_id=sg.id,
            ip_protocol="-1",
            description="EFA: all traffic to the group itself",
            opts=child,
        )
        self.security_group_id = sg.id
        self.placement_groups = []
        for pool in args.pools:
            group = placement_group(pool, args.cluster_name, check_prefix(args.prefix))
            if group is None:
                continue
            self.placement_groups.append(
                aws.ec2.PlacementGroup(
                    f"{name}-{pool.name}-pg",
                    name=group,
                    strategy="cluster",
                    tags={**args.tags, "llm-platform/gpu-pool": pool.name},
                    opts=child,
                )
            )
        self.register_outputs({"securityGroupId": sg.id})


class MultiNodeControllers(pulumi.ComponentResource):
    lws: k8s.helm.v3.Release
    efa_device_plugin: k8s.helm.v3.Release

    def __init__(
        self,
        name: str,
        opts: pulumi.ResourceOptions | None = None,
        *,
        versions: Mapping[str, str] | None = None,
    ) -> None:
        """`versions`: chart versions by add-on name (`llm_platform.facts.addons`) in place of the pinned ones
        (`LlmPlatform` passes its `addon_versions`)."""
        super().__init__(
            "llm-platform:index:MultiNodeControllers",
            name,
            None,
            typed_options(opts, "llm-platform:multinode:MultiNodeControllers"),
        )
        # the controller's pods satisfy `restricted` (chart: runAsNonRoot, no privilege escalation, drop ALL)
        namespace = apply_manifest(
            f"{name}-lws-ns", namespace_manifest(spec.LWS_NAMESPACE, "baseline"), child_options(self, opts)
        )
        self.lws = k8s.helm.v3.Release(
            f"{name}-lws",
            name="lws",
            chart=LWS.chart.chart,
            version=version_of(LWS, LWS.chart, versions),
            namespace=spec.LWS_NAMESPACE,
            values=spec.lws_values(),
            opts=child_options(self, opts, namespace),
        )
        self.efa_device_plugin = k8s.helm.v3.Release(
            f"{name}-efa",
            name="aws-efa-k8s-device-plugin",
            chart="aws-efa-k8s-device-plugin",
            version=version_of(EFA_DEVICE_PLUGIN, EFA_DEVICE_PLUGIN.chart, versions),
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=EFA_DEVICE_PLUGIN.chart.repo),
            namespace=spec.EFA_NAMESPACE,
            values=spec.efa_plugin_values(),
            # a DaemonSet on GPU nodes, which exist only once a model scales up: don't block `pulumi up` on it
            skip_await=True,
            opts=child_options(self, opts),
        )
        self.register_outputs({"lws": self.lws.name, "efaDevicePlugin": self.efa_device_plugin.name})
