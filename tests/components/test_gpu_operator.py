"""GPU Operator on EKS: no driver or toolkit (the AMIs ship them), DCGM metrics, GPU taint tolerated."""

from __future__ import annotations

from llm_platform.components.specs import gpu_operator as spec
from llm_platform.components.specs.common import ADDON_TOLERATION

RELEASE = "kubernetes:helm.sh/v3:Release"
NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"


def test_driver_and_toolkit_stay_with_the_ami() -> None:
    values = spec.helm_values(mig_in_use=False)
    assert values["driver"] == {"enabled": False}
    assert values["toolkit"] == {"enabled": False}


def test_dcgm_exporter_has_a_service_monitor() -> None:
    exporter = spec.helm_values(mig_in_use=False)["dcgmExporter"]
    assert exporter["enabled"] is True
    assert exporter["serviceMonitor"]["enabled"] is True


def test_operands_tolerate_the_gpu_taint_and_controllers_sit_on_addon_nodes() -> None:
    values = spec.helm_values(mig_in_use=False)
    gpu = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    assert gpu in values["daemonsets"]["tolerations"]
    assert values["operator"]["nodeSelector"] == {"llm-platform/node-role": "addons"}
    assert values["operator"]["tolerations"] == [ADDON_TOLERATION]
    nfd = spec.nfd_values()
    assert gpu in nfd["worker"]["tolerations"]
    assert nfd["master"]["nodeSelector"] == nfd["gc"]["nodeSelector"] == {"llm-platform/node-role": "addons"}
    assert nfd["master"]["config"]["extraLabelNs"] == ["nvidia.com"]


def test_mig_is_off_unless_a_pool_asks_for_it() -> None:
    assert spec.helm_values(mig_in_use=False)["migManager"] == {"enabled": False}
    on = spec.helm_values(mig_in_use=True)
    assert on["migManager"] == {"enabled": True} and on["mig"] == {"strategy": "mixed"}


def test_release_is_pinned_and_waits_for_nfd(run_program) -> None:
    m = run_program("prod")
    operator = m.named("llm-prod-gpu-operator-release")
    assert operator.inputs["chart"] == "gpu-operator" and operator.inputs["version"] == "v26.7.0"
    assert operator.inputs["repositoryOpts"]["repo"] == "https://helm.ngc.nvidia.com/nvidia"
    assert operator.depends_on(RELEASE, "llm-prod-gpu-operator-nfd")
    assert operator.depends_on(NODE_POOL, "llm-prod-addons-pool"), "controllers need the add-on nodes"
    nfd = m.named("llm-prod-gpu-operator-nfd")
    assert nfd.inputs["version"] == "0.19.0"
