"""KEDA ScaledObjects: vLLM's own metrics, thresholds from config, cron pre-warm, HPA behaviour, fallback."""

from __future__ import annotations

from pathlib import Path

from llm_platform.components.specs import autoscaling
from llm_platform.plan import promql
from llm_platform.plan.model import SCRAPE_INTERVAL_SECONDS
from tests.components import promtool
from tests.conftest import stack_values
from tests.plans import model_plan, stack_plan


def _model(stack: str, name: str):
    return model_plan(stack, name)


def _triggers(scaled: dict) -> dict[str, dict]:
    return {t["name"]: t for t in scaled["spec"]["triggers"]}


def test_triggers_are_queue_depth_and_kv_cache_as_average_values() -> None:
    model = _model("prod", "mistral-7b")
    triggers = _triggers(autoscaling.scaled_object(model, "prod"))
    queue, kv = triggers["queue-depth"], triggers["kv-cache-usage"]
    loading = (
        ' or on() (vector(0) unless on() (sum(kube_deployment_status_replicas_available{namespace="'
        'model-mistral-7b",deployment="mistral-7b"}) > 0))'
    )
    # the gauges averaged over a minute at one point per scrape (tests/simulator/test_gauges.py)
    assert queue["metadata"]["query"] == (
        'sum(avg_over_time((sum(vllm:num_requests_waiting{namespace="model-mistral-7b",model_name="mistral-7b"}))'
        "[60s:5s]))" + loading
    )
    assert kv["metadata"]["query"] == (
        'sum(avg_over_time((sum(vllm:kv_cache_usage_perc{namespace="model-mistral-7b",model_name="mistral-7b"}))'
        "[60s:5s]))" + loading
    )
    assert queue["metadata"]["threshold"] == "2" and kv["metadata"]["threshold"] == "0.04"
    for trigger in (queue, kv):
        assert trigger["type"] == "prometheus" and trigger["metricType"] == "AverageValue"
        assert trigger["metadata"]["ignoreNullValues"] == "false", "a renamed metric must be loud"
        assert trigger["metadata"]["serverAddress"].startswith(
            "http://kube-prometheus-stack-prometheus.monitoring"
        )
        assert trigger["metadata"]["query"].startswith("sum("), "KEDA fails on more than one series"


def test_thresholds_follow_the_config() -> None:
    values = stack_values("dev")
    values["models"][0]["autoscaling"] |= {"queueDepthPerReplica": 7.5, "kvCacheUsage": 0.65}
    from llm_platform.config.loader import parse

    triggers = _triggers(autoscaling.scaled_object(stack_plan(parse(values)).models[0], "dev"))
    assert triggers["queue-depth"]["metadata"]["threshold"] == "7.5"
    assert triggers["kv-cache-usage"]["metadata"]["threshold"] == "0.65"


def test_never_cpu_or_gpu_utilisation() -> None:
    for stack in ("dev", "staging", "prod"):
        for model in stack_plan(stack).models:
            for trigger in autoscaling.scaled_object(model, stack)["spec"]["triggers"]:
                assert trigger["type"] in {"prometheus", "cron"}
                query = trigger["metadata"].get("query", "")
                assert "DCGM" not in query and "cpu" not in query


def test_prewarm_windows_become_cron_triggers() -> None:
    cron = _triggers(autoscaling.scaled_object(_model("prod", "mistral-7b"), "prod"))["prewarm-morning-surge"]
    assert cron["type"] == "cron"
    assert cron["metadata"] == {
        "timezone": "UTC",
        "start": "45 6 * * *",
        "end": "15 9 * * *",
        "desiredReplicas": "8",
    }


def test_replica_bounds_polling_and_behaviour() -> None:
    spec = autoscaling.scaled_object(_model("prod", "mistral-7b"), "prod")["spec"]
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (2, 10)
    assert spec["pollingInterval"] == 10
    # KEDA waits cooldownPeriod only before scaling to zero: above a floor of 2 it would act on nothing
    assert "cooldownPeriod" not in spec
    assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "mistral-7b"}
    behavior = spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    assert behavior["scaleUp"] == {
        "stabilizationWindowSeconds": 0,
        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
    }
    assert behavior["scaleDown"]["stabilizationWindowSeconds"] == 300


def test_unset_behaviour_fields_take_kubernetes_defaults() -> None:
    values = stack_values("dev")
    values["models"][0]["autoscaling"]["scaleUp"] = {"selectPolicy": "Max"}
    from llm_platform.config.loader import parse

    behavior = autoscaling.scaled_object(stack_plan(parse(values)).models[0], "dev")["spec"]["advanced"][
        "horizontalPodAutoscalerConfig"
    ]["behavior"]
    assert behavior["scaleUp"] == {"selectPolicy": "Max"}


