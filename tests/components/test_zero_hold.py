"""The hold of a model at zero has one definition (plan/zero.py): the picker's TTL, the routes' timeout, the
simulator read it; the 503 that ends a hold gets Retry-After (components/specs/zero.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from llm_platform.components.specs import gateway as gw
from llm_platform.components.specs import gateway_monitoring as gm
from llm_platform.components.specs import inference_pool as pool
from llm_platform.components.specs import zero
from llm_platform.config.loader import ROOT
from llm_platform.plan import ModelPlan
from llm_platform.plan.gateway import (
    REQUEST_RECEIVED_TIMEOUT_S,
    SERVING_BUDGET_S,
    FlowControlPlan,
    duration,
    request_received_timeout_s,
)
from llm_platform.plan.zero import (
    ENVOY_STREAM_IDLE_TIMEOUT_S,
    EXT_PROC_MESSAGE_TIMEOUT_S,
    HOLD_CAP_S,
    HOLD_STEP_S,
    RETRY_AFTER_S,
    exceeds_hold_cap,
    from_zero_hold_s,
    from_zero_wake_s,
)
from llm_platform.simulator.search.stacks import stack_model
from llm_platform.simulator.serving import zero as sim_zero
from llm_platform.simulator.serving.zero import ZeroSpec
from llm_platform.tools import render, validate_render
from tests.components import promtool
from tests.conftest import fixture_stack, load_fixture
from tests.plans import model_plan
from tests.shared_check import SHARED_CHECK, check_render

ZERO = "zero"
COLD = "zerocold"  # chat-7b's pool mixes g5 and g6: no persisted compile cache, a wake over the cap


def test_a_model_at_zero_is_held_for_the_plans_from_zero_hold() -> None:
    _, _, plan = stack_model(fixture_stack("zero"), "chat-7b")
    assert plan.scaling.min_replicas == 0
    hold = from_zero_hold_s(plan.cold_start, plan.scaling)
    assert plan.flow_control is not None
    assert plan.flow_control.ttl_seconds == hold == plan.flow_control.from_zero_hold_s
    assert plan.flow_control.ttl == f"{int(hold)}s"
    assert sim_zero.from_zero_hold_s is from_zero_hold_s  # the simulator imports the plan's definition
    assert ZeroSpec.from_plan(plan).hold_s == hold


def test_a_model_not_at_zero_keeps_its_ttft_ttl() -> None:
    _, _, plan = stack_model(fixture_stack("zero"), "code-1b")
    assert plan.flow_control is not None
    assert plan.flow_control.from_zero_hold_s is None
    assert plan.flow_control.ttl_seconds == plan.model.slo.ttft_seconds


# ------------------------------------------------------------------- the 503 that ends a hold: Retry-After

REFERENCE_CRD = (
    ROOT.parent / "shared" / "reference" / "crds" / "gateway.envoyproxy.io_backendtrafficpolicies.yaml"
)


def test_a_503_on_a_model_at_zero_gets_retry_after_merged_into_the_gateways_policy() -> None:
    model = model_plan(ZERO, "chat-7b")
    policy = zero.zero_hold_policy(model)
    assert policy["metadata"] == {"name": "chat-7b-from-zero", "namespace": model.names.namespace}
    spec = policy["spec"]
    # both routes of the model, in its namespace: AI Gateway's generated HTTPRoute has the AIGatewayRoute's name
    assert spec["targetRefs"] == [
        {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": pool.model_field_route(model)["metadata"]["name"]},
        {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": pool.path_route(model)["metadata"]["name"]},
    ]  # fmt: skip
    # merged into the Gateway's rate-limit policy, never replacing it on these routes
    assert spec["mergeType"] == "StrategicMerge" and "rateLimit" not in spec
    (override,) = spec["responseOverride"]
    assert override["match"] == {"statusCodes": [{"type": "Value", "value": 503}]}
    response = override["response"]
    assert response["statusCode"] == 503 and "redirect" not in override
    assert response["header"] == {"set": [{"name": "Retry-After", "value": str(RETRY_AFTER_S)}]}
    assert "remove" not in response["header"]  # the CRD refuses remove in a custom response
    # Envoy's LocalResponsePolicy would otherwise send an empty body: an OpenAI-style error instead
    assert response["contentType"] == "application/json" and response["body"]["type"] == "Inline"
    error = json.loads(response["body"]["inline"])["error"]
    assert error["code"] == 503 and model.model.served_model_name in error["message"]
    assert f"retry after {RETRY_AFTER_S} s" in error["message"] and "%" not in response["body"]["inline"]
    # the gateway's own policy still targets the Gateway (the parent the route policy merges into)
    gateway_policy = gw.rate_limit_policy(load_fixture(ZERO).gateway.clients, 3)
    assert gateway_policy["spec"]["targetRefs"][0]["kind"] == "Gateway"
    assert "mergeType" not in gateway_policy["spec"]  # the CRD: mergeType cannot be set on a Gateway's policy


def test_retry_after_is_shorter_than_the_hold_it_follows() -> None:
    """A retry is held again for the whole hold; Retry-After only adds to the wait past Ready."""
    plan = model_plan(ZERO, "chat-7b")
    assert plan.flow_control is not None and plan.flow_control.from_zero_hold_s is not None
    assert 0 < RETRY_AFTER_S <= HOLD_STEP_S < plan.flow_control.from_zero_hold_s


def test_a_model_that_keeps_a_replica_has_no_override() -> None:
    model = model_plan(ZERO, "code-1b")
    assert not zero.at_zero(model)
    with pytest.raises(ValueError, match=r"models \(code-1b\): not at minReplicas 0"):
        zero.zero_hold_policy(model)


@pytest.mark.skipif(not REFERENCE_CRD.exists(), reason="shared/reference/crds sits beside the repo")
def test_the_override_validates_against_the_pinned_crd_field_by_field() -> None:
    """The OpenAPI schema (unknown fields are errors) and the CRD's CEL rules the schema check cannot run."""
    crds = validate_render.schemas_of(yaml.safe_load_all(REFERENCE_CRD.read_text()))
    policy = zero.zero_hold_policy(model_plan(ZERO, "chat-7b"))
    assert validate_render.problems([policy], crds, "1.34") == []
    schema = crds[("gateway.envoyproxy.io/v1alpha1", "BackendTrafficPolicy")]["properties"]["spec"]
    merge = schema["properties"]["mergeType"]
    assert merge["x-kubernetes-validations"] == [
        {
            "message": "Replace is not a valid MergeType for BackendTrafficPolicySpec",
            "rule": "self != 'Replace'",
        }
    ]
    item = schema["properties"]["responseOverride"]["items"]
    rules = {v["message"] for v in item["x-kubernetes-validations"]}
    assert rules == {"exactly one of response or redirect must be specified"}
    code = item["properties"]["match"]["properties"]["statusCodes"]["items"]
    assert {"value must be set for type Value"} <= {v["message"] for v in code["x-kubernetes-validations"]}
    header = item["properties"]["response"]["properties"]["header"]
    assert header["properties"]["set"]["x-kubernetes-list-map-keys"] == ["name"]


