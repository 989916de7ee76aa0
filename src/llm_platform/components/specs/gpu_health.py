"""How failed GPUs are found and replaced: the health signals GPU nodes run, the repair the pinned versions
support, and alerts for what repair does not fix.

Signals:
- The EKS node monitoring agent (EKS add-on `eks-node-monitoring-agent`, a DaemonSet on every node) sets node
  conditions from the kernel log, NVIDIA XID events and DCGM diagnostics; `AcceleratedHardwareReady` is the
  GPU's (../shared/research/serving_paths_2026.md, EKS docs `node-health.md`).
- The GPU Operator's DCGM exporter (v26.7.0 runs it with DCGM_EXPORTER_COLLECTORS=/etc/dcgm-exporter/
  dcp-metrics-included.csv: assets/state-dcgm-exporter/0800_daemonset.yaml:47-48) exports
  `DCGM_FI_DEV_XID_ERRORS` (the last XID seen, a gauge) and `DCGM_FI_DEV_ROW_REMAP_FAILURE` (dcgm-exporter
  etc/dcp-metrics-included.csv:29 and :67 at 4.5.3-4.8.2, the newest tag read; the operator pins 4.6.0-4.8.3).

Repair:
- Karpenter's `NodeRepair` feature gate (components/specs/karpenter.py helm_values) replaces a Karpenter node
  whose AcceleratedHardwareReady has been False for 10 minutes (karpenter-provider-aws v1.14.1
  pkg/cloudprovider/cloudprovider.go:320-324): every GPU node is Karpenter's.
- EKS node auto repair (`nodeRepairConfig.enabled` of the aws:eks/nodeGroup:NodeGroup, pulumi-aws 7.x
  NodeGroupNodeRepairConfigArgs) on the system managed node group, set through a transform because pulumi-eks
  4.4.0's ManagedNodeGroup has no argument for it (`system_node_group_repair`).

Alerts (what repair does not fix): a GPU node still reporting AcceleratedHardwareReady=False well past
Karpenter's toleration (repair off, blocked, or the replacement failed), an XID that needs a GPU reset or
node replacement, and a failed row remap (the GPU must be replaced)."""

from __future__ import annotations

from typing import Any

import pulumi

from llm_platform.components.specs.common import rule_manifest

NODE_MONITORING_AGENT_ADDON = "eks-node-monitoring-agent"
ACCELERATED_CONDITION = "AcceleratedHardwareReady"
KARPENTER_TOLERATION_MINUTES = 10  # cloudprovider.go:323
# repair should have replaced the node by then: the toleration, a new node's launch, and the old one's drain
NOT_REPAIRED_FOR = "30m"
NODE_GROUP_TYPE = "aws:eks/nodeGroup:NodeGroup"
RULE_NAME = "gpu-health"
# XIDs after which the GPU needs a reset or the node a replacement (NVIDIA XID catalogue, "Xid Errors"):
# 48 double-bit ECC, 63/64 row-remap pending/failed, 74 NVLink, 79 fell off the bus, 92 high single-bit ECC,
# 94/95 contained/uncontained ECC, 119/120 GSP RPC timeout/error
RESET_XIDS = (48, 63, 64, 74, 79, 92, 94, 95, 119, 120)
XID_METRIC = "DCGM_FI_DEV_XID_ERRORS"
ROW_REMAP_FAILURE_METRIC = "DCGM_FI_DEV_ROW_REMAP_FAILURE"
NODE_CONDITION_METRIC = "kube_node_status_condition"  # kube-state-metrics: every condition of node.status
# dcgm-exporter's per-GPU labels; the node's is `Hostname` up to 4.5.3-4.8.2 and `hostname` after (#655)
GPU_LABELS = "Hostname, hostname, gpu, UUID"


def _rule(
    alert: str, expr: str, duration: str, severity: str, summary: str, description: str
) -> dict[str, Any]:
    return {
        "alert": alert,
        "expr": expr,
        "for": duration,
        "labels": {"severity": severity},
        "annotations": {
            "summary": summary,
            "description": description,
            "runbook": "docs/capacity.md: a node whose GPUs fail is replaced",
        },
    }


def xid_expr() -> str:
    """The GPUs whose last XID is one that needs a reset or a new node (the gauge's value is the XID)."""
    last = f"max by ({GPU_LABELS}) ({XID_METRIC})"
    return " or ".join(f"{last} == {x}" for x in RESET_XIDS)


def alert_rules(node_repair: bool) -> list[dict[str, Any]]:
    xids = ", ".join(str(x) for x in RESET_XIDS)
    repaired_by = (
        f"Karpenter's NodeRepair should have replaced it after {KARPENTER_TOLERATION_MINUTES} minutes: check "
        "the Karpenter controller's log for the node"
        if node_repair
        else "node repair is off (cluster.nodeRepair: false): cordon, drain and delete the node"
    )
    return [
        _rule(
            "GpuNodeNotRepaired",
            f'{NODE_CONDITION_METRIC}{{condition="{ACCELERATED_CONDITION}",status="false"}} == 1',
            NOT_REPAIRED_FOR,
            "critical",
            "GPU node {{ $labels.node }} has failed GPUs and was not replaced",
            f"The EKS node monitoring agent reports {ACCELERATED_CONDITION}=False on {{{{ $labels.node }}}}. "
            + repaired_by
            + ".",
        ),
        _rule(
            "GpuXidNeedsReset",
            xid_expr(),
            "1m",
            "warning",
            "GPU {{ $labels.gpu }} on {{ $labels.Hostname }}{{ $labels.hostname }} reported XID {{ $value }}",
            f"XIDs {xids} need a GPU reset or a new node; the node monitoring agent marks the node "
            f"{ACCELERATED_CONDITION}=False for them and repair replaces it. Other XIDs are usually the "
            "application's (13, 31, 43).",
        ),
        _rule(
            "GpuRowRemapFailed",
            f"max by ({GPU_LABELS}) ({ROW_REMAP_FAILURE_METRIC}) > 0",
            "5m",
            "critical",
            "GPU {{ $labels.gpu }} on {{ $labels.Hostname }}{{ $labels.hostname }} failed a row remap",
            "Its memory can no longer be repaired in place: the GPU must be replaced (the node retired). "
            + repaired_by
            + ".",
        ),
    ]


def prometheus_rule(namespace: str, *, node_repair: bool) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": "gpu-health", "app.kubernetes.io/component": "alerting"}
    return rule_manifest(
        RULE_NAME, namespace, [{"name": "gpu.health", "rules": alert_rules(node_repair)}], labels
    )


def system_node_group_repair(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
    """A transform for the system ManagedNodeGroup: its aws:eks/nodeGroup:NodeGroup child gets EKS node auto
    repair (`nodeRepairConfig.enabled`, the NodeGroup's input; the engine hands a packaged component's children
    to transforms with their inputs under the resource's own property names)."""
    if args.type_ != NODE_GROUP_TYPE:
        return None
    props = {**args.props, "nodeRepairConfig": {"enabled": True}}
    return pulumi.ResourceTransformResult(props=props, opts=args.opts)
