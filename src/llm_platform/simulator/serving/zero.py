"""A model at zero replicas: the idle timer, activation, held requests, the from-zero start, 503 after the hold.

KEDA's semantics (controllers/keda.py, shared/research/autoscaling_sim.md §2): the operator's scale executor
runs every `pollingInterval`; it scales 0 -> max(minReplicaCount, 1) when a trigger is active (value >
activationThreshold, strictly) and 1 -> 0 only `cooldownPeriod` after the last activity, and only when
minReplicaCount is 0. 1 <-> N is the HPA's and is not modelled here (day/engine.py does it): this module is
the 0 <-> 1 boundary, which decides the floor replica's cost and what happens to requests while at zero.

The activation signal is the gateway's request arrivals, which exist with no pod (the gateway counts them).
A request arriving at zero is held by the gateway; the replica it wakes is Ready `start_s` after the
executor's activation (the from-zero cold start: a new node, the empty one was consolidated away). A held
request is served at Ready if it waited at most `hold_s`, else it gets a 503 at `hold_s` (lost, reported
apart from SLO misses). The hold is the model's from-zero cold-start budget (plan/zero.py `from_zero_hold_s`, the picker's
flow-control TTL for a model at minReplicas 0).
With a warm buffer (the pool's headroom placeholders, e.g. in business hours: serving/warm_buffer.py), a wake
while a placeholder is warm preempts it and is Ready after a warm node's start instead; the hold is unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from llm_platform.plan.model import ModelPlan
from llm_platform.plan.zero import from_zero_hold_s, from_zero_start_s
from llm_platform.simulator.serving.warm_buffer import WarmBuffer

ACTIVATION_THRESHOLD = 0.0  # any arrival activates: the trigger is active when the value > 0


@dataclass(frozen=True)
class ZeroSpec:
    """What the 0 <-> 1 layer needs, all read from the plan (`from_plan`)."""

    min_replicas: int
    cooldown_s: float  # KEDA cooldownPeriod: idle time before 1 -> 0
    polling_s: float  # KEDA pollingInterval: the executor's period
    scrape_s: float  # delay before an arrival shows in the gateway's counter
    start_s: float  # from-zero start: activation to Ready
    hold_s: float  # the gateway's hold for a waking request
    usd_per_hour: float  # one replica's instance price

    @classmethod
    def from_plan(
        cls,
        plan: ModelPlan,
        min_replicas: int | None = None,
        cooldown_s: float | None = None,
        hold_s: float | None = None,
    ) -> ZeroSpec:
        s = plan.scaling
        return cls(
            min_replicas=s.min_replicas if min_replicas is None else min_replicas,
            cooldown_s=float(s.cooldown_period_s if cooldown_s is None else cooldown_s),
            polling_s=float(s.polling_interval_s),
            scrape_s=float(s.scrape_interval_s),
            start_s=from_zero_start_s(plan.cold_start),
            hold_s=from_zero_hold_s(plan.cold_start, s) if hold_s is None else hold_s,
            usd_per_hour=plan.instance.list_usd_per_hour * plan.nodes,
        )


@dataclass(frozen=True)
class ZeroResult:
    up_seconds: float  # replica-seconds of the floor (minReplicas, or the one KEDA wakes at zero)
    cost_usd: float
    wakes: int  # 0 -> 1 activations
    held: int  # requests that arrived with no Ready replica
    lost: int  # held past the hold: 503
    held_waits: tuple[float, ...]  # wait of every held request that was served
    warm_wakes: int = 0  # wakes that preempted a warm placeholder (a WarmBuffer) instead of a new node
    buffer_usd: float = 0.0  # the warm placeholders' nodes, included in cost_usd

    @property
    def wait_p50(self) -> float:
        return float(np.percentile(self.held_waits, 50)) if self.held_waits else 0.0

    @property
    def wait_max(self) -> float:
        return max(self.held_waits, default=0.0)


def _next_tick(t: float, polling_s: float) -> float:
    """The executor's first pass at or after `t` (passes at 0, p, 2p, ...)."""
    return math.ceil(t / polling_s) * polling_s


def simulate_zero(
    arrivals: Sequence[float] | np.ndarray, spec: ZeroSpec, duration: float, warm: WarmBuffer | None = None
) -> ZeroResult:
    """Run the 0 <-> 1 boundary over one day of sorted arrival times (seconds); with `warm`, a wake while a
    placeholder is warm starts on its node (serving/warm_buffer.py)."""
    times = np.asarray(arrivals, dtype=float)
    buffer_usd = warm.cost_usd(duration) if warm is not None else 0.0
    if spec.min_replicas > 0:  # never at zero: the floor replicas are up all day and nothing is held
        up = duration * spec.min_replicas
        return ZeroResult(up, up / 3600 * spec.usd_per_hour + buffer_usd, 0, 0, 0, (), 0, buffer_usd)
    up_seconds, wakes, held, lost, warm_wakes = 0.0, 0, 0, 0, 0
    refilled = 0.0  # when the last preempted placeholder is warm again
    waits: list[float] = []
    i, n = 0, len(times)
    # the day starts at zero (a night before it); a day that starts busy wakes on its first arrival
    while i < n:
        first = float(times[i])
        activated = _next_tick(first + spec.scrape_s, spec.polling_s)
        on_warm = warm is not None and activated >= refilled and warm.warm_at(activated)
        ready = activated + (warm.start_s if on_warm and warm is not None else spec.start_s)
        if on_warm and warm is not None:
            warm_wakes += 1
            refilled = activated + warm.refill_s
        wakes += 1
        # requests arriving before Ready are held
        while i < n and times[i] < ready:
            held += 1
            wait = ready - float(times[i])
            if wait <= spec.hold_s:
                waits.append(wait)
            else:
                lost += 1
            i += 1
        # up: each pass after the last activity + cooldown scales to 0
        last = float(times[i - 1]) if i > 0 else first
        while True:
            down = _next_tick(max(last + spec.scrape_s, ready) + spec.cooldown_s, spec.polling_s)
            if down == last + spec.scrape_s + spec.cooldown_s:  # KEDA needs strictly more than cooldown
                down += spec.polling_s
            if i < n and times[i] + spec.scrape_s < down:
                last = float(times[i])  # seen active before the pass: the idle timer restarts
                i += 1
                continue
            break
        down = min(down, duration)
        up_seconds += max(0.0, down - activated)
    cost = up_seconds / 3600 * spec.usd_per_hour + buffer_usd
    return ZeroResult(up_seconds, cost, wakes, held, lost, tuple(waits), warm_wakes, buffer_usd)
