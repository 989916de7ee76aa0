"""A warm GPU node kept for a model at zero: the pool's headroom placeholders (plan/headroom.py), e.g. only in
business hours through a `schedule` window, which a waking replica preempts instead of waiting a new node.

Karpenter's native buffer pods are not in the pinned Karpenter (shared/reference/README.md; no such CRD in
shared/reference/crds), so the platform's own mechanism is the one modelled: placeholder pods at the lowest
priority (components/specs/headroom.py), sized by a KEDA cron ScaledObject, on nodes Karpenter launches for
them like for any replica. As serving/capacity.py runs them for 1 <-> N:
- a placeholder is warm `refill_s` after its window opens (Karpenter launch + node Ready + image pull /
  weights sync: `HeadroomPlan.refill_seconds`), and its node is billed from the window's opening to
  `consolidateAfter` after its close;
- a replica woken from zero while one is warm preempts it and is Ready `start_s` after activation
  (`HeadroomPlan.warm_start`: preemption + a warm node's start); the evicted placeholder is refilled through
  a new node (`refill_s`), so a second wake before the refill waits a new node. The placeholders' nodes are
  billed here (the refill's among them), the woken replica's node as the replica's (serving/zero.py);
- outside the window, or before the placeholder is warm, a wake waits the from-zero start (serving/zero.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from llm_platform.plan import HeadroomPlan
from llm_platform.simulator.controllers.cron import placeholder_targets


@dataclass(frozen=True)
class WarmBuffer:
    """The pool's placeholders over one day, as the plan renders them (minute by minute)."""

    placeholders: tuple[int, ...]  # per minute of the day: placeholders the cron ScaledObject asks for
    start_s: float  # a replica preempting a warm placeholder: activation to Ready
    refill_s: float  # a placeholder's node from launch to warm
    node_usd_per_hour: float  # one placeholder's node
    linger_s: float  # the pool's consolidateAfter: an emptied node is billed this long after the window

    @classmethod
    def from_plan(
        cls, headroom: HeadroomPlan, model: str, day_start: datetime, seconds: int, consolidate_after_s: float
    ) -> WarmBuffer:
        targets = placeholder_targets(headroom, day_start, seconds)
        return cls(
            tuple(int(t) for t in targets),
            headroom.warm_start(model),
            headroom.refill_seconds,
            headroom.instance.list_usd_per_hour,
            consolidate_after_s,
        )

    def warm_at(self, t: float) -> bool:
        """A placeholder is warm at `t`: held since at least `refill_s` before (its node launched and ready)."""
        last = min(int(t // 60), len(self.placeholders) - 1)
        # in the day's first minutes: warm only if the window is open from midnight (it ran over the night)
        first = max(0, math.floor((t - self.refill_s) / 60))
        return all(self.placeholders[m] > 0 for m in range(first, last + 1))

    def cost_usd(self, duration: float) -> float:
        """The placeholders' nodes over the day: every minute held, plus `linger_s` after each close."""
        held = np.asarray(self.placeholders[: math.ceil(duration / 60)], dtype=float)
        node_seconds = float(held.sum()) * 60
        closes = np.maximum(held[:-1] - held[1:], 0).sum() if len(held) > 1 else 0.0
        node_seconds += float(closes) * self.linger_s
        return node_seconds / 3600 * self.node_usd_per_hour
