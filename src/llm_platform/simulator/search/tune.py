"""`python -m llm_platform.simulator tune`: the cheapest autoscaling config whose SLO misses stay under X % on every given day.

    python -m llm_platform.simulator tune --stack S --model M --traffic DAY.csv [DAY2.csv ...] --max-miss-pct X
                             [--holdout DAY.csv ...] [--surge-known] [--json]

With `--reserved-usd-per-hour R`, the count of reserved instances (0 up to the nodes the model fills at
maxReplicas) is one more knob: each count is prepaid at R all day (a Capacity Block's price; an ODCR bills the
on-demand rate) and nodes beyond it are bought on-demand or spot (simulator/capacity.py); the count is printed
beside the YAML, since it is bought, not configured in the autoscaling block.

Knobs: the per-pod KV target, the served-throughput target (or none), the queue threshold, minReplicas, the
scale-down window and share per minute, pre-warm windows and maxReplicas (the stack's, or what the busiest
minute of the training days needs at the per-replica SLO rate, and a fifth more; a maxReplicas above the
stack's grows the pool's gpuLimit, printed with the YAML); and of the model's GPU pool, its warm GPUs
(`headroom`) and `consolidateAfter` (an empty node kept longer is a warm node for the next burst, and is paid
until then), printed for the pool (they apply to every model it serves).

Search: coordinate descent over `search_space()` (one place for the knobs: add a knob there and to `config`),
starting from the model-derived recommendation (`scenarios.recommend`) once sized by the KV target and once by
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

import argparse
import copy
import json
import math
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, replace

from llm_platform.config.loader import ConfigError, Stack, parse, read_stack, stack_file, stack_region
from llm_platform.config.schema import (
    Autoscaling,
    Headroom,
    HeadroomWindow,
    PrewarmWindow,
    ScalingPolicy,
    ScalingRules,
)
from llm_platform.plan.headroom import with_headroom
from llm_platform.simulator.commands.args import non_negative_float, positive_float, positive_int
from llm_platform.simulator.commands.progress import track
from llm_platform.simulator.controllers.strategies import from_plan, scaling_for
from llm_platform.simulator.day.engine import simulate
from llm_platform.simulator.search.reservations import most_useful
from llm_platform.simulator.search.scenarios import (
    StackRun,
    minute_rates,
    miss_curve,
    oracle_for,
    recommend,
    slo_rate_per_replica,
    stack_run,
)
from llm_platform.simulator.search.yaml_out import autoscaling_yaml, go_duration, headroom_yaml
from llm_platform.simulator.serving.capacity import start_times
from llm_platform.simulator.traffic.traffic import load
from llm_platform.tools.cli import ArgumentParser, known_stack

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
        own = {int(_number(v)) for v in SEARCH_SPACE[CONSOLIDATE_AFTER]} | {int(consolidate_after)}
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


def _minutes(cron: str) -> int:
    """Minute of the day of a daily cron `M H * * *` (the pre-warm windows `recommend` writes)."""
    minute, hour = cron.split()[:2]
    return int(hour) * 60 + int(minute)


def _overlap(a: PrewarmWindow, b: PrewarmWindow) -> bool:
    return _minutes(a.start) <= _minutes(b.end) and _minutes(b.start) <= _minutes(a.end)


def _number(value: object) -> float:
    if isinstance(value, (int, float)):
        return float(value)
    raise TypeError(f"knob value {value!r} is not a number")


@dataclass
class DayScore:
    name: str
    cost: float
    miss_pct: float
    oracle: float
    holdout: bool = False

    def row(self) -> dict[str, object]:
        return {
            "day": self.name,
            "holdout": self.holdout,
            "gpu_cost_usd_per_day": round(self.cost, 2),
            "slo_violation_pct": round(self.miss_pct, 3),
            "oracle_usd_per_day": round(self.oracle, 2),
            "cost_vs_oracle": round(self.cost / self.oracle, 3) if self.oracle else None,
        }


_FORKED: list[Tuner] = []  # the tuner a forked worker inherits (set by Tuner.parallel)


def _simulate_training_day(knobs: dict[str, object], index: int) -> tuple[float, float]:
    tuner = _FORKED[0]
    return tuner.simulate_day(knobs, index, tuner.runs[index], holdout=False)


class Tuner:
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
        self.runs = runs
        self.accepts = accepts  # the stack's own rules for a candidate (stack_accepts); None: any
        peak = peak_replicas(runs)
        self.consolidate_after = runs[0].setup.config.capacity.consolidate_after  # the pool's, as deployed
        self.space = search_space(
            (stack_max, peak, math.ceil(peak * 1.2)), reserved_max, self.consolidate_after
        )
        self.max_miss = max_miss_pct
        self.surge_known = surge_known
        self.stack_max = stack_max
        self.stack_min = stack_min
        self.windows = [self._day_windows(r) for r in runs]
        first = runs[0].setup
        lam_slo = slo_rate_per_replica(first.table, first.traffic, first.config.slo)
        self.kv_at_slo = float(first.table.at(lam_slo)["kv_usage"])
        self.slo_rate = lam_slo
        self._cache: dict[tuple, tuple[float, float, list[DayScore]]] = {}
        self._curves: dict[int, tuple] = {}  # each run's miss curve, for its oracle bound
        self._pool: ProcessPoolExecutor | None = None  # set inside `parallel()`
        self.on_scored: Callable[[], None] = lambda: None  # called once per candidate simulated (progress)

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
                recurs = any(_overlap(w, o) for j in sources if j != i for o in self.windows[j])
                if known_own or recurs:
                    old = chosen.get(w.name)
                    chosen[w.name] = w if old is None or w.replicas > old.replicas else old
        return sorted(chosen.values(), key=lambda w: w.name)

    def config(self, knobs: dict[str, object], day: int | None) -> Autoscaling:
        base = self.runs[0].recommendation or Autoscaling()
        down = base.scale_down.model_copy(update={"stabilization_window_seconds": knobs["scale_down_window"]})
        if SCALE_DOWN_PERCENT in knobs:
            share = int(_number(knobs[SCALE_DOWN_PERCENT]))
            down = down.model_copy(
                update={"policies": [ScalingPolicy(type="Percent", value=share, period_seconds=60)]}
            )
        windows = self.windows_for(day) if knobs["prewarm"] == "recurring" else []
        max_r = int(_number(knobs.get(MAX_REPLICAS, self.stack_max)))
        min_r = min(int(_number(knobs["min_replicas"])), max_r)
        return base.model_copy(
            update={
                "min_replicas": min_r,
                "max_replicas": max_r,
                "kv_cache_usage": (
                    Autoscaling().kv_cache_usage
                    if self.served_drives(knobs)
                    else round(min(1.0, max(1e-4, self.kv_at_slo * _number(knobs["kv_target_scale"]))), 4)
                ),
                "queue_depth_per_replica": _number(knobs["queue_depth_per_replica"]),
                "requests_per_second_per_replica": (
                    round(self.slo_rate * _number(knobs[SERVED_RATE_SCALE]), 2)
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
        return _number(knobs.get(SERVED_RATE_SCALE, 0.0)) > 0

    def headroom(self, knobs: dict[str, object]) -> Headroom | None:
        """The pool's `headroom` block for the knobs (None: no warm GPUs), within what the pool's gpuLimit
        (raised with a tuned maxReplicas) leaves next to its models at minReplicas (what the schema accepts)."""
        run = self.runs[0]
        pool = run.pool
        max_r = int(_number(knobs.get(MAX_REPLICAS, self.stack_max)))
        limit = pool_gpu_limit(run, max_r) or pool.pool.gpu_limit
        placeholders = int(_number(knobs.get("headroom_placeholders", 0)))
        if not placeholders:
            return None
        replica = pool.replica_gpus
        held = sum(
            (
                int(_number(knobs["min_replicas"]))
                if m.name == self.runs[0].model_name
                else m.scaling.min_replicas
            )
            * m.gpus
            for m in pool.models
        )
        gpus = min(placeholders * replica, (limit - held) // replica * replica)
        if gpus <= 0:
            return None
        if knobs.get("headroom_hours", "all-day") == "all-day":
            return Headroom(gpus=gpus)
        start, end = HEADROOM_WINDOW
        return Headroom(gpus=0, schedule=[HeadroomWindow(start=start, end=end, timezone="UTC", gpus=gpus)])

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
        for run, (cost, miss) in zip(scored, results, strict=True):
            s = run.setup
            if id(run) not in self._curves:
                self._curves[id(run)] = miss_curve(s.table, s.traffic, s.config.slo)
            bound = oracle_for(s, miss, self._curves[id(run)])["whole_nodes_usd_per_day"]
            days.append(DayScore(s.traffic.name, cost, miss, bound, holdout))
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
    ) -> tuple[float, float]:
        """GPU $/day and SLO misses (%) of day `i` under the knobs (a training day's windows leave it out)."""
        cfg = self.config(knobs, None if holdout else i)
        s = run.setup
        capacity = replace(
            s.config.capacity,
            reserved_nodes=int(_number(knobs.get(RESERVED, 0))),
            gpu_limit=self.gpu_limit(s.config.capacity.gpu_limit, cfg.max_replicas, run),
            headroom=with_headroom(run.pool, self.headroom(knobs)),
            consolidate_after=self.pool_consolidate_after(knobs),
        )
        strategy = from_plan("tuned", scaling_for(run.plan, cfg))
        r = simulate(s.traffic, s.table, strategy, replace(s.config, capacity=capacity))
        return r.gpu_cost_usd_per_day, r.slo_violation_pct

    def gpu_limit(self, left: int | None, max_replicas: int, run: StackRun) -> int | None:
        """The pool's GPUs left to this model, grown by the GPUs of replicas above the stack's maxReplicas."""
        if left is None:
            return None
        return left + max(0, max_replicas - self.stack_max) * run.plan.gpus

    def accepted(self, knobs: dict[str, object]) -> bool:
        if self.accepts is None:
            return True
        cfg = self.config(knobs, None)
        limit = pool_gpu_limit(self.runs[0], cfg.max_replicas)
        return self.accepts(cfg, limit, self.headroom(knobs), self.pool_consolidate_after(knobs)) is None

    def pool_consolidate_after(self, knobs: dict[str, object]) -> float:
        """The pool's consolidateAfter (s) for the knobs: simulated, checked and printed from here."""
        return _number(knobs.get(CONSOLIDATE_AFTER, self.consolidate_after))

    def better(self, a: tuple[float, float, list[DayScore]], b: tuple[float, float, list[DayScore]]) -> bool:
        feasible_a, feasible_b = a[1] <= self.max_miss, b[1] <= self.max_miss
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


def stack_accepts(
    stack: Stack, run: StackRun
) -> Callable[[Autoscaling, int | None, Headroom | None, float | None], str | None]:
    """A check of a candidate against the stack file's own rules (e.g. prod keeps minReplicas >= 2, windows
    within min/max, headroom within gpuLimit): the candidate's autoscaling, a grown pool gpuLimit and the
    pool's headroom put in the file's values and validated as `pulumi up` would; returns the first problem,
    None when the stack accepts it."""
    raw, _ = read_stack(stack)
    region = stack_region(stack)

    def check(
        autoscaling: Autoscaling,
        gpu_limit: int | None,
        headroom: Headroom | None,
        consolidate_after: float | None = None,
    ) -> str | None:
        values = copy.deepcopy(raw)
        model = next(m for m in values["models"] if m["name"] == run.model_name)
        model["autoscaling"] = autoscaling.model_dump(by_alias=True, exclude_none=True)
        pool = next(p for p in values["gpuNodePools"] if p["name"] == run.plan.pool.name)
        if gpu_limit is not None:
            pool["gpuLimit"] = gpu_limit
        pool.pop("headroom", None)
        if consolidate_after is not None:
            pool["consolidateAfter"] = go_duration(consolidate_after)
        if headroom is not None:
            pool["headroom"] = headroom.model_dump(by_alias=True, exclude_none=True)
        try:
            parse(values, region=region)
        except ConfigError as exc:
            return str(exc).splitlines()[0]
        return None

    return check


def pool_gpu_limit(run: StackRun, max_replicas: int) -> int | None:
    """The pool gpuLimit a tuned maxReplicas needs (every model of the pool at maxReplicas); None: it fits."""
    extra = (max_replicas - run.plan.scaling.max_replicas) * run.plan.gpus - max(
        0, run.plan.pool_headroom_gpus
    )
    return run.plan.pool.gpu_limit + extra if extra > 0 else None


def parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="python -m llm_platform.simulator tune", description=__doc__)
    p.add_argument("--stack", required=True, type=known_stack, help="stack name, or the path of a stack file")
    p.add_argument("--model", help="model name in the stack (default: the first)")
    p.add_argument("--traffic", nargs="+", required=True, help="training days (CSV or Prometheus JSON)")
    p.add_argument(
        "--holdout", nargs="*", default=[], help="days scored with the final config, never tuned on"
    )
    p.add_argument(
        "--max-miss-pct", type=non_negative_float, required=True, help="SLO misses allowed on every day"
    )
    p.add_argument(
        "--surge-known", action="store_true", help="let a day's own surges place its pre-warm windows"
    )
    p.add_argument(
        "--reserved-usd-per-hour", type=positive_float,
        help="prepaid $/h of one reserved instance: the tuner also picks how many to reserve (a Capacity "
        "Block's price; an ODCR bills on-demand)",
    )  # fmt: skip
    p.add_argument("--passes", type=positive_int, default=2, help="coordinate-descent passes")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    return p


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    if args.max_miss_pct > 100:
        raise ValueError(f"--max-miss-pct {args.max_miss_pct} is a percentage; allowed: 0-100")

    def runs_for(specs: Sequence[str]) -> list[StackRun]:
        return [
            stack_run(
                args.stack,
                args.model,
                load(spec, args.seed),
                reserved_usd_per_hour=args.reserved_usd_per_hour,
            )
            for spec in specs
        ]

    train = runs_for(args.traffic)
    holdout = runs_for(args.holdout)
    stack_cfg = train[0]
    capacity = stack_cfg.setup.config.capacity
    reserved_max = None
    if args.reserved_usd_per_hour is not None:
        reserved_max = most_useful(stack_cfg)  # the nodes the model fills at maxReplicas
    tuner = Tuner(
        train, args.max_miss_pct, args.surge_known, stack_cfg.max_replicas, stack_cfg.plan.scaling.min_replicas,
        reserved_max, stack_accepts(args.stack, stack_cfg),
    )  # fmt: skip
    what = f"tune: candidates scored, {len(train)} days each"
    with track(what, tuner.most_candidates(args.passes), "candidates", args.json, bounded=True) as progress:
        tuner.on_scored = progress.advance
        knobs = tuner.search(args.passes)
    reserved = int(_number(knobs.get(RESERVED, 0)))
    _, worst, days = tuner.score(knobs)
    if holdout:
        days = days + tuner.score(knobs, holdout, holdout=True)[2]
    final = tuner.config(knobs, None)
    pool_path = f"gpuNodePools[{stack_cfg.pool_index}] ({stack_cfg.pool.name})"
    pool_limit = pool_gpu_limit(stack_cfg, final.max_replicas)
    out = {
        "stack": str(args.stack),
        "model": stack_cfg.model_name,
        "max_miss_pct": args.max_miss_pct,
        "meets_target_on_every_training_day": worst <= args.max_miss_pct,
        "knobs": knobs,
        "path": stack_cfg.model_path,
        "yaml": autoscaling_yaml(final),
        "headroom_path": pool_path,
        "headroom_yaml": headroom_yaml(tuner.headroom(knobs)),
        "consolidate_after": go_duration(tuner.pool_consolidate_after(knobs)),
        "days": [d.row() for d in days],
    }
    if pool_limit is not None:
        out["pool_gpu_limit"] = {"pool": stack_cfg.plan.pool.name, "gpu_limit": pool_limit}
    if reserved_max is not None:
        out["reserved"] = {
            "instances": reserved,
            "instance_type": stack_cfg.instance.instance_type,
            "gpus": reserved * stack_cfg.instance.gpus,
            "usd_per_hour": args.reserved_usd_per_hour,
            "prepaid_usd_per_day": round(replace(capacity, reserved_nodes=reserved).reserved_cost(86_400), 2),
        }
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"tune {args.stack}/{stack_cfg.model_name}: misses <= {args.max_miss_pct:g}% on every training day")
    if worst > args.max_miss_pct:
        print(
            f"no config in the search space meets {args.max_miss_pct:g}% on every day (best worst-day: "
            f"{worst:.2f}%); maxReplicas {stack_cfg.max_replicas} or the SLO may be the limit"
        )
    header = ("day", "role", "GPU $/day", "misses %", "oracle $/day", "vs oracle")
    rows = [
        (
            d.name, "holdout" if d.holdout else "train", f"{d.cost:,.2f}", f"{d.miss_pct:.2f}",
            f"{d.oracle:,.2f}", f"{d.cost / d.oracle:.2f}x" if d.oracle else "n/a",
        )
        for d in days
    ]  # fmt: skip
    widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header))]
    for r in (header, *rows):
        print(
            "  ".join(
                str(c).ljust(w) if i < 2 else str(c).rjust(w)
                for i, (c, w) in enumerate(zip(r, widths, strict=True))
            )
        )
    print(f"paste under {stack_cfg.model_path} in {stack_file(args.stack).name}:")
    print(autoscaling_yaml(final))
    print(
        f"and under {pool_path}: how long an empty GPU node is kept, and the pool's warm GPUs (placeholders "
        "below the replicas' priority):"
    )
    print(f"consolidateAfter: {go_duration(tuner.pool_consolidate_after(knobs))}")
    print(headroom_yaml(tuner.headroom(knobs)))
    if pool_limit is not None:
        print(
            f"and raise gpuNodePools[{stack_cfg.plan.pool.name}].gpuLimit to {pool_limit}: maxReplicas "
            f"{final.max_replicas} x {stack_cfg.plan.gpus} GPU(s) with the pool's other models at theirs"
        )
    if reserved_max is not None:
        prepaid = replace(capacity, reserved_nodes=reserved).reserved_cost(86_400)
        print(
            f"and reserve {reserved} x {stack_cfg.instance.instance_type} ({reserved * stack_cfg.instance.gpus} GPUs) "
            f"at ${args.reserved_usd_per_hour:,.2f}/h prepaid (${prepaid:,.2f}/day, included in GPU $/day above); "
            "the pool needs capacityReservations and the 'reserved' capacity type to launch into them"
        )
    return 0