# ------------------------------------------------------------------------- the routes' timeout at zero


def test_the_route_timeout_of_a_model_at_zero_is_its_hold_plus_the_serving_budget() -> None:
    at_zero, kept = model_plan(ZERO, "chat-7b"), model_plan(ZERO, "code-1b")
    assert at_zero.flow_control is not None and kept.flow_control is not None
    hold = from_zero_hold_s(at_zero.cold_start, at_zero.scaling)
    assert at_zero.flow_control.route_timeout_s == hold + SERVING_BUDGET_S
    assert at_zero.flow_control.route_timeout == f"{int(hold + SERVING_BUDGET_S)}s" == "840s"
    assert kept.flow_control.route_timeout == "600s"  # unchanged for a model that keeps a replica
    for model, expected in ((at_zero, "840s"), (kept, "600s")):
        for route in (pool.path_route(model), pool.model_field_route(model)):
            assert [r["timeouts"] for r in route["spec"]["rules"]] == [{"request": expected}]


def test_durations_are_whole_units_gateway_api_accepts() -> None:
    assert duration(840.0) == "840s" and duration(0.5) == "500ms" and duration(1.25) == "1250ms"


# ----------------------------------------------------------- the cap: the longest hold the gateway keeps

CTP_CRD = REFERENCE_CRD.parent / "gateway.envoyproxy.io_clienttrafficpolicies.yaml"


