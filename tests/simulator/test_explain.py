"""The simulator runs what is deployed: for every model of every stack (the real stack files, whatever teams
put in them, and the fixtures), the inputs `python -m llm_platform.simulator --explain` reports equal the rendered
ScaledObject, PodMonitor, Deployment, NodePool and EC2NodeClass."""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from llm_platform.components.specs.common import POOL_LABEL
from llm_platform.config.loader import ROOT, load_stack
from llm_platform.config.schema import duration_seconds
from llm_platform.simulator.commands.cli import main
from llm_platform.simulator.traffic.traffic import seed_day
from llm_platform.tools import render
from tests.conftest import FIXTURE_STACKS

STACK_FILES = sorted(ROOT.glob("Pulumi.*.yaml")) + sorted(FIXTURE_STACKS.glob("Pulumi.*.yaml"))
CASES = [
    pytest.param(
        path,
        model.name,
        id=f"{'fixture' if path.parent == FIXTURE_STACKS else 'real'}/{path.stem.removeprefix('Pulumi.')}/{model.name}",
    )
    for path in STACK_FILES
    for model in load_stack(path).models
    # a disaggregated model renders a Deployment and a ScaledObject per role, which the simulator's aggregated
    # replica model does not explain (its P/D model is separate work)
    if model.disaggregation is None
]


@cache
def rendered_stack(path: Path) -> render.Render:
    return render.evaluate(path)


