"""What Karpenter looks like: its least-privilege IAM policy, interruption events, Helm values, and the
EC2NodeClass/NodePool objects that turn a pending vLLM pod into a GPU node of the right family.

The controller policy follows Karpenter v1's own CloudFormation reference (getting-started
`cloudformation.yaml` at the pinned version, kept as data in tools/preflight/iam_reference/, which
preflight checks this policy against), with every statement scoped to this cluster by tag or ARN.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llm_platform.components.specs import reservations
from llm_platform.components.specs.common import GPU_TAINT, POOL_LABEL, SYSTEM_NODE_LABEL, SYSTEM_TOLERATION
from llm_platform.config.schema import GpuNodePool
from llm_platform.facts.versions import LUSTRE_CLIENT_PACKAGE
from llm_platform.plan import NodeClassPlan
from llm_platform.plan.naming import KARPENTER_NAMESPACE, node_pool_name, scoped
from llm_platform.plan.nodes import (
    DISRUPTION_BUDGET_PERCENT,
    efa_pool,
    node_class_name,
    placement_group,
    pool_node_class_name,
    uses_reservations,
)

NODE_CLASS_API = "karpenter.k8s.aws/v1"
NODE_POOL_API = "karpenter.sh/v1"
SERVICE_ACCOUNT = "karpenter"
RELEASE = "karpenter"
AL2023_ROOT_GIB = 40

# EventBridge -> SQS: what Karpenter needs to drain a node before AWS takes it away.
INTERRUPTION_EVENTS: dict[str, dict[str, list[str]]] = {
    "health": {"source": ["aws.health"], "detail-type": ["AWS Health Event"]},
    "spot-interruption": {"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]},
    "rebalance": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance Rebalance Recommendation"]},
    "state-change": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance State-change Notification"]},
}
# interruptible capacity reservations reclaimed by their owner (upstream CloudFormation's
# CapacityReservationInterruptionRule); wired only when a pool uses reservations
RESERVATION_INTERRUPTION_EVENTS: dict[str, dict[str, list[str]]] = {
    "capacity-reservation-interruption": {
        "source": ["aws.ec2"],
        "detail-type": ["EC2 Capacity Reservation Instance Interruption Warning"],
    },
}


def interruption_events(capacity_reservations: bool) -> dict[str, dict[str, list[str]]]:
    return INTERRUPTION_EVENTS | (RESERVATION_INTERRUPTION_EVENTS if capacity_reservations else {})


def controller_policy(
    *,
    partition: str,
    region: str,
    account: str,
    cluster_name: str,
    queue_arn: str,
    node_role_arn: str,
    pools: Sequence[GpuNodePool] = (),
) -> dict[str, Any]:
    """`pools`: the GPU pools, whose capacity reservations outside this account (by id, or a tag term's
    ownerID) join the launch statement.

    why long: one IAM policy document, statement by statement as upstream's `cloudformation.yaml` has them
    (module doc), so it can be read against that file; split up it could not."""
    ec2 = f"arn:{partition}:ec2:{region}"
    owned = {f"aws:RequestTag/kubernetes.io/cluster/{cluster_name}": "owned"}
    resource_owned = {f"aws:ResourceTag/kubernetes.io/cluster/{cluster_name}": "owned"}
    created = [
        f"{ec2}:{account}:{kind}/*"
        for kind in (
            "fleet",
            "instance",
            "volume",
            "network-interface",
            "launch-template",
            "spot-instances-request",
        )
    ]
    profiles = f"arn:{partition}:iam::{account}:instance-profile/*"
    cluster_arn = f"arn:{partition}:eks:{region}:{account}:cluster/{cluster_name}"
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "AllowScopedEC2InstanceAccessActions",
                "Effect": "Allow",
                "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
                "Resource": [
                    f"{ec2}::image/*",
                    f"{ec2}::snapshot/*",
                    f"{ec2}:{account}:security-group/*",
                    f"{ec2}:{account}:subnet/*",
                    f"{ec2}:{account}:capacity-reservation/*",
                    f"{ec2}:{account}:placement-group/*",
                    *reservations.reservation_arns(list(pools), partition=partition, region=region),
                ],
            },
            {
                "Sid": "AllowScopedEC2LaunchTemplateAccessActions",
                "Effect": "Allow",
                "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
                "Resource": f"{ec2}:{account}:launch-template/*",
                "Condition": {
                    "StringEquals": resource_owned,
                    "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
                },
            },
            {
                "Sid": "AllowScopedEC2InstanceActionsWithTags",
                "Effect": "Allow",
                "Action": ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
                "Resource": created,
                "Condition": {
                    "StringEquals": owned | {"aws:RequestTag/eks:eks-cluster-name": cluster_name},
                    "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
                },
            },
            {
                "Sid": "AllowScopedResourceCreationTagging",
                "Effect": "Allow",
                "Action": "ec2:CreateTags",
                "Resource": created,
                "Condition": {
                    "StringEquals": owned
                    | {
                        "aws:RequestTag/eks:eks-cluster-name": cluster_name,
                        "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
                    },
                    "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
                },
            },
            {
                "Sid": "AllowScopedResourceTagging",
                "Effect": "Allow",
                "Action": "ec2:CreateTags",
                "Resource": f"{ec2}:{account}:instance/*",
                "Condition": {
                    "StringEquals": resource_owned,
                    "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
                    "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": cluster_name},
                    "ForAllValues:StringEquals": {
                        "aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]
                    },
                },
            },
            {
                "Sid": "AllowScopedDeletion",
                "Effect": "Allow",
                "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
                "Resource": [f"{ec2}:{account}:instance/*", f"{ec2}:{account}:launch-template/*"],
                "Condition": {
                    "StringEquals": resource_owned,
                    "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
                },
            },
            {
                "Sid": "AllowRegionalReadActions",
                "Effect": "Allow",
                "Action": [
                    "ec2:DescribeAvailabilityZones",
                    "ec2:DescribeCapacityReservations",
                    "ec2:DescribeImages",
                    "ec2:DescribeInstances",
                    # since 1.12: instance status checks, so unhealthy instances are drained and replaced
                    "ec2:DescribeInstanceStatus",
                    "ec2:DescribeInstanceTypeOfferings",
                    "ec2:DescribeInstanceTypes",
                    "ec2:DescribeLaunchTemplates",
                    "ec2:DescribePlacementGroups",
                    "ec2:DescribeSecurityGroups",
                    "ec2:DescribeSpotPriceHistory",
                    "ec2:DescribeSubnets",
                ],
                # Describe* calls support no resource-level permissions; the region condition scopes them
                "Resource": "*",
                "Condition": {"StringEquals": {"aws:RequestedRegion": region}},
            },
            {
                "Sid": "AllowSSMReadActions",
                "Effect": "Allow",
                "Action": "ssm:GetParameter",
                "Resource": f"arn:{partition}:ssm:{region}::parameter/aws/service/*",
            },
            {
                "Sid": "AllowPricingReadActions",
                "Effect": "Allow",
                "Action": "pricing:GetProducts",
                # the Price List API has no resources to scope to
                "Resource": "*",
            },
            {
                "Sid": "AllowInterruptionQueueActions",
                "Effect": "Allow",
                "Action": ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
                "Resource": queue_arn,
            },
            {
                "Sid": "AllowPassingInstanceRole",
                "Effect": "Allow",
                "Action": "iam:PassRole",
                "Resource": node_role_arn,
                "Condition": {"StringEquals": {"iam:PassedToService": ["ec2.amazonaws.com"]}},
            },
            {
                "Sid": "AllowScopedInstanceProfileCreationActions",
                "Effect": "Allow",
                "Action": ["iam:CreateInstanceProfile"],
                "Resource": profiles,
                "Condition": {
                    "StringEquals": owned
                    | {
                        "aws:RequestTag/eks:eks-cluster-name": cluster_name,
                        "aws:RequestTag/topology.kubernetes.io/region": region,
                    },
                    "StringLike": {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"},
                },
            },
            {
                "Sid": "AllowScopedInstanceProfileTagActions",
                "Effect": "Allow",
                "Action": ["iam:TagInstanceProfile"],
                "Resource": profiles,
                "Condition": {
                    "StringEquals": resource_owned
                    | {"aws:ResourceTag/topology.kubernetes.io/region": region}
                    | owned
                    | {
                        "aws:RequestTag/eks:eks-cluster-name": cluster_name,
                        "aws:RequestTag/topology.kubernetes.io/region": region,
                    },
                    "StringLike": {
                        "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*",
                        "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*",
                    },
                },
            },
            {
                "Sid": "AllowScopedInstanceProfileActions",
                "Effect": "Allow",
                "Action": [
                    "iam:AddRoleToInstanceProfile",
                    "iam:RemoveRoleFromInstanceProfile",
                    "iam:DeleteInstanceProfile",
                ],
                "Resource": profiles,
                "Condition": {
                    "StringEquals": resource_owned
                    | {"aws:ResourceTag/topology.kubernetes.io/region": region},
                    "StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"},
                },
            },
            {
                # List* takes no resource ARN: scoped to instance-profile/* it is denied, and the EC2NodeClass
                # finalizer, which lists the profiles it made, never completes
                "Sid": "AllowUnscopedInstanceProfileListAction",
                "Effect": "Allow",
                "Action": "iam:ListInstanceProfiles",
                "Resource": "*",
            },
            {
                "Sid": "AllowInstanceProfileReadActions",
                "Effect": "Allow",
                "Action": "iam:GetInstanceProfile",
                "Resource": profiles,
            },
            {
                "Sid": "AllowZonalShiftStatusReadOnly",
                "Effect": "Allow",
                "Action": "arc-zonal-shift:GetManagedResource",
                "Resource": "*",
                "Condition": {"StringEquals": {"arc-zonal-shift:ResourceIdentifier": cluster_arn}},
            },
            {
                "Sid": "AllowAPIServerEndpointDiscovery",
                "Effect": "Allow",
                "Action": "eks:DescribeCluster",
                "Resource": cluster_arn,
            },
        ],
    }


def queue_policy(queue_arn: str) -> dict[str, Any]:
    """EventBridge may deliver into the queue; nobody may talk to it without TLS."""
    return {
        "Version": "2012-10-17",
        "Id": "EC2InterruptionPolicy",
        "Statement": [
            {
                "Sid": "EventBridgeDelivery",
                "Effect": "Allow",
                "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
            },
            {
                "Sid": "DenyHTTP",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "sqs:*",
                "Resource": queue_arn,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            },
        ],
    }


def helm_values(
    cluster_name: str, queue_name: str, *, capacity_reservations: bool = False, node_repair: bool = True
) -> dict[str, Any]:
    """Karpenter runs on the system node group, never on capacity it manages (the chart's default affinity
    also keeps it off any node with a `karpenter.sh/nodepool` label). With reservations in use, the
    `ReservedCapacity` feature gate (the chart's default since v1.6) is pinned on: without it Karpenter ignores
    `capacityReservationSelectorTerms` and a reserved-only pool never launches.

    Node repair (`NodeRepair`, alpha and off in the chart: values.yaml `settings.featureGates.nodeRepair: false`;
    the chart passes it as FEATURE_GATES, charts/karpenter/templates/deployment.yaml:129) is on: Karpenter then
    replaces a node whose `AcceleratedHardwareReady` condition (the EKS node monitoring agent's NVIDIA XID and
    DCGM checks) has been False for 10 minutes, or whose Ready is False/Unknown, or StorageReady,
    NetworkingReady, KernelReady or ContainerRuntimeReady False for 30 (karpenter-provider-aws v1.14.1
    pkg/cloudprovider/cloudprovider.go:305-345 RepairPolicies). `cluster.nodeRepair: false` pins it off."""
    gates: dict[str, bool] = {"nodeRepair": node_repair}
    if capacity_reservations:
        gates["reservedCapacity"] = True
    settings: dict[str, Any] = {
        "clusterName": cluster_name,
        "interruptionQueue": queue_name,
        "featureGates": gates,
    }
    return {
        "serviceAccount": {"create": True, "name": SERVICE_ACCOUNT},
        "settings": settings,
        "replicas": 2,
        "nodeSelector": {"kubernetes.io/os": "linux", **SYSTEM_NODE_LABEL},
        "tolerations": [SYSTEM_TOLERATION],
        "controller": {
            "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}}
        },
        # installed before kube-prometheus-stack (the add-ons' pods need the nodes it launches), when the
        # ServiceMonitor CRD does not exist yet: its monitor comes from service_monitor(), after monitoring
        "serviceMonitor": {"enabled": False},
    }


def service_monitor() -> dict[str, Any]:
    """What the chart's own ServiceMonitor (templates/servicemonitor.yaml, karpenter 1.14.1) would be: the
    `karpenter` Service's `http-metrics` port, selected by the chart's selector labels (name and instance)."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": "karpenter", "namespace": KARPENTER_NAMESPACE},
        "spec": {
            "namespaceSelector": {"matchNames": [KARPENTER_NAMESPACE]},
            "selector": {
                "matchLabels": {"app.kubernetes.io/name": "karpenter", "app.kubernetes.io/instance": RELEASE}
            },
            "endpoints": [{"port": "http-metrics", "path": "/metrics"}],
        },
    }


