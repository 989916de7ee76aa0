"""What the EKS cluster looks like: add-ons, logging, access policies, system node group settings."""

from __future__ import annotations

from llm_platform.components.specs.common import SYSTEM_NODE_LABEL, SYSTEM_TAINT

CONTROL_PLANE_LOG_TYPES = ["api", "audit", "authenticator", "controllerManager", "scheduler"]
CLUSTER_ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"

# EKS managed add-ons beyond the three pulumi-eks installs itself (vpc-cni, coredns, kube-proxy).
# The EBS CSI driver backs Prometheus' persistent volume; the Pod Identity agent serves every
# controller role in the platform (Karpenter, EBS CSI, FSx CSI, model-cache readers).
POD_IDENTITY_ADDON = "eks-pod-identity-agent"
EBS_CSI_ADDON = "aws-ebs-csi-driver"
EBS_CSI_SERVICE_ACCOUNT = "ebs-csi-controller-sa"  # in kube-system
EBS_CSI_POLICY_ARN = "arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy"


def system_node_taints() -> list[dict[str, str]]:
    """The managed node group's taint in the EKS API's form (effect in SCREAMING_CASE)."""
    return [{"key": SYSTEM_TAINT["key"], "value": SYSTEM_TAINT["value"], "effect": "NO_SCHEDULE"}]


def system_node_labels() -> dict[str, str]:
    return dict(SYSTEM_NODE_LABEL)