def manifests(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    return {(m["kind"], m["metadata"]["name"]): m for m in rendered_stack(path).manifests}


def go_seconds(duration: str) -> float:
    """A Go duration of whole seconds or milliseconds ("1s", "250ms")."""
    return float(duration[:-2]) / 1000 if duration.endswith("ms") else float(duration.removesuffix("s"))


def picker(path: Path, model: str) -> tuple[dict[str, Any], int] | None:
    """The model's endpoint picker config and replicas as its Helm release carries them (None without the
    gateway)."""
    release = rendered_stack(path).helm.get(model)
    if release is None:
        return None
    epp = release["values"]["router"]["epp"]
    (config,) = epp["pluginsCustomConfig"].values()
    return yaml.safe_load(config), epp["replicas"]


def explained(path: Path, model: str, capsys: pytest.CaptureFixture[str], *traffic: str) -> dict[str, Any]:
    assert main(["--stack", str(path), "--model", model, "--explain", "--json", *traffic]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def ten_minutes(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """`--traffic` of a 10-minute day: the explained inputs are the stack's whatever the traffic (the what-if
    test below checks they equal the default seed day's), and a short day is 0.5 s less to simulate per case."""
    day = tmp_path_factory.mktemp("explain") / "ten-minutes.csv"
    day.write_text("minute,requests_per_second\n" + "".join(f"{m},1\n" for m in range(10)))
    return ["--traffic", str(day)]


@pytest.mark.parametrize(("path", "model"), CASES)
def test_explained_inputs_equal_the_rendered_objects(
    path: Path, model: str, capsys: pytest.CaptureFixture[str], ten_minutes: list[str]
) -> None:
    inputs = explained(path, model, capsys, *ten_minutes)
    rendered = manifests(path)
    scaled = rendered["ScaledObject", model]["spec"]

    prometheus = [t for t in scaled["triggers"] if t["type"] == "prometheus"]
    assert [
        {"name": t["name"], "type": t["type"], "query": t["query"], "threshold": t["threshold"],
         "metric_type": t["metric_type"]}
        for t in inputs["triggers"]
    ] == [
        {"name": t["name"], "type": t["type"], "query": t["metadata"]["query"],
         "threshold": float(t["metadata"]["threshold"]), "metric_type": t["metricType"]}
        for t in prometheus
    ]  # fmt: skip
    cron = [t for t in scaled["triggers"] if t["type"] == "cron"]
    assert inputs["prewarm"] == [
        {"name": t["name"], "start": t["metadata"]["start"], "end": t["metadata"]["end"],
         "timezone": t["metadata"]["timezone"], "replicas": int(t["metadata"]["desiredReplicas"])}
        for t in cron
    ]  # fmt: skip
    assert inputs["polling_interval_s"] == scaled["pollingInterval"]
    # KEDA applies cooldownPeriod only at minReplicaCount 0 (the render then carries it), and so does the
    # simulator (simulator/controllers/keda.py)
    assert inputs["cooldown_period_s"] == scaled.get("cooldownPeriod", inputs["cooldown_period_s"])
    assert ("cooldownPeriod" in scaled) == (scaled["minReplicaCount"] == 0)
    assert inputs["fallback_replicas"] == scaled.get("fallback", {}).get("replicas")
    if "fallback" in scaled:
        assert inputs["fallback_failure_threshold"] == scaled["fallback"]["failureThreshold"]
    assert inputs["behavior"] == scaled["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    assert (inputs["min_replicas"], inputs["max_replicas"]) == (
        scaled["minReplicaCount"],
        scaled["maxReplicaCount"],
    )

    (endpoint,) = rendered["PodMonitor", model]["spec"]["podMetricsEndpoints"]
    assert f"{inputs['scrape_interval_s']}s" == endpoint["interval"]

    workload = rendered.get(("Deployment", model))
    if workload is None:  # a multi-node model: its LeaderWorkerSet's leader, one of `size` pods of a replica
        group = rendered["LeaderWorkerSet", model]["spec"]["leaderWorkerTemplate"]
        pod, pods = group["leaderTemplate"]["spec"], int(group["size"])
    else:
        pod, pods = workload["spec"]["template"]["spec"], 1
    vllm = next(c for c in pod["containers"] if c["name"] == "vllm")
    assert int(vllm["resources"]["limits"]["nvidia.com/gpu"]) * pods == inputs["gpus_per_replica"]
    probe = vllm["startupProbe"]
    # the probe allows three warm-node starts, as the simulator times them
    assert probe["failureThreshold"] * probe["periodSeconds"] >= 3 * inputs["cold_start_s"]["warm_node"]
    assert probe["failureThreshold"] == max(30, math.ceil(3 * inputs["cold_start_s"]["warm_node"] / 10))

    pool_name = pod["nodeSelector"][POOL_LABEL]
    pool = rendered["NodePool", pool_name]["spec"]
    assert duration_seconds(pool["disruption"]["consolidateAfter"]) == inputs["consolidate_after_s"]
    # the budget that applies to empty nodes: one without `reasons` covers every reason
    (every_reason,) = [b for b in pool["disruption"]["budgets"] if "reasons" not in b and "schedule" not in b]
    assert every_reason["nodes"] == f"{inputs['disruption_budget_percent']}%"
    node_class = rendered["EC2NodeClass", pool["template"]["spec"]["nodeClassRef"]["name"]]["spec"]
    fast_pull = "FastImagePull: true" in node_class.get("userData", "")
    assert (inputs["image_pull"] == "soci") == fast_pull

    # the pool's warm headroom: the placeholder Deployment and its KEDA cron windows
    placeholder = rendered.get(("Deployment", f"headroom-{pool_name}"))
    schedule = rendered.get(("ScaledObject", f"headroom-{pool_name}"))
    if inputs["headroom"] is None:
        assert placeholder is None
    elif schedule is None:
        assert (inputs["headroom"]["placeholders"], inputs["headroom"]["windows"]) == (
            placeholder and placeholder["spec"]["replicas"],
            [],
        )
    else:
        assert inputs["headroom"]["placeholders"] == schedule["spec"]["minReplicaCount"]
        assert inputs["headroom"]["windows"] == [
            {"start": t["metadata"]["start"], "end": t["metadata"]["end"], "timezone": t["metadata"]["timezone"],
             "placeholders": int(t["metadata"]["desiredReplicas"])}
            for t in schedule["spec"]["triggers"]
        ]  # fmt: skip
    # a persisted compile cache: the node sync (nvme) or the pod's own native sidecar saves it and restores
    # it before vLLM starts; the startup probe marks it complete
    sync = rendered.get(("DaemonSet", f"{model}-weights"))
    savers = [
        *(sync["spec"]["template"]["spec"]["containers"] if sync else []),
        *(c for c in pod.get("initContainers", []) if c.get("restartPolicy") == "Always"),
    ]
    prefixes = {e["value"] for c in savers for e in c["env"] if e["name"] == "COMPILE_PREFIX"} - {""}
    assert inputs["compile_cache_persisted"] == bool(prefixes)
    assert ("exec" in probe) == inputs["compile_cache_persisted"]

    # the gateway's flow control: the queue the model is served behind
    gateway = picker(path, model)
    if gateway is None:
        assert inputs["flow_control"] is None
    else:
        config, replicas = gateway
        detector = next(p for p in config["plugins"] if p["type"] == "utilization-detector")
        flow = config["flowControl"]
        assert inputs["flow_control"] == {
            "saturation_queue_depth": detector["parameters"]["queueDepthThreshold"],
            "held_requests": int(flow["maxRequests"]) * replicas,
            "ttl_s": go_seconds(flow["defaultRequestTTL"]),
        }


def test_explain_is_a_stack_mode_only_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--scenario", "seed-benchmark", "--explain"]) == 2
    assert "--explain prints a stack model's simulated inputs" in capsys.readouterr().err


def test_what_ifs_change_the_simulated_inputs_and_nothing_else(
    capsys: pytest.CaptureFixture[str], ten_minutes: list[str]
) -> None:
    path = FIXTURE_STACKS / "Pulumi.prod.yaml"
    model = load_stack(path).models[0].name
    deployed = explained(path, model, capsys)
    assert explained(path, model, capsys, *ten_minutes) == deployed  # the traffic is no input of the stack's
    assert main(["--stack", str(path), "--model", model, "--explain", "--json", "--image", "registry",
                 "--scrape-interval", "15"]) == 0  # fmt: skip
    what_if = json.loads(capsys.readouterr().out)
    assert (what_if["image_pull"], what_if["scrape_interval_s"]) == ("registry", 15)
    assert what_if["cold_start_s"]["new_node"] > deployed["cold_start_s"]["new_node"]
    assert what_if["triggers"] == deployed["triggers"]


def test_a_seed_day_run_simulates_the_deployed_scaled_object() -> None:
    from llm_platform.simulator.search.stacks import stack_run

    run = stack_run(FIXTURE_STACKS / "Pulumi.prod.yaml", None, seed_day(0))
    deployed = next(s for s in run.strategies if s.name == "stack-config")
    assert deployed.scaled_object is not None
    fallback = deployed.scaled_object.fallback
    assert fallback is not None
    assert (fallback.replicas, fallback.failure_threshold) == (
        run.plan.scaling.fallback_replicas,
        run.plan.scaling.fallback_failure_threshold,
    )
    assert run.setup.config.scrape_interval == run.plan.scaling.scrape_interval_s
    assert run.setup.config.capacity.image == run.plan.image_pull
