"""The tuner's knobs and what a set of them stands for: the search space, and the autoscaling block, pool
headroom, consolidateAfter and gpuLimit a candidate puts in the stack file (search/tune.py searches them)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from llm_platform.config.schema import (
    Autoscaling,
    Headroom,
    HeadroomWindow,
    PrewarmWindow,
    ScalingPolicy,
    ScalingRules,
)
from llm_platform.simulator.search.scenarios import minute_rates, recommend, slo_rate_per_replica
from llm_platform.simulator.search.stack_rules import pool_gpu_limit
from llm_platform.simulator.search.stacks import StackRun
from llm_platform.simulator.serving.capacity_config import start_times

SERVED_RATE_SCALE = "served_rate_scale"
# where the search starts: sized by the KV target, then by served throughput at 0.7 x the SLO rate
SIGNAL_STARTS: tuple[dict[str, object], ...] = ({SERVED_RATE_SCALE: 0.0}, {SERVED_RATE_SCALE: 0.7})
# the pool's `consolidateAfter`, searched with the model's knobs (the stack's own value is a candidate too)
CONSOLIDATE_AFTER = "consolidate_after"
SCALE_DOWN_PERCENT = "scale_down_percent"
# knob -> candidate values. kv_target_scale multiplies the KV fill one replica holds at its SLO rate
# (the derived per-pod target); served_rate_scale multiplies the per-replica SLO rate into
# `requestsPerSecondPerReplica` (0: no served-throughput trigger; otherwise it sizes the pool and the KV
# trigger is left at the schema's default, a guard near a full cache, since a KV target in the linear regime
# asks for maxReplicas in any overload);
# prewarm is "none" or "recurring" (windows from the other days);
# headroom_placeholders is the pool's warm replicas' worth of GPUs (placeholders), held all day or only in
# HEADROOM_WINDOW (headroom_hours).
SEARCH_SPACE: dict[str, tuple[object, ...]] = {
    "kv_target_scale": (0.5, 0.7, 0.85, 1.0, 1.25),
    SERVED_RATE_SCALE: (0.0, 0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.9),
    "queue_depth_per_replica": (1.0, 2.0, 5.0),
    "min_replicas": (1, 2, 3),
    "scale_down_window": (30, 120, 300, 600),
    # the share of replicas one scale-down step may remove per minute: 10 % walks a burst's replicas down over
    # minutes (paid), 100 % lets the HPA drop to what the load asks for once the window has passed
    SCALE_DOWN_PERCENT: (10, 100),
    "prewarm": ("none", "recurring"),
    "headroom_placeholders": (0, 1, 2, 4),
    "headroom_hours": ("all-day", "07-21"),
    # the pool's consolidateAfter (s): how long an empty GPU node is kept (a warm node for the next burst, paid)
    CONSOLIDATE_AFTER: (0, 60, 300, 600),
}
# the daytime window a "07-21" headroom is held in (cron, the stack's days are UTC)
HEADROOM_WINDOW = ("0 7 * * *", "0 21 * * *")
RESERVED = "reserved_instances"  # the knob `--reserved-usd-per-hour` adds: reserved instances bought
# maxReplicas: the stack's, and what the training days' peak minute needs at the per-replica SLO rate (and a
# fifth more); above the stack's, the pool's gpuLimit must grow by the extra replicas' GPUs (printed)
MAX_REPLICAS = "max_replicas"


def search_space(
    max_replicas: Sequence[int], reserved_max: int | None, consolidate_after: float | None = None
) -> dict[str, tuple[object, ...]]:
    """SEARCH_SPACE with the maxReplicas candidates, the stack's own consolidateAfter, and the reserved
    instance count 0..reserved_max when a reserved rate is given."""
    space: dict[str, tuple[object, ...]] = {**SEARCH_SPACE, MAX_REPLICAS: tuple(sorted(set(max_replicas)))}
    if consolidate_after is not None:
        own = {int(number(v)) for v in SEARCH_SPACE[CONSOLIDATE_AFTER]} | {int(consolidate_after)}
        space[CONSOLIDATE_AFTER] = tuple(sorted(own))
    if reserved_max is not None:
        space[RESERVED] = tuple(range(reserved_max + 1))
    return space


def peak_replicas(runs: Sequence[StackRun]) -> int:
    """Replicas the busiest (5-minute smoothed) minute of any day needs at the per-replica SLO rate."""
    need = 1
    for run in runs:
        s = run.setup
        lam_slo = slo_rate_per_replica(s.table, s.traffic, s.config.slo)
        need = max(need, math.ceil(float(minute_rates(s.traffic).max()) / max(lam_slo, 1e-9)))
    return need


def minutes(cron: str) -> int:
    """Minute of the day of a daily cron `M H * * *` (the pre-warm windows `recommend` writes)."""
    minute, hour = cron.split()[:2]
    return int(hour) * 60 + int(minute)


def overlap(a: PrewarmWindow, b: PrewarmWindow) -> bool:
    return minutes(a.start) <= minutes(b.end) and minutes(b.start) <= minutes(a.end)


def number(value: object) -> float:
    if isinstance(value, (int, float)):
        return float(value)
    raise TypeError(f"knob value {value!r} is not a number")


class Candidates:
    """The configs the knobs stand for, on the training days: pre-warm windows learnt from the other days,
    the autoscaling block, the pool's headroom, consolidateAfter and gpuLimit."""

    def __init__(self, runs: list[StackRun], surge_known: bool, stack_max: int, reserved_max: int | None):
        self.runs = runs
        peak = peak_replicas(runs)
        self.consolidate_after = runs[0].setup.config.capacity.consolidate_after  # the pool's, as deployed
        self.space = search_space(
            (stack_max, peak, math.ceil(peak * 1.2)), reserved_max, self.consolidate_after
        )
        self.surge_known = surge_known
        self.stack_max = stack_max
        self.windows = [self._day_windows(r) for r in runs]
        first = runs[0].setup
        lam_slo = slo_rate_per_replica(first.table, first.traffic, first.config.slo)
        self.kv_at_slo = float(first.table.at(lam_slo)["kv_usage"])
        self.slo_rate = lam_slo

    def _day_windows(self, run: StackRun) -> list[PrewarmWindow]:
        s = run.setup
        cold = start_times(s.config.capacity).new_node
        try:
            rec = recommend(s.table, s.traffic, s.config.slo, cold, self.stack_max, 1)
        except ValueError:
            return []
        return list(rec.prewarm)

    def windows_for(self, day: int | None) -> list[PrewarmWindow]:
        """Windows for scoring `day` (None: the config for days to come). A window is kept when its surge
        recurs: another day it may learn from has an overlapping window (one day's surge is noise, not a
        schedule). Never from the scored day itself unless the surge is known, and then its own windows count."""
        sources = [i for i in range(len(self.windows)) if day is None or i != day or self.surge_known]
        chosen: dict[str, PrewarmWindow] = {}
        for i in sources:
            for w in self.windows[i]:
                known_own = self.surge_known and i == day
                recurs = any(overlap(w, o) for j in sources if j != i for o in self.windows[j])
                if known_own or recurs:
                    old = chosen.get(w.name)
                    chosen[w.name] = w if old is None or w.replicas > old.replicas else old
        return sorted(chosen.values(), key=lambda w: w.name)

    def config(self, knobs: dict[str, object], day: int | None) -> Autoscaling:
        base = self.runs[0].recommendation or Autoscaling()
        down = base.scale_down.model_copy(update={"stabilization_window_seconds": knobs["scale_down_window"]})
        if SCALE_DOWN_PERCENT in knobs:
            share = int(number(knobs[SCALE_DOWN_PERCENT]))
            down = down.model_copy(
                update={"policies": [ScalingPolicy(type="Percent", value=share, period_seconds=60)]}
            )
        windows = self.windows_for(day) if knobs["prewarm"] == "recurring" else []
        max_r = int(number(knobs.get(MAX_REPLICAS, self.stack_max)))
        min_r = min(int(number(knobs["min_replicas"])), max_r)
        return base.model_copy(
            update={
                "min_replicas": min_r,
                "max_replicas": max_r,
                "kv_cache_usage": (
                    Autoscaling().kv_cache_usage
                    if self.served_drives(knobs)
                    else round(min(1.0, max(1e-4, self.kv_at_slo * number(knobs["kv_target_scale"]))), 4)
                ),
                "queue_depth_per_replica": number(knobs["queue_depth_per_replica"]),
                "requests_per_second_per_replica": (
                    round(self.slo_rate * number(knobs[SERVED_RATE_SCALE]), 2)
                    if self.served_drives(knobs)
                    else None
                ),
                "scale_down": ScalingRules.model_validate(down.model_dump()),
                "prewarm": [
                    w.model_copy(update={"replicas": min(w.replicas, max_r)})
                    for w in windows
                    if w.replicas > min_r
                ],
            }
        )

    @staticmethod
    def served_drives(knobs: dict[str, object]) -> bool:
        """The served-throughput trigger sizes the pool (the KV target is then not a knob)."""
        return number(knobs.get(SERVED_RATE_SCALE, 0.0)) > 0

    def headroom(self, knobs: dict[str, object]) -> Headroom | None:
        """The pool's `headroom` block for the knobs (None: no warm GPUs), within what the pool's gpuLimit
        (raised with a tuned maxReplicas) leaves next to its models at minReplicas (what the schema accepts)."""
        run = self.runs[0]
        pool = run.pool
        max_r = int(number(knobs.get(MAX_REPLICAS, self.stack_max)))
        limit = pool_gpu_limit(run, max_r) or pool.pool.gpu_limit
        placeholders = int(number(knobs.get("headroom_placeholders", 0)))
        if not placeholders:
            return None
        replica = pool.replica_gpus
        held = sum(
            (
                int(number(knobs["min_replicas"]))
                if m.name == self.runs[0].model_name
                else m.scaling.min_replicas
            )
            * m.replica_gpus
            for m in pool.models
        )
        gpus = min(placeholders * replica, (limit - held) // replica * replica)
        if gpus <= 0:
            return None
        if knobs.get("headroom_hours", "all-day") == "all-day":
            return Headroom(gpus=gpus)
        start, end = HEADROOM_WINDOW
        return Headroom(gpus=0, schedule=[HeadroomWindow(start=start, end=end, timezone="UTC", gpus=gpus)])

    def gpu_limit(self, left: int | None, max_replicas: int, run: StackRun) -> int | None:
        """The pool's GPUs left to this model, grown by the GPUs of replicas above the stack's maxReplicas."""
        if left is None:
            return None
        return left + max(0, max_replicas - self.stack_max) * run.plan.replica_gpus

    def pool_consolidate_after(self, knobs: dict[str, object]) -> float:
        """The pool's consolidateAfter (s) for the knobs: simulated, checked and printed from here."""
        return number(knobs.get(CONSOLIDATE_AFTER, self.consolidate_after))
