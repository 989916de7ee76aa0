"""GPU headroom: placeholders that hold exactly one replica's room on the pool's nodes, below the vLLM pods'
priority, resized on the schedule; headroom that could never run is refused before anything is registered."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from llm_platform.components.specs import headroom as spec
from llm_platform.components.specs.model_cache import cache_wiring, nvme_daemonset
from llm_platform.components.specs.serving import deployment
from llm_platform.config.loader import PROJECT, ROOT, parse
from llm_platform.config.schema import StackConfig
from llm_platform.facts.cold_start import PREEMPTION_SECONDS
from llm_platform.plan import PoolPlan
from llm_platform.plan.naming import HEADROOM_NAMESPACE
from llm_platform.tools import render
from llm_platform.tools.preflight.pods import pod_requests
from tests.components import promtool
from tests.conftest import config_error
from tests.plans import model_plan, stack_plan
from tests.shared_check import SHARED_CHECK, check_render

FIXTURE = ROOT / "tests" / "fixtures" / "stacks" / "Pulumi.headroom.yaml"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
DAEMONSET = "kubernetes:apps/v1:DaemonSet"
SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
PRIORITY_CLASS = "kubernetes:scheduling.k8s.io/v1:PriorityClass"
RELEASE = "kubernetes:helm.sh/v3:Release"


def _values() -> dict[str, Any]:
    raw = yaml.safe_load(FIXTURE.read_text())["config"]
    return copy.deepcopy({k.split(":", 1)[1]: v for k, v in raw.items() if k.startswith(f"{PROJECT}:")})


def _config(values: dict[str, Any] | None = None) -> StackConfig:
    return parse(values or _values())


def _pool(cfg: StackConfig, name: str) -> PoolPlan:
    return stack_plan(cfg).pool(name)


# ------------------------------------------------------------------------------------------- schema


def test_fixture_headroom_parses() -> None:
    g5 = _config().pool("g5")
    assert g5.headroom is not None
    assert g5.headroom.gpus == 1 and g5.headroom.peak_gpus == 4
    assert g5.headroom.schedule[0].timezone == "America/New_York"


def test_headroom_that_can_never_fit_the_gpu_limit_is_refused() -> None:
    v = _values()
    v["gpuNodePools"][0]["headroom"]["schedule"][0]["gpus"] = 8  # + mistral's 1 at minReplicas > gpuLimit 8
    msg = config_error(v)
    assert "gpuNodePools[0] (g5).headroom" in msg
    assert "8 warm GPUs" in msg and "gpuLimit 8" in msg and "mistral-7b 1x1" in msg
    assert "at most 7 warm GPUs" in msg


def test_headroom_at_the_gpu_limit_is_fine() -> None:
    v = _values()
    v["gpuNodePools"][0]["headroom"]["schedule"][0]["gpus"] = 7
    assert _config(v).pool("g5").headroom.peak_gpus == 7  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("cron", "problem"),
    [("0 8 * *", "5 fields"), ("0 25 * * 1-5", "out of range 0-23"), ("0 8 * * mon", "invalid literal")],
)
def test_headroom_window_cron_is_checked(cron: str, problem: str) -> None:
    v = _values()
    v["gpuNodePools"][0]["headroom"]["schedule"][0]["start"] = cron
    msg = config_error(v)
    assert "headroom.schedule[0].start" in msg and repr(cron) in msg and problem in msg


def test_headroom_window_timezone_must_exist() -> None:
    v = _values()
    v["gpuNodePools"][0]["headroom"]["schedule"][0]["timezone"] = "America/Gotham"
    msg = config_error(v)
    assert "headroom.schedule[0].timezone" in msg and "'America/Gotham'" in msg and "IANA" in msg


def test_headroom_holds_whole_replicas() -> None:
    v = _values()
    v["gpuNodePools"][1]["headroom"]["gpus"] = 4  # llama-70b replicas take 8 GPUs
    msg = config_error(v)
    assert "gpuNodePools[1] (p4d).headroom.gpus: 4 is not a multiple of 8" in msg and "llama-70b" in msg


def test_a_window_only_raises_headroom() -> None:
    v = _values()
    v["gpuNodePools"][0]["headroom"] = {
        "gpus": 2,
        "schedule": [{"start": "0 22 * * *", "end": "0 6 * * *", "gpus": 0}],
    }
    msg = config_error(v)
    assert "headroom.schedule[0].gpus: 0 is below headroom.gpus 2" in msg


def test_headroom_on_a_pool_without_models_is_refused() -> None:
    v = _values()
    v["models"] = [m for m in v["models"] if m["nodePool"] != "p4d"]
    msg = config_error(v)
    assert "gpuNodePools[1] (p4d).headroom" in msg and "serves no model" in msg


def test_empty_headroom_is_refused() -> None:
    v = _values()
    v["gpuNodePools"][1]["headroom"] = {"gpus": 0}
    assert "keeps nothing warm" in config_error(v)


# --------------------------------------------------------------------------------------------- plan


def test_the_plan_resolves_each_pools_placeholders_warm_start_and_refill() -> None:
    """The facts the renderers and the simulator share: placeholders per window, a preempting replica's
    start, the buffer's refill through a new node."""
    plan = stack_plan(_config())
    g5 = plan.pool("g5").headroom
    assert g5 is not None and g5.deployment == "headroom-g5" and g5.replica_gpus == 1
    assert (g5.placeholders, [w.placeholders for w in g5.windows], g5.peak_placeholders) == (1, [4], 4)
    p4d = plan.pool("p4d").headroom
    assert p4d is not None and (p4d.replica_gpus, p4d.placeholders, p4d.windows) == (8, 1, ())
    mistral = plan.model("mistral-7b")
    new = mistral.cold_start.new_node
    assert new is not None
    # preempting a placeholder skips the node launch and the image pull / weights sync, nothing else
    assert g5.warm_start("mistral-7b") == pytest.approx(
        PREEMPTION_SECONDS + new.total - new.node_ready - max(new.image_pull, new.node_prefetch)
    )
    assert g5.refill_seconds == pytest.approx(new.node_ready + max(new.image_pull, new.node_prefetch))
    assert stack_plan("dev").pools[0].headroom is None


