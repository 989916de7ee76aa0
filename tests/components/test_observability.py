"""kube-prometheus-stack and KEDA: everything selected, persistent, on system nodes, secrets from Pulumi."""

from __future__ import annotations

import pytest

from llm_platform.components.specs import keda, observability
from llm_platform.components.specs.common import ADDON_TOLERATION
from llm_platform.config.loader import ConfigError, parse
from llm_platform.config.schema import AlertingConfig
from llm_platform.plan.stack import PROMETHEUS_SIZING
from tests.conftest import stack_values

RELEASE = "kubernetes:helm.sh/v3:Release"
PROD = PROMETHEUS_SIZING["prod"]
NONE = AlertingConfig()


def _release(m, name: str):
    return next(r for r in m.by_type(RELEASE) if r.inputs["name"] == name)


def test_prometheus_selects_every_monitor_and_rule() -> None:
    spec = observability.helm_values(sizing=PROD, storage_class="gp3-encrypted", alerting=NONE)["prometheus"][
        "prometheusSpec"
    ]
    for kind in ("serviceMonitor", "podMonitor", "probe", "scrapeConfig", "rule"):
        assert spec[f"{kind}SelectorNilUsesHelmValues"] is False


def test_prometheus_storage_is_persistent() -> None:
    spec = observability.helm_values(sizing=PROD, storage_class="gp3-encrypted", alerting=NONE)["prometheus"][
        "prometheusSpec"
    ]
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
    # dev runs no gateway: the endpoint pickers' dashboard would show nothing
    assert {c.inputs["metadata"]["name"] for c in maps} == {"llm-platform-vllm", "llm-platform-gpu"}
    assert all(c.inputs["metadata"]["labels"]["grafana_dashboard"] == "1" for c in maps)


def test_the_endpoint_picker_dashboard_ships_with_the_gateway(run_program) -> None:
    m = run_program("gateway")
    names = {
        c.inputs["metadata"]["name"]
        for c in m.by_type("kubernetes:core/v1:ConfigMap")
        if c.inputs["metadata"]["namespace"] == "monitoring"
    }
    assert names == {"llm-platform-vllm", "llm-platform-gpu", "llm-platform-endpoint-picker"}


def test_controllers_run_on_addon_nodes() -> None:
    addons = {"llm-platform/node-role": "addons"}
    values = observability.helm_values(sizing=PROMETHEUS_SIZING["dev"], storage_class=None, alerting=NONE)
    placed = [
        values["prometheus"]["prometheusSpec"],
        values["alertmanager"]["alertmanagerSpec"],
        values["grafana"],
        values["prometheusOperator"],
        values["prometheusOperator"]["admissionWebhooks"]["patch"],
        values["kube-state-metrics"],
        keda.helm_values(),
    ]
    for pod in placed:
        assert pod["nodeSelector"] == addons
        assert pod["tolerations"] == [ADDON_TOLERATION]
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


def test_prometheus_bounds_its_volume_and_prod_runs_two() -> None:
    """A full volume stops ingestion, and with it every KEDA trigger and alert."""
    prom = observability.helm_values(sizing=PROD, storage_class=None, alerting=NONE)["prometheus"]
    spec = prom["prometheusSpec"]
    assert spec["retentionSize"] == "85GB" and spec["replicas"] == 2
    for env in ("dev", "staging", "prod"):
        sizing = PROMETHEUS_SIZING[env]
        assert int(sizing.retention_size.removesuffix("GB")) < sizing.storage_gib


@pytest.mark.parametrize(
    ("receiver", "field"),
    [("slack", "slack_configs"), ("pagerduty", "pagerduty_configs"), ("webhook", "webhook_configs")],
)
def test_alerts_route_to_the_configured_receiver(receiver: str, field: str) -> None:
    extra = {"slackChannel": "#llm-alerts"} if receiver == "slack" else {}
    alerting = AlertingConfig.model_validate({"receiver": receiver, **extra})
    values = observability.alertmanager_values(alerting)
    config = values["config"]
    assert config["route"]["receiver"] == "platform", "the chart's default sends everything to null"
    (platform,) = [r for r in config["receivers"] if r["name"] == "platform"]
    (target,) = platform[field]
    # the credential is a mounted Secret file: never in the Helm values, the state or the render
    assert next(v for k, v in target.items() if k.endswith("_file")) == observability.ALERT_RECEIVER_FILE
    assert values["alertmanagerSpec"]["secrets"] == [observability.ALERT_RECEIVER_SECRET]