# ------------------------------------------------------------------------------ EC2NodeClass / NodePool


def node_class(
    *,
    ami_family: str,
    ami_version: str,
    cluster_name: str,
    node_role_name: str,
    tags: dict[str, str],
    extra_security_group_ids: list[str] | None = None,
    user_data: str | None = None,
    pool: GpuNodePool | None = None,
    prefix: str = "",
) -> dict[str, Any]:
    """GPU EC2NodeClass: pinned AMI alias, NVMe RAID0 for ephemeral storage, encrypted gp3 root, IMDSv2.
    Given a pool with capacity reservations, the pool's own class selecting them. `prefix`: a team's on a
    shared cluster (plan.naming.scoped)."""
    name = scoped(prefix, pool_node_class_name(pool) if pool is not None else node_class_name(ami_family))
    if ami_family == "bottlerocket":
        # Bottlerocket: small OS volume, containerd and images on the data volume
        block_devices = [
            ebs_volume("/dev/xvda", "8Gi", iops=3000, throughput=125),
            ebs_volume("/dev/xvdb", "150Gi", iops=6000, throughput=500),
        ]
    else:
        # `instanceStorePolicy: RAID0` makes nodeadm put containerd, kubelet and pod logs on the instance-store
        # array (every catalog GPU instance has NVMe), so the root volume keeps only the OS and the journal:
        # gp3's free baseline (3000 IOPS, 125 MB/s) is enough
        block_devices = [ebs_volume("/dev/xvda", f"{AL2023_ROOT_GIB}Gi", iops=3000, throughput=125)]
    security_groups: list[dict[str, Any]] = [{"tags": {"aws:eks:cluster-name": cluster_name}}]
    security_groups += [{"id": sg} for sg in extra_security_group_ids or []]
    spec: dict[str, Any] = {
        "amiSelectorTerms": [{"alias": f"{ami_family}@{ami_version}"}],
        "role": node_role_name,
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": cluster_name}}],
        "securityGroupSelectorTerms": security_groups,
        "instanceStorePolicy": "RAID0",
        "blockDeviceMappings": block_devices,
        "metadataOptions": {
            "httpEndpoint": "enabled",
            "httpProtocolIPv6": "disabled",
            "httpPutResponseHopLimit": 1,
            "httpTokens": "required",
        },
        "tags": {**tags, "llm-platform/node-class": name},
    }
    if pool is not None and uses_reservations(pool):
        spec["capacityReservationSelectorTerms"] = reservations.selector_terms(pool)
    if pool is not None and efa_pool(pool):
        spec |= efa_node_class(pool, cluster_name, prefix)
    if user_data:
        spec["userData"] = user_data
    return {
        "apiVersion": NODE_CLASS_API,
        "kind": "EC2NodeClass",
        "metadata": {
            "name": name,
            "labels": {"app.kubernetes.io/managed-by": "pulumi"},
        },
        "spec": spec,
    }


