"""What a model's autoscaling looks like: a KEDA ScaledObject on vLLM's queue depth and KV-cache usage, and
optionally on the requests its replicas complete per second.

Every Prometheus trigger is an AverageValue metric: the HPA divides the summed value by the current replica
count and compares it with the threshold, so `queueDepthPerReplica: 5` means "add replicas while more than
five requests wait per replica". The KV fill grows with the load below saturation but jumps to the batch's
full fill past it, so a low KV target asks for maxReplicas in any overload; served throughput
(`requestsPerSecondPerReplica`, vLLM's request_success counter) is proportional below saturation and a
saturated pool asks for only its throughput over the target. The HPA takes the largest replica count any
trigger asks for; cron
triggers hold capacity ready before known surges. Never CPU or GPU utilisation: vLLM pre-allocates GPU
memory and keeps the GPU busy while requests queue, so neither says whether users are waiting.
"""

from __future__ import annotations

from typing import Any

from llm_platform.config.schema import ScalingRules
from llm_platform.plan import ModelPlan


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


def triggers(m: ModelPlan) -> list[dict[str, Any]]:
    s = m.scaling
    common = {"serverAddress": s.prometheus_url, "ignoreNullValues": str(s.ignore_null_values).lower()}
    out: list[dict[str, Any]] = [
        {
            "type": t.type,
            "name": t.name,
            "metricType": t.metric_type,
            "metadata": {
                **common,
                "query": t.query,
                "threshold": _number(t.threshold),
                **(
                    {}
                    if t.activation_threshold is None
                    else {"activationThreshold": _number(t.activation_threshold)}
                ),
            },
        }
        for t in s.triggers
    ]
    for p in s.prewarm:
        out.append(
            {
                "type": "cron",
                "name": p.name,
                "metadata": {
                    "timezone": p.window.timezone,
                    "start": p.window.start,
                    "end": p.window.end,
                    "desiredReplicas": str(p.window.replicas),
                },
            }
        )
    return out


def cooldown(min_replicas: int, seconds: int) -> dict[str, Any]:
    """`cooldownPeriod`, only where it acts: KEDA waits it only before scaling to zero (or to
    idleReplicaCount), never above a minReplicaCount of 1 or more (KEDA 2.20.2
    pkg/scaling/executor/scale_scaledobjects.go: scaleToZeroOrIdle runs only when minReplicas == 0)."""
    return {"cooldownPeriod": seconds} if min_replicas == 0 else {}


def scale_target(m: ModelPlan) -> dict[str, str]:
    """The Deployment, or a multi-node model's LeaderWorkerSet through its scale subresource (KEDA scales any
    resource with /scale; the LWS CRD's selector for it is the leader pods', `.status.hpaPodSelector`). The KEDA
    2.20.2 chart's default RBAC (`rbac.enabledCustomScaledRefKinds: true`, `scaledRefKinds` apiGroup/kind "*")
    lets its operator get and update any `*/scale`, so the values need no addition for it."""
    if m.model.rollout is not None:
        # a progressive rollout's pods are the Rollout's (scale subresource: rollout-crd.yaml@v1.9.0
        # `specReplicasPath: .spec.replicas`); its canary runs on top at each step's weight (plan/rollout.py)
        return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "name": m.names.deployment}
    if m.multi_node:
        return {
            "apiVersion": "leaderworkerset.x-k8s.io/v1",
            "kind": "LeaderWorkerSet",
            "name": m.names.deployment,
        }
    return {"apiVersion": "apps/v1", "kind": "Deployment", "name": m.names.deployment}


def scaled_object(m: ModelPlan, environment: str) -> dict[str, Any]:
    s = m.scaling
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {
            "name": m.names.scaled_object,
            "namespace": m.names.namespace,
            "labels": {"app.kubernetes.io/instance": m.name, "llm-platform/environment": environment},
        },
        "spec": {
            "scaleTargetRef": scale_target(m),
            "minReplicaCount": s.min_replicas,
            "maxReplicaCount": s.max_replicas,
            "pollingInterval": s.polling_interval_s,
            **cooldown(s.min_replicas, s.cooldown_period_s),
            **(
                {}
                if s.fallback_replicas is None
                else {
                    "fallback": {
                        "failureThreshold": s.fallback_failure_threshold,
                        "replicas": s.fallback_replicas,
                    }
                }
            ),
            "advanced": {
                "horizontalPodAutoscalerConfig": {
                    "behavior": {"scaleUp": _rules(s.scale_up), "scaleDown": _rules(s.scale_down)}
                }
            },
            "triggers": triggers(m),
        },
    }