def test_the_hold_is_capped_below_ai_gateways_ext_proc_message_timeout() -> None:
    """AI Gateway v1.1.0 hard-codes the picker's ext_proc MessageTimeout at 300 s: a hold must end before it,
    in the picker's 503 (with Retry-After), not in an ext_proc error."""
    assert HOLD_CAP_S == EXT_PROC_MESSAGE_TIMEOUT_S - HOLD_STEP_S == 270.0
    cold = model_plan(COLD, "chat-7b")
    wake = from_zero_wake_s(cold.cold_start, cold.scaling)
    assert wake > HOLD_CAP_S and exceeds_hold_cap(cold.cold_start, cold.scaling)
    assert cold.flow_control is not None and cold.flow_control.ttl_seconds == HOLD_CAP_S
    assert cold.flow_control.ttl == "270s"  # rounded up, the wake would be 390 s: capped
    kept = model_plan(ZERO, "chat-7b")  # a wake under the cap keeps its rounded hold
    assert not exceeds_hold_cap(kept.cold_start, kept.scaling)
    assert (
        from_zero_hold_s(kept.cold_start, kept.scaling)
        == 240.0
        >= from_zero_wake_s(kept.cold_start, kept.scaling)
    )


def test_the_gateway_receives_a_request_for_the_longest_hold_when_a_model_is_at_zero() -> None:
    """Envoy's request_timeout (EG's requestReceivedTimeout) runs until the last byte goes upstream, so it
    includes a hold in the picker (before the router)."""

    def received(models: list[ModelPlan]) -> str:
        return gw.client_traffic_policy(models)["spec"]["timeout"]["http"]["requestReceivedTimeout"]

    zero_models = [model_plan(ZERO, "chat-7b"), model_plan(ZERO, "code-1b")]
    assert received([]) == received(zero_models[1:]) == "10s"  # no model at zero: the slow-loris guard
    assert received(zero_models) == f"{int(240 + REQUEST_RECEIVED_TIMEOUT_S)}s" == "250s"
    assert received([model_plan(COLD, "chat-7b")]) == "280s"  # capped hold + 10 s
    queue = FlowControlPlan(5, 0.95, 8, 0.5)
    holds = [FlowControlPlan(5, 0.95, 8, h, from_zero_hold_s=h) for h in (120.0, 270.0)]
    assert request_received_timeout_s([queue, None, *holds]) == 280.0  # the longest hold decides
    assert request_received_timeout_s([queue, None]) == REQUEST_RECEIVED_TIMEOUT_S


@pytest.mark.skipif(not CTP_CRD.exists(), reason="shared/reference/crds sits beside the repo")
def test_a_held_stream_ends_before_envoys_stream_idle_timeout_and_the_nlbs() -> None:
    """Nothing flows on a held stream. streamIdleTimeout is left at Envoy's default, which the pinned CRD
    documents; the capped hold ends before it and before the NLB's 350 s idle timeout (fixed on TLS)."""
    text = CTP_CRD.read_text()
    i = text.index("streamIdleTimeout:\n", text.index("requestReceivedTimeout:"))
    assert "Default: 5 minutes." in text[i : i + 400]
    assert ENVOY_STREAM_IDLE_TIMEOUT_S == 5 * 60 > HOLD_CAP_S
    http = gw.client_traffic_policy([model_plan(COLD, "chat-7b")])["spec"]["timeout"]["http"]
    assert "streamIdleTimeout" not in http
    assert HOLD_CAP_S < 350 and duration(HOLD_CAP_S) == "270s"


