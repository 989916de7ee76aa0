"""KEDA's part of the loop: activation (0 <-> 1), the metric values it serves to the HPA, cron and fallback.

From kedacore/keda (shared/research/autoscaling_sim.md §2): the Prometheus scaler returns one value per query
with metricType AverageValue by default; a trigger is active when value > activationThreshold (strictly);
the ScaledObject is active when any trigger is; the executor scales 0 -> max(minReplicaCount, 1) on
activity and back to 0 only `cooldownPeriod` after the last activity (and only if minReplicaCount is 0);
1 <-> N belongs to the HPA KEDA creates (min = max(minReplicaCount, 1), max = maxReplicaCount, its
`behavior` or nil). Without `useCachedMetrics`, every HPA sync queries Prometheus afresh; with it, the HPA
gets the value of the last poll. The cron scaler reports desiredReplicas inside its window and 1 outside
(target AverageValue 1). Fallback: after more than `failureThreshold` consecutive errors a trigger reports
fallback.replicas x threshold, so the HPA lands on the fallback count.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from llm_platform.plan.scaling import SaturationMemory, Smoothing
from llm_platform.simulator.controllers import gauges
from llm_platform.simulator.controllers.hpa import HPA, Behavior

Query = Callable[[str], float | None]  # metric name -> value, None when the query fails


@dataclass(frozen=True)
class PrometheusTrigger:
    name: str
    metric: str  # what the PromQL returns, e.g. "waiting_sum", "kv_sum", "kv_max", "running_sum"
    threshold: float
    activation_threshold: float = 0.0
    use_cached_metrics: bool = False
    query: str = (
        ""  # the deployed PromQL whose value `metric` stands for ("" for a hand-written ScaledObject)
    )
    saturation: SaturationMemory | None = None  # the saturation hold's memory (controllers/saturation.py)
    smoothing: Smoothing | None = None  # `metric` averaged over time (controllers/gauges.py)

    @property
    def series(self) -> str:
        """What the query reads: `metric`, or its average over time."""
        return self.metric if self.smoothing is None else gauges.key(self.metric, self.smoothing)


@dataclass(frozen=True)
class CronTrigger:
    name: str
    start: str
    end: str
    timezone: str
    desired_replicas: int


Trigger = PrometheusTrigger | CronTrigger


@dataclass(frozen=True)
class Fallback:
    failure_threshold: int
    replicas: int


@dataclass(frozen=True)
class ScaledObjectSpec:
    triggers: Sequence[Trigger]
    min_replica_count: int = 0
    max_replica_count: int = 100
    polling_interval: int = 30
    cooldown_period: int = 300
    initial_cooldown_period: int = 0
    fallback: Fallback | None = None
    behavior: Behavior | None = None


@dataclass
class Keda:
    spec: ScaledObjectSpec
    created_at: float = 0.0
    cron_active: Callable[[CronTrigger, float], bool] = field(default=lambda _t, _now: False)
    last_active: float | None = None
    failures: dict[str, int] = field(default_factory=dict)
    cached: dict[str, float | None] = field(default_factory=dict)
    hpa: HPA = field(init=False)

    def __post_init__(self) -> None:
        self.hpa = HPA(
            max(self.spec.min_replica_count, 1), self.spec.max_replica_count, behavior=self.spec.behavior
        )

    # --- metric values -------------------------------------------------------------------------------------

    def _read(self, trigger: Trigger, now: float, query: Query) -> float | None:
        """One scaler query, with KEDA's fallback substitution."""
        if isinstance(trigger, CronTrigger):
            return float(trigger.desired_replicas if self.cron_active(trigger, now) else 1)
        value = query(trigger.series)
        if value is None:
            self.failures[trigger.name] = self.failures.get(trigger.name, 0) + 1
            fb = self.spec.fallback
            if fb is not None and self.failures[trigger.name] > fb.failure_threshold:
                return fb.replicas * trigger.threshold
            return None
        self.failures[trigger.name] = 0
        return max(value, 0.0)

    def _target(self, trigger: Trigger) -> float:
        return 1.0 if isinstance(trigger, CronTrigger) else trigger.threshold

    def hpa_metrics(self, now: float, query: Query) -> list[tuple[float | None, float]]:
        """What the KEDA metrics server answers the HPA: one (value, AverageValue target) per trigger."""
        out: list[tuple[float | None, float]] = []
        for trigger in self.spec.triggers:
            if isinstance(trigger, PrometheusTrigger) and trigger.use_cached_metrics:
                value = self.cached.get(trigger.name)
            else:
                value = self._read(trigger, now, query)
            out.append((value, self._target(trigger)))
        return out

    def sync_hpa(self, now: float, spec_replicas: int, status_replicas: int, query: Query) -> int:
        return self.hpa.reconcile(now, spec_replicas, self.hpa_metrics(now, query), status_replicas)

    # --- the scale executor (runs every pollingInterval) --------------------------------------------------

    def is_active(self, now: float, query: Query) -> bool:
        active = False
        for trigger in self.spec.triggers:
            if isinstance(trigger, CronTrigger):
                active |= self.cron_active(trigger, now)
                continue
            value = self._read(trigger, now, query)
            self.cached[trigger.name] = value
            active |= value is not None and value > trigger.activation_threshold
        return active

    def poll(self, now: float, replicas: int, query: Query) -> int:
        """Replica count after one executor pass (only 0 <-> 1 and the min floor; the HPA does the rest)."""
        spec = self.spec
        if self.is_active(now, query):
            self.last_active = now
            if replicas == 0:
                return spec.min_replica_count if spec.min_replica_count > 0 else 1
            return replicas
        if spec.min_replica_count == 0 and replicas > 0:
            if self.last_active is None:
                if self.created_at + spec.initial_cooldown_period < now:
                    return 0
            elif self.last_active + spec.cooldown_period < now:
                return 0
            return replicas
        return max(replicas, spec.min_replica_count)
