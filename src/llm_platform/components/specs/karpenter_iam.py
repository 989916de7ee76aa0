"""Karpenter's IAM and interruption queue: its least-privilege controller policy, the queue's policy, and the
EventBridge events that feed the queue (re-exported by components.specs.karpenter).

The controller policy follows Karpenter v1's own CloudFormation reference (getting-started
`cloudformation.yaml` at the pinned version, kept as data in tools/preflight/iam_reference/, which
preflight checks this policy against), with every statement scoped to this cluster by tag or ARN.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llm_platform.components.specs import reservations
from llm_platform.config.schema import GpuNodePool

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
