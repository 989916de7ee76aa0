"""The tuner's scale-to-zero search: minReplicas 0 and the idle period (KEDA `cooldownPeriod`).

Where the stack allows zero (a non-prod environment, or a model opted in with `allowScaleToZero`), every
cooldownPeriod of the grid is scored at minReplicas 0 over the days (serving/zero.py), against the stack's
own minReplicas: the cheapest candidate that loses no request (no 503 after the hold) and serves every
first request after idle within the from-zero budget wins; the stack's own floor wins when none does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from llm_platform.config.schema import Environment, StackConfig
from llm_platform.plan.model import ModelPlan
from llm_platform.simulator.serving.zero import ZeroResult, ZeroSpec, simulate_zero

COOLDOWN_GRID_S = (300, 600, 900, 1800, 3600)


def allows_zero(config: StackConfig, plan: ModelPlan) -> bool:
    """The stack's own rules (config/schema.py): only behind the gateway (whose requests wake the model);
    non-prod stacks may, prod only for a model that opts in (`allowScaleToZero`)."""
    if not config.gateway.enabled:
        return False
    return config.environment is not Environment.PROD or plan.model.autoscaling.allow_scale_to_zero


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
    def wait_max(self) -> float:
        return max((r.wait_max for r in self.results), default=0.0)


def score(
    plan: ModelPlan,
    days: Sequence[np.ndarray],
    duration: float,
    min_replicas: int | None = None,
    cooldown_s: float | None = None,
) -> ZeroCandidate:
    spec = ZeroSpec.from_plan(plan, min_replicas=min_replicas, cooldown_s=cooldown_s)
    return ZeroCandidate(
        spec.min_replicas, spec.cooldown_s, tuple(simulate_zero(d, spec, duration) for d in days)
    )


def tune_zero(
    config: StackConfig,
    plan: ModelPlan,
    days: Sequence[np.ndarray],
    duration: float,
    grid: Sequence[float] = COOLDOWN_GRID_S,
) -> tuple[ZeroCandidate, list[ZeroCandidate]]:
    """(the winner, every candidate scored): the stack's own floor first, then minReplicas 0 x the grid."""
    own = score(plan, days, duration)
    candidates = [own]
    if allows_zero(config, plan):
        candidates += [score(plan, days, duration, 0, c) for c in grid]
    hold = ZeroSpec.from_plan(plan).hold_s
    fine = [c for c in candidates if c.lost == 0 and c.wait_max <= hold]
    return min(fine or [own], key=lambda c: (c.cost_usd, -c.cooldown_s)), candidates