# ---------------------------------------------------------------------------------------- manifests


def _vllm_pod(cfg: StackConfig, model_name: str) -> dict[str, Any]:
    model = model_plan(cfg, model_name)
    manifest = deployment(
        model, environment="staging", wiring=cache_wiring(model, bucket="b"), mounts_hf_token=False
    )
    return manifest["spec"]["template"]["spec"]


@pytest.mark.parametrize("cache", ["nvme", "s3"])
@pytest.mark.parametrize(("pool", "model"), [("g5", "mistral-7b"), ("p4d", "llama-70b")])
def test_a_placeholder_frees_exactly_what_one_replica_needs(pool: str, model: str, cache: str) -> None:
    """Preempting one placeholder must free the GPUs, CPU and memory of a replica on the same kind of node
    (s3: the replica also runs its compile-cache sidecar)."""
    values = _values()
    for m in values["models"]:
        m["cache"] = cache
    cfg = _config(values)
    placeholder = spec.placeholder_deployment(_pool(cfg, pool))["spec"]["template"]["spec"]
    replica = _vllm_pod(cfg, model)
    # as the scheduler and Karpenter count a pod: with the replica's native sidecars, past its init steps
    assert pod_requests(placeholder) == pod_requests(replica)
    assert placeholder["nodeSelector"] == replica["nodeSelector"]
    assert placeholder["tolerations"] == replica["tolerations"]


def test_replicas_preempt_placeholders_and_placeholders_preempt_nothing() -> None:
    cfg = _config()
    serving, holding = spec.serving_priority_class(), spec.headroom_priority_class()
    placeholder = spec.placeholder_deployment(_pool(cfg, "g5"))["spec"]["template"]["spec"]
    assert _vllm_pod(cfg, "mistral-7b")["priorityClassName"] == serving["metadata"]["name"]
    assert placeholder["priorityClassName"] == holding["metadata"]["name"]
    assert serving["value"] > 0 > holding["value"], "below pods without a class (0), above none"
    assert serving["preemptionPolicy"] == "PreemptLowerPriority"
    assert holding["preemptionPolicy"] == "Never"
    assert not serving["globalDefault"] and not holding["globalDefault"]