def efa_interfaces(count: int) -> list[dict[str, Any]]:
    """`count` EFA-only interfaces, one per network card, beside the primary ENA interface (Karpenter v1.14.1
    nodeclasses.md spec.networkInterfaces; the CRD allows one EFA per card and needs the primary on card 0
    device 0). EFA-only interfaces take no IP address; Karpenter counts them as the node's
    `vpc.amazonaws.com/efa` capacity and admits only instance types with that many (instancetype/types.go
    efas, compatibility.go check 5)."""
    primary = {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"}
    efa = [
        {"networkCardIndex": card, "deviceIndex": 1 if card == 0 else 0, "interfaceType": "efa-only"}
        for card in range(count)
    ]
    return [primary, *efa]


def efa_node_class(pool: GpuNodePool, cluster_name: str, prefix: str = "") -> dict[str, Any]:
    """What an EFA pool's EC2NodeClass adds: its interfaces (the catalog's count) and its placement group
    (the team's, with a `prefix`)."""
    (count,) = {i.efa_interfaces for i in pool.instances}  # one count per pool (config/schema/multinode.py)
    out: dict[str, Any] = {"networkInterfaces": efa_interfaces(count)}
    group = placement_group(pool, cluster_name, prefix)
    if group is not None:
        out["placementGroupSelector"] = {"name": group}
    return out


def ebs_volume(device: str, size: str, *, iops: int, throughput: int) -> dict[str, Any]:
    return {
        "deviceName": device,
        "ebs": {
            "volumeSize": size,
            "volumeType": "gp3",
            "iops": iops,
            "throughput": throughput,
            "encrypted": True,
            "deleteOnTermination": True,
        },
    }


def pool_weight(pool: GpuNodePool) -> int:
    """Pools that may use spot are tried before on-demand-only pools; inside a pool that allows both,
    Karpenter itself launches spot first and falls back to on-demand."""
    return 100 if "spot" in pool.capacity_types else 10


def node_labels(pool: GpuNodePool, prefix: str = "") -> dict[str, str]:
    labels = {POOL_LABEL: node_pool_name(pool.name, prefix), "llm-platform/ami-family": pool.ami_family}
    if pool.ami_family == "bottlerocket":
        # Bottlerocket's NVIDIA variant ships its own device plugin: the GPU Operator must not add a second one
        labels["nvidia.com/gpu.deploy.device-plugin"] = "false"
    if pool.mig:
        labels["nvidia.com/mig.config"] = "all-balanced"
    return labels


def disruption_budgets(prod: bool) -> list[dict[str, Any]]:
    """Disrupt at most DISRUPTION_BUDGET_PERCENT of nodes at a time and roll drifted GPU nodes one by one; in
    prod, no drift replacement during business hours (US East)."""
    budgets: list[dict[str, Any]] = [
        {"nodes": f"{DISRUPTION_BUDGET_PERCENT}%"},
        {"nodes": "1", "reasons": ["Drifted"]},
    ]
    if prod:
        budgets.append({"nodes": "0", "reasons": ["Drifted"], "schedule": "0 12 * * 1-5", "duration": "10h"})
    return budgets


def node_requirements(
    instance_types: Sequence[str],
    families: Sequence[str],
    capacity_types: Sequence[str],
    zones: Sequence[str],
    *extra: dict[str, Any],
) -> list[dict[str, Any]]:
    """A NodePool's requirements, GPU and add-on pools alike: the catalog's instance types of the admitted
    families, the capacity types, amd64 Linux, what the pool adds (`extra`), and the cluster's zones."""
    return [
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": list(instance_types)},
        {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": list(families)},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": list(capacity_types)},
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
        *extra,
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": list(zones)},
    ]


def node_pool(pool: GpuNodePool, *, zones: list[str], prod: bool, prefix: str = "") -> dict[str, Any]:
    """The pool's NodePool, named (and its nodes labelled) `plan.naming.node_pool_name`: the pool's name, or
    `<prefix>-<pool>` for a team's on a shared cluster."""
    if pool.placement_zone is not None:
        zones = [pool.placement_zone]  # an EFA pool's nodes: one zone, its placement group's
    requirements = node_requirements(
        [i.instance_type for i in pool.instances],
        pool.instance_families,
        pool.capacity_types,
        zones,
        {"key": "karpenter.k8s.aws/instance-gpu-manufacturer", "operator": "In", "values": ["nvidia"]},
    )
    return {
        "apiVersion": NODE_POOL_API,
        "kind": "NodePool",
        "metadata": {
            "name": node_pool_name(pool.name, prefix),
            "labels": {"app.kubernetes.io/managed-by": "pulumi"},
        },
        "spec": {
            "template": {
                "metadata": {"labels": node_labels(pool, prefix)},
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": scoped(prefix, pool_node_class_name(pool)),
                    },
                    "requirements": requirements,
                    "taints": [GPU_TAINT],
                    "expireAfter": pool.expire_after,
                    # an expiring node still waits for serving pods this long before they are forced off
                    "terminationGracePeriod": "2h",
                },
            },
            "limits": {"nvidia.com/gpu": str(pool.gpu_limit)},
            "disruption": {
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": pool.consolidate_after,
                "budgets": disruption_budgets(prod),
            },
            "weight": pool_weight(pool),
        },
    }


def al2023_user_data(node_class: NodeClassPlan) -> str | None:
    """AL2023 user data Karpenter merges with its own NodeConfig (MIME multipart).

    - nodeadm's FastImagePull (SOCI parallel pull and unpack): the ~12 GB vLLM image is the largest
      single part of a new node's cold start.
    - the Lustre client, which the EKS AL2023 AMIs lack, when a model reads its weights from FSx.
    """
    parts = []
    if node_class.fast_image_pull:
        parts.append(
            "Content-Type: application/node.eks.aws\n\n"
            "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  featureGates:\n    FastImagePull: true\n"
        )
    if node_class.lustre_client:
        parts.append(
            'Content-Type: text/x-shellscript; charset="us-ascii"\n\n#!/bin/bash\nset -euo pipefail\n'
            f"dnf install -y {LUSTRE_CLIENT_PACKAGE}\n"
        )
    if not parts:
        return None
    body = "".join(f"--//\n{part}\n" for part in parts)
    return f'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="//"\n\n{body}--//--\n'
