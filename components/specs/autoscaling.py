"""What a model's autoscaling looks like: a KEDA ScaledObject on vLLM's queue depth and KV-cache usage.

Both Prometheus triggers are AverageValue metrics: the HPA divides the summed value by the current replica
count and compares it with the threshold, so `queueDepthPerReplica: 5` means "add replicas while more than
five requests wait per replica". The HPA takes the largest replica count any trigger asks for; cron
triggers hold capacity ready before known surges. Never CPU or GPU utilisation: vLLM pre-allocates GPU
memory and keeps the GPU busy while requests queue, so neither says whether users are waiting.
"""

from __future__ import annotations

import math
from typing import Any

from components.specs import promql
from components.specs.serving import namespace_name
from config.schema import ModelConfig, ScalingRules

PROMETHEUS_URL = "http://kube-prometheus-stack-prometheus.monitoring.svc.cluster.local:9090"


def _number(value: float) -> str:
    """KEDA takes thresholds as strings; keep them readable ('5', '0.8')."""
    return f"{value:g}"


def _rules(rules: ScalingRules) -> dict[str, Any]:
    """HPA scaling rules with only the fields the user set; the rest take Kubernetes' defaults."""
    out: dict[str, Any] = {}
    if rules.stabilization_window_seconds is not None:
        out["stabilizationWindowSeconds"] = rules.stabilization_window_seconds
    if rules.select_policy is not None:
        out["selectPolicy"] = rules.select_policy
    if rules.policies is not None:
        out["policies"] = [
            {"type": p.type, "value": p.value, "periodSeconds": p.period_seconds} for p in rules.policies
        ]
    return out


def fallback_replicas(model: ModelConfig) -> int:
    """While the metrics are missing although replicas serve (Prometheus down, a renamed vLLM metric), hold
    half the ceiling. KEDA's fallback replaces the failing triggers' value after `failureThreshold` errors;
    it never applies while no replica is available, because the queries then read 0 (see
    `promql.until_a_replica_serves`): a first rollout stays at minReplicas while its pods load."""
    a = model.autoscaling
    return max(a.min_replicas, math.ceil(a.max_replicas / 2))


def triggers(model: ModelConfig) -> list[dict[str, Any]]:
    namespace = namespace_name(model)
    name = model.served_model_name
    a = model.autoscaling
    common = {"serverAddress": PROMETHEUS_URL, "ignoreNullValues": "false"}
    out: list[dict[str, Any]] = [
        {
            "type": "prometheus",
            "name": "queue-depth",
            "metricType": "AverageValue",
            "metadata": {
                **common,
                "query": promql.until_a_replica_serves(
                    promql.queue_depth(namespace, name), namespace, model.name
                ),
                "threshold": _number(a.queue_depth_per_replica),
            },
        },
        {
            "type": "prometheus",
            "name": "kv-cache-usage",
            "metricType": "AverageValue",
            "metadata": {
                **common,
                "query": promql.until_a_replica_serves(
                    promql.kv_cache_usage(namespace, name), namespace, model.name
                ),
                "threshold": _number(a.kv_cache_usage),
            },
        },
    ]
    for window in a.prewarm:
        out.append(
            {
                "type": "cron",
                "name": f"prewarm-{window.name}",
                "metadata": {
                    "timezone": window.timezone,
                    "start": window.start,
                    "end": window.end,
                    "desiredReplicas": str(window.replicas),
                },
            }
        )
    return out


def scaled_object(model: ModelConfig, environment: str) -> dict[str, Any]:
    a = model.autoscaling
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {
            "name": model.name,
            "namespace": namespace_name(model),
            "labels": {"app.kubernetes.io/instance": model.name, "llm-platform/environment": environment},
        },
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": model.name},
            "minReplicaCount": a.min_replicas,
            "maxReplicaCount": a.max_replicas,
            "pollingInterval": a.polling_interval,
            "cooldownPeriod": a.cooldown_period,
            "fallback": {"failureThreshold": 3, "replicas": fallback_replicas(model)},
            "advanced": {
                "horizontalPodAutoscalerConfig": {
                    "behavior": {"scaleUp": _rules(a.scale_up), "scaleDown": _rules(a.scale_down)}
                }
            },
            "triggers": triggers(model),
        },
    }
