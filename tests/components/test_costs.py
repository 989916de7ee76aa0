"""Cost allocation (tests/fixtures/stacks/Pulumi.costs.yaml): OpenCost's values, the cost recording rules and
the overrun alert driven through `promtool test rules` on series shaped as OpenCost and AI Gateway export them,
and the forecasts' config errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from llm_platform.components.specs import costs
from llm_platform.components.specs.alerts import VALUE
from llm_platform.components.specs.common import ADDON_NODE_LABEL
from llm_platform.config.loader import load_stack, parse
from llm_platform.facts.catalog import GPU_INSTANCES
from llm_platform.facts.cpu_catalog import CPU_INSTANCES
from llm_platform.plan import resolve
from llm_platform.plan.naming import MONITORING_NAMESPACE
from llm_platform.tools import render
from tests.components import promtool
from tests.conftest import config_error, fixture_stack, stack_values

REGION = "us-east-1"
G5_XLARGE = GPU_INSTANCES["g5.xlarge"].on_demand_usd_per_hour(REGION)
G5_2XLARGE = GPU_INSTANCES["g5.2xlarge"].on_demand_usd_per_hour(REGION)
NS = "model-chat-7b"


def _rule() -> dict[str, Any]:
    cfg = load_stack(fixture_stack("costs"))
    return costs.prometheus_rule(resolve(cfg).models, cfg.gpu_node_pools, REGION, cfg.costs)


def test_opencost_runs_the_exporter_on_the_addon_nodes_reading_the_stacks_prometheus() -> None:
    rendered = render.evaluate(fixture_stack("costs"))
    (release,) = [h for h in rendered.helm.values() if h["chart"] == "opencost"]
    assert (release["version"], release["namespace"]) == ("2.5.17", MONITORING_NAMESPACE)
    oc = release["values"]["opencost"]
    assert oc["nodeSelector"] == ADDON_NODE_LABEL and oc["ui"] == {"enabled": False}
    # the Prometheus the autoscalers read (the ScaledObjects' serverAddress), not another
    internal = oc["prometheus"]["internal"]
    url = f"http://{internal['serviceName']}.{internal['namespaceName']}.svc.cluster.local:{internal['port']}"
    addresses = {
        t["metadata"]["serverAddress"]
        for m in rendered.manifests
        if m["kind"] == "ScaledObject"
        for t in m["spec"]["triggers"]
    }
    assert addresses == {url}
    rule_names = {m["metadata"]["name"] for m in rendered.manifests if m["kind"] == "PrometheusRule"}
    assert costs.RULE_NAME in rule_names
    assert oc["exporter"]["extraEnv"] == {"USE_CUSTOM_PROVIDER": "true"}


def test_custom_prices_reproduce_the_cpu_catalog_and_price_gpus_above_their_host() -> None:
    cpu, ram = costs.cpu_ram_prices(REGION)
    for i in CPU_INSTANCES.values():  # the fit explains every CPU node's price within 20 %
        assert cpu * i.vcpus + ram * i.memory_gib == pytest.approx(i.on_demand_usd_per_hour(REGION), rel=0.2)
    sheet = costs.custom_pricing(load_stack(fixture_stack("costs")).gpu_node_pools, REGION)
    gpu = float(sheet["GPU"])
    g5 = GPU_INSTANCES["g5.xlarge"]
    assert 0 < gpu < G5_2XLARGE and cpu * g5.vcpus + ram * g5.memory_gib + gpu < 1.5 * G5_XLARGE


def test_a_region_without_prices_is_refused_naming_it() -> None:
    with pytest.raises(costs.PricingError, match=r"region 'eu-north-9'.*priced: us-east-1"):
        costs.cpu_ram_prices("eu-north-9")


def close_to(expr: str, value: float) -> str:
    """1 when `expr` is within 1e-6 of `value` (promtool compares samples exactly), nothing when it is empty."""
    return f"abs(({expr}) - {value!r}) < bool 1e-6"


def _opencost_series(gpus_on: dict[str, tuple[str, int]], held: dict[str, int], samples: str) -> list[dict]:
    """OpenCost's node and allocation series: node -> (instance type, GPUs); pod node -> GPUs chat-7b holds."""
    series = []
    for node, (instance_type, gpus) in gpus_on.items():
        labels = f'node="{node}",instance_type="{instance_type}"'
        series += [
            {"series": f"node_total_hourly_cost{{{labels}}}", "values": f"0.9{samples}"},
            {"series": f'node_gpu_count{{node="{node}"}}', "values": f"{gpus}{samples}"},
        ]
    for node, gpus in held.items():
        pod = f'namespace="{NS}",pod="chat-7b-{node}",container="vllm",node="{node}"'
        series.append({"series": f"container_gpu_allocation{{{pod}}}", "values": f"{gpus}{samples}"})
    return series