def test_preflight_warns_about_a_model_whose_wake_exceeds_the_cap() -> None:
    from llm_platform.tools.preflight import view as preflight_view
    from llm_platform.tools.preflight.run import run

    cold = model_plan(COLD, "chat-7b")
    wake = from_zero_wake_s(cold.cold_start, cold.scaling)
    (finding,) = [f for f in run(preflight_view.from_stack(fixture_stack(COLD))) if f.check == "zero"]
    assert (finding.severity, finding.object, finding.field) == (
        "warning", "model chat-7b", "autoscaling.minReplicas",
    )  # fmt: skip
    for part in (
        f"{wake:.0f} s",
        "270 s",
        f"Retry-After {RETRY_AFTER_S} s",
        "warm buffer",
        "FSx",
        "smaller image",
    ):
        assert part in finding.message, finding.message
    # a wake within the cap (the zero fixture's 232 s) warns nothing
    from llm_platform.tools.preflight.zero import zero as zero_check

    view = preflight_view.RenderView(COLD, "staging", [], [], {}, {}, from_zero_wakes={"chat-7b": HOLD_CAP_S})
    assert zero_check(view) == []
    view.from_zero_wakes["chat-7b"] = HOLD_CAP_S + 1
    assert [f.object for f in zero_check(view)] == ["model chat-7b"]


# --------------------------------------------------------------------------------- the fixture's render


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("render") / ZERO
    assert render.main([str(fixture_stack(ZERO)), "--out", str(out)]) == 0
    return out


def _docs(rendered: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all((rendered / "manifests.yaml").read_text()) if d]


def test_the_zero_fixture_renders_the_override_beside_the_gateways_rate_limits(rendered: Path) -> None:
    policies = {d["metadata"]["name"]: d for d in _docs(rendered) if d["kind"] == "BackendTrafficPolicy"}
    assert set(policies) == {gw.GATEWAY, "chat-7b-from-zero"}  # code-1b keeps a replica: none
    assert policies[gw.GATEWAY]["spec"]["rateLimit"]["local"]["rules"]  # still there, still on the Gateway
    assert policies["chat-7b-from-zero"] == zero.zero_hold_policy(model_plan(ZERO, "chat-7b"))
    routes = {
        d["metadata"]["name"]: d["spec"]["rules"][0]["timeouts"]["request"]
        for d in _docs(rendered)
        if d["kind"] in ("HTTPRoute", "AIGatewayRoute")
    }
    assert routes == {
        "chat-7b": "840s",
        "chat-7b-by-path": "840s",
        "code-1b": "600s",
        "code-1b-by-path": "600s",
    }


def test_the_zero_fixture_gateway_receives_a_held_request_for_its_hold(rendered: Path) -> None:
    (ctp,) = [d for d in _docs(rendered) if d["kind"] == "ClientTrafficPolicy"]
    assert ctp["spec"]["timeout"]["http"] == {
        "idleTimeout": gw.IDLE_TIMEOUT,
        "requestReceivedTimeout": "250s",
    }


def test_the_zero_fixture_render_validates(rendered: Path) -> None:
    crds = validate_render.load_crds()
    assert validate_render.problems(_docs(rendered), crds, "1.34") == []
    if SHARED_CHECK.exists():
        result = check_render(rendered)
        assert result.returncode == 0 and "0 problems" in result.stdout, result.stdout


# ------------------------------------------------------------------- alert and dashboard of a model at zero

TIMED_OUT = "InferenceGatewayHeldRequestTimedOut"


