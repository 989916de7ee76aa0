"""Grafana dashboards: the shape the sidecar and Grafana need, and every query valid PromQL (promtool)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from llm_platform.components.specs import alerts, dashboards, zero
from llm_platform.components.specs.dashboards import (
    cost_dashboard,
    dashboard_configmap,
    gpu_dashboard,
    headroom_dashboard,
    vllm_dashboard,
)
from llm_platform.components.specs.gateway_monitoring import zero_dashboard
from llm_platform.plan import promql
from tests.components import promtool
from tests.components.promtool import dashboard_expressions
from tests.conftest import load_fixture
from tests.plans import stack_plan

K8S_VERSION = load_fixture("prod").cluster.kubernetes_version
DASHBOARDS = {
    "vllm": vllm_dashboard(),
    "gpu": gpu_dashboard(),
    "headroom": headroom_dashboard("llm-headroom"),
    "costs": cost_dashboard(),
    # the models of the zero fixture that scale to zero (components/specs/zero.py at_zero)
    "scale-to-zero": zero_dashboard([m for m in stack_plan("zero").models if zero.at_zero(m)]),
}
VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)")


def variables(dashboard: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in dashboard["templating"]["list"]}


def query_panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in dashboard["panels"] if p["type"] not in ("text", "row")]


@pytest.fixture(params=list(DASHBOARDS))
def dashboard(request: pytest.FixtureRequest) -> dict[str, Any]:
    return DASHBOARDS[request.param]


def test_every_query_panel_has_a_datasource_and_expressions(dashboard: dict[str, Any]) -> None:
    panels = query_panels(dashboard)
    assert panels
    for panel in panels:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"], panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert len(set(refs)) == len(refs), panel["title"]
        for target in panel["targets"]:
            assert target["expr"].strip(), panel["title"]
            assert target["datasource"] == panel["datasource"]
        assert panel["fieldConfig"]["defaults"]["unit"], panel["title"]


def test_panels_have_unique_ids_and_fit_the_grid(dashboard: dict[str, Any]) -> None:
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(set(ids)) == len(ids)
    cells: set[tuple[int, int]] = set()
    for p in dashboard["panels"]:
        g = p["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24, p["title"]
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not mine & cells, f"{p['title']} overlaps another panel"
        cells |= mine


def test_every_variable_used_is_defined(dashboard: dict[str, Any]) -> None:
    defined = set(variables(dashboard))
    assert "datasource" in defined
    assert variables(dashboard)["datasource"]["type"] == "datasource"
    assert variables(dashboard)["datasource"]["query"] == "prometheus"
    used = set()
    for expr in dashboard_expressions(dashboard):
        used |= {a or b for a, b in VARIABLE.findall(expr)}
    for v in variables(dashboard).values():
        if v["type"] == "query":
            used |= {a or b for a, b in VARIABLE.findall(v["definition"])}
            assert v["datasource"]["uid"] == "${datasource}"
    assert {u for u in used if not u.startswith("__")} <= defined


def test_dashboard_expressions_are_valid_promql(dashboard: dict[str, Any], tmp_path: Path) -> None:
    exprs = [promtool.substitute_grafana_variables(e) for e in dashboard_expressions(dashboard)]
    assert not [e for e in exprs if "$" in e]
    promtool.check_expressions(exprs, tmp_path)


def test_variable_queries_name_real_metrics(dashboard: dict[str, Any]) -> None:
    for v in variables(dashboard).values():
        if v["type"] == "query":
            assert re.fullmatch(r"label_values\([^,]+, \w+\)", v["definition"]), v["definition"]


def test_vllm_dashboard_variables_and_panels() -> None:
    d = vllm_dashboard()
    vs = variables(d)
    assert {"datasource", "namespace", "model_name"} <= set(vs)
    assert not vs["namespace"]["multi"] and not vs["model_name"]["multi"]  # queries use `=`
    assert "$namespace" in vs["model_name"]["definition"]
    exprs = dashboard_expressions(d)
    joined = "\n".join(exprs)
    for metric in (
        promql.TTFT,
        promql.ITL,
        promql.E2E,
        promql.QUEUE,
        promql.RUNNING,
        promql.KV_CACHE,
        promql.PROMPT_TOKENS,
        promql.GENERATION_TOKENS,
        promql.PREEMPTIONS,
        promql.SUCCESS,
        alerts.HPA_DESIRED,
        alerts.DEPLOYMENT_READY,
    ):
        assert metric in joined, metric
    assert "gpu_cache_usage" not in joined and "time_per_output_token_seconds" not in joined
    # every vLLM query is scoped by the two variables
    for expr in exprs:
        if "vllm:" in expr:
            assert promql.selector("$namespace", "$model_name") in expr, expr
    by_title = {p["title"]: p for p in d["panels"]}
    for title, histogram in (("Time to first token", promql.TTFT), ("Inter-token latency", promql.ITL)):
        assert [t["expr"] for t in by_title[title]["targets"]] == [
            promql.latency_quantile(histogram, q, "$namespace", "$model_name", "$__rate_interval")
            for q in (0.5, 0.95, 0.99)
        ]
    # the KEDA trigger query itself is on the dashboard
    assert promql.queue_depth("$namespace", "$model_name") in exprs


def test_vllm_dashboard_follows_the_serving_names() -> None:
    joined = "\n".join(
        dashboard_expressions(vllm_dashboard(deployment="vllm-$model_name", scaled_object="$model_name-so"))
    )
    assert 'deployment="vllm-$model_name"' in joined
    assert 'horizontalpodautoscaler="keda-hpa-$model_name-so"' in joined


def test_gpu_dashboard_panels_and_note() -> None:
    d = gpu_dashboard()
    assert variables(d)["Hostname"]["multi"] is True
    joined = "\n".join(dashboard_expressions(d))
    for metric in (
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_FB_FREE",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "DCGM_FI_DEV_XID_ERRORS",
    ):
        assert metric in joined, metric
    for panel in query_panels(d):
        for target in panel["targets"]:
            assert 'Hostname=~"$Hostname"' in target["expr"]
            assert "{{Hostname}}" in target["legendFormat"] and "{{gpu}}" in target["legendFormat"]
    (note,) = [p for p in d["panels"] if p["type"] == "text"]
    assert note["options"]["mode"] == "markdown"
    assert "not a scaling signal" in note["options"]["content"]
    assert promql.QUEUE in note["options"]["content"] and promql.KV_CACHE in note["options"]["content"]


def test_gpu_memory_ratio_matches_per_gpu(tmp_path: Path) -> None:
    """FB_USED / (FB_USED + FB_FREE) joins one-to-one per GPU: one result per GPU, as a fraction."""
    (panel,) = [p for p in gpu_dashboard()["panels"] if p["title"] == "Framebuffer memory used"]
    expr = promtool.substitute_grafana_variables(panel["targets"][0]["expr"], {"Hostname": ".*"})
    gpu = 'gpu="{}",UUID="GPU-{}",Hostname="ip-10-0-1-1",modelName="NVIDIA A10G"'
    input_series = [
        {"series": f"DCGM_FI_DEV_FB_USED{{{gpu.format(0, 0)}}}", "values": "18000x5"},
        {"series": f"DCGM_FI_DEV_FB_FREE{{{gpu.format(0, 0)}}}", "values": "6000x5"},
        {"series": f"DCGM_FI_DEV_FB_USED{{{gpu.format(1, 1)}}}", "values": "12000x5"},
        {"series": f"DCGM_FI_DEV_FB_FREE{{{gpu.format(1, 1)}}}", "values": "12000x5"},
    ]
    expected = [
        {"labels": "{" + gpu.format(0, 0) + "}", "value": 0.75},
        {"labels": "{" + gpu.format(1, 1) + "}", "value": 0.5},
    ]
    tests = [promtool.expression_case(expr, input_series, expected, eval_time="2m")]
    promtool.unit_test_rules({"groups": []}, tests, tmp_path)


def test_replicas_panel_counts_a_multi_node_models_ready_groups(tmp_path: Path) -> None:
    """A LeaderWorkerSet's replicas are its Ready leaders (`<name>-<group>`); its workers
    (`<name>-<group>-<index>`) and a Deployment's pods (`<name>-<hash>-<id>`) are not counted."""
    (panel,) = [p for p in vllm_dashboard()["panels"] if p["title"] == "Replicas: desired vs ready"]
    (target,) = [t for t in panel["targets"] if t["legendFormat"] == "ready (groups)"]
    expr = promtool.substitute_grafana_variables(target["expr"], {"namespace": "llm", "model_name": "big"})
    ready = 'kube_pod_status_ready{{namespace="llm",condition="{}",pod="{}"}}'
    pods = {"big-0": "1", "big-1": "1", "big-2": "0", "big-0-1": "1", "big-1-1": "1", "big-7d9fb-x2x9z": "1"}
    input_series = [{"series": ready.format("true", pod), "values": f"{v}x5"} for pod, v in pods.items()]
    tests = [promtool.expression_case(expr, input_series, 2, eval_time="2m")]
    promtool.unit_test_rules({"groups": []}, tests, tmp_path)


