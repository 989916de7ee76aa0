"""The autoscaling strategies the simulator compares, and how the stack's config maps onto KEDA.

The stack's `models[].autoscaling` (config/schema.py) becomes a ScaledObject with (research §2.7/§8):
- queue trigger  `sum(vllm:num_requests_waiting{...})`  AverageValue, threshold queueDepthPerReplica;
- KV trigger     `sum(vllm:kv_cache_usage_perc{...})`   AverageValue, threshold kvCacheUsage (per pod);
- one cron trigger per `prewarm` window (desiredReplicas = replicas);
- min/max, pollingInterval, cooldownPeriod and scaleUp/scaleDown as the HPA behavior.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from config.schema import Autoscaling
from config.schema import ScalingRules as SchemaRules
from simulator.hpa import Behavior, ScalingPolicy, ScalingRules
from simulator.keda import CronTrigger, Fallback, PrometheusTrigger, ScaledObjectSpec, Trigger

Kind = Literal["static", "hpa-memory", "keda"]


@dataclass(frozen=True)
class Strategy:
    name: str
    kind: Kind
    replicas: int = 1  # static count; the starting count for the others
    min_replicas: int = 1
    max_replicas: int = 1
    memory_target: float = 0.9  # hpa-memory: DCGM framebuffer used / total, per pod (AverageValue)
    behavior: Behavior | None = None
    scaled_object: ScaledObjectSpec | None = None
    description: str = ""


def static(replicas: int) -> Strategy:
    return Strategy(
        f"static-{replicas}",
        "static",
        replicas,
        replicas,
        replicas,
        description=f"{replicas} replicas all day",
    )


def hpa_gpu_memory(
    min_replicas: int, max_replicas: int, target: float = 0.9, behavior: Behavior | None = None
) -> Strategy:
    """HPA on GPU memory (a Pods metric from DCGM's framebuffer used): vLLM pre-allocates, so it barely moves."""
    return Strategy(
        "hpa-gpu-memory", "hpa-memory", min_replicas, min_replicas, max_replicas, target, behavior,
        description=f"HPA, DCGM framebuffer used per pod, target {target:.0%}, min {min_replicas} max {max_replicas}",
    )  # fmt: skip


def behavior_from_schema(up: SchemaRules, down: SchemaRules) -> Behavior:
    def rules(r: SchemaRules) -> ScalingRules:
        return ScalingRules(
            r.stabilization_window_seconds,
            r.select_policy or "Max",
            None
            if r.policies is None
            else tuple(ScalingPolicy(p.type, p.value, p.period_seconds) for p in r.policies),
        )

    return Behavior(rules(up), rules(down))


def keda(
    name: str,
    a: Autoscaling,
    kv: Literal["sum", "max"] | None = "sum",
    prewarm: bool = True,
    fallback: Fallback | None = None,
    queue_activation: float = 0.0,
    description: str = "",
) -> Strategy:
    """A ScaledObject built from a stack's `autoscaling` block (see module doc)."""
    triggers: list[Trigger] = [
        PrometheusTrigger("queue", "waiting_sum", a.queue_depth_per_replica, queue_activation)
    ]
    if kv is not None:
        triggers.append(PrometheusTrigger("kv", "kv_sum" if kv == "sum" else "kv_max", a.kv_cache_usage))
    if prewarm:
        triggers += [CronTrigger(w.name, w.start, w.end, w.timezone, w.replicas) for w in a.prewarm]
    spec = ScaledObjectSpec(
        tuple(triggers),
        min_replica_count=a.min_replicas,
        max_replica_count=a.max_replicas,
        polling_interval=a.polling_interval,
        cooldown_period=a.cooldown_period,
        fallback=fallback,
        behavior=behavior_from_schema(a.scale_up, a.scale_down),
    )
    return Strategy(
        name, "keda", a.min_replicas, a.min_replicas, a.max_replicas, scaled_object=spec,
        description=description or _describe(a, kv, prewarm),
    )  # fmt: skip


def _describe(a: Autoscaling, kv: str | None, prewarm: bool) -> str:
    parts = [f"queue {a.queue_depth_per_replica:g}/pod"]
    if kv:
        parts.append(f"{kv}(kv) {a.kv_cache_usage:g}")
    if prewarm and a.prewarm:
        parts.append("cron " + ", ".join(f"{w.name}={w.replicas}" for w in a.prewarm))
    return f"KEDA {' + '.join(parts)}, min {a.min_replicas} max {a.max_replicas}"


def for_stack(a: Autoscaling, memory_target: float = 0.9) -> list[Strategy]:
    """The issue's strategy set for one model of a stack."""
    return [
        static(a.max_replicas),
        hpa_gpu_memory(a.min_replicas, a.max_replicas, memory_target),
        keda("keda-queue", a, kv=None, prewarm=False),
        keda("keda-queue-kv", a, kv="sum", prewarm=False),
        keda("stack-config", a, kv="sum", prewarm=True),
    ]