def test_the_schedule_resizes_the_placeholders_through_keda() -> None:
    cfg = _config()
    g5 = _pool(cfg, "g5")
    placeholder = spec.placeholder_deployment(g5)
    assert "replicas" not in placeholder["spec"], "KEDA's HPA owns the count; pulumi up must not reset it"
    so = spec.scaled_object(g5)["spec"]
    assert so["scaleTargetRef"]["name"] == placeholder["metadata"]["name"]
    assert (so["minReplicaCount"], so["maxReplicaCount"]) == (1, 4)
    assert "cooldownPeriod" not in so, "KEDA waits it only before scaling to zero, never above a floor of 1"
    (trigger,) = so["triggers"]
    assert trigger["type"] == "cron"
    assert trigger["metadata"] == {
        "timezone": "America/New_York",
        "start": "0 8 * * 1-5",
        "end": "0 18 * * 1-5",
        "desiredReplicas": "4",
    }


def test_without_a_schedule_the_deployment_holds_the_placeholders() -> None:
    cfg = _config()
    p4d = _pool(cfg, "p4d")
    assert spec.placeholder_deployment(p4d)["spec"]["replicas"] == 1  # 8 GPUs, one 8-GPU replica
    with pytest.raises(ValueError, match="no headroom schedule"):
        spec.scaled_object(p4d)


@pytest.mark.parametrize(("pool", "model"), [("g5", "mistral-7b"), ("p4d", "llama-70b")])
def test_every_node_of_a_serving_pool_pulls_what_its_replicas_run(pool: str, model: str) -> None:
    """A node Karpenter launched for a placeholder must already hold every image a replica needs."""
    cfg = _config()
    daemonset = spec.prepull_daemonset(_pool(cfg, pool))["spec"]["template"]["spec"]
    replica = _vllm_pod(cfg, model)
    needed = {c["image"] for c in replica["containers"] + replica.get("initContainers", [])}
    assert {c["image"] for c in daemonset["initContainers"]} == needed
    assert all(c["command"] == ["true"] for c in daemonset["initContainers"]), "pull, then exit"
    assert daemonset["nodeSelector"] == replica["nodeSelector"]
    assert daemonset["tolerations"] == replica["tolerations"]
    for c in daemonset["initContainers"] + daemonset["containers"]:
        assert c["resources"]["requests"] == {"cpu": "1m", "memory": "8Mi"}, "tiny: never crowds a replica"


def test_nvme_weights_are_synced_on_the_same_nodes_as_the_pre_pull() -> None:
    cfg = _config()
    mistral = model_plan(cfg, cfg.models[0].name)
    assert mistral.cache.mode == "nvme"
    sync = nvme_daemonset(mistral, bucket="b")["spec"]["template"]
    prepull = spec.prepull_daemonset(_pool(cfg, "g5"))["spec"]["template"]
    assert sync["spec"]["nodeSelector"] == prepull["spec"]["nodeSelector"]
    assert sync["spec"]["tolerations"] == prepull["spec"]["tolerations"]


