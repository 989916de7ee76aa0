"""A disaggregated model's alerts watch the objects it has: each role's Deployment, ScaledObject and HPA, never
the aggregated Deployment a P/D model does not run (its alerts then stayed silent). Proven with promtool on the
pd fixture's model: each scaling alert fires on its role's series, labelled with the role."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from llm_platform.components.specs import alerts, dashboards, disaggregation, gateway_monitoring
from llm_platform.plan import ModelPlan, promql
from llm_platform.plan.naming import keda_hpa_name
from tests.components import promtool
from tests.plans import model_plan

EVAL = "30m"
SAMPLES = 40


def _plan() -> ModelPlan:
    return model_plan("pd", "llama-70b")


def _rules(m: ModelPlan) -> list[dict[str, Any]]:
    return [r for g in alerts.prometheus_rule(m)["spec"]["groups"] for r in g["rules"]]


def _series(name: str, labels: dict[str, str], values: str) -> dict[str, str]:
    return {"series": name + "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}", "values": values}


def _case(input_series: list[dict[str, str]], alert: str, expected: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "interval": "1m",
        "input_series": input_series,
        "alert_rule_test": [{"eval_time": EVAL, "alertname": alert, "exp_alerts": expected}],
    }


def _without_annotations(m: ModelPlan) -> dict[str, Any]:
    spec = alerts.prometheus_rule(m)["spec"]
    for g in spec["groups"]:
        for r in g["rules"]:
            r.pop("annotations", None)
    return spec


def test_rules_name_only_the_roles_objects() -> None:
    """Every Deployment, ScaledObject and HPA the model's rules (vLLM and picker) select is one the render has."""
    m = _plan()
    assert m.disaggregation is not None
    scaled_objects = [disaggregation.role_scaled_object(m, r, "staging") for r in m.disaggregation.roles]
    rendered = {s["metadata"]["name"] for s in scaled_objects}
    deployments = {s["spec"]["scaleTargetRef"]["name"] for s in scaled_objects} | {f"{m.name}-epp"}
    exprs = [r["expr"] for r in _rules(m)]
    exprs += [r["expr"] for r in gateway_monitoring.epp_alert_rules(m)]
    named = {
        label: set(re.findall(rf'{label}="([^"]+)"', " ".join(exprs)))
        for label in ("deployment", "scaledObject", "scaledResource", "horizontalpodautoscaler")
    }
    assert named["deployment"] == deployments
    assert named["scaledObject"] == named["scaledResource"] == rendered
    assert named["horizontalpodautoscaler"] == {keda_hpa_name(s) for s in rendered}


def test_each_role_gets_its_own_scaling_alerts() -> None:
    m = _plan()
    by_role: dict[str, list[str]] = {}
    for r in _rules(m):
        if "role" in r["labels"]:
            by_role.setdefault(r["labels"]["role"], []).append(r["alert"])
    expected = [
        "VLLMMetricsMissing",
        "VLLMKedaScalerErrors",
        "VLLMKedaTriggerNoData",
        "VLLMReplicasAtMaximum",
    ]
    assert by_role == {"prefill": expected, "decode": expected}