def test_fallback_holds_capacity_while_metrics_are_missing() -> None:
    spec = autoscaling.scaled_object(_model("prod", "mistral-7b"), "prod")["spec"]
    assert spec["fallback"] == {"failureThreshold": 3, "replicas": 5}
    assert _model("prod", "llama-70b").scaling.fallback_replicas == 2


def test_queries_use_current_metric_names() -> None:
    assert promql.QUEUE == "vllm:num_requests_waiting"
    assert promql.KV_CACHE == "vllm:kv_cache_usage_perc"
    for old in ("gpu_cache_usage_perc", "gpu_cache_usage_factor", "time_per_output_token"):
        assert old not in promql.queue_depth("ns", "m") + promql.kv_cache_usage("ns", "m")


def test_rendered_scaled_objects_wait_for_keda(run_program) -> None:
    m = run_program("prod")
    scaled = m.by_type("kubernetes:keda.sh/v1alpha1:ScaledObject")
    assert {s.inputs["metadata"]["name"] for s in scaled} == {"mistral-7b", "llama-70b"}
    for s in scaled:
        assert s.depends_on("kubernetes:helm.sh/v3:Release", "llm-prod-keda-release")
        assert s.depends_on("kubernetes:apps/v1:Deployment")
    for rule in m.by_type("kubernetes:monitoring.coreos.com/v1:PrometheusRule"):
        assert rule.depends_on("kubernetes:helm.sh/v3:Release", "llm-prod-monitoring-release")


def test_first_rollout_reads_zero_and_a_renamed_metric_stays_loud(tmp_path: Path) -> None:
    """KEDA's fallback replaces a failing trigger after failureThreshold errors. On a first rollout no pod
    exports vLLM metrics yet: the query must read 0 (stay at minReplicas), not fail into the fallback
    (half the ceiling) before anything serves. Once a replica is available, a missing series stays empty,
    so a renamed metric still errors (and alerts) instead of silently reading 0."""
    model = _model("prod", "mistral-7b")
    query = _triggers(autoscaling.scaled_object(model, "prod"))["queue-depth"]["metadata"]["query"]
    ns, labels = "model-mistral-7b", 'namespace="model-mistral-7b",model_name="mistral-7b"'
    available = f'kube_deployment_status_replicas_available{{namespace="{ns}",deployment="mistral-7b"}}'
    waiting = f"vllm:num_requests_waiting{{{labels},pod=%r}}"

    def check(series: list[dict[str, str]], expected: list[dict[str, object]]) -> dict:
        return promtool.expression_case(query, series, expected, eval_time="5m")

    tests = [
        # first rollout: pods loading, none available, no vLLM series at all
        check([{"series": available, "values": "0x10"}], [{"labels": "{}", "value": 0}]),
        # serving: the sum of the replicas' queues
        check(
            [
                {"series": available, "values": "2x10"},
                {"series": waiting % "p0", "values": "3x10"},
                {"series": waiting % "p1", "values": "4x10"},
            ],
            [{"labels": "{}", "value": 7}],
        ),
        # serving, but the metric was renamed: empty, so KEDA errors loudly
        check([{"series": available, "values": "2x10"}], []),
    ]
    promtool.unit_test_rules({"groups": []}, tests, tmp_path)


def test_served_throughput_is_an_average_value_trigger_only_when_set(tmp_path: Path) -> None:
    """`requestsPerSecondPerReplica` adds a trigger on the requests the replicas complete per second (vLLM's
    request_success counter, rated over THROUGHPUT_WINDOW): the HPA divides it by the replicas, so the pool is sized
    to its load below saturation and asks for only throughput / target past it. Without it: two triggers."""
    from llm_platform.config.loader import parse

    values = stack_values("dev")
    assert "served-throughput" not in _triggers(
        autoscaling.scaled_object(stack_plan(parse(values)).models[0], "dev")
    )
    values["models"][0]["autoscaling"]["requestsPerSecondPerReplica"] = 7.5
    model = stack_plan(parse(values)).models[0]
    served = _triggers(autoscaling.scaled_object(model, "dev"))["served-throughput"]
    assert served["type"] == "prometheus" and served["metricType"] == "AverageValue"
    assert served["metadata"]["threshold"] == "7.5"
    assert served["metadata"]["ignoreNullValues"] == "false"
    query = served["metadata"]["query"]
    labels = f'namespace="{model.names.namespace}",model_name="{model.model.served_model_name}"'
    assert query.startswith(f"sum(rate({promql.SUCCESS}{{{labels}}}[{promql.THROUGHPUT_WINDOW}]))")
    available = (
        f'kube_deployment_status_replicas_available{{namespace="{model.names.namespace}",'
        f'deployment="{model.names.deployment}"}}'
    )
    success = f'{promql.SUCCESS}{{{labels},pod="%s",finished_reason="stop"}}'
    input_series = [
        {"series": available, "values": "2x40"},
        {"series": success % "p0", "values": "0+15x40"},  # 3 requests/s
        {"series": success % "p1", "values": "0+20x40"},  # 4 requests/s
    ]
    tests = [promtool.expression_case(query, input_series, 7, interval=f"{SCRAPE_INTERVAL_SECONDS}s")]
    promtool.unit_test_rules({"groups": []}, tests, tmp_path)


