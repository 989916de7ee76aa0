"""`python -m llm_platform.simulator tune`: the cheapest autoscaling config whose SLO misses stay under X % on every given day.

    python -m llm_platform.simulator tune --stack S --model M --traffic DAY.csv [DAY2.csv ...] --max-miss-pct X
                             [--holdout DAY.csv ...] [--surge-known] [--json]

With `--reserved-usd-per-hour R`, the count of reserved instances (0 up to the nodes the model fills at
maxReplicas) is one more knob: each count is prepaid at R all day (a Capacity Block's price; an ODCR bills the
on-demand rate) and nodes beyond it are bought on-demand or spot (simulator/serving/nodepool.py); the count is printed
beside the YAML, since it is bought, not configured in the autoscaling block.

Knobs: the per-pod KV target, the served-throughput target (or none), the queue threshold, minReplicas, the
scale-down window and share per minute, pre-warm windows and maxReplicas (the stack's, or what the busiest
minute of the training days needs at the per-replica SLO rate, and a fifth more; a maxReplicas above the
stack's grows the pool's gpuLimit, printed with the YAML); and of the model's GPU pool, its warm GPUs
(`headroom`) and `consolidateAfter` (an empty node kept longer is a warm node for the next burst, and is paid
until then), printed for the pool (they apply to every model it serves). Where the stack allows zero (behind
the gateway; in prod with `allowScaleToZero`), minReplicas 0 and its idle period (`cooldownPeriod`) are
searched after the descent (search/zero_tune.py `zero_step`): zero wins when it loses no request and its held
requests (SLO misses) fit under X % with each day's misses.

Search: coordinate descent over `search_space()` (one place for the knobs: add a knob there and to `config`),
starting from the model-derived recommendation (`scenarios.recommend`; the knobs and the configs they stand for: search/knobs.py) once sized by the KV target and once by
served throughput (SIGNAL_STARTS), two passes each, each candidate simulated on every training day. A
candidate is feasible when its worst day misses <= X %; among feasible ones the lowest mean GPU $/day wins (if none is feasible, the lowest worst-day miss rate). A candidate the stack file would
refuse (its schema's rules, e.g. prod's minReplicas >= 2) is never tried. Pre-warm windows: a day's own
traffic never places windows for that same day, and a window is kept only where its surge recurs (an
overlapping window on another day it may learn from): when scoring day i the windows come from the other
training days; the config printed carries the windows that recur across the training days, for days to
come. `--surge-known` lifts this (the surge is scheduled and known in advance). Holdout days are scored with
the final config and never tuned on. Each day also reports the oracle bound and cost_vs_oracle.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace

from llm_platform.config.schema import Autoscaling, Headroom
from llm_platform.plan.headroom import with_headroom
from llm_platform.simulator.controllers.strategies import from_plan, scaling_for
from llm_platform.simulator.day.engine import simulate
from llm_platform.simulator.search.knobs import (
    CONSOLIDATE_AFTER,
    MAX_REPLICAS,
    RESERVED,
    SCALE_DOWN_PERCENT,
    SERVED_RATE_SCALE,
    SIGNAL_STARTS,
    Candidates,
    number,
)
from llm_platform.simulator.search.oracle import Witness
from llm_platform.simulator.search.scenarios import miss_curve, oracle_for, witness_of
from llm_platform.simulator.search.stack_rules import pool_gpu_limit
from llm_platform.simulator.search.stacks import StackRun


@dataclass
class DayScore:
    name: str
    cost: float
    miss_pct: float
    oracle: float
    holdout: bool = False
    flaps: int = 0  # scale-direction reversals (controllers/flap.py)

    def row(self) -> dict[str, object]:
        return {
            "day": self.name,
            "holdout": self.holdout,
            "gpu_cost_usd_per_day": round(self.cost, 2),
            "slo_violation_pct": round(self.miss_pct, 3),
            "oracle_usd_per_day": round(self.oracle, 2),
            "cost_vs_oracle": round(self.cost / self.oracle, 3) if self.oracle else None,
            "flaps": self.flaps,
        }


_FORKED: list[Tuner] = []  # the tuner a forked worker inherits (set by Tuner.parallel)


def _simulate_training_day(knobs: dict[str, object], index: int) -> tuple[float, float, Witness, int]:
    tuner = _FORKED[0]
    return tuner.simulate_day(knobs, index, tuner.runs[index], holdout=False)


class Tuner(Candidates):
    """Coordinate descent over the knobs (Candidates turns them into configs): each candidate scored on every
    training day, in parallel, cached."""

    def __init__(
        self,
        runs: list[StackRun],
        max_miss_pct: float,
        surge_known: bool,
        stack_max: int,
        stack_min: int,
        reserved_max: int | None = None,
        accepts: Callable[[Autoscaling, int | None, Headroom | None, float | None], str | None] | None = None,
    ):
        super().__init__(runs, surge_known, stack_max, reserved_max)
        self.accepts = accepts  # the stack's own rules for a candidate (stack_accepts); None: any
        self.max_miss = max_miss_pct
        self.stack_min = stack_min
        self._cache: dict[tuple, tuple[float, float, list[DayScore]]] = {}
        self._curves: dict[int, tuple] = {}  # each run's miss curve, for its oracle bound
        self._pool: ProcessPoolExecutor | None = None  # set inside `parallel()`
        self.on_scored: Callable[[], None] = lambda: None  # called once per candidate simulated (progress)
        self.max_flaps: int | None = (
            None  # a candidate flapping more on any day is infeasible (None: no limit)
        )

    def score(self, knobs: dict[str, object], runs: Sequence[StackRun] | None = None, holdout: bool = False):
        """(mean cost, worst-day misses, per-day scores); training days use leave-one-out windows."""
        key = (tuple(sorted(knobs.items())), holdout)
        if key in self._cache and runs is None:
            return self._cache[key]
        scored = list(runs or self.runs)
        if runs is None and self._pool is not None:  # the training days, one process per core
            results = list(self._pool.map(_simulate_training_day, [knobs] * len(scored), range(len(scored))))
        else:
            results = [self.simulate_day(knobs, i, run, holdout) for i, run in enumerate(scored)]
        days = []
        for run, (cost, miss, witness, flaps) in zip(scored, results, strict=True):
            s = run.setup
            if id(run) not in self._curves:
                self._curves[id(run)] = miss_curve(s.table, s.traffic, s.config.slo)
            bound = oracle_for(s, miss, self._curves[id(run)], witness)["whole_nodes_usd_per_day"]
            days.append(DayScore(s.traffic.name, cost, miss, bound, holdout, flaps))
        out = (sum(d.cost for d in days) / len(days), max(d.miss_pct for d in days), days)
        if runs is None:
            self._cache[key] = out
            self.on_scored()
        return out

    def most_candidates(self, passes: int = 2) -> int:
        """An upper bound on the candidates `search` simulates: from each start, every other value of every
        knob on each pass (a pass that changes nothing ends the descent, and repeats come from the cache)."""
        per_pass = sum(len(values) - 1 for values in self.space.values())
        return len(SIGNAL_STARTS) * (1 + passes * per_pass)

    def simulate_day(
        self, knobs: dict[str, object], i: int, run: StackRun, holdout: bool
    ) -> tuple[float, float, Witness, int]:
        """GPU $/day, SLO misses (%), what the config did (the oracle's witness) and its flap count of day `i`
        under the knobs (a training day's windows leave it out)."""
        cfg = self.config(knobs, None if holdout else i)
        s = run.setup
        capacity = replace(
            s.config.capacity,
            reserved_nodes=int(number(knobs.get(RESERVED, 0))),
            gpu_limit=self.gpu_limit(s.config.capacity.gpu_limit, cfg.max_replicas, run),
            headroom=with_headroom(run.pool, self.headroom(knobs)),
            consolidate_after=self.pool_consolidate_after(knobs),
        )
        strategy = from_plan("tuned", scaling_for(run.plan, cfg))
        r = simulate(s.traffic, s.table, strategy, replace(s.config, capacity=capacity))
        return r.gpu_cost_usd_per_day, r.slo_violation_pct, witness_of(r), r.flaps

    def accepted(self, knobs: dict[str, object], autoscaling: Autoscaling | None = None) -> bool:
        """The stack file accepts the knobs' config (or `autoscaling` in its place, e.g. at minReplicas 0)."""
        if self.accepts is None:
            return True
        cfg = self.config(knobs, None) if autoscaling is None else autoscaling
        limit = pool_gpu_limit(self.runs[0], cfg.max_replicas)
        return self.accepts(cfg, limit, self.headroom(knobs), self.pool_consolidate_after(knobs)) is None

    def feasible(self, score: tuple[float, float, list[DayScore]]) -> bool:
        """Within --max-miss-pct on every day and, with a flap limit, within it on every day."""
        flaps_ok = self.max_flaps is None or max(d.flaps for d in score[2]) <= self.max_flaps
        return score[1] <= self.max_miss and flaps_ok

    def better(self, a: tuple[float, float, list[DayScore]], b: tuple[float, float, list[DayScore]]) -> bool:
        feasible_a, feasible_b = self.feasible(a), self.feasible(b)
        if feasible_a != feasible_b:
            return feasible_a
        return a[0] < b[0] if feasible_a else a[1] < b[1]

    @contextmanager
    def parallel(self) -> Iterator[None]:
        """Inside, `score` simulates the training days in parallel, one process per core (forked: each
        worker inherits the days instead of receiving them); the same figures as one by one."""
        _FORKED[:] = [self]
        workers = min(len(self.runs), os.cpu_count() or 1)
        if workers < 2:
            yield
            return
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            self._pool = pool
            try:
                yield
            finally:
                self._pool = None

    def search(self, passes: int = 2) -> dict[str, object]:
        """Coordinate descent from each load signal (KEDA sized by the KV target, or by served throughput):
        the signal decides which other knobs pay, so one descent from the KV start rarely crosses to the
        other; the better end wins. The training days of a candidate are simulated in parallel, one
        process per core."""
        with self.parallel():
            ends = [self.descend({**self.start(), **start}, passes) for start in SIGNAL_STARTS]
        best = ends[0]
        for knobs in ends[1:]:
            if self.better(self.score(knobs), self.score(best)):
                best = knobs
        return best

    def start(self) -> dict[str, object]:
        knobs: dict[str, object] = {
            "kv_target_scale": 1.0,
            SERVED_RATE_SCALE: 0.0,
            "queue_depth_per_replica": 2.0,
            "min_replicas": min(max(self.stack_min, 1), 3),
            "scale_down_window": 300,
            SCALE_DOWN_PERCENT: 10,
            "prewarm": "recurring",
            "headroom_placeholders": 0,
            "headroom_hours": "all-day",
        }
        knobs[MAX_REPLICAS] = self.stack_max
        knobs[CONSOLIDATE_AFTER] = int(self.consolidate_after)
        if RESERVED in self.space:
            knobs[RESERVED] = 0
        return knobs

    def descend(self, knobs: dict[str, object], passes: int) -> dict[str, object]:
        best = self.score(knobs)
        for _ in range(passes):
            changed = False
            for name, values in self.space.items():
                for value in values:
                    if value == knobs[name] or (name == "kv_target_scale" and self.served_drives(knobs)):
                        continue
                    trial = {**knobs, name: value}
                    if not self.accepted(trial):
                        continue
                    result = self.score(trial)
                    if self.better(result, best):
                        knobs, best, changed = trial, result, True
            if not changed:
                break
        return knobs
