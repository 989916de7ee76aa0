"""The add-on nodes: a Karpenter CPU NodePool and its EC2NodeClass, where every platform add-on but Karpenter
runs (Karpenter stays on the fixed system node group, never on capacity it manages).

Fields follow Karpenter v1's CRDs at the pinned version (karpenter.sh_nodepools.yaml,
karpenter.k8s.aws_ec2nodeclasses.yaml in karpenter-crd 1.14.1): `limits` counts the capacity of the nodes
it launches (not the pods' requests), `budgets[].nodes` a share of the pool's nodes.
"""

from __future__ import annotations

from typing import Any

from llm_platform.components.specs.common import ADDON_NODE_LABEL, ADDON_TAINT
from llm_platform.components.specs.karpenter import (
    NODE_CLASS_API,
    NODE_POOL_API,
    ebs_volume,
    node_requirements,
)
from llm_platform.plan.nodes import AddonPoolPlan

# a draining node waits this long for do-not-disrupt pods and PDBs before its pods are forced off (expiry)
TERMINATION_GRACE_PERIOD = "1h"


def node_class(
    pool: AddonPoolPlan, *, cluster_name: str, node_role_name: str, tags: dict[str, str]
) -> dict[str, Any]:
    """AL2023 at the release the GPU nodes use (its alias picks the standard, non-accelerated AMI for CPU
    instances), an encrypted gp3 root sized for images, logs and the loader Job's scratch, IMDSv2 only with a
    hop limit of 1 (the add-ons get AWS credentials through Pod Identity, never the node's role)."""
    return {
        "apiVersion": NODE_CLASS_API,
        "kind": "EC2NodeClass",
        "metadata": {"name": pool.name, "labels": {"app.kubernetes.io/managed-by": "pulumi"}},
        "spec": {
            "amiSelectorTerms": [{"alias": f"al2023@{pool.ami_version}"}],
            "role": node_role_name,
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": cluster_name}}],
            "securityGroupSelectorTerms": [{"tags": {"aws:eks:cluster-name": cluster_name}}],
            "blockDeviceMappings": [
                ebs_volume("/dev/xvda", f"{pool.disk_size_gib}Gi", iops=3000, throughput=125)
            ],
            "metadataOptions": {
                "httpEndpoint": "enabled",
                "httpProtocolIPv6": "disabled",
                "httpPutResponseHopLimit": 1,
                "httpTokens": "required",
            },
            "tags": {**tags, "llm-platform/node-class": pool.name},
        },
    }


def disruption_budgets(pool: AddonPoolPlan) -> list[dict[str, Any]]:
    """At most `disruptionBudgetPercent` of the add-on nodes at a time (rounded up: never zero), and drifted
    nodes one by one so a new AMI rolls through Prometheus and the pickers gently."""
    return [
        {"nodes": f"{pool.disruption_budget_percent}%"},
        {"nodes": "1", "reasons": ["Drifted"]},
    ]


def node_pool(pool: AddonPoolPlan, *, zones: list[str]) -> dict[str, Any]:
    """Every zone of the cluster, so a Prometheus volume's zone always has a node Karpenter may launch.
    Consolidated when empty or underutilised: the add-ons' PDBs and do-not-disrupt annotations keep what
    must not move in place."""
    requirements = node_requirements(
        [i.instance_type for i in pool.instances], pool.families, pool.capacity_types, zones
    )
    return {
        "apiVersion": NODE_POOL_API,
        "kind": "NodePool",
        "metadata": {"name": pool.name, "labels": {"app.kubernetes.io/managed-by": "pulumi"}},
        "spec": {
            "template": {
                "metadata": {"labels": dict(ADDON_NODE_LABEL)},
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": pool.name},
                    "requirements": requirements,
                    "taints": [dict(ADDON_TAINT)],
                    "expireAfter": pool.expire_after,
                    "terminationGracePeriod": TERMINATION_GRACE_PERIOD,
                },
            },
            "limits": {"cpu": str(pool.cpu_limit), "memory": f"{pool.memory_limit_gib}Gi"},
            "disruption": {
                "consolidationPolicy": "WhenEmptyOrUnderutilized",
                "consolidateAfter": pool.consolidate_after,
                "budgets": disruption_budgets(pool),
            },
        },
    }