def _timed_out_rule(model: ModelPlan) -> dict:
    (rule,) = [
        r for r in gm.epp_prometheus_rule(model)["spec"]["groups"][0]["rules"] if r["alert"] == TIMED_OUT
    ]
    return rule


def test_the_held_timeout_alert_fires_on_a_timeout_not_on_no_series_nor_on_normal_traffic(
    tmp_path: Path,
) -> None:
    """The picker's outcome counters are created by their first increment: the first timeout after a picker
    (re)start is a series born at 1 (promtool `_xN`: N scrapes without the series), which must fire like a later increment."""
    model = model_plan(ZERO, "chat-7b")
    ns, pool_name = model.names.namespace, pool.release_name(model)
    rule = _timed_out_rule(model)
    assert rule["for"] == "0m"

    def series(outcome: str, pod: str = "epp-a") -> str:
        return (
            f'{gm.FLOW_CONTROL_REQUESTS}{{namespace="{ns}",inference_pool="{pool_name}",outcome="{outcome}",'
            f'priority="0",pod="{pod}"}}'
        )

    labels = {"severity": "warning", "namespace": ns, "inference_pool": pool_name}

    def fires(value: str) -> list[dict]:
        annotations = {k: v.replace(gm.VALUE, value) for k, v in rule["annotations"].items()}
        return [{"exp_labels": labels, "exp_annotations": annotations}]

    def case(input_series: list[dict[str, str]], expected: dict[str, list[dict]]) -> dict:
        return {
            "interval": "1m",
            "input_series": input_series,
            "alert_rule_test": [
                {"eval_time": at, "alertname": TIMED_OUT, "exp_alerts": alerts}
                for at, alerts in expected.items()
            ],
        }

    normal = {"series": series("Dispatched"), "values": "0+3x30"}
    tests = [
        case([], {"5m": [], "20m": []}),  # nothing scraped at all (a new pool): silent, no error
        case([normal], {"10m": [], "25m": []}),  # normal traffic, every request dispatched
        case(  # served, then the first timeout since the picker started: a series born at 1 at 11m
            [normal, {"series": series("EvictedTTL"), "values": "_x11 1x18"}],
            {"10m": [], "12m": fires("1"), "17m": []},  # fires, then resolves once 5 m passed without another
        ),
        case(  # an existing series grows: 2 more timeouts at 11m
            [normal, {"series": series("EvictedTTL"), "values": "1x10 3x19"}],
            {"9m": [], "12m": fires("2"), "18m": []},
        ),
        case(  # queue full with no endpoint (503 at once), on the second picker
            [normal, {"series": series("RejectedNoEndpoints", "epp-b"), "values": "_x5 1x10"}],
            {"4m": [], "7m": fires("1")},
        ),
        case(  # the client (or Envoy) ended the stream while the request was held: it was not served either
            [normal, {"series": series("EvictedContextCancelled"), "values": "_x8 1x12"}],
            {"7m": [], "9m": fires("1")},
        ),
        case(  # shed while saturated with replicas up: another alert's business (InferenceGatewayShedding)
            [normal, {"series": series("RejectedCapacity"), "values": "0+1x30"}],
            {"10m": [], "20m": []},
        ),
    ]
    promtool.unit_test_rules({"groups": [{"name": "zero", "rules": [rule]}]}, tests, tmp_path)