def test_behind_the_gateway_the_load_trigger_counts_what_arrives_served_or_shed(tmp_path: Path) -> None:
    """With the gateway on, `requestsPerSecondPerReplica` compares the requests that reach the model per
    second (the pickers' dispatched counter plus their 429/503s) with the target: completions cannot exceed
    what the Ready replicas serve, so they under-ask while the gateway holds or sheds the excess. A pod's own
    failure was counted as dispatched already, and a malformed request is no load. Until a picker has counted
    a request its series are absent and vLLM's completions stand in: the trigger never errors on an idle
    model (KEDA's fallback would scale it up)."""
    from llm_platform.config.loader import parse

    values = stack_values("prod")
    assert values["gateway"]["enabled"]
    values["models"][0]["autoscaling"]["requestsPerSecondPerReplica"] = 6.5
    model = stack_plan(parse(values)).models[0]
    assert model.flow_control is not None
    triggers = _triggers(autoscaling.scaled_object(model, "prod"))
    assert "served-throughput" not in triggers
    arrivals = triggers["arrival-rate"]
    assert arrivals["metricType"] == "AverageValue" and arrivals["metadata"]["threshold"] == "6.5"
    query = arrivals["metadata"]["query"]
    ns, served = model.names.namespace, model.model.served_model_name
    labels = f'namespace="{ns}",model_name="{served}"'
    available = (
        f'kube_deployment_status_replicas_available{{namespace="{ns}",deployment="{model.names.deployment}"}}'
    )
    dispatched = f'{promql.EPP_REQUESTS}{{{labels},target_model_name="{served}",pod="%s"}}'
    errors = f'{promql.EPP_REQUEST_ERRORS}{{{labels},target_model_name="{served}",pod="%s",error_code="%s"}}'
    success = f'{promql.SUCCESS}{{{labels},pod="v0",finished_reason="stop"}}'

    def case(series: list[dict[str, str]], value: float) -> dict:
        input_series = [{"series": available, "values": "2x40"}, *series]
        return promtool.expression_case(query, input_series, value, interval=f"{SCRAPE_INTERVAL_SECONDS}s")

    tests = [
        case(
            [
                {"series": success, "values": "0+35x40"},  # the replicas complete 7 req/s
                {"series": dispatched % "epp-a", "values": "0+20x40"},  # 4 req/s
                {"series": dispatched % "epp-b", "values": "0+15x40"},  # 3 req/s
                {
                    "series": errors % ("epp-a", "ResourceExhausted"),
                    "values": "0+10x40",
                },  # 2 req/s held too long
                {
                    "series": errors % ("epp-b", "ServiceUnavailable"),
                    "values": "0+5x40",
                },  # 1 req/s, no endpoint
                {
                    "series": errors % ("epp-a", "ModelServerError"),
                    "values": "0+50x40",
                },  # counted as dispatched
                {"series": errors % ("epp-b", "BadRequest"), "values": "0+50x40"},  # no load
            ],
            10,
        ),
        case(  # nothing shed yet: the error counter does not exist
            [
                {"series": success, "values": "0+35x40"},
                {"series": dispatched % "epp-a", "values": "0+40x40"},
            ],
            8,
        ),
        case([{"series": success, "values": "0+35x40"}], 7),  # no request through a picker yet
    ]
    promtool.unit_test_rules({"groups": []}, tests, tmp_path)

    values["gateway"]["enabled"] = False
    without = stack_plan(parse(values)).models[0]
    assert without.flow_control is None
    assert set(_triggers(autoscaling.scaled_object(without, "prod"))) >= {"served-throughput"}


