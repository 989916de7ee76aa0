"""Shared, pure helpers: IAM trust documents, taints and label conventions every component uses."""

from __future__ import annotations

import json
from typing import Any

# the add-on nodes' taint, toleration and label (plan/nodes.py: the plan's model of the add-on pool reads them too)
from llm_platform.plan.nodes import ADDON_NODE_LABEL as ADDON_NODE_LABEL
from llm_platform.plan.nodes import ADDON_TAINT as ADDON_TAINT
from llm_platform.plan.nodes import ADDON_TOLERATION as ADDON_TOLERATION

# System nodes (the fixed managed node group) carry this taint so only what must not run on Karpenter's nodes
# lands there: Karpenter itself and the EKS add-ons it needs to start (CoreDNS; the VPC CNI and kube-proxy
# DaemonSets tolerate everything); it is the taint EKS add-ons and the upstream charts already tolerate.
SYSTEM_TAINT = {"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"}
SYSTEM_TOLERATION = {"key": "CriticalAddonsOnly", "operator": "Exists", "effect": "NoSchedule"}
SYSTEM_NODE_LABEL = {"llm-platform/node-role": "system"}


def addon_placement() -> dict[str, Any]:
    """The nodeSelector and tolerations of a pod that runs on the add-on nodes."""
    return {"nodeSelector": dict(ADDON_NODE_LABEL), "tolerations": [dict(ADDON_TOLERATION)]}


GPU_TAINT = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
POOL_LABEL = "llm-platform/gpu-pool"

# Every node role (system node group and Karpenter's GPU nodes): join the cluster, pull images, run the
# VPC CNI, and be reachable by SSM Session Manager instead of SSH.
NODE_POLICY_ARNS = [
    "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
    "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
    "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
]


def assume_role_policy(service: str, *, tag_session: bool = False) -> str:
    actions = ["sts:AssumeRole", "sts:TagSession"] if tag_session else ["sts:AssumeRole"]
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": actions}],
        }
    )


def pod_identity_trust_policy() -> str:
    """Trust policy of a role used through EKS Pod Identity (the agent needs AssumeRole and TagSession)."""
    return assume_role_policy("pods.eks.amazonaws.com", tag_session=True)


def namespace_manifest(name: str, pod_security: str, **labels: str) -> dict[str, Any]:
    """A Namespace with its Pod Security Admission level enforced."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"pod-security.kubernetes.io/enforce": pod_security, **labels}},
    }


def rule_manifest(
    name: str, namespace: str, groups: list[dict[str, Any]], labels: dict[str, str] | None = None
) -> dict[str, Any]:
    """A PrometheusRule of `groups`; `labels` (None: none) include what the cluster's Prometheus selects rules by."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels is not None:
        metadata["labels"] = labels
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": metadata,
        "spec": {"groups": groups},
    }


# DaemonSets every GPU node needs whatever fills it (weights sync, image pre-pull)
NODE_CRITICAL_PRIORITY_CLASS = "system-node-critical"


def secret(name: str, namespace: str, string_data: Any) -> dict[str, Any]:
    """A Secret whose values come from Pulumi secrets (kept secret in state, masked in renders)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": "Opaque",
        "stringData": string_data,
    }
