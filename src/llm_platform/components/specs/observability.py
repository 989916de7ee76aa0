"""What monitoring looks like: kube-prometheus-stack selecting every monitor and rule in the cluster,
persistent Prometheus storage, Grafana with its admin password from a Secret, and the platform's dashboards."""

from __future__ import annotations

from typing import Any

from llm_platform.components.specs import reservations
from llm_platform.components.specs.common import ADDON_NODE_LABEL, ADDON_TOLERATION, secret
from llm_platform.config.schema import AlertingConfig
from llm_platform.plan import PrometheusSizing
from llm_platform.plan.addon_pods import PROMETHEUS
from llm_platform.plan.naming import MONITORING_NAMESPACE, PROMETHEUS_RELEASE

RELEASE = PROMETHEUS_RELEASE
GRAFANA_SECRET = "grafana-admin"
STORAGE_CLASS = "gp3-encrypted"


def storage_class() -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": STORAGE_CLASS},
        "provisioner": "ebs.csi.aws.com",
        "parameters": {"type": "gp3", "encrypted": "true"},
        "reclaimPolicy": "Retain",
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowVolumeExpansion": True,
    }


def _addons() -> dict[str, Any]:
    return {"nodeSelector": dict(ADDON_NODE_LABEL), "tolerations": [ADDON_TOLERATION]}


# Karpenter leaves a node alone while a pod on it carries this annotation (consolidation and drift wait;
# expiry waits up to the NodePool's terminationGracePeriod)
DO_NOT_DISRUPT = {"karpenter.sh/do-not-disrupt": "true"}


def _stateful(replicas: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """(podMetadata, podDisruptionBudget) of a Prometheus or Alertmanager on the add-on nodes, which
    Karpenter consolidates. One replica: a restart loses what only it holds (Prometheus: the scrapes and
    the pending `for:` state of every alert while it replays its WAL; Alertmanager without a volume: its
    silences and notification log), so Karpenter must not move it; a PDB would block every drain instead.
    More replicas: a PDB lets one go at a time (chart keys `<component>.podDisruptionBudget`,
    kube-prometheus-stack 88.5.3 values.yaml)."""
    if replicas == 1:
        return {"annotations": dict(DO_NOT_DISRUPT)}, {"enabled": False}
    return {}, {"enabled": True, "minAvailable": replicas - 1, "unhealthyPodEvictionPolicy": "AlwaysAllow"}


def helm_values(
    *,
    sizing: PrometheusSizing,
    storage_class: str | None,
    alerting: AlertingConfig,
    capacity_reservations: bool = False,
) -> dict[str, Any]:
    """`capacity_reservations`: kube-state-metrics also exports the EC2NodeClasses' reservations (end times)."""
    volume_claim: dict[str, Any] = {
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": f"{sizing.storage_gib}Gi"}},
        }
    }
    if storage_class:
        volume_claim["spec"]["storageClassName"] = storage_class
    prometheus_pod, prometheus_pdb = _stateful(sizing.replicas)
    return {
        "crds": {"enabled": True},
        "prometheusOperator": {**_addons(), "admissionWebhooks": {"patch": _addons()}},
        "prometheus": {
            "podDisruptionBudget": prometheus_pdb,
            "prometheusSpec": {
                **_addons(),
                **({"podMetadata": prometheus_pod} if prometheus_pod else {}),
                # select every ServiceMonitor, PodMonitor, Probe, ScrapeConfig and PrometheusRule in the
                # cluster, not only those labelled for this release (vLLM, DCGM, KEDA, Karpenter monitors)
                "serviceMonitorSelectorNilUsesHelmValues": False,
                "podMonitorSelectorNilUsesHelmValues": False,
                "probeSelectorNilUsesHelmValues": False,
                "scrapeConfigSelectorNilUsesHelmValues": False,
                "ruleSelectorNilUsesHelmValues": False,
                "retention": sizing.retention,
                "retentionSize": sizing.retention_size,
                "replicas": sizing.replicas,
                "storageSpec": {"volumeClaimTemplate": volume_claim},
                "resources": {"requests": PROMETHEUS.as_dict(), "limits": {"memory": "4Gi"}},
            },
        },
        "alertmanager": alertmanager_values(alerting),
        "grafana": {
            **_addons(),
            "admin": {
                "existingSecret": GRAFANA_SECRET,
                "userKey": "admin-user",
                "passwordKey": "admin-password",
            },
            "sidecar": {
                "dashboards": {"enabled": True, "label": "grafana_dashboard", "searchNamespace": "ALL"}
            },
        },
        "kube-state-metrics": _addons()
        | (reservations.kube_state_metrics_values() if capacity_reservations else {}),
        # node-exporter runs everywhere, GPU nodes included (its default tolerations cover NoSchedule taints)
    }