# ------------------------------------------------------------------------------------------ program


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture stack rendered exactly as `python -m llm_platform.tools.render` renders a stack file."""
    out = tmp_path_factory.mktemp("render") / "headroom"
    assert render.main([str(FIXTURE), "--out", str(out)]) == 0
    return out


@pytest.mark.skipif(not SHARED_CHECK.exists(), reason="shared/tools/check_render.py sits beside the repo")
def test_fixture_render_passes_the_pinned_crds_and_schemas(rendered: Path) -> None:
    result = check_render(rendered)
    assert result.returncode == 0, result.stdout
    kinds = {d["kind"] for d in yaml.safe_load_all((rendered / "manifests.yaml").read_text()) if d}
    assert {"PriorityClass", "ScaledObject", "Deployment", "DaemonSet", "PrometheusRule"} <= kinds
    boards = [
        d
        for d in yaml.safe_load_all((rendered / "manifests.yaml").read_text())
        if d and d["kind"] == "ConfigMap" and d["metadata"]["name"] == "llm-platform-headroom"
    ]
    assert boards and boards[0]["metadata"]["labels"]["grafana_dashboard"] == "1"


def test_the_program_registers_headroom_after_keda(run_program) -> None:
    m = run_program("headroom")  # the fixture the `rendered` folder is: one evaluation for both
    placeholders = {
        d.inputs["metadata"]["name"]: d
        for d in m.by_type(DEPLOYMENT)
        if d.inputs["metadata"].get("namespace") == HEADROOM_NAMESPACE
    }
    assert set(placeholders) == {"headroom-g5", "headroom-p4d"}
    (schedule,) = [
        s for s in m.by_type(SCALED_OBJECT) if s.inputs["metadata"]["namespace"] == HEADROOM_NAMESPACE
    ]
    assert schedule.depends_on(RELEASE, "llm-headroom-test-keda-release"), (
        "the ScaledObject needs KEDA's CRDs"
    )
    assert {p.inputs["metadata"]["name"] for p in m.by_type(PRIORITY_CLASS)} == {
        "llm-serving",
        "llm-headroom",
    }
    for name, placeholder in placeholders.items():
        assert placeholder.depends_on(PRIORITY_CLASS), f"{name}: pods need their PriorityClass first"
    vllm = [
        d for d in m.by_type(DEPLOYMENT) if d.inputs["metadata"].get("namespace", "").startswith("model-")
    ]
    assert len(vllm) == 2
    for d in vllm:
        assert d.inputs["spec"]["template"]["spec"]["priorityClassName"] == "llm-serving"
        assert d.depends_on(PRIORITY_CLASS), "vLLM pods are refused until their PriorityClass exists"


def test_a_stack_without_headroom_registers_no_placeholder(run_program) -> None:
    m = run_program("dev")
    assert [p.inputs["metadata"]["name"] for p in m.by_type(PRIORITY_CLASS)] == ["llm-serving"]
    assert not [
        d for d in m.by_type(DEPLOYMENT) if d.inputs["metadata"].get("namespace") == HEADROOM_NAMESPACE
    ]
    # its pool still pre-pulls the vLLM image on every node
    (prepull,) = [
        d for d in m.by_type(DAEMONSET) if d.inputs["metadata"].get("namespace") == HEADROOM_NAMESPACE
    ]
    assert prepull.inputs["metadata"]["name"] == "prepull-gpu-spot"


# ------------------------------------------------------------------------------------------ alerting


def _deployment_series(metric: str, pool: str, values: str) -> dict[str, str]:
    labels = f'namespace="{HEADROOM_NAMESPACE}",deployment="headroom-{pool}",job="kube-state-metrics"'
    return {"series": f"{metric}{{{labels}}}", "values": values}


def test_empty_buffer_alert_waits_a_node_launch_per_pool() -> None:
    cfg = _config()
    (g5_rule, p4d_rule) = spec.alert_rules([p for p in stack_plan(cfg).pools if p.headroom])
    assert (g5_rule["for"], p4d_rule["for"]) == ("3m", "7m"), "g5 nodes launch in ~102 s, p4d in ~302 s"


def test_empty_buffer_alert_fires_only_when_placeholders_are_wanted_and_none_runs(tmp_path: Path) -> None:
    cfg = _config()
    rule = spec.prometheus_rule([_pool(cfg, "g5")])
    promtool.check_rule_file(rule["spec"], tmp_path)
    spec_replicas, available = "kube_deployment_spec_replicas", "kube_deployment_status_replicas_available"
    labels = {
        "severity": "warning",
        "pool": "g5",
        "namespace": HEADROOM_NAMESPACE,
        "deployment": "headroom-g5",
    }
    annotations = rule["spec"]["groups"][0]["rules"][0]["annotations"]
    tests = [
        {
            "interval": "1m",
            "input_series": [
                # wanted 4 all along; all preempted at minute 10; one back at minute 12 (a node launch),
                # all gone again from minute 20 and never refilled
                _deployment_series(spec_replicas, "g5", "4x40"),
                _deployment_series(available, "g5", "4x9 0 0 1x7 0x20"),
            ],
            "alert_rule_test": [
                {"eval_time": "12m", "alertname": "GpuHeadroomEmpty", "exp_alerts": []},
                {"eval_time": "22m", "alertname": "GpuHeadroomEmpty", "exp_alerts": []},
                {
                    "eval_time": "24m",
                    "alertname": "GpuHeadroomEmpty",
                    "exp_alerts": [{"exp_labels": labels, "exp_annotations": annotations}],
                },
            ],
        },
        {
            "interval": "1m",
            # outside the schedule nothing is wanted: an empty buffer is no alert
            "input_series": [
                _deployment_series(spec_replicas, "g5", "0x40"),
                _deployment_series(available, "g5", "0x40"),
            ],
            "alert_rule_test": [{"eval_time": "30m", "alertname": "GpuHeadroomEmpty", "exp_alerts": []}],
        },
    ]
    promtool.unit_test_rules(rule["spec"], tests, tmp_path)
