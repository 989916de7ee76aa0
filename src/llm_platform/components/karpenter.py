"""Karpenter: the controller's identity, interruption handling and Helm release, the add-on NodePool, then the
GPU NodePools."""

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import NotRequired, TypedDict

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from llm_platform.components import child_options, typed_options
from llm_platform.components.identity import account_policy, node_role, service_account_identity
from llm_platform.components.kubernetes import apply_manifest
from llm_platform.components.specs import addon_nodes
from llm_platform.components.specs import karpenter as spec
from llm_platform.components.specs.common import namespace_manifest
from llm_platform.config import names
from llm_platform.config.loader import parse_block
from llm_platform.config.schema import AmiVersions, GpuNodePool
from llm_platform.config.stack_args import AmiVersionsSettings, GpuNodePoolSettings
from llm_platform.facts.addons import KARPENTER, version_of
from llm_platform.plan import Plan
from llm_platform.plan.naming import KARPENTER_NAMESPACE, check_prefix
from llm_platform.plan.nodes import AddonPoolPlan, efa_pool, pool_node_class_name, uses_reservations
from llm_platform.plan.stack import node_class_plans


class KarpenterArgs(TypedDict):
    """Karpenter on an EKS cluster: the cluster, its region, and the GPU pools it will launch nodes for."""

    cluster_name: str
    region: str
    gpu_node_pools: NotRequired[list[GpuNodePoolSettings]]
    """The stack file's `gpuNodePools`: their capacity reservations shape the controller's IAM, events and
    feature gates."""
    tags: NotRequired[dict[str, str]]
    """Tags of this component's own AWS resources, beyond the AWS provider's default_tags (the stack's tags)."""
    node_repair: NotRequired[bool]
    """Karpenter's NodeRepair feature gate: failed GPU nodes are replaced (default on)."""