def test_a_model_at_zero_whose_picker_series_are_absent_alerts(tmp_path: Path) -> None:
    """The wake trigger reads the pickers' series `or vector(0)`: with none scraped a model at zero cannot wake.
    A running picker exports its pool's ready endpoints (0 at zero), so their absence fires, only at zero."""
    model = model_plan(ZERO, "chat-7b")
    ns, pool_name, dep = model.names.namespace, pool.release_name(model), model.names.deployment
    (rule,) = [
        r
        for r in gm.epp_prometheus_rule(model)["spec"]["groups"][0]["rules"]
        if r["alert"] == "InferenceGatewayWakeSignalMissing"
    ]
    assert rule["labels"]["severity"] == "critical"
    replicas = f'{gm.DEPLOYMENT_SPEC_REPLICAS}{{namespace="{ns}",deployment="{dep}"}}'
    ready = f'{gm.READY_ENDPOINTS}{{namespace="{ns}",name="{pool_name}",pod="epp-a"}}'
    labels = {"severity": "critical", "namespace": ns, "inference_pool": pool_name}
    fires = [{"exp_labels": labels, "exp_annotations": rule["annotations"]}]

    def case(input_series: list[dict[str, str]], expected: dict[str, list[dict]]) -> dict:
        return {
            "interval": "1m",
            "input_series": input_series,
            "alert_rule_test": [
                {"eval_time": at, "alertname": rule["alert"], "exp_alerts": alerts}
                for at, alerts in expected.items()
            ],
        }

    tests = [
        # at zero with the pickers scraped (0 ready endpoints): the wake trigger reads them, silent
        case(
            [{"series": replicas, "values": "0x30"}, {"series": ready, "values": "0x30"}],
            {"10m": [], "25m": []},
        ),
        # at zero, the pickers' scrape lost at 10m: fires once it has lasted 5 minutes
        case(
            [{"series": replicas, "values": "0x30"}, {"series": ready, "values": "0x9 stale"}],
            {"12m": [], "16m": fires, "25m": fires},
        ),
        # never scraped at all while at zero
        case([{"series": replicas, "values": "0x30"}], {"4m": [], "6m": fires}),
        # above zero the vLLM pods' own series scale it: another alert's business (stale metrics, picker down)
        case([{"series": replicas, "values": "2x30"}], {"10m": [], "25m": []}),
        # no kube-state-metrics series: not known to be at zero
        case([], {"10m": []}),
    ]
    promtool.unit_test_rules({"groups": [{"name": "zero", "rules": [rule]}]}, tests, tmp_path)


def test_the_zero_dashboard_counts_the_models_at_zero_and_their_held_requests(tmp_path: Path) -> None:
    model = model_plan(ZERO, "chat-7b")
    board = gm.zero_dashboard([model])
    assert board["uid"] == zero.DASHBOARD
    panels = {p["title"]: p for p in board["panels"]}
    ns, deployment = model.names.namespace, model.names.deployment
    replicas = f'{gm.DEPLOYMENT_SPEC_REPLICAS}{{namespace="{ns}",deployment="{deployment}"}}'
    held = (
        f'{gm.FLOW_CONTROL_QUEUE}{{namespace="{ns}",inference_pool="{pool.release_name(model)}",pod="epp-a"}}'
    )
    (count,) = panels["Models at zero replicas"]["targets"]
    (holding,) = panels["Requests held by the gateway"]["targets"]
    assert holding["legendFormat"] == model.name
    tests = [
        promtool.expression_case(count["expr"], [{"series": replicas, "values": "0x5"}], 1),  # at zero
        promtool.expression_case(count["expr"], [{"series": replicas, "values": "2x5"}], 0),  # serving
        promtool.expression_case(count["expr"], [], 0),  # not deployed yet: not at zero
        promtool.expression_case(holding["expr"], [{"series": held, "values": "3x5"}], 3),
    ]
    promtool.unit_test_rules({"groups": []}, tests, tmp_path)
    with pytest.raises(ValueError, match="no model at minReplicas 0"):
        gm.zero_dashboard([])


def test_the_zero_fixture_ships_the_scale_to_zero_dashboard(rendered: Path) -> None:
    (board,) = [
        d for d in _docs(rendered) if d["kind"] == "ConfigMap" and d["metadata"]["name"] == zero.DASHBOARD
    ]
    assert board["metadata"]["namespace"] == gw.GATEWAY_NAMESPACE
    (text,) = board["data"].values()
    assert json.loads(text) == gm.zero_dashboard([model_plan(ZERO, "chat-7b")])
