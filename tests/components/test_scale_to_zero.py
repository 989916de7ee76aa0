"""Scale to zero (#25): minReplicas 0 behind the gateway only, prod opt-in, and the KEDA trigger that wakes a
model from zero on the requests the endpoint pickers see while no vLLM pod exists."""

from __future__ import annotations

from pathlib import Path

from llm_platform.components.specs import autoscaling
from llm_platform.config.loader import parse
from llm_platform.plan import promql
from llm_platform.plan.model import SCRAPE_INTERVAL_SECONDS
from llm_platform.tools.preflight.__main__ import main as preflight_main
from tests.components import promtool
from tests.conftest import config_error, fixture_stack, stack_values
from tests.plans import model_plan, stack_plan

ZERO = "zero"


def _triggers(scaled: dict) -> dict[str, dict]:
    return {t["name"]: t for t in scaled["spec"]["triggers"]}


def test_a_model_at_zero_waits_cooldown_then_wakes_on_the_gateway_with_an_activation_threshold() -> None:
    model = model_plan(ZERO, "chat-7b")
    scaled = autoscaling.scaled_object(model, "staging")
    spec = scaled["spec"]
    assert spec["minReplicaCount"] == 0 and spec["cooldownPeriod"] == 1800  # KEDA: the 1 -> 0 step only
    wake = _triggers(scaled)["wake"]
    assert wake["metadata"]["activationThreshold"] == "0" and wake["metricType"] == "AverageValue"
    query = wake["metadata"]["query"]
    assert promql.FLOW_CONTROL_QUEUE in query and promql.EPP_REQUESTS in query
    assert "kube_deployment_status_replicas_available" not in query, "must read requests while no pod exists"
    # a model that keeps a replica has no wake trigger and no cooldownPeriod (it never reaches zero)
    other = autoscaling.scaled_object(model_plan(ZERO, "code-1b"), "staging")
    assert "wake" not in _triggers(other) and "cooldownPeriod" not in other["spec"]


def test_a_scrape_error_does_not_wake_a_model_at_zero() -> None:
    """KEDA 2.20.2 counts a trigger in fallback as active and scales an active ScaledObject from zero, then
    the HPA lands on the fallback count: a model at zero has no fallback, so a Prometheus outage leaves it at
    zero (the simulator's KEDA does the same: a failing query past the threshold would wake it), while a
    model that keeps a replica still holds half its ceiling while its metrics are missing."""
    from llm_platform.simulator.controllers.keda import Keda
    from llm_platform.simulator.controllers.strategies import from_plan

    model = model_plan(ZERO, "chat-7b")
    assert "fallback" not in autoscaling.scaled_object(model, "staging")["spec"]
    kept = autoscaling.scaled_object(model_plan(ZERO, "code-1b"), "staging")["spec"]
    assert kept["fallback"] == {"failureThreshold": 3, "replicas": 2}
    spec = from_plan("stack-config", model.scaling).scaled_object
    assert spec is not None
    keda = Keda(spec)
    failing = lambda _metric: None  # noqa: E731  (every query errors: Prometheus down)
    polls = [keda.poll(float(t), 0, failing) for t in range(0, 600, spec.polling_interval)]
    assert polls == [0] * len(polls)


def test_the_wake_query_reads_held_and_arriving_requests_where_vllm_has_no_pod(tmp_path: Path) -> None:
    """Series of a model at zero: no vLLM series and no available replica, only the pickers'. The query is
    0 while nothing arrives (KEDA keeps it at zero: the value must exceed activationThreshold 0) and counts
    a single held request (the one that wakes it)."""
    model = model_plan(ZERO, "chat-7b")
    query = _triggers(autoscaling.scaled_object(model, "staging"))["wake"]["metadata"]["query"]
    ns, served = model.names.namespace, model.model.served_model_name
    held = f'{promql.FLOW_CONTROL_QUEUE}{{namespace="{ns}",inference_pool="{model.name}",pod="epp-a"}}'
    dispatched = f'{promql.EPP_REQUESTS}{{namespace="{ns}",model_name="{served}",target_model_name="{served}",pod="epp-a"}}'
    shed = (
        f'{promql.EPP_REQUEST_ERRORS}{{namespace="{ns}",model_name="{served}",pod="epp-b",'
        'error_code="ServiceUnavailable"}'
    )
    available = f'kube_deployment_status_replicas_available{{namespace="{ns}",deployment="chat-7b"}}'

    def case(series: list[dict[str, str]], value: float) -> dict:
        input_series = [{"series": available, "values": "0x40"}, *series]
        return promtool.expression_case(query, input_series, value, interval=f"{SCRAPE_INTERVAL_SECONDS}s")

    tests = [
        case([], 0),  # idle at zero, the pickers have counted nothing: stay at zero, no error
        case([{"series": held, "values": "0x40"}], 0),  # the picker runs, nothing held
        case([{"series": held, "values": "1x40"}], 1),  # one request held: above 0, KEDA activates
        case(  # held 2, plus 1 req/s counted and 0.5 req/s answered 503 (no endpoint yet)
            [
                {"series": held, "values": "2x40"},
                {"series": dispatched, "values": "0+5x40"},
                {"series": shed, "values": "0+2.5x40"},
            ],
            3.5,
        ),
    ]
    promtool.unit_test_rules({"groups": []}, tests, tmp_path)


