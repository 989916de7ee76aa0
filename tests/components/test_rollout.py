"""A progressive rollout as the real __main__.py registers it for tests/fixtures/stacks/Pulumi.rollout.yaml: the
Argo Rollouts add-on, the Rollout over the Deployment's template, the per-version analysis, the two
InferencePools and the weighted route; the schema's located errors; preflight's overlap check; the render's
validation against the pinned CRDs and the shared check."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from llm_platform.components.specs import rollout as rollout_spec
from llm_platform.config.loader import ConfigError, parse
from llm_platform.facts.addons import ARGO_ROLLOUTS, addon
from llm_platform.plan.rollout import SCALE_DOWN_DELAY_SECONDS, rollout_plan
from llm_platform.tools import render, validate_render
from llm_platform.tools.preflight import view as preflight_view
from llm_platform.tools.preflight.rollout import rollout_overlap
from llm_platform.tools.preflight.view import RenderView
from tests.conftest import fixture_stack, stack_values
from tests.plans import model_plan
from tests.shared_check import SHARED_CHECK, check_render


@pytest.fixture(scope="module")
def run() -> render.Render:
    return render.evaluate(fixture_stack("rollout"))


def _one(run: render.Render, kind: str, name: str) -> dict[str, Any]:
    return next(o for o in run.manifests if o["kind"] == kind and o["metadata"]["name"] == name)


# ------------------------------------------------------------------------------------------------ render


def test_the_rollout_takes_the_pods_over_from_the_deployments_template(run: render.Render) -> None:
    deployment = _one(run, "Deployment", "llama-8b")
    # no replicas (Argo scales it down as the Rollout's pods become Ready); its pods are the stable track
    assert "replicas" not in deployment["spec"]
    assert deployment["spec"]["template"]["metadata"]["labels"]["llm-platform/track"] == "stable"
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "vllm/vllm-openai:v0.31.0"  # the candidate
    assert container["args"][-1] == "--enable-chunked-prefill"
    rollout = _one(run, "Rollout", "llama-8b")
    assert rollout["spec"]["workloadRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "llama-8b",
        "scaleDown": "progressively",
    }
    canary = rollout["spec"]["strategy"]["canary"]
    assert (canary["stableService"], canary["canaryService"]) == ("llama-8b", "llama-8b-canary")
    assert canary["dynamicStableScale"] is False  # an abort needs no cold start
    assert canary["scaleDownDelaySeconds"] == SCALE_DOWN_DELAY_SECONDS
    assert canary["steps"] == [
        {"setWeight": 5}, {"pause": {"duration": "600s"}},
        {"setWeight": 25}, {"pause": {"duration": "600s"}},
        {"setWeight": 50}, {"pause": {"duration": "600s"}},
    ]  # fmt: skip
    assert canary["trafficRouting"]["plugins"]["argoproj-labs/gatewayAPI"] == {
        "httpRoutes": [{"name": "llama-8b-by-path"}],
        "namespace": "model-llama-8b",
    }
    scaled = _one(run, "ScaledObject", "llama-8b")
    assert scaled["spec"]["scaleTargetRef"] == {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "name": "llama-8b",
    }


def test_each_pool_selects_one_version_and_the_route_weighs_them(run: render.Render) -> None:
    stable = run.helm["llama-8b"]["values"]["router"]["modelServers"]["matchLabels"]
    canary = run.helm["llama-8b-canary"]["values"]["router"]["modelServers"]["matchLabels"]
    assert stable["llm-platform/track"] == "stable" and canary["llm-platform/track"] == "canary"
    rollout = _one(run, "Rollout", "llama-8b")["spec"]["strategy"]["canary"]
    assert rollout["stableMetadata"]["labels"] == {"llm-platform/track": "stable"}
    assert rollout["canaryMetadata"]["labels"] == {"llm-platform/track": "canary"}
    refs = _one(run, "HTTPRoute", "llama-8b-by-path")["spec"]["rules"][0]["backendRefs"]
    # named as the Rollout's Services: the plugin matches backendRefs by name (httproute.go@v0.15.0)
    assert [(r["kind"], r["name"], r["weight"]) for r in refs] == [
        ("InferencePool", "llama-8b", 100),
        ("InferencePool", "llama-8b-canary", 0),
    ]
    canary_affinity = run.helm["llama-8b-canary"]["values"]["router"]["epp"]["affinity"]
    assert "llama-8b-canary-epp" in str(canary_affinity) and "'llama-8b-epp'" not in str(canary_affinity)


def test_the_analysis_reads_the_candidates_own_metrics(run: render.Render) -> None:
    template = _one(run, "AnalysisTemplate", "llama-8b-rollout")
    metrics = {m["name"]: m for m in template["spec"]["metrics"]}
    assert set(metrics) == {"ttft-p95", "itl-p95", "error-rate", "throttle-rate"}
    ttft = metrics["ttft-p95"]
    assert "vllm:time_to_first_token_seconds_bucket" in ttft["provider"]["prometheus"]["query"]
    assert 'rollouts_pod_template_hash="{{args.canary-hash}}"' in ttft["provider"]["prometheus"]["query"]
    assert ttft["successCondition"] == "isNaN(result[0]) || result[0] <= 0.5"  # the model's SLO
    assert "vllm:inter_token_latency_seconds_bucket" in metrics["itl-p95"]["provider"]["prometheus"]["query"]
    throttle = metrics["throttle-rate"]["provider"]["prometheus"]["query"]
    assert 'service="llama-8b-canary-epp",error_code="ResourceExhausted"' in throttle
    assert metrics["error-rate"]["successCondition"] == "result[0] <= 0.01"
    monitor = _one(run, "PodMonitor", "llama-8b")
    assert monitor["spec"]["podTargetLabels"] == ["rollouts-pod-template-hash"]


def test_argo_rollouts_is_installed_only_with_a_rollout(run: render.Render) -> None:
    values = run.helm["argo-rollouts"]
    assert values["version"] == ARGO_ROLLOUTS.version == "2.41.0"
    plugin = values["values"]["controller"]["trafficRouterPlugins"]
    assert plugin == [
        {
            "name": "argoproj-labs/gatewayAPI",
            "location": "file:///plugins/rollouts-plugin-trafficrouter-gatewayapi",
        }
    ]
    init = values["values"]["controller"]["initContainers"][0]
    assert init["image"].endswith(":v0.15.0")
    assert {f.kind for f in addon("argo-rollouts").crd_files} == {"Rollout", "AnalysisTemplate"}
    lora = render.evaluate(fixture_stack("lora"))
    assert "argo-rollouts" not in lora.helm
    assert not [o for o in lora.manifests if o["kind"] in ("Rollout", "AnalysisTemplate")]


def test_render_validates_against_the_pinned_crds(run: render.Render) -> None:
    kinds = {o["kind"] for o in run.manifests}
    assert {"Rollout", "AnalysisTemplate", "HTTPRoute"} <= kinds
    assert validate_render.problems(run.manifests, validate_render.load_crds(), "1.34") == []


def test_a_broken_rollout_object_fails_validation(run: render.Render) -> None:
    broken = copy.deepcopy(run.manifests)
    rollout = next(o for o in broken if o["kind"] == "Rollout")
    rollout["spec"]["strategy"]["canary"]["steps"][0] = {"setWeigth": 5}
    found = validate_render.problems(broken, validate_render.load_crds(), "1.34")
    assert found and "setWeigth" in " ".join(found)


@pytest.mark.skipif(not SHARED_CHECK.exists(), reason="the shared render check is not on this machine")
def test_render_passes_the_shared_check(run: render.Render, tmp_path: Path) -> None:
    """Every object against the shared reference schemas and chart values; the reference has no Argo Rollouts
    CRDs, so its one finding allowed is that it cannot check the two Argo kinds, which
    test_render_validates_against_the_pinned_crds checks against the pinned upstream files."""
    render.write(run, tmp_path)
    result = check_render(tmp_path)
    summary = re.search(r"checked \d+ manifests and \d+ helm releases: (\d+) problems?", result.stdout)
    unchecked = [
        ln for ln in result.stdout.splitlines() if "no reference schema for argoproj.io/v1alpha1 " in ln
    ]
    assert summary and int(summary[1]) == len(unchecked) <= 2, result.stdout + result.stderr


# ------------------------------------------------------------------------------------------------ plan


def test_steps_run_the_candidate_at_its_weight_and_both_at_full_size_at_promotion() -> None:
    plan = rollout_plan(model_plan("rollout", "llama-8b"))
    assert plan is not None
    scale = [(s.weight, s.stable_replicas, s.canary_replicas) for s in plan.steps(4)]
    assert scale == [(5, 4, 1), (25, 4, 1), (50, 4, 2), (100, 4, 4)]
    assert model_plan("lora", "llama-8b").model.rollout is None


# ------------------------------------------------------------------------------------------------ schema


def _parse_with(rollout: dict[str, Any], **model: Any) -> str:
    values = stack_values("rollout")
    values["models"][0]["rollout"] = rollout
    values["models"][0] |= model
    with pytest.raises(ConfigError) as info:
        parse(values, region="us-east-1")
    return str(info.value)


def test_steps_must_rise_within_1_to_99() -> None:
    message = _parse_with({"steps": [5, 50, 25]})
    assert "models[0] (llama-8b).rollout.steps[2]: 25 does not rise above the step before (50)" in message
    assert "rollout.steps[0]: 100 is not a canary share" in _parse_with({"steps": [100]})
    assert "rollout.steps: [10] is for strategy canary" in _parse_with(
        {"strategy": "blueGreen", "steps": [10]}
    )


def test_a_candidate_must_change_something_and_be_pinned() -> None:
    same = _parse_with({"candidate": {"image": "vllm/vllm-openai:v0.30.0"}})
    assert "rollout.candidate:" in same and "is the version that serves now" in same
    assert "is not pinned" in _parse_with({"candidate": {"image": "vllm/vllm-openai:latest"}})
    lora = _parse_with({"candidate": {"extraArgs": ["--enable-lora"]}})
    assert "rollout.candidate.extraArgs[0]: '--enable-lora' is not allowed" in lora


def test_a_rollout_needs_the_gateway() -> None:
    values = stack_values("rollout")
    values["gateway"] = {"enabled": False}
    with pytest.raises(ConfigError) as info:
        parse(values, region="us-east-1")
    assert "models[0] (llama-8b).rollout: 'rollout' needs the gateway" in str(info.value)


def test_a_disaggregated_model_cannot_roll_out() -> None:
    """Argo Rollouts takes one Deployment over; a P/D model has two, so its rollout would render nothing."""
    values = stack_values("pd")
    pd = values["models"][0]
    pd["rollout"] = {"candidate": {"extraArgs": ["--enable-chunked-prefill"]}}
    with pytest.raises(ConfigError) as info:
        parse(values, region="us-east-1")
    assert "rollout: 'rollout' is not supported for a disaggregated model" in str(info.value)


# ------------------------------------------------------------------------------------------------ preflight


@pytest.fixture(scope="module")
def clean_view() -> RenderView:
    return preflight_view.from_stack(fixture_stack("rollout"))


def test_preflight_proves_both_versions_fit_with_numbers(clean_view: RenderView) -> None:
    (finding,) = rollout_overlap(clean_view)
    assert finding.severity == "info"
    assert (
        "4 node GPUs + the candidate's 4 x 1 = 8 <= NodePool g6e spec.limits.nvidia.com/gpu 8"
        in finding.message
    )


def test_preflight_blocks_a_rollout_past_the_gpu_limit(clean_view: RenderView) -> None:
    view = copy.deepcopy(clean_view)
    pool = next(m for m in view.manifests if m.kind == "NodePool" and m.name == "g6e")
    pool.body["spec"]["limits"]["nvidia.com/gpu"] = "7"
    (finding,) = rollout_overlap(view)
    assert finding.severity == "blocker"
    assert "= 8 > NodePool g6e spec.limits.nvidia.com/gpu 7" in finding.message
    assert "raise gpuLimit to 8" in finding.message


def test_the_stack_file_rollout_fixture_is_yaml_of_one_model() -> None:
    stack = yaml.safe_load(fixture_stack("rollout").read_text())
    assert [m["name"] for m in stack["config"]["llm-platform:models"]] == ["llama-8b"]


def test_blue_green_brings_the_candidate_up_at_full_size_before_any_traffic() -> None:
    values = stack_values("rollout")
    values["models"][0]["rollout"] = {
        "strategy": "blueGreen",
        "candidate": {"image": "vllm/vllm-openai:v0.31.0"},
    }
    m = model_plan(parse(values, region="us-east-1"), "llama-8b")
    plan = rollout_plan(m)
    assert plan is not None
    manifest = rollout_spec.rollout(m, plan)
    assert manifest["spec"]["strategy"]["canary"]["steps"] == [
        {"setCanaryScale": {"weight": 100}},
        {"setWeight": 100},
        {"pause": {"duration": "600s"}},
    ]
    assert [(s.weight, s.stable_replicas, s.canary_replicas) for s in plan.steps(3)] == [
        (100, 3, 3),
        (100, 3, 3),
    ]
    assert validate_render.problems([manifest], validate_render.load_crds(), "1.34") == []


def test_preflight_warns_when_only_the_warm_placeholders_make_room(tmp_path: Path) -> None:
    """A pool keeping 1 GPU warm at gpuLimit 9: the models at maxReplicas (4) plus the placeholder (1) plus the
    candidate (4) need 9 node GPUs and fit; at 8 the candidate fits only by evicting the placeholder."""
    stack = yaml.safe_load(fixture_stack("rollout").read_text())
    pool = stack["config"]["llm-platform:gpuNodePools"][0]
    pool |= {"headroom": {"gpus": 1}, "gpuLimit": 9}
    path = tmp_path / "Pulumi.rollout-headroom.yaml"
    path.write_text(yaml.safe_dump(stack))
    view = preflight_view.from_stack(path)
    (fits,) = rollout_overlap(view)
    assert fits.severity == "info" and "= 9 <= NodePool g6e spec.limits.nvidia.com/gpu 9" in fits.message
    tight = copy.deepcopy(view)
    limits = next(m for m in tight.manifests if m.kind == "NodePool" and m.name == "g6e").body["spec"][
        "limits"
    ]
    limits["nvidia.com/gpu"] = "8"
    (warning,) = rollout_overlap(tight)
    assert warning.severity == "warning"
    assert (
        "preempt the 1 GPUs of warm placeholders" in warning.message
        and "gpuLimit 9 keeps it" in warning.message
    )