def test_dashboard_expressions_include_collapsed_rows() -> None:
    d = {"panels": [{"type": "row", "panels": [{"targets": [{"expr": "up"}]}]}, {"targets": [{"expr": "x"}]}]}
    assert dashboard_expressions(d) == ["up", "x"]


@pytest.mark.parametrize("name", list(DASHBOARDS))
def test_configmap_carries_the_sidecar_label_and_the_json(name: str) -> None:
    dashboard = DASHBOARDS[name]
    cm = dashboard_configmap(f"llm-platform-{name}", "monitoring", dashboard, labels={"team": "ml"})
    assert cm["apiVersion"] == "v1" and cm["kind"] == "ConfigMap"
    assert cm["metadata"]["labels"][dashboards.SIDECAR_LABEL] == "1"
    assert cm["metadata"]["labels"]["team"] == "ml"
    assert cm["metadata"]["namespace"] == "monitoring"
    (key,) = cm["data"]
    assert key.endswith(".json")
    assert json.loads(cm["data"][key]) == dashboard
    assert len(cm["data"][key].encode()) < 256 * 1024  # well inside the ConfigMap and annotation limits
    kubernetes_validate.validate(cm, K8S_VERSION, strict=True)


def test_dashboards_have_distinct_uids() -> None:
    uids = [d["uid"] for d in DASHBOARDS.values()]
    assert len(set(uids)) == len(uids)
    for d in DASHBOARDS.values():
        assert d["title"] and d["schemaVersion"] >= 36 and "llm-platform" in d["tags"]
