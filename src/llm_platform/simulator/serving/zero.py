"""A model at zero replicas: the idle timer, activation, held requests, the from-zero start, 503 after the hold.

KEDA's semantics (controllers/keda.py, shared/research/autoscaling_sim.md §2): the operator's scale executor
runs every `pollingInterval`; it scales 0 -> max(minReplicaCount, 1) when a trigger is active (value >
activationThreshold, strictly) and 1 -> 0 only `cooldownPeriod` after the last activity, and only when
minReplicaCount is 0. 1 <-> N is the HPA's and is not modelled here (day/engine.py does it): this module is
the 0 <-> 1 boundary, which decides the floor replica's cost and what happens to requests while at zero.

The activation signal is the gateway's request arrivals, which exist with no pod (the gateway counts them).
A request arriving at zero is held by the gateway's picker (llm-d router v0.10.0: an empty pool is saturated,
its flow-control queue a scale-from-zero waiting room); the replica it wakes is Ready `start_s` after the
executor's activation (the from-zero cold start: a new node, the empty one was consolidated away). A held
request is served at Ready if it waited at most `hold_s`, else it gets a 503 + `Retry-After` at `hold_s`. The
hold is the model's from-zero budget capped at what the gateway can keep (plan/zero.py `from_zero_hold_s`,
HOLD_CAP_S; the picker's flow-control TTL for a model at minReplicas 0). The picker holds at most `bound`
requests at once (the plan's `FlowControlPlan.held_requests`, its `maxRequests`): one arriving while it is full
gets that 503 at once (`rejected-no-endpoints`).

The client retries a 503 (`attempts` in all, plan/zero.py RETRY_ATTEMPTS: the OpenAI SDK's default) after
`retry_after_s` and is held again (`waiting_room`): below the bound, attempt k is sent at arrival + k x (hold
+ retry_after), so it is served at Ready if Ready falls in its hold, at its send time if Ready fell in the
back-off before it. A request served on a retry is `retried` (its wait, from the first send, in
`retried_waits` and `held_waits`); one whose last attempt also gets the 503 is `lost` (reported apart from SLO
misses). A retry is an arrival the gateway counts, so it restarts the idle timer like any other.
The day engine (day/engine.py, day/clients.py) runs the same picker with the Ready replicas' finite capacity;
tests/simulator/test_zero.py checks that the two agree on its held and lost requests.
With a warm buffer (the pool's headroom placeholders, e.g. in business hours: serving/warm_buffer.py), a wake
while a placeholder is warm preempts it and is Ready after a warm node's start instead; the hold is unchanged.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from llm_platform.plan.model import ModelPlan
from llm_platform.plan.zero import RETRY_AFTER_S, RETRY_ATTEMPTS, from_zero_hold_s, from_zero_start_s
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
    retry_after_s: float = RETRY_AFTER_S  # the 503's Retry-After, which the client honours
    attempts: int = RETRY_ATTEMPTS  # sends per request: the first and its retries
    bound: int | None = None  # requests the picker holds at once (None: no gateway bound)

    @property
    def patience_s(self) -> float:
        """The longest a retrying client waits: every attempt held for the hold, the back-offs between."""
        return self.attempts * self.hold_s + (self.attempts - 1) * self.retry_after_s

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
            bound=plan.flow_control.held_requests if plan.flow_control is not None else None,
        )


@dataclass(frozen=True)
class ZeroResult:
    up_seconds: float  # replica-seconds of the floor (minReplicas, or the one KEDA wakes at zero)
    cost_usd: float
    wakes: int  # 0 -> 1 activations
    held: int  # requests that arrived with no Ready replica
    lost: int  # 503 on the last attempt
    held_waits: tuple[float, ...]  # wait of every held request that was served (from its first send)
    warm_wakes: int = 0  # wakes that preempted a warm placeholder (a WarmBuffer) instead of a new node
    buffer_usd: float = 0.0  # the warm placeholders' nodes, included in cost_usd
    # the served ones among them that got a 503 first (served on a retry)
    retried_waits: tuple[float, ...] = ()

    @property
    def retried(self) -> int:
        return len(self.retried_waits)

    @property
    def retried_wait_max(self) -> float:
        return max(self.retried_waits, default=0.0)

    @property
    def wait_p50(self) -> float:
        return float(np.percentile(self.held_waits, 50)) if self.held_waits else 0.0

    @property
    def wait_max(self) -> float:
        return max(self.held_waits, default=0.0)


def _next_tick(t: float, polling_s: float) -> float:
    """The executor's first pass at or after `t` (passes at 0, p, 2p, ...)."""
    return math.ceil(t / polling_s) * polling_s


def waiting_room(
    sends: Sequence[float], ready: float, spec: ZeroSpec
) -> tuple[list[tuple[float, int] | None], list[float]]:
    """The picker at zero for one wake, each request from its first send (sorted, all before `ready`): (its
    wait, the attempt served, 0 the first), or None when its last attempt got a 503; and each one's last send
    (an arrival the gateway counts). An attempt is held while
    the picker holds fewer than the bound, else 503'd at once; a held one is served at Ready if that is within
    the hold, else 503'd at the hold's end; a 503 is sent again `retry_after_s` later; an attempt sent at or
    after Ready is served at once."""
    out: list[tuple[float, int] | None] = [None] * len(sends)
    last = list(sends)
    events = [
        (t, 1, i, 0) for i, t in enumerate(sends)
    ]  # (time, kind: 0 a hold ends, 1 a send, request, attempt)
    heapq.heapify(events)
    held = 0
    while events and events[0][0] < ready:
        now, kind, i, k = heapq.heappop(events)
        if kind == 1:
            last[i] = now
        if kind == 1 and (spec.bound is None or held < spec.bound):
            held += 1
            if now + spec.hold_s < ready:  # served at Ready when its hold ends at or after it
                heapq.heappush(events, (now + spec.hold_s, 0, i, k))
            else:
                out[i] = (ready - sends[i], k)
            continue
        held -= kind == 0
        if k + 1 < spec.attempts:  # the 503: at the hold's end, or at once past the bound
            heapq.heappush(events, (now + spec.retry_after_s, 1, i, k + 1))
    for now, _, i, k in events:  # sent again at or after Ready
        out[i], last[i] = (now - sends[i], k), now
    return out, last


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
    retried: list[float] = []
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
        # requests arriving before Ready are held; a 503'd one retries (its last send is activity too)
        start = i
        while i < n and times[i] < ready:
            i += 1
        sends = times[start:i].tolist()
        held += len(sends)
        served_all, last_sends = waiting_room(sends, ready, spec)
        last_send = max(last_sends, default=first)
        for served in served_all:
            if served is None:
                lost += 1
            else:
                waits.append(served[0])
                if served[1]:
                    retried.append(served[0])
        # up: each pass after the last activity + cooldown scales to 0
        last = max(float(times[i - 1]) if i > 0 else first, last_send)
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
    return ZeroResult(
        up_seconds, cost, wakes, held, lost, tuple(waits), warm_wakes, buffer_usd, tuple(retried)
    )