def test_role_alerts_fire_on_their_roles_series(tmp_path: Path) -> None:
    """Prefill pods that stopped exporting vLLM metrics page as the prefill role's; the decode HPA at its
    ceiling (the fixture's decode maxReplicas 4) pages as the decode role's; decode pods exporting do not hide
    the prefill role's missing metrics."""
    m = _plan()
    assert m.disaggregation is not None
    ns, name = m.names.namespace, m.model.served_model_name
    prefill, decode = m.disaggregation.role("prefill"), m.disaggregation.role("decode")
    labels = {"namespace": ns, "model_name": name}

    def available(deployment: str) -> dict[str, str]:
        return _series(
            alerts.DEPLOYMENT_AVAILABLE, {"namespace": ns, "deployment": deployment}, f"2x{SAMPLES}"
        )

    def running(pod: str) -> dict[str, str]:
        return _series(promql.RUNNING, {**labels, "pod": pod}, f"3x{SAMPLES}")

    decode_pods = [running(f"{decode.deployment}-5d9c7b-abcde"), running(f"{decode.deployment}-5d9c7b-fghij")]
    prefill_pods = [
        running(f"{prefill.deployment}-7f8d6c-klmno"),
        running(f"{prefill.deployment}-7f8d6c-pqrst"),
    ]
    hpa = {"namespace": ns, "horizontalpodautoscaler": keda_hpa_name(decode.scaled_object)}
    ceiling = decode.max_replicas
    at_max = [
        _series(alerts.HPA_CURRENT, hpa, f"{ceiling}x{SAMPLES}"),
        _series(alerts.HPA_MAX, hpa, f"{ceiling}x{SAMPLES}"),
    ]
    below_max = [
        _series(alerts.HPA_CURRENT, hpa, f"{ceiling - 1}x{SAMPLES}"),
        _series(alerts.HPA_MAX, hpa, f"{ceiling}x{SAMPLES}"),
    ]
    missing = {"severity": "critical", **labels, "role": "prefill"}
    tests = [
        _case(
            [available(prefill.deployment), available(decode.deployment), *decode_pods],
            "VLLMMetricsMissing",
            [{"exp_labels": missing}],
        ),
        _case(
            [available(prefill.deployment), available(decode.deployment), *decode_pods, *prefill_pods],
            "VLLMMetricsMissing",
            [],
        ),
        _case(
            at_max,
            "VLLMReplicasAtMaximum",
            [
                {
                    "exp_labels": {
                        "severity": "warning",
                        **labels,
                        "role": "decode",
                        "horizontalpodautoscaler": hpa["horizontalpodautoscaler"],
                    }
                }
            ],
        ),
        _case(below_max, "VLLMReplicasAtMaximum", []),
    ]
    promtool.unit_test_rules(_without_annotations(m), tests, tmp_path)


def test_role_keda_errors_fire_on_the_roles_scaled_object(tmp_path: Path) -> None:
    m = _plan()
    assert m.disaggregation is not None
    ns, name = m.names.namespace, m.model.served_model_name
    prefill = m.disaggregation.role("prefill")
    keda = {"namespace": "keda", "exported_namespace": ns, "scaledObject": prefill.scaled_object}
    errors = {**keda, "scaler": "prometheusScaler", "triggerIndex": "0", "metric": "s0-prometheus"}
    expected = {
        "severity": "warning",
        "namespace": ns,
        "model_name": name,
        "role": "prefill",
        "scaledObject": prefill.scaled_object,
        "scaler": "prometheusScaler",
        "triggerIndex": "0",
        "metric": "s0-prometheus",
    }
    tests = [
        _case(
            [_series(alerts.KEDA_SCALER_ERRORS, errors, f"0+6x{SAMPLES}")],
            "VLLMKedaScalerErrors",
            [{"exp_labels": expected}],
        )
    ]
    promtool.unit_test_rules(_without_annotations(m), tests, tmp_path)


def test_pd_rules_pass_promtool_check(tmp_path: Path) -> None:
    promtool.check_rule_file(alerts.prometheus_rule(_plan())["spec"], tmp_path)


def test_dashboard_shows_each_roles_replicas(tmp_path: Path) -> None:
    """The vLLM board's role panel selects the pd model's role Deployments and HPAs (with the board's variables
    filled in for it), and only a stack with a disaggregated model gets it."""
    m = _plan()
    assert m.disaggregation is not None
    (panel,) = [
        p
        for p in dashboards.vllm_dashboard(roles=True)["panels"]
        if p["title"] == "Replicas per role (disaggregated models)"
    ]
    values = {"namespace": m.names.namespace, "model_name": m.name}
    exprs = [promtool.substitute_grafana_variables(t["expr"], values) for t in panel["targets"]]
    promtool.check_expressions(exprs, tmp_path)
    for label, names in (
        ("deployment", {r.deployment for r in m.disaggregation.roles}),
        ("horizontalpodautoscaler", {keda_hpa_name(r.scaled_object) for r in m.disaggregation.roles}),
    ):
        patterns = set(re.findall(rf'{label}=~"([^"]+)"', " ".join(exprs)))
        assert patterns and all(any(re.fullmatch(p, n) for p in patterns) for n in names)
        assert not any(re.fullmatch(p, m.name) for p in patterns)
    assert "Replicas per role (disaggregated models)" not in {
        p["title"] for p in dashboards.vllm_dashboard()["panels"]
    }
