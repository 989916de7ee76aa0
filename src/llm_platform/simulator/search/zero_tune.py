"""The tuner's scale-to-zero search: minReplicas 0 and the idle period (KEDA `cooldownPeriod`).

Where the stack allows zero (a non-prod environment, or a model opted in with `allowScaleToZero`), every
cooldownPeriod of the grid is scored at minReplicas 0 over the days (serving/zero.py), against the stack's
own minReplicas (or the tuner's): the cheapest candidate that loses no request (no 503 on a client's last
attempt: serving/zero.py, retries after Retry-After) wins; the own floor wins when none does.
`simulator tune` runs it after its descent (`zero_step`): the held requests wait minutes, so they count as SLO
misses within `--max-miss-pct`, and the block it prints carries minReplicas 0 and the cooldownPeriod.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from llm_platform.config.schema import Autoscaling, StackConfig, scale_to_zero_allowed
from llm_platform.plan.model import ModelPlan
from llm_platform.plan.zero import RETRY_ATTEMPTS
from llm_platform.simulator.controllers.strategies import scaling_for
from llm_platform.simulator.search.stacks import StackRun
from llm_platform.simulator.serving.warm_buffer import WarmBuffer
from llm_platform.simulator.serving.zero import ZeroResult, ZeroSpec, simulate_zero

COOLDOWN_GRID_S = (300, 600, 900, 1800, 3600)


def allows_zero(config: StackConfig, plan: ModelPlan) -> bool:
    """The stack's own rules (config/schema/stack.py): only behind the gateway (whose requests wake the model);
    non-prod stacks may, prod only for a model that opts in (`allowScaleToZero`)."""
    return scale_to_zero_allowed(config, plan.model.autoscaling)


@dataclass(frozen=True)
class ZeroCandidate:
    min_replicas: int
    cooldown_s: float
    results: tuple[ZeroResult, ...]  # one per day

    @property
    def cost_usd(self) -> float:
        return float(sum(r.cost_usd for r in self.results))

    @property
    def lost(self) -> int:
        return sum(r.lost for r in self.results)

    @property
    def retried(self) -> int:
        """Requests 503'd at the hold and served on a client's retry (serving/zero.py)."""
        return sum(r.retried for r in self.results)

    @property
    def wait_max(self) -> float:
        return max((r.wait_max for r in self.results), default=0.0)


def score(
    plan: ModelPlan,
    days: Sequence[np.ndarray],
    duration: float | Sequence[float],
    min_replicas: int | None = None,
    cooldown_s: float | None = None,
    warm: Sequence[WarmBuffer | None] | None = None,
) -> ZeroCandidate:
    """One candidate over the days (`duration`: every day's, or one for all; `warm`: each day's warm buffer)."""
    spec = ZeroSpec.from_plan(plan, min_replicas=min_replicas, cooldown_s=cooldown_s)
    lengths = [duration] * len(days) if isinstance(duration, (int, float)) else list(duration)
    buffers = list(warm) if warm is not None else [None] * len(days)
    return ZeroCandidate(
        spec.min_replicas,
        spec.cooldown_s,
        tuple(simulate_zero(d, spec, n, b) for d, n, b in zip(days, lengths, buffers, strict=True)),
    )


def tune_zero(
    config: StackConfig,
    plan: ModelPlan,
    days: Sequence[np.ndarray],
    duration: float | Sequence[float],
    grid: Sequence[float] = COOLDOWN_GRID_S,
    own_min: int | None = None,
    held_allowed_pct: Sequence[float] | None = None,
) -> tuple[ZeroCandidate, list[ZeroCandidate]]:
    """(the winner, every candidate scored): the own floor first (`own_min`, default the plan's
    minReplicas), then minReplicas 0 x the grid. With `held_allowed_pct`, a candidate also holds at most
    that share of each day's requests (a held request waits a cold start: an SLO miss)."""
    own = score(plan, days, duration, own_min)
    candidates = [own]
    if allows_zero(config, plan):
        candidates += [score(plan, days, duration, 0, c) for c in grid]
    patience = ZeroSpec.from_plan(plan).patience_s  # a 503'd request retried and served is not lost

    def fine(c: ZeroCandidate) -> bool:
        if c.lost or c.wait_max > patience:
            return False
        if held_allowed_pct is None:
            return True
        pairs = zip(c.results, days, held_allowed_pct, strict=True)
        return all(100 * r.held / max(len(d), 1) <= allowed for r, d, allowed in pairs)

    ok = [c for c in candidates if fine(c)]
    return min(ok or [own], key=lambda c: (c.cost_usd, -c.cooldown_s)), candidates


