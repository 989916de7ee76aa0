"""A model's scaling intent as the plan carries it: the KEDA triggers, cron windows and HPA rules exactly as
the ScaledObject will, and the memory and smoothing of the triggers the simulator replays. `plan/model.py`
resolves it (`scaling_plan`); the from-zero hold (plan/zero.py), the renderers and the simulator read it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from llm_platform.config.schema import PrewarmWindow, ScalingRules
from llm_platform.plan import promql


@dataclass(frozen=True)
class SaturationMemory:
    """What the saturation hold's query remembers (plan.promql.saturation_hold): the per-replica throughput of
    the latest subquery step, within `window_s`, at which at least `queue_per_replica` requests waited per
    available replica or the KV fill per available replica was past `kv_per_replica` x (1 + `tolerance`)."""

    queue_per_replica: float
    kv_per_replica: float
    tolerance: float = promql.HPA_TOLERANCE
    window_s: int = promql.SATURATION_MEMORY_SECONDS
    step_s: int = promql.SATURATION_STEP_SECONDS


@dataclass(frozen=True)
class Smoothing:
    """A gauge trigger's average (plan.promql.smoothed): over `window_s`, one point every `step_s`."""

    window_s: int
    step_s: int


@dataclass(frozen=True)
class MetricTrigger:
    """A KEDA Prometheus trigger: `query` summed over the model's pods, divided by replicas by the HPA."""

    name: str
    metric: str  # the series the query sums (plan.promql), or promql.SATURATION_HOLD / WAKE_SIGNAL
    query: str
    threshold: float
    metric_type: Literal["AverageValue"] = "AverageValue"
    type: Literal["prometheus"] = "prometheus"
    # KEDA activates the target (0 -> 1) while the value is above it (None: KEDA's default, 0)
    activation_threshold: float | None = None
    saturation: SaturationMemory | None = None  # the saturation hold's memory (None for the other triggers)
    smoothing: Smoothing | None = None  # a gauge averaged over time (None: the query reads the latest scrape)


@dataclass(frozen=True)
class PrewarmTrigger:
    """A KEDA cron trigger holding `replicas` ready between `start` and `end`."""

    name: str
    window: PrewarmWindow


@dataclass(frozen=True)
class ScalingPlan:
    """The scaling intent as KEDA, the HPA and Prometheus will run it."""

    min_replicas: int
    max_replicas: int
    polling_interval_s: int
    cooldown_period_s: int
    scrape_interval_s: int
    prometheus_url: str
    ignore_null_values: bool
    fallback_replicas: int | None  # None: no `fallback` (a model at minReplicas 0: model.fallback_replicas)
    fallback_failure_threshold: int
    triggers: tuple[MetricTrigger, ...]
    prewarm: tuple[PrewarmTrigger, ...]
    scale_up: ScalingRules
    scale_down: ScalingRules