def test_cooldown_is_rendered_only_where_keda_scales_to_zero() -> None:
    assert autoscaling.cooldown(0, 300) == {"cooldownPeriod": 300}
    assert autoscaling.cooldown(1, 300) == {} and autoscaling.cooldown(3, 60) == {}


def test_the_saturation_hold_reads_the_load_in_replicas_worth_while_nothing_waits(tmp_path: Path) -> None:
    """Every model gets a `saturation-hold` trigger: requests completed per second over what one replica
    completed per second the last time the pool asked to grow (at least queueDepthPerReplica waiting, or the
    KV fill past kvCacheUsage x 1.1, per available replica), within SATURATION_MEMORY_SECONDS. Once the pool is no longer saturated its pods wait for nothing (the queue
    trigger reads 0), yet the hold still reads the load; never saturated (or too long ago) it reads 0, not an
    error (KEDA's fallback would scale up)."""
    from llm_platform.plan.model import SATURATION_HOLD_PER_REPLICA

    model = _model("prod", "mistral-7b")  # queueDepthPerReplica 2
    hold = _triggers(autoscaling.scaled_object(model, "prod"))["saturation-hold"]
    assert hold["type"] == "prometheus" and hold["metricType"] == "AverageValue"
    assert hold["metadata"]["threshold"] == f"{SATURATION_HOLD_PER_REPLICA:g}" == "0.9"
    query = hold["metadata"]["query"]
    ns, labels = "model-mistral-7b", 'namespace="model-mistral-7b",model_name="mistral-7b"'
    available = f'kube_deployment_status_replicas_available{{namespace="{ns}",deployment="mistral-7b"}}'
    waiting = f"vllm:num_requests_waiting{{{labels},pod=%r}}"
    success = f'{promql.SUCCESS}{{{labels},pod=%r,finished_reason="stop"}}'
    step = f"{SCRAPE_INTERVAL_SECONDS}s"

    def case(series: list[dict[str, str]], value: float, at: str) -> dict:
        return promtool.expression_case(query, series, value, eval_time=at, interval=step)

    # 3 minutes saturated (3 waiting per pod >= 2, 10 req/s each), then 5 minutes at 8.5 req/s each, nothing
    # waiting: 17 req/s over 10 req/s per replica = 1.7 replicas' worth
    saturated_then_not = [
        {"series": available, "values": "2x96"},
        *({"series": waiting % p, "values": "3x36 0x59"} for p in ("p0", "p1")),
        *({"series": success % p, "values": "0+50x36 1842.5+42.5x59"} for p in ("p0", "p1")),
    ]
    never = [
        {"series": available, "values": "2x96"},
        *({"series": waiting % p, "values": "1x96"} for p in ("p0", "p1")),  # 1 < 2 per replica
        *({"series": success % p, "values": "0+50x96"} for p in ("p0", "p1")),
    ]
    # saturated in the first 3 minutes, then not for more than SATURATION_MEMORY_SECONDS
    samples = (promql.SATURATION_MEMORY_SECONDS + 600) // SCRAPE_INTERVAL_SECONDS
    forgotten = [
        {"series": available, "values": f"2x{samples}"},
        *({"series": waiting % p, "values": f"3x36 0x{samples - 37}"} for p in ("p0", "p1")),
        *({"series": success % p, "values": f"0+50x{samples}"} for p in ("p0", "p1")),
    ]
    # nothing waits, but for 3 minutes the KV fill per replica (0.05) is past the target 0.04 x 1.1 at 10 req/s
    # each (the KV trigger asks to grow), then 0.03 at 8.5 req/s: 1.7 again
    kv_series = f"{promql.KV_CACHE}{{{labels},pod=%r}}"
    kv_past_then_not = [
        {"series": available, "values": "2x96"},
        *({"series": waiting % p, "values": "0x96"} for p in ("p0", "p1")),
        *({"series": kv_series % p, "values": "0.05x36 0.03x59"} for p in ("p0", "p1")),
        *({"series": success % p, "values": "0+50x36 1842.5+42.5x59"} for p in ("p0", "p1")),
    ]
    tests = [
        case(saturated_then_not, 1.7, "7m"),
        case(kv_past_then_not, 1.7, "7m"),
        case(never, 0, "7m"),
        case(forgotten, 0, f"{promql.SATURATION_MEMORY_SECONDS + 300}s"),
    ]
    promtool.unit_test_rules({"groups": []}, tests, tmp_path)