def test_staging_and_prod_must_notify_someone() -> None:
    values = stack_values("staging")
    values.pop("alerting")
    with pytest.raises(ConfigError, match=r"alerting.receiver: 'none' is allowed in dev only"):
        parse(values)
    assert parse(stack_values("dev")).alerting.receiver == "none"


def test_rendered_receiver_credential_is_a_secret(run_program) -> None:
    from pulumi.runtime import rpc

    m = run_program("prod")
    values = _release(m, "kube-prometheus-stack").inputs["values"]
    assert values["alertmanager"]["config"]["route"]["receiver"] == "platform"
    secret = next(
        s
        for s in m.by_type("kubernetes:core/v1:Secret")
        if s.inputs["metadata"]["name"] == observability.ALERT_RECEIVER_SECRET
    )
    assert rpc.is_rpc_secret(secret.inputs["stringData"])


def test_prometheus_and_alertmanager_survive_karpenter_disruption() -> None:
    """One replica: Karpenter must not move it (a restart loses the scrapes and pending alerts' `for:`
    state; Alertmanager has no volume, its silences and notification log); a PDB there would block every
    drain. Two Prometheus replicas (prod): a PDB lets one go at a time, no annotation."""
    single = observability.helm_values(sizing=PROMETHEUS_SIZING["dev"], storage_class=None, alerting=NONE)
    do_not_disrupt = {"karpenter.sh/do-not-disrupt": "true"}
    assert single["prometheus"]["prometheusSpec"]["podMetadata"]["annotations"] == do_not_disrupt
    assert single["prometheus"]["podDisruptionBudget"] == {"enabled": False}
    assert single["alertmanager"]["alertmanagerSpec"]["podMetadata"]["annotations"] == do_not_disrupt
    assert single["alertmanager"]["podDisruptionBudget"] == {"enabled": False}
    prod = observability.helm_values(
        sizing=PROMETHEUS_SIZING["prod"], storage_class="gp3-encrypted", alerting=NONE
    )
    assert "podMetadata" not in prod["prometheus"]["prometheusSpec"]
    assert prod["prometheus"]["podDisruptionBudget"]["enabled"] is True
    assert prod["prometheus"]["podDisruptionBudget"]["minAvailable"] == PROMETHEUS_SIZING["prod"].replicas - 1
    # stateless controllers carry neither: Karpenter may consolidate them freely
    for stateless in (prod["grafana"], prod["prometheusOperator"], prod["kube-state-metrics"]):
        assert "podMetadata" not in stateless and "podAnnotations" not in stateless


def test_prometheus_volume_binds_in_the_zone_of_its_node(run_program) -> None:
    """WaitForFirstConsumer: the EBS volume is made in the zone of the add-on node Prometheus first lands on;
    the add-on pool spans every zone of the cluster, so a node Karpenter replaces can always come back there."""
    m = run_program("prod")
    (storage,) = m.by_type("kubernetes:storage.k8s.io/v1:StorageClass")
    assert storage.inputs["volumeBindingMode"] == "WaitForFirstConsumer"
    (pool,) = [
        p
        for p in m.by_type("kubernetes:karpenter.sh/v1:NodePool")
        if p.inputs["metadata"]["name"] == "addons"
    ]
    zones = next(
        r["values"]
        for r in pool.inputs["spec"]["template"]["spec"]["requirements"]
        if r["key"] == "topology.kubernetes.io/zone"
    )
    assert zones == ["us-east-1a", "us-east-1b", "us-east-1c"]