@dataclass(frozen=True)
class ZeroStep:
    """What `simulator tune` adds for scale to zero: the block to print and the floors it was chosen on."""

    autoscaling: Autoscaling  # the tuned block, at minReplicas 0 and the chosen cooldownPeriod when zero won
    own: ZeroCandidate  # the tuned floor (its minReplicas all day)
    best: ZeroCandidate
    allowed: bool  # the stack allows zero for this model (allows_zero and the stack file's rules)
    hold_s: float
    zeros: tuple[ZeroCandidate, ...]  # minReplicas 0 x the cooldown grid, as scored (empty: not allowed)
    held_room: tuple[tuple[int, float], ...]  # per training day: (requests, misses % left under the target)
    day_seconds: tuple[float, ...]  # each training day's length

    def usd_per_day(self, c: ZeroCandidate) -> list[float]:
        """A candidate's floor $ per 24 h of each training day (as the tuner's day table prices a day)."""
        return [r.cost_usd * 86_400 / s for r, s in zip(c.results, self.day_seconds, strict=True)]

    @property
    def at_zero(self) -> bool:
        return self.best.min_replicas == 0

    def why_not_zero(self) -> str:
        """Why no minReplicas-0 candidate won."""
        if not self.zeros:
            return "not allowed for this model (it needs the gateway, and in prod allowScaleToZero: true)"
        if all(c.lost for c in self.zeros):
            return (
                f"a held request got a 503 after the {self.hold_s:.0f} s hold on all its {RETRY_ATTEMPTS} "
                "attempts at every cooldownPeriod"
            )

        def over(c: ZeroCandidate) -> bool:
            pairs = zip(c.results, self.held_room, strict=True)
            return any(100 * r.held / max(n, 1) > room for r, (n, room) in pairs)

        if all(over(c) for c in self.zeros):
            return "its held requests (each waits a cold start: an SLO miss) exceed --max-miss-pct on a day"
        return "the tuned floor costs no more"

    def row(self) -> dict[str, object]:
        return {
            "allowed": self.allowed,
            "min_replicas": self.best.min_replicas,
            "cooldown_period_s": int(self.best.cooldown_s),
            "hold_s": self.hold_s,
            "floor_usd_per_day": [round(x, 2) for x in self.usd_per_day(self.own)],
            "floor_usd_per_day_chosen": [round(x, 2) for x in self.usd_per_day(self.best)],
            "held": [r.held for r in self.best.results],
            "lost": [r.lost for r in self.best.results],
            "retried": [r.retried for r in self.best.results],
            "held_wait_max_s": round(self.best.wait_max, 1),
            **({} if self.at_zero else {"why_not_zero": self.why_not_zero()}),
        }


def zero_step(
    config: StackConfig,
    runs: Sequence[StackRun],
    tuned: Autoscaling,
    day_miss_pct: Sequence[float],
    max_miss_pct: float,
    accepts: Callable[[Autoscaling], bool] = lambda _: True,
) -> ZeroStep:
    """tune_zero on the tuner's training days, against the tuned floor: zero wins where the stack allows it,
    the stack file accepts the block, no request is lost, and each day's misses plus its held requests stay
    within `max_miss_pct`."""
    plan = replace(runs[0].plan, scaling=scaling_for(runs[0].plan, tuned))
    days = [r.setup.traffic.arrivals for r in runs]
    durations = [float(r.setup.traffic.duration) for r in runs]
    opt_in = runs[0].plan.model.autoscaling.allow_scale_to_zero
    at_zero = tuned.model_copy(update={"min_replicas": 0, "allow_scale_to_zero": opt_in})
    allowed = allows_zero(config, runs[0].plan) and accepts(at_zero)
    room = [max(0.0, max_miss_pct - m) for m in day_miss_pct]
    best, candidates = tune_zero(
        config,
        plan,
        days,
        durations,
        COOLDOWN_GRID_S if allowed else (),  # refused: only the tuned floor is scored
        own_min=tuned.min_replicas,
        held_allowed_pct=room,
    )
    block = tuned
    if best.min_replicas == 0:
        block = at_zero.model_copy(update={"cooldown_period": int(best.cooldown_s)})
    sizes = tuple(zip((len(d) for d in days), room, strict=True))
    hold = ZeroSpec.from_plan(plan).hold_s
    return ZeroStep(block, candidates[0], best, allowed, hold, tuple(candidates[1:]), sizes, tuple(durations))