def test_model_cost_is_its_gpus_at_each_nodes_catalog_price_and_the_rest_is_unallocated(
    tmp_path: Path,
) -> None:
    """chat-7b holds the GPU of a g5.xlarge; a g5.2xlarge stands empty (headroom): $/h of each from the
    catalog, not OpenCost's single GPU price."""
    series = _opencost_series({"n1": ("g5.xlarge", 1), "n2": ("g5.2xlarge", 1)}, {"n1": 1}, "x30")
    model = f'{costs.MODEL_COST_HOURLY}{{model_name="chat-7b"}}'
    tests = [
        promtool.expression_case(close_to(f"sum({model})", G5_XLARGE), series, 1, eval_time="10m"),
        promtool.expression_case(
            close_to(f"sum({costs.UNALLOCATED_HOURLY})", G5_2XLARGE), series, 1, eval_time="10m"
        ),
        # no GPU node and no model pod: no cost series at all, and nothing unallocated
        promtool.expression_case(f"sum({model})", [], [], eval_time="10m"),
    ]
    promtool.unit_test_rules(_rule()["spec"], tests, tmp_path)


def test_clients_share_the_models_cost_by_their_tokens(tmp_path: Path) -> None:
    series = _opencost_series({"n1": ("g5.xlarge", 1)}, {"n1": 1}, "x30")
    for client, per_min in (("web", 1800), ("batch", 600)):  # 30 and 10 tokens/s
        labels = f'gen_ai_token_type="output",gen_ai_request_model="chat-7b",llm_client="{client}"'
        series.append({"series": f"gen_ai_client_token_usage_sum{{{labels}}}", "values": f"0+{per_min}x30"})
    cost = f'{costs.CLIENT_COST_HOURLY}{{llm_client="%s"}}'
    tests = [
        promtool.expression_case(
            close_to(f"sum({cost % 'web'})", 0.75 * G5_XLARGE), series, 1, eval_time="20m"
        ),
        promtool.expression_case(
            close_to(f"sum({cost % 'batch'})", 0.25 * G5_XLARGE), series, 1, eval_time="20m"
        ),
    ]
    promtool.unit_test_rules(_rule()["spec"], tests, tmp_path)


def _annotations(model: str, value: str) -> dict[str, str]:
    (group,) = [g for g in _rule()["spec"]["groups"] if g["name"] == "llm-platform-cost-alerts"]
    (rule,) = group["rules"]
    return {
        k: v.replace("{{ $labels.model_name }}", model).replace(VALUE, value)
        for k, v in rule["annotations"].items()
    }


def _alert_case(gpus: int, eval_time: str, firing: bool) -> dict[str, Any]:
    """chat-7b on `gpus` g5.xlarge nodes for 26 h; its forecast is $30.5/day with a 25 % overrun share."""
    nodes = {f"n{i}": ("g5.xlarge", 1) for i in range(gpus)}
    series = _opencost_series(nodes, dict.fromkeys(nodes, 1), "x1560")
    alerts = []
    if firing:
        labels = {"alertname": costs.OVERRUN_ALERT, "model_name": "chat-7b", "severity": "warning"}
        # the last day's samples (both ends of the 1d window) of the model's $/h, as the alert says it
        spent = (24 * 60 + 1) * gpus * G5_XLARGE / 60
        alerts = [{"exp_labels": labels, "exp_annotations": _annotations("chat-7b", f"{spent:.4g}")}]
    return {
        "interval": "1m",
        "input_series": series,
        "alert_rule_test": [{"eval_time": eval_time, "alertname": costs.OVERRUN_ALERT, "exp_alerts": alerts}],
    }


def test_the_overrun_alert_fires_only_above_the_forecast_by_the_share(tmp_path: Path) -> None:
    assert 24 * G5_XLARGE < 30.5 * 1.25 < 2 * 24 * G5_XLARGE  # one node is within, two are over
    tests = [
        _alert_case(1, "25h", firing=False),
        _alert_case(2, "25h", firing=True),
        # two nodes for 10 minutes have not spent a day's forecast yet
        _alert_case(2, "40m", firing=False),
        # no cost series at all (OpenCost down, nothing running): no alert, no error
        {"interval": "1m", "input_series": [], "alert_rule_test": [
            {"eval_time": "25h", "alertname": costs.OVERRUN_ALERT, "exp_alerts": []}]},
    ]  # fmt: skip
    promtool.unit_test_rules(_rule()["spec"], tests, tmp_path)