class Karpenter(pulumi.ComponentResource):
    """Controller IAM (Pod Identity), node IAM with an EC2_LINUX access entry, an encrypted interruption
    queue fed by EventBridge, the CRD chart, and the controller chart on the system nodes.

    Installed once per cluster. Prerequisites: the EKS Pod Identity agent, the cluster's access entries
    (authentication mode API or API_AND_CONFIG_MAP), and the system nodes the controller runs on (never on
    nodes it launches itself): nodes labelled `llm-platform/node-role: system` and tainted `CriticalAddonsOnly`,
    EksCluster's system node group; on a cluster you run, label and taint a node group so."""

    node_role_name: pulumi.Output[str]
    node_role_arn: pulumi.Output[str]
    queue_name: pulumi.Output[str]
    release: k8s.helm.v3.Release

    def __init__(
        self,
        name: str,
        args: KarpenterArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        pools: Sequence[GpuNodePool] | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> None:
        """`pools`: the stack's GPU pools, already validated from `gpu_node_pools` (`LlmPlatform` passes its
        plan's); without them the args' block is validated here. `versions`: chart versions by add-on name
        (`llm_platform.facts.addons`) in place of the pinned ones (`LlmPlatform` passes its `addon_versions`)."""
        if pools is None:
            given = args.get("gpu_node_pools")
            pools = list(parse_block("gpuNodePools", given)) if given else []
        super().__init__(
            "llm-platform:index:Karpenter",
            name,
            None,
            typed_options(opts, "llm-platform:karpenter:Karpenter"),
        )
        child = child_options(self, opts)
        cluster, tags = args["cluster_name"], args.get("tags", {})
        reserved = any(uses_reservations(p) for p in pools)

        gpu_node_role = node_role(
            f"{name}-node", description=f"Karpenter GPU nodes of {cluster}", tags=tags, opts=child
        )
        node_access = aws.eks.AccessEntry(
            f"{name}-node",
            cluster_name=cluster,
            principal_arn=gpu_node_role.arn,
            type="EC2_LINUX",
            tags=tags,
            opts=child,
        )

        queue = self._interruption_queue(name, cluster, reserved, tags, child)

        policy_json = account_policy(
            self,
            partial(spec.controller_policy, region=args["region"], cluster_name=cluster, pools=pools),
            queue_arn=queue.arn,
            node_role_arn=gpu_node_role.arn,
        )
        association = service_account_identity(
            f"{name}-controller",
            cluster_name=cluster,
            namespace=KARPENTER_NAMESPACE,
            service_account=spec.SERVICE_ACCOUNT,
            description=f"Karpenter controller of {cluster} (Pod Identity)",
            policy=policy_json,
            tags=tags,
            opts=child,
        )

        crds = self._crd_release(name, versions, opts)
        controller_chart = KARPENTER.chart
        repair = args.get("node_repair", True)
        self.release = k8s.helm.v3.Release(
            f"{name}-controller",
            name=spec.RELEASE,
            chart=controller_chart.chart,
            version=version_of(KARPENTER, controller_chart, versions),
            namespace=KARPENTER_NAMESPACE,
            skip_crds=True,
            values=queue.name.apply(
                lambda q: spec.helm_values(cluster, q, capacity_reservations=reserved, node_repair=repair)
            ),
            opts=child_options(self, opts, crds, association, node_access),
        )

        self.node_role_name = gpu_node_role.name
        self.node_role_arn = gpu_node_role.arn
        self.queue_name = queue.name
        self.register_outputs(
            {"nodeRoleName": self.node_role_name, "queueName": self.queue_name, "release": self.release.name}
        )

    def _interruption_queue(
        self, name: str, cluster: str, reserved: bool, tags: dict[str, str], child: pulumi.ResourceOptions
    ) -> aws.sqs.Queue:
        """The encrypted SQS queue Karpenter reads interruptions from, and the EventBridge rules that feed it
        (with capacity reservations, their interruption too)."""
        queue = aws.sqs.Queue(
            f"{name}-interruption",
            name=names.interruption_queue_name(cluster),
            message_retention_seconds=300,
            sqs_managed_sse_enabled=True,
            tags=tags,
            opts=child,
        )
        aws.sqs.QueuePolicy(
            f"{name}-interruption",
            queue_url=queue.url,
            policy=queue.arn.apply(lambda arn: json.dumps(spec.queue_policy(arn))),
            opts=child,
        )
        for event, pattern in spec.interruption_events(reserved).items():
            rule = aws.cloudwatch.EventRule(
                f"{name}-{event}",
                name=names.interruption_rule_name(cluster, event),
                description=f"Karpenter interruption handling for {cluster}: {event}",
                event_pattern=json.dumps(pattern),
                tags=tags,
                opts=child,
            )
            aws.cloudwatch.EventTarget(
                f"{name}-{event}",
                rule=rule.name,
                target_id="KarpenterInterruptionQueue",
                arn=queue.arn,
                opts=child,
            )
        return queue

    def _crd_release(
        self, name: str, versions: Mapping[str, str] | None, opts: pulumi.ResourceOptions | None
    ) -> k8s.helm.v3.Release:
        """Karpenter's namespace, then its CRD chart's release."""
        namespace = apply_manifest(
            f"{name}-ns", namespace_manifest(KARPENTER_NAMESPACE, "restricted"), child_options(self, opts)
        )
        # CRDs from their own chart: Helm never upgrades CRDs shipped in a chart's crds/ folder
        crd_chart = KARPENTER.charts[0]
        return k8s.helm.v3.Release(
            f"{name}-crd",
            name="karpenter-crd",
            chart=crd_chart.chart,
            version=version_of(KARPENTER, crd_chart, versions),
            namespace=KARPENTER_NAMESPACE,
            opts=child_options(self, opts, namespace),
        )


class GpuNodePoolsArgs(TypedDict):
    """Karpenter NodePools for GPU nodes as the stack file's `gpuNodePools` describe them (camelCase keys,
    checked by the schema), on an EKS cluster with Karpenter running."""

    cluster_name: str
    """The EKS cluster: its subnets and security groups are discovered by the `karpenter.sh/discovery` tag."""
    gpu_node_pools: list[GpuNodePoolSettings]
    """The stack file's `gpuNodePools`: instance families and sizes, gpuLimit, capacity types, MIG, ..."""
    ami_versions: NotRequired[AmiVersionsSettings]
    """The stack file's `cluster.amiVersions`: the pinned AMI alias per family (default `latest`)."""
    lustre_client: NotRequired[bool]
    """Install the Lustre client at boot: a model reads its weights from FSx for Lustre."""
    zones: list[str]
    """Availability zones the nodes may launch in."""
    node_role_name: pulumi.Input[str]
    """The IAM role of the nodes (Karpenter's `node_role_name` output)."""
    prod: NotRequired[bool]
    """A prod stack: no drift replacement of GPU nodes during business hours (the disruption budgets)."""
    tags: NotRequired[dict[str, str]]
    """Tags Karpenter puts on the instances, volumes and network interfaces it launches (the stack's tags:
    they are not Pulumi resources, so the AWS provider's default_tags never reach them)."""
    extra_security_group_ids: NotRequired[list[pulumi.Input[str]]]
    """Security groups the nodes carry besides the cluster's (the FSx clients' group)."""
    efa_security_group_id: NotRequired[pulumi.Input[str]]
    """The EFA security group (all traffic to and from itself), on the EC2NodeClasses of EFA pools."""
    prefix: NotRequired[str]
    """A team's on a cluster it shares: the EC2NodeClasses and NodePools are `<prefix>-gpu-<family>` and
    `<prefix>-<pool>`, and the nodes carry `llm-platform/gpu-pool: <prefix>-<pool>` (give the team's
    InferenceService and GpuHeadroom the same prefix). Default: none, the platform's own names."""


class GpuNodePools(pulumi.ComponentResource):
    """One EC2NodeClass per AMI family in use (one of its own for each pool with capacity reservations) and one
    NodePool per configured GPU pool.

    Cluster prerequisites: Karpenter's controller and CRDs (the `Karpenter` component, or one the cluster
    runs: pass its node role as `node_role_name`), subnets and security groups tagged for discovery. Nodes
    carry the `nvidia.com/gpu` NoSchedule taint and the `llm-platform/gpu-pool` label the serving pods
    select."""

    def __init__(
        self,
        name: str,
        args: GpuNodePoolsArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        plan: Plan | None = None,
    ) -> None:
        """`plan`: the stack's plan, already resolved from these args (`LlmPlatform` passes its own; the pools
        read its `gpu_node_pools` and `node_classes`); without it the args are validated and resolved here."""
        # bad input stops before any resource
        if plan is not None:
            pools, node_classes = list(plan.gpu_node_pools), plan.node_classes
        else:
            pools = parse_block("gpuNodePools", args["gpu_node_pools"])
            ami_versions: AmiVersions = parse_block("amiVersions", args.get("ami_versions", {}), AmiVersions)
            node_classes = node_class_plans(
                pools, ami_versions, lustre_client=args.get("lustre_client", False)
            )
        cluster_name, tags = args["cluster_name"], args.get("tags", {})
        security_groups = args.get("extra_security_group_ids", [])
        prefix = check_prefix(args.get("prefix", ""))
        super().__init__(
            "llm-platform:index:GpuNodePools",
            name,
            None,
            typed_options(opts, "llm-platform:karpenter:GpuNodePools"),
        )
        # class name -> (AMI family, the reservation pool it belongs to, if any)
        wanted: dict[str, tuple[str, GpuNodePool | None]] = {}
        for pool in pools:
            owner = pool if uses_reservations(pool) or efa_pool(pool) else None
            wanted[pool_node_class_name(pool)] = (pool.ami_family, owner)
        classes: dict[str, pulumi.CustomResource] = {}
        boot = {c.ami_family: c for c in node_classes}
        for class_name, (family, owner) in sorted(wanted.items()):
            # Bottlerocket takes TOML settings, not a shell: only AL2023 gets user data of ours
            user_data = spec.al2023_user_data(boot[family]) if family == "al2023" else None
            sg_ids = list(security_groups)
            efa_group = args.get("efa_security_group_id")
            if owner is not None and efa_pool(owner) and efa_group is not None:
                sg_ids.append(efa_group)
            body = pulumi.Output.all(role=args["node_role_name"], sgs=pulumi.Output.all(*sg_ids)).apply(
                lambda o, family=family, owner=owner, user_data=user_data: spec.node_class(
                    ami_family=family,
                    ami_version=boot[family].ami_version,
                    cluster_name=cluster_name,
                    node_role_name=o["role"],
                    tags=tags,
                    extra_security_group_ids=list(o["sgs"]),
                    user_data=user_data,
                    pool=owner,
                    prefix=prefix,
                )
            )
            classes[class_name] = apply_manifest(
                f"{name}-{class_name}",
                body,
                child_options(self, opts),
                api_version=spec.NODE_CLASS_API,
                kind="EC2NodeClass",
            )

        # by pool name (not an output of the schema: a dict of Kubernetes objects)
        self.node_pools: dict[str, pulumi.CustomResource] = {}
        for pool in pools:
            manifest = spec.node_pool(pool, zones=args["zones"], prod=args.get("prod", False), prefix=prefix)
            node_class = classes[pool_node_class_name(pool)]
            self.node_pools[pool.name] = apply_manifest(
                f"{name}-{pool.name}", manifest, child_options(self, opts, node_class)
            )
        self.register_outputs({"nodePools": sorted(self.node_pools)})


@dataclass(frozen=True, kw_only=True)
class AddonNodePoolArgs:
    cluster_name: str
    pool: AddonPoolPlan
    zones: list[str]
    node_role_name: pulumi.Input[str]
    tags: dict[str, str]


class AddonNodePool(pulumi.ComponentResource):
    """The EC2NodeClass and CPU NodePool of the add-on nodes. Every add-on's release waits for it: their
    pods stay Pending until Karpenter launches a node here."""

    node_pool: pulumi.CustomResource

    def __init__(
        self, name: str, args: AddonNodePoolArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(
            "llm-platform:index:AddonNodePool",
            name,
            None,
            typed_options(opts, "llm-platform:karpenter:AddonNodePool"),
        )
        body = pulumi.Output.from_input(args.node_role_name).apply(
            lambda role: addon_nodes.node_class(
                args.pool, cluster_name=args.cluster_name, node_role_name=role, tags=args.tags
            )
        )
        node_class = apply_manifest(
            f"{name}-class",
            body,
            child_options(self, opts),
            api_version=spec.NODE_CLASS_API,
            kind="EC2NodeClass",
        )
        self.node_pool = apply_manifest(
            f"{name}-pool",
            addon_nodes.node_pool(args.pool, zones=args.zones),
            child_options(self, opts, node_class),
        )
        self.register_outputs({"nodePool": args.pool.name})
