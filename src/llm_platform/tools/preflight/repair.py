"""Failed GPU nodes are found and replaced (components/specs/gpu_health.py): staging and prod need Karpenter's
NodeRepair gate on, the EKS node monitoring agent add-on (the AcceleratedHardwareReady condition repair acts
on) and the GPU health alerts. An EKS stack only: on an existing cluster the platform runs no Karpenter."""

from __future__ import annotations

from llm_platform.components.specs import gpu_health
from llm_platform.components.specs.karpenter import RELEASE
from llm_platform.tools.preflight.findings import Finding
from llm_platform.tools.preflight.view import RenderView

CHECK = "repair"
REQUIRED_IN = ("staging", "prod")
ADDON_TYPE = "aws:eks/addon:Addon"
FIX = "set cluster.nodeRepair: true (the default)"


def repair(view: RenderView) -> list[Finding]:
    karpenter = view.releases.get(RELEASE)
    if karpenter is None or view.environment not in REQUIRED_IN:
        return []
    out: list[Finding] = []
    gates = karpenter.values.get("settings", {}).get("featureGates", {})
    if gates.get("nodeRepair") is not True:
        out.append(
            Finding(
                "blocker",
                CHECK,
                f"Helm release {RELEASE}",
                "values.settings.featureGates.nodeRepair",
                f"{gates.get('nodeRepair')!r}: a GPU node whose GPUs fail (AcceleratedHardwareReady=False) keeps "
                f"its replicas' pods and is never replaced; {view.environment} requires node repair: {FIX}",
            )
        )
    addons = {inputs.get("addonName") for inputs in view.of_type(ADDON_TYPE).values()}
    if gpu_health.NODE_MONITORING_AGENT_ADDON not in addons:
        out.append(
            Finding(
                "blocker",
                CHECK,
                f"EKS add-on {gpu_health.NODE_MONITORING_AGENT_ADDON}",
                "addonName",
                f"not installed: no node reports AcceleratedHardwareReady, so nothing repairs a failed GPU; {FIX}",
            )
        )
    rules = {m.name for m in view.of_kind("PrometheusRule")}
    if gpu_health.RULE_NAME not in rules:
        out.append(
            Finding(
                "blocker",
                CHECK,
                f"PrometheusRule {gpu_health.RULE_NAME}",
                "spec.groups",
                "missing: XIDs, failed row remaps and GPU nodes repair did not replace go unalerted",
            )
        )
    return out
