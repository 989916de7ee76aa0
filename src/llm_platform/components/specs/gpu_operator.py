"""What the NVIDIA GPU Operator looks like on EKS: only the pieces the AMIs do not already ship."""

from __future__ import annotations

from typing import Any

from llm_platform.components.specs.common import (
    ADDON_NODE_LABEL,
    ADDON_TOLERATION,
    GPU_TOLERATION,
    SYSTEM_TOLERATION,
)
from llm_platform.plan.addon_pods import GPU_OPERATOR_OPERATOR


def helm_values(*, mig_in_use: bool) -> dict[str, Any]:
    """EKS NVIDIA AMIs (AL2023 and Bottlerocket) already carry the driver and container toolkit, so the
    operator runs neither; Bottlerocket nodes are labelled so no second device plugin lands there (see the
    NodePool labels). DCGM exporter metrics reach Prometheus through the chart's ServiceMonitor, which
    kube-prometheus-stack selects (it selects every ServiceMonitor in the cluster)."""
    addons = {"nodeSelector": dict(ADDON_NODE_LABEL), "tolerations": [ADDON_TOLERATION]}
    return {
        "driver": {"enabled": False},
        "toolkit": {"enabled": False},
        # the AMIs' runtime exposes GPUs through the NVIDIA runtime; CDI specs would need the toolkit operand
        "cdi": {"enabled": False},
        "devicePlugin": {"enabled": True},
        "dcgmExporter": {
            "enabled": True,
            "serviceMonitor": {"enabled": True, "interval": "15s", "honorLabels": False},
        },
        "gfd": {"enabled": True},
        # NFD runs as its own release (see nfd_values) so its master and gc can sit on the tainted add-on nodes
        "nfd": {"enabled": False},
        "mig": {"strategy": "mixed" if mig_in_use else "single"},
        # MIG stays off unless a pool asks for it (its nodes then carry nvidia.com/mig.config)
        "migManager": {"enabled": mig_in_use},
        "daemonsets": {"tolerations": [GPU_TOLERATION]},
        "operator": {**addons, "resources": {"requests": GPU_OPERATOR_OPERATOR.as_dict()}},
    }


def nfd_values() -> dict[str, Any]:
    """Node Feature Discovery, configured as the GPU Operator's bundled copy (same version, same PCI and
    label settings) but with its master and garbage collector on the add-on nodes."""
    addons = {"nodeSelector": dict(ADDON_NODE_LABEL), "tolerations": [ADDON_TOLERATION]}
    return {
        "priorityClassName": "system-node-critical",
        "master": {**addons, "config": {"extraLabelNs": ["nvidia.com"]}},
        "gc": {**addons, "enable": True, "replicaCount": 1},
        "worker": {
            "tolerations": [GPU_TOLERATION, SYSTEM_TOLERATION],
            "config": {
                "sources": {
                    "pci": {
                        "deviceClassWhitelist": ["02", "0200", "0207", "0300", "0302"],
                        "deviceLabelFields": ["vendor"],
                    }
                }
            },
        },
    }