def grafana_secret(password: Any) -> dict[str, Any]:
    return secret(GRAFANA_SECRET, MONITORING_NAMESPACE, {"admin-user": "admin", "admin-password": password})


# ------------------------------------------------------------------------------------------ alerting

ALERT_RECEIVER_SECRET = "alert-receiver"
ALERT_RECEIVER_KEY = "credential"
# the operator mounts each `alertmanagerSpec.secrets` entry at /etc/alertmanager/secrets/<name>/
ALERT_RECEIVER_FILE = f"/etc/alertmanager/secrets/{ALERT_RECEIVER_SECRET}/{ALERT_RECEIVER_KEY}"
PLATFORM_RECEIVER = "platform"
ALERTMANAGER_REPLICAS = 1  # the chart's default, no volume
NULL_RECEIVER = "null"


def alert_receiver_secret(credential: Any) -> dict[str, Any]:
    """The receiver's URL or routing key, from the `alertReceiver` Pulumi secret."""
    return secret(ALERT_RECEIVER_SECRET, MONITORING_NAMESPACE, {ALERT_RECEIVER_KEY: credential})


def _receiver(alerting: AlertingConfig) -> dict[str, Any]:
    """Alertmanager receiver reading its credential from the mounted Secret (`*_file` fields): the URL or
    key never appears in the Helm values, the release's state or the render."""
    resolved = alerting.send_resolved
    if alerting.receiver == "slack":
        config = {"api_url_file": ALERT_RECEIVER_FILE, "channel": alerting.slack_channel}
        return {"name": PLATFORM_RECEIVER, "slack_configs": [{**config, "send_resolved": resolved}]}
    if alerting.receiver == "pagerduty":
        config = {"routing_key_file": ALERT_RECEIVER_FILE, "send_resolved": resolved}
        return {"name": PLATFORM_RECEIVER, "pagerduty_configs": [config]}
    return {
        "name": PLATFORM_RECEIVER,
        "webhook_configs": [{"url_file": ALERT_RECEIVER_FILE, "send_resolved": resolved}],
    }


def alertmanager_values(alerting: AlertingConfig) -> dict[str, Any]:
    """Route every alert to the stack's receiver (the chart's default routes everything to `null`), keep
    the chart's Watchdog heartbeat on `null` and its inhibit rules; dev without a receiver keeps `null`."""
    pod, pdb = _stateful(ALERTMANAGER_REPLICAS)
    values: dict[str, Any] = {
        "podDisruptionBudget": pdb,
        "alertmanagerSpec": {**_addons(), "replicas": ALERTMANAGER_REPLICAS, "podMetadata": pod},
    }
    if alerting.receiver == "none":
        return values
    values["alertmanagerSpec"]["secrets"] = [ALERT_RECEIVER_SECRET]
    values["config"] = {
        "global": {"resolve_timeout": "5m"},
        "route": {
            "receiver": PLATFORM_RECEIVER,
            "group_by": ["alertname", "namespace", "model_name"],
            "group_wait": "30s",
            "group_interval": "5m",
            "repeat_interval": "4h",
            "routes": [{"receiver": NULL_RECEIVER, "matchers": ['alertname = "Watchdog"']}],
        },
        "receivers": [{"name": NULL_RECEIVER}, _receiver(alerting)],
        "inhibit_rules": [
            {
                "source_matchers": ["severity = critical"],
                "target_matchers": ["severity =~ warning|info"],
                "equal": ["namespace", "alertname"],
            },
            {
                "source_matchers": ["severity = warning"],
                "target_matchers": ["severity = info"],
                "equal": ["namespace", "alertname"],
            },
            {
                "source_matchers": ["alertname = InfoInhibitor"],
                "target_matchers": ["severity = info"],
                "equal": ["namespace"],
            },
            {"target_matchers": ["alertname = InfoInhibitor"]},
        ],
        "templates": ["/etc/alertmanager/config/*.tmpl"],
    }
    return values
