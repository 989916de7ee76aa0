"""The autoscaling strategies the simulator compares; the stack's own is its resolved plan's ScaledObject.

A model's `ScalingPlan` (plan/model.py) is what components/specs/autoscaling.py renders: the queue and KV
Prometheus triggers (sums over the model's pods, AverageValue), one cron trigger per `prewarm` window, the
fallback, min/max, pollingInterval, cooldownPeriod and the HPA behaviour. `from_plan` turns exactly that into
the simulator's ScaledObject; nothing here re-derives it from the stack file. `keda` builds a hand-written
ScaledObject (the seed article's) for comparison.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from llm_platform.config.schema import Autoscaling
from llm_platform.plan import ModelPlan, ScalingPlan, promql
from llm_platform.plan.model import scaling_plan
from llm_platform.simulator.controllers.hpa import Behavior
from llm_platform.simulator.controllers.keda import (
    CronTrigger,
    Fallback,
    PrometheusTrigger,
    ScaledObjectSpec,
    Trigger,
)

# what each deployed trigger's query sums over the model's Ready pods, as the engine scrapes it
SCRAPED_SUM = {
    promql.QUEUE: "waiting_sum",
    promql.KV_CACHE: "kv_sum",
    promql.SUCCESS: "served_rate",
    promql.EPP_REQUESTS: "arrival_rate",
    promql.SATURATION_HOLD: "saturation_hold",  # controllers/saturation.py
    promql.WAKE_SIGNAL: "wake",  # the pickers' series: read at zero replicas too (day/engine.py)
}
TRIGGER_LABEL = {
    promql.QUEUE: "queue",
    promql.KV_CACHE: "sum(kv)",
    promql.SUCCESS: "served req/s",
    promql.EPP_REQUESTS: "arriving req/s",
    promql.SATURATION_HOLD: "saturation hold",
    promql.WAKE_SIGNAL: "wake",
}

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


def keda(
    name: str,
    a: Autoscaling,
    kv: Literal["sum", "max"] | None = "sum",
    prewarm: bool = True,
    fallback: Fallback | None = None,
    queue_activation: float = 0.0,
    description: str = "",
) -> Strategy:
    """A hand-written ScaledObject from an `autoscaling` block (the seed article's: `kv` "max", an activation
    threshold); a stack's ScaledObject comes from its plan (`from_plan`)."""
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
        behavior=Behavior(a.scale_up, a.scale_down),
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


def from_plan(
    name: str,
    scaling: ScalingPlan,
    metrics: frozenset[str] | None = None,
    prewarm: bool = True,
    description: str = "",
) -> Strategy:
    """The ScaledObject the plan renders; `metrics` keeps only those vLLM series' triggers, `prewarm` the crons."""
    triggers: list[Trigger] = [
        PrometheusTrigger(
            t.name,
            SCRAPED_SUM[t.metric],
            t.threshold,
            0.0 if t.activation_threshold is None else t.activation_threshold,  # KEDA's default: 0
            query=t.query,
            saturation=t.saturation,
            smoothing=t.smoothing,
        )
        for t in scaling.triggers
        if metrics is None or t.metric in metrics
    ]
    if prewarm:
        triggers += [
            CronTrigger(p.name, p.window.start, p.window.end, p.window.timezone, p.window.replicas)
            for p in scaling.prewarm
        ]
    spec = ScaledObjectSpec(
        tuple(triggers),
        min_replica_count=scaling.min_replicas,
        max_replica_count=scaling.max_replicas,
        polling_interval=scaling.polling_interval_s,
        cooldown_period=scaling.cooldown_period_s,
        fallback=None
        if scaling.fallback_replicas is None
        else Fallback(scaling.fallback_failure_threshold, scaling.fallback_replicas),
        behavior=Behavior(scaling.scale_up, scaling.scale_down),
    )
    return Strategy(
        name, "keda", scaling.min_replicas, scaling.min_replicas, scaling.max_replicas, scaled_object=spec,
        description=description or _describe_plan(scaling, metrics, prewarm),
    )  # fmt: skip


def scaling_for(model: ModelPlan, autoscaling: Autoscaling) -> ScalingPlan:
    """The plan of another `autoscaling` block (a recommendation, a tuner candidate) for the same model."""
    return scaling_plan(
        model.names, model.model.served_model_name, autoscaling, model.flow_control is not None
    )


def _describe_plan(scaling: ScalingPlan, metrics: frozenset[str] | None, prewarm: bool) -> str:
    parts = [
        f"{TRIGGER_LABEL[t.metric]} {t.threshold:g}/pod"
        for t in scaling.triggers
        if metrics is None or t.metric in metrics
    ]
    if prewarm and scaling.prewarm:
        parts.append("cron " + ", ".join(f"{p.window.name}={p.window.replicas}" for p in scaling.prewarm))
    return f"KEDA {' + '.join(parts)}, min {scaling.min_replicas} max {scaling.max_replicas}"


def for_stack(scaling: ScalingPlan, memory_target: float = 0.9) -> list[Strategy]:
    """The issue's strategy set for one model of a stack: its deployed ScaledObject and what it is made of.
    A model at minReplicas 0 keeps its wake trigger in the queue-only row (a queue read at zero replicas is 0,
    so without it the row would never leave zero); a plain HPA cannot go below 1 replica (minReplicas 0 needs
    the alpha HPAScaleToZero feature gate, which EKS does not enable)."""
    return [
        static(scaling.max_replicas),
        hpa_gpu_memory(max(scaling.min_replicas, 1), scaling.max_replicas, memory_target),
        from_plan("keda-queue", scaling, frozenset({promql.QUEUE, promql.WAKE_SIGNAL}), prewarm=False),
        from_plan("keda-queue-kv", scaling, prewarm=False),
        from_plan("stack-config", scaling),
    ]
