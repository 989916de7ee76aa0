"""What monitoring looks like: kube-prometheus-stack selecting every monitor and rule in the cluster,
persistent Prometheus storage, Grafana with its admin password from a Secret, and the platform's dashboards."""

from __future__ import annotations

from typing import Any

from components.specs import reservations
from components.specs.common import SYSTEM_NODE_LABEL, SYSTEM_TOLERATION

NAMESPACE = "monitoring"
RELEASE = "kube-prometheus-stack"
GRAFANA_SECRET = "grafana-admin"
STORAGE_CLASS = "gp3-encrypted"


# Prometheus keeps what each environment needs to look back on: a dev day, a staging week, a prod fortnight
RETENTION = {"dev": ("3d", 20), "staging": ("7d", 50), "prod": ("15d", 100)}


def retention(environment: str) -> tuple[str, int]:
    """(retention, volume GiB) for an environment."""
    return RETENTION[environment]


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


def _system() -> dict[str, Any]:
    return {"nodeSelector": dict(SYSTEM_NODE_LABEL), "tolerations": [SYSTEM_TOLERATION]}


def helm_values(
    *, retention: str, storage_gib: int, storage_class: str | None, capacity_reservations: bool = False
) -> dict[str, Any]:
    """`capacity_reservations`: kube-state-metrics also exports the EC2NodeClasses' reservations (end times)."""
    volume_claim: dict[str, Any] = {
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": f"{storage_gib}Gi"}}}
    }
    if storage_class:
        volume_claim["spec"]["storageClassName"] = storage_class
    return {
        "crds": {"enabled": True},
        "prometheusOperator": {**_system(), "admissionWebhooks": {"patch": _system()}},
        "prometheus": {
            "prometheusSpec": {
                **_system(),
                # select every ServiceMonitor, PodMonitor, Probe, ScrapeConfig and PrometheusRule in the
                # cluster, not only those labelled for this release (vLLM, DCGM, KEDA, Karpenter monitors)
                "serviceMonitorSelectorNilUsesHelmValues": False,
                "podMonitorSelectorNilUsesHelmValues": False,
                "probeSelectorNilUsesHelmValues": False,
                "scrapeConfigSelectorNilUsesHelmValues": False,
                "ruleSelectorNilUsesHelmValues": False,
                "retention": retention,
                "storageSpec": {"volumeClaimTemplate": volume_claim},
                "resources": {"requests": {"cpu": "500m", "memory": "2Gi"}, "limits": {"memory": "4Gi"}},
            }
        },
        "alertmanager": {"alertmanagerSpec": _system()},
        "grafana": {
            **_system(),
            "admin": {
                "existingSecret": GRAFANA_SECRET,
                "userKey": "admin-user",
                "passwordKey": "admin-password",
            },
            "sidecar": {
                "dashboards": {"enabled": True, "label": "grafana_dashboard", "searchNamespace": "ALL"}
            },
        },
        "kube-state-metrics": _system()
        | (reservations.kube_state_metrics_values() if capacity_reservations else {}),
        # node-exporter runs everywhere, GPU nodes included (its default tolerations cover NoSchedule taints)
    }


def grafana_secret(password: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": GRAFANA_SECRET, "namespace": NAMESPACE},
        "type": "Opaque",
        "stringData": {"admin-user": "admin", "admin-password": password},
    }