def test_a_model_without_a_forecast_has_no_yardstick(tmp_path: Path) -> None:
    """code-1b has no forecast: its cost is recorded, and however high it is, no alert."""
    series = [
        {"series": 'node_total_hourly_cost{node="n1",instance_type="g5.xlarge"}', "values": "0.9x1560"},
        {"series": 'node_gpu_count{node="n1"}', "values": "1x1560"},
        {
            "series": 'container_gpu_allocation{namespace="model-code-1b",pod="c",node="n1"}',
            "values": "1x1560",
        },
    ]
    tests = [
        promtool.expression_case(
            close_to(f'sum({costs.MODEL_COST_DAILY}{{model_name="code-1b"}})', (24 * 60 + 1) * G5_XLARGE / 60),
            series, 1, eval_time="25h",
        ),
        {"interval": "1m", "input_series": series, "alert_rule_test": [
            {"eval_time": "25h", "alertname": costs.OVERRUN_ALERT, "exp_alerts": []}]},
    ]  # fmt: skip
    promtool.unit_test_rules(_rule()["spec"], tests, tmp_path)


def test_every_cost_rule_and_the_alert_pass_promtool_check(tmp_path: Path) -> None:
    promtool.check_rule_file(_rule()["spec"], tmp_path)


def _values() -> dict[str, Any]:
    return stack_values("costs")


def test_a_stale_forecast_is_refused_with_the_deployed_hash_and_the_command() -> None:
    values = _values()
    values["models"][0]["maxModelLen"] = 4096  # the model changed since the forecast
    message = config_error(values)
    assert (
        "costs.forecasts[0].configHash" in message
        and "'dfbc553a942d' is not the deployed config's" in message
    )
    assert "simulator replay" in message


def test_forecasts_need_costs_on_a_known_model_once() -> None:
    values = _values()
    values["costs"]["enabled"] = False
    assert "costs.enabled" in config_error(values)
    values = _values()
    values["costs"]["forecasts"][0]["model"] = "nope"
    assert "is not a model of the stack; allowed: chat-7b, code-1b" in config_error(values)
    values = _values()
    values["costs"]["forecasts"].append(dict(values["costs"]["forecasts"][0]))
    assert "has a forecast already; one per model" in config_error(values)


def test_the_stale_hash_error_names_the_file_and_line(tmp_path: Path) -> None:
    text = (
        fixture_stack("costs").read_text().replace('configHash: "dfbc553a942d"', 'configHash: "000000000000"')
    )
    stack = tmp_path / "Pulumi.costs.yaml"
    stack.write_text(text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "000000000000" in t)
    assert f"Pulumi.costs.yaml:{line}: costs.forecasts[0].configHash: '000000000000'" in config_error(stack)


def test_an_unquoted_hash_yaml_reads_as_a_number_is_refused_with_the_fix(tmp_path: Path) -> None:
    text = (
        fixture_stack("costs").read_text().replace('configHash: "dfbc553a942d"', "configHash: 000000000000")
    )
    stack = tmp_path / "Pulumi.costs.yaml"
    stack.write_text(text)
    message = config_error(stack)
    assert "costs.forecasts[0].configHash" in message and 'a quoted string, e.g. configHash: "' in message


def test_expected_traffic_names_a_model_once_and_a_day_the_simulator_reads() -> None:
    values = _values()
    values["costs"]["expectedTraffic"] = [{"model": "chat-7b", "scale": 0.5}]
    assert parse(values).costs.expected_traffic[0].day == "builtin:seed-day"  # the default day
    values["costs"]["expectedTraffic"] = [{"model": "nope"}]
    assert (
        "costs.expectedTraffic[0].model: 'nope' is not a model of the stack; allowed: chat-7b, code-1b"
        in (config_error(values))
    )
    values["costs"]["expectedTraffic"] = [{"model": "chat-7b"}, {"model": "chat-7b", "scale": 2}]
    assert "has an expected traffic day already; one per model" in config_error(values)
    values["costs"]["expectedTraffic"] = [{"model": "chat-7b", "day": "monday.txt"}]
    assert "costs.expectedTraffic[0].day: 'monday.txt'" in config_error(values)
    values["costs"]["expectedTraffic"] = [{"model": "chat-7b", "scale": 0}]
    assert "costs.expectedTraffic[0].scale: 0" in config_error(values)


def test_a_schema_key_added_later_leaves_the_forecast_hash_while_unset() -> None:
    """`autoscaling.wakeRequestsPerSecond` came after the fixture's forecast was written: unset, the hash is
    the one pasted (the fixture still loads); set, the model changed and the hash with it."""
    from llm_platform.config.schema import forecast_config_hash
    from tests.conftest import load_fixture

    config = load_fixture("costs")
    model = next(m for m in config.models if m.name == "chat-7b")
    pool = config.pool(model.node_pool)
    (forecast,) = [f for f in config.costs.forecasts if f.model == "chat-7b"]
    assert forecast_config_hash(model, pool, config.environment) == forecast.config_hash
    changed = model.model_copy(
        update={"autoscaling": model.autoscaling.model_copy(update={"wake_requests_per_second": 2.0})}
    )
    assert forecast_config_hash(changed, pool, config.environment) != forecast.config_hash
