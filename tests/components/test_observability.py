"""kube-prometheus-stack and KEDA: everything selected, persistent, on system nodes, secrets from Pulumi."""

from __future__ import annotations

from components.specs import keda, observability

RELEASE = "kubernetes:helm.sh/v3:Release"


def _release(m, name: str):
    return next(r for r in m.by_type(RELEASE) if r.inputs["name"] == name)


def test_prometheus_selects_every_monitor_and_rule() -> None:
    spec = observability.helm_values(retention="15d", storage_gib=100, storage_class="gp3-encrypted")[
        "prometheus"
    ]["prometheusSpec"]
    for kind in ("serviceMonitor", "podMonitor", "probe", "scrapeConfig", "rule"):
        assert spec[f"{kind}SelectorNilUsesHelmValues"] is False


def test_prometheus_storage_is_persistent() -> None:
    spec = observability.helm_values(retention="15d", storage_gib=100, storage_class="gp3-encrypted")[
        "prometheus"
    ]["prometheusSpec"]
    claim = spec["storageSpec"]["volumeClaimTemplate"]["spec"]
    assert claim["resources"]["requests"]["storage"] == "100Gi"
    assert claim["storageClassName"] == "gp3-encrypted"
    assert spec["retention"] == "15d"
    assert observability.storage_class()["parameters"] == {"type": "gp3", "encrypted": "true"}


def test_grafana_password_comes_from_a_secret(run_program) -> None:
    from pulumi.runtime import rpc

    m = run_program("prod")
    values = _release(m, "kube-prometheus-stack").inputs["values"]
    assert values["grafana"]["admin"]["existingSecret"] == "grafana-admin"
    assert "adminPassword" not in values["grafana"]
    secret = next(
        s for s in m.by_type("kubernetes:core/v1:Secret") if s.inputs["metadata"]["name"] == "grafana-admin"
    )
    assert rpc.is_rpc_secret(secret.inputs["stringData"])


def test_dashboards_ship_as_sidecar_config_maps(run_program) -> None:
    m = run_program("dev")
    maps = [
        c
        for c in m.by_type("kubernetes:core/v1:ConfigMap")
        if c.inputs["metadata"]["namespace"] == "monitoring"
    ]
    assert {c.inputs["metadata"]["name"] for c in maps} == {
        "llm-platform-vllm",
        "llm-platform-gpu",
        "llm-platform-endpoint-picker",
    }
    assert all(c.inputs["metadata"]["labels"]["grafana_dashboard"] == "1" for c in maps)


def test_controllers_run_on_system_nodes() -> None:
    system = {"llm-platform/node-role": "system"}
    values = observability.helm_values(retention="3d", storage_gib=20, storage_class=None)
    assert values["prometheus"]["prometheusSpec"]["nodeSelector"] == system
    assert values["grafana"]["nodeSelector"] == system
    assert values["prometheusOperator"]["nodeSelector"] == system
    assert keda.helm_values()["nodeSelector"] == system
    assert (
        "storageClassName"
        not in values["prometheus"]["prometheusSpec"]["storageSpec"]["volumeClaimTemplate"]["spec"]
    )


def test_keda_metrics_are_scraped() -> None:
    prometheus = keda.helm_values()["prometheus"]
    assert prometheus["operator"]["serviceMonitor"]["enabled"] is True
    assert prometheus["metricServer"]["serviceMonitor"]["enabled"] is True


def test_releases_are_pinned_and_ordered(run_program) -> None:
    m = run_program("prod")
    kps = _release(m, "kube-prometheus-stack")
    assert kps.inputs["version"] == "88.5.3"
    assert kps.inputs["repositoryOpts"]["repo"] == "https://prometheus-community.github.io/helm-charts"
    assert kps.depends_on("kubernetes:core/v1:Secret", "llm-prod-monitoring-grafana-admin")
    keda_release = _release(m, "keda")
    assert keda_release.inputs["version"] == "2.20.2"
    assert keda_release.depends_on(RELEASE, "llm-prod-monitoring-release"), (
        "KEDA's ServiceMonitors need the CRDs"
    )
