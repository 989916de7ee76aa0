"""What the AWS Load Balancer Controller looks like: its IAM policy and Helm values.

The policy follows the controller's own `docs/install/iam_policy.json` (v2.13+ shape: `elbv2.k8s.aws/cluster`
tags), with every ARN narrowed from `*:*` to this partition, region and account; writes to load balancers,
target groups and security groups stay conditioned on the controller's own cluster tag, as upstream does.
"""

from __future__ import annotations

from typing import Any

from llm_platform.components.specs.common import ADDON_NODE_LABEL, ADDON_TOLERATION
from llm_platform.plan.addon_pods import LOAD_BALANCER_REPLICAS

SERVICE_ACCOUNT = "aws-load-balancer-controller"
CLUSTER_TAG = "elbv2.k8s.aws/cluster"


def controller_policy(*, partition: str, region: str, account: str) -> dict[str, Any]:
    """The controller's IAM policy.

    why long: one IAM policy document, statement by statement as upstream's `docs/install/iam_policy.json`
    has them (module doc), so it can be read against that file."""
    elb = f"arn:{partition}:elasticloadbalancing:{region}:{account}"
    security_groups = f"arn:{partition}:ec2:{region}:{account}:security-group/*"
    balancers = [f"{elb}:targetgroup/*/*", f"{elb}:loadbalancer/net/*/*", f"{elb}:loadbalancer/app/*/*"]
    tagged_by_us = {"Null": {f"aws:ResourceTag/{CLUSTER_TAG}": "false"}}
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "CreateElbServiceLinkedRole",
                "Effect": "Allow",
                "Action": "iam:CreateServiceLinkedRole",
                "Resource": "*",
                "Condition": {"StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}},
            },
            {
                "Sid": "Describe",
                "Effect": "Allow",
                # read-only Describe*/Get* calls support no resource-level permissions
                "Action": [
                    "ec2:DescribeAccountAttributes",
                    "ec2:DescribeAddresses",
                    "ec2:DescribeAvailabilityZones",
                    "ec2:DescribeInternetGateways",
                    "ec2:DescribeVpcs",
                    "ec2:DescribeVpcPeeringConnections",
                    "ec2:DescribeSubnets",
                    "ec2:DescribeSecurityGroups",
                    "ec2:DescribeInstances",
                    "ec2:DescribeNetworkInterfaces",
                    "ec2:DescribeTags",
                    "ec2:GetCoipPoolUsage",
                    "ec2:DescribeCoipPools",
                    "ec2:GetSecurityGroupsForVpc",
                    "ec2:DescribeIpamPools",
                    "ec2:DescribeRouteTables",
                    "elasticloadbalancing:DescribeLoadBalancers",
                    "elasticloadbalancing:DescribeLoadBalancerAttributes",
                    "elasticloadbalancing:DescribeListeners",
                    "elasticloadbalancing:DescribeListenerCertificates",
                    "elasticloadbalancing:DescribeSSLPolicies",
                    "elasticloadbalancing:DescribeRules",
                    "elasticloadbalancing:DescribeTargetGroups",
                    "elasticloadbalancing:DescribeTargetGroupAttributes",
                    "elasticloadbalancing:DescribeTargetHealth",
                    "elasticloadbalancing:DescribeTags",
                    "elasticloadbalancing:DescribeTrustStores",
                    "elasticloadbalancing:DescribeListenerAttributes",
                    "elasticloadbalancing:DescribeCapacityReservation",
                    "acm:ListCertificates",
                    "acm:DescribeCertificate",
                ],
                "Resource": "*",
            },
            {
                "Sid": "CreateSecurityGroups",
                "Effect": "Allow",
                "Action": "ec2:CreateSecurityGroup",
                "Resource": "*",
            },
            {
                "Sid": "TagNewSecurityGroups",
                "Effect": "Allow",
                "Action": "ec2:CreateTags",
                "Resource": security_groups,
                "Condition": {
                    "StringEquals": {"ec2:CreateAction": "CreateSecurityGroup"},
                    "Null": {f"aws:RequestTag/{CLUSTER_TAG}": "false"},
                },
            },
            {
                # re-tag (never claim) security groups the controller created, as upstream
                "Sid": "RetagOwnSecurityGroups",
                "Effect": "Allow",
                "Action": ["ec2:CreateTags", "ec2:DeleteTags"],
                "Resource": security_groups,
                "Condition": {
                    "Null": {
                        f"aws:RequestTag/{CLUSTER_TAG}": "true",
                        f"aws:ResourceTag/{CLUSTER_TAG}": "false",
                    }
                },
            },
            {
                "Sid": "ManageOwnSecurityGroups",
                "Effect": "Allow",
                "Action": [
                    "ec2:AuthorizeSecurityGroupIngress",
                    "ec2:RevokeSecurityGroupIngress",
                    "ec2:DeleteSecurityGroup",
                ],
                "Resource": security_groups,
                "Condition": tagged_by_us,
            },
            {
                # node security groups must admit the load balancer's traffic to the targets
                "Sid": "OpenNodeSecurityGroups",
                "Effect": "Allow",
                "Action": ["ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress"],
                "Resource": security_groups,
            },
            {
                "Sid": "CreateLoadBalancers",
                "Effect": "Allow",
                "Action": [
                    "elasticloadbalancing:CreateLoadBalancer",
                    "elasticloadbalancing:CreateTargetGroup",
                ],
                "Resource": "*",
                "Condition": {"Null": {f"aws:RequestTag/{CLUSTER_TAG}": "false"}},
            },
            {
                "Sid": "TagOnCreate",
                "Effect": "Allow",
                "Action": "elasticloadbalancing:AddTags",
                "Resource": balancers,
                "Condition": {
                    "StringEquals": {
                        "elasticloadbalancing:CreateAction": ["CreateTargetGroup", "CreateLoadBalancer"]
                    },
                    "Null": {f"aws:RequestTag/{CLUSTER_TAG}": "false"},
                },
            },
            {
                "Sid": "RetagOwnLoadBalancers",
                "Effect": "Allow",
                "Action": ["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"],
                "Resource": balancers,
                "Condition": {
                    "Null": {
                        f"aws:RequestTag/{CLUSTER_TAG}": "true",
                        f"aws:ResourceTag/{CLUSTER_TAG}": "false",
                    }
                },
            },
            {
                "Sid": "ManageListeners",
                "Effect": "Allow",
                "Action": [
                    "elasticloadbalancing:CreateListener",
                    "elasticloadbalancing:DeleteListener",
                    "elasticloadbalancing:CreateRule",
                    "elasticloadbalancing:DeleteRule",
                    "elasticloadbalancing:ModifyListener",
                    "elasticloadbalancing:AddListenerCertificates",
                    "elasticloadbalancing:RemoveListenerCertificates",
                    "elasticloadbalancing:ModifyRule",
                    "elasticloadbalancing:SetRulePriorities",
                ],
                "Resource": [f"{elb}:loadbalancer/*", f"{elb}:listener/*", f"{elb}:listener-rule/*"],
            },
            {
                "Sid": "TagListeners",
                "Effect": "Allow",
                "Action": ["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"],
                "Resource": [
                    f"{elb}:listener/net/*/*/*",
                    f"{elb}:listener/app/*/*/*",
                    f"{elb}:listener-rule/net/*/*/*",
                    f"{elb}:listener-rule/app/*/*/*",
                ],
            },
            {
                "Sid": "ManageOwnLoadBalancers",
                "Effect": "Allow",
                "Action": [
                    "elasticloadbalancing:ModifyLoadBalancerAttributes",
                    "elasticloadbalancing:SetIpAddressType",
                    "elasticloadbalancing:SetSecurityGroups",
                    "elasticloadbalancing:SetSubnets",
                    "elasticloadbalancing:DeleteLoadBalancer",
                    "elasticloadbalancing:ModifyTargetGroup",
                    "elasticloadbalancing:ModifyTargetGroupAttributes",
                    "elasticloadbalancing:DeleteTargetGroup",
                    "elasticloadbalancing:ModifyCapacityReservation",
                    "elasticloadbalancing:ModifyIpPools",
                ],
                "Resource": balancers,
                "Condition": tagged_by_us,
            },
            {
                # set on the listener's ARN; the controller tags its listeners with the cluster tag
                # (pkg/deploy/elbv2/listener_manager.go, feature gate ListenerRulesTagging, on by default),
                # and upstream grants this action only on resources carrying it (v2.17.0
                # docs/install/iam_policy.json): never on another cluster's or a hand-made listener
                "Sid": "ModifyListenerAttributes",
                "Effect": "Allow",
                "Action": "elasticloadbalancing:ModifyListenerAttributes",
                "Resource": [f"{elb}:listener/net/*/*/*", f"{elb}:listener/app/*/*/*"],
                "Condition": tagged_by_us,
            },
            {
                "Sid": "RegisterTargets",
                "Effect": "Allow",
                "Action": ["elasticloadbalancing:RegisterTargets", "elasticloadbalancing:DeregisterTargets"],
                "Resource": f"{elb}:targetgroup/*/*",
            },
        ],
    }


def helm_values(*, cluster_name: str, region: str, vpc_id: str) -> dict[str, Any]:
    """Two replicas on the add-on nodes; region and VPC given, so the controller never needs IMDS."""
    return {
        "clusterName": cluster_name,
        "region": region,
        "vpcId": vpc_id,
        "replicaCount": LOAD_BALANCER_REPLICAS,
        "serviceAccount": {"create": True, "name": SERVICE_ACCOUNT},
        "nodeSelector": dict(ADDON_NODE_LABEL),
        "tolerations": [ADDON_TOLERATION],
        # ALB-only add-ons: the platform makes one NLB for a Service, never an Ingress; off, so the
        # controller never calls Shield or WAF (not in its policy: see tools/preflight/iam_reference)
        "enableShield": False,
        "enableWaf": False,
        "enableWafv2": False,
    }