def test_zero_without_the_gateway_is_refused_with_file_line_field_and_value(tmp_path: Path) -> None:
    text = (
        fixture_stack(ZERO)
        .read_text()
        .replace("  llm-platform:gateway:\n    enabled: true", "  llm-platform:gateway:\n    enabled: false")
    )
    path = tmp_path / "Pulumi.zero.yaml"
    path.write_text(text)
    msg = config_error(path)
    assert f"{path}:" in msg and "models[0] (chat-7b).autoscaling.minReplicas: 0" in msg
    assert "needs the gateway (gateway.enabled: true)" in msg and "allowed without it: 1 or more" in msg


def test_prod_refuses_zero_unless_the_model_opts_in() -> None:
    values = stack_values("prod")
    assert values["gateway"]["enabled"]
    values["models"][0]["autoscaling"]["minReplicas"] = 0
    msg = config_error(values)
    assert (
        "autoscaling.minReplicas: 0 is not allowed in prod unless" in msg and "allowScaleToZero: true" in msg
    )
    values["models"][0]["autoscaling"]["allowScaleToZero"] = True
    model = stack_plan(parse(values)).models[0]
    assert model.scaling.min_replicas == 0 and "wake" in _triggers(autoscaling.scaled_object(model, "prod"))


def test_the_zero_fixture_passes_preflight() -> None:
    assert preflight_main([str(fixture_stack(ZERO))]) == 0


def test_an_alert_fires_when_a_request_held_for_a_model_at_zero_times_out(tmp_path: Path) -> None:
    from llm_platform.components.specs import gateway_monitoring as gm

    model = model_plan(ZERO, "chat-7b")
    rule = gm.epp_prometheus_rule(model)
    names = [r["alert"] for r in rule["spec"]["groups"][0]["rules"]]
    assert "InferenceGatewayHeldRequestTimedOut" in names
    kept = gm.epp_prometheus_rule(model_plan(ZERO, "code-1b"))  # keeps a replica: no such alert
    assert "InferenceGatewayHeldRequestTimedOut" not in [
        r["alert"] for r in kept["spec"]["groups"][0]["rules"]
    ]
    ns = model.names.namespace
    series = f'{gm.FLOW_CONTROL_REQUESTS}{{namespace="{ns}",inference_pool="chat-7b",outcome="%s"}}'
    labels = {"severity": "warning", "namespace": ns, "inference_pool": "chat-7b"}
    (timed_out,) = [
        r for r in rule["spec"]["groups"][0]["rules"] if r["alert"] == "InferenceGatewayHeldRequestTimedOut"
    ]
    annotations = {k: v.replace(gm.VALUE, "1") for k, v in timed_out["annotations"].items()}
    tests = [
        {
            "interval": "1m",
            "input_series": [
                {"series": series % "Dispatched", "values": "0+1x20"},
                {"series": series % "EvictedTTL", "values": "0x10 1x10"},  # one held request times out at 11m
            ],
            "alert_rule_test": [
                {"eval_time": "8m", "alertname": "InferenceGatewayHeldRequestTimedOut", "exp_alerts": []},
                {
                    "eval_time": "12m",
                    "alertname": "InferenceGatewayHeldRequestTimedOut",
                    "exp_alerts": [{"exp_labels": labels, "exp_annotations": annotations}],
                },
            ],
        }
    ]
    only = {
        "groups": [
            {
                "name": "g",
                "rules": [
                    r
                    for r in rule["spec"]["groups"][0]["rules"]
                    if r["alert"] == "InferenceGatewayHeldRequestTimedOut"
                ],
            }
        ]
    }
    promtool.unit_test_rules(only, tests, tmp_path)
