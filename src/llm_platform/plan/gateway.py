"""The inference gateway's bounded queue per model: what the endpoint picker's flow control renders and what
the simulator serves behind.

llm-d router v0.10.0 flow control (../shared/reference/GATEWAY.md; components/specs/inference_pool.py renders
it): a pool is saturated when its pods' mean of max(vLLM waiting / Q, KV use / K) reaches 1; past that the
picker holds requests, at most `held_requests` of them (split over the active-active pickers) and `ttl` each,
and answers 429 beyond (503 when the pool has no endpoint). vLLM's own queue per pod stays near Q.

The TTL is the model's TTFT objective: a request held longer has missed it whatever happens next, and
serving it late takes the capacity a fresh request would have been served within the objective by, so past
saturation a longer hold turns every request into a miss (a FIFO queue in overload) where shedding the
excess keeps the rest on time. The picker enforces it per request as a context deadline from enqueue
(pkg/epp/flowcontrol/controller/controller.go `createRequestContext`) and answers 429, a retryable
backpressure error (apix/config/v1alpha1 `DefaultRequestTTL`).

A model at minReplicas 0 (`at_zero`): the picker also holds every request that arrives while the model wakes,
so its bound is sized for them, not for overload shedding at full size: the model's expected rate while at zero
(`autoscaling.wakeRequestsPerSecond`, by default what the gateway admits: its clients' requestsPerMinute
together, `wake_rate`) x the from-zero hold x WAKE_HOLD_MARGIN (Poisson bursts, and the retries of what was
answered before the wake, which arrive again within it), or `maxPendingPerReplica x maxReplicas` if larger.
Preflight warns when the picker's byte bound (components/specs/inference_pool.py QUEUE_MAX_BYTES) cannot hold
that many prompts of maxModelLen (tools/preflight/zero.py).

The picker has ONE TTL (`defaultRequestTTL`; a request's own TTL is 0,
InitialEffectiveTTL, llm-d-router issue #1090), so it must be the from-zero hold (plan/zero.py): the request
that wakes the model waits for the new node. The trade-off: the same hold then applies when the pool is merely
saturated, so past saturation a held request waits up to the hold (a TTFT miss) instead of a 429 at the TTFT
objective.

The route timeout (`timeouts.request` of both routes, components/specs/inference_pool.py) is the model's
serving budget, SERVING_BUDGET_S: the whole streamed response, queueing in the picker included. A model at
zero adds its hold: the request that wakes it first waits up to the hold, then gets the same serving budget.

The Gateway's `requestReceivedTimeout` (its ClientTrafficPolicy, components/specs/gateway.py) is a slow-loris
guard, REQUEST_RECEIVED_TIMEOUT_S. Envoy Gateway v1.8.3 renders it as the HTTP connection manager's
`request_timeout` (internal/xds/translator/listener.go), which Envoy disarms only when the last request byte
is sent upstream or the response starts (the pinned ClientTrafficPolicy CRD says the same): a request the
picker's ext_proc holds, before the router, is still "being received". With a model at zero the guard is
the stack's longest hold plus REQUEST_RECEIVED_TIMEOUT_S (`request_received_timeout_s`), else it stays 10 s.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

from llm_platform.config.schema import Autoscaling, GatewayConfig, Slo

EPP_REPLICAS = 2  # pickers per model, active-active: each holds its share of the queue
MIN_SATURATION_QUEUE_DEPTH = 5  # the utilization detector's default
SATURATION_KV_CACHE = 0.95  # vLLM preempts running sequences at a full KV cache
# a request's time in the gateway once a replica can take it: the picker's queue and the whole streamed response
# (Envoy Gateway's 15 s default route timeout would cut long generations)
SERVING_BUDGET_S = 600.0
REQUEST_RECEIVED_TIMEOUT_S = 10.0  # slow-loris guard: the whole request received within it (plus any hold)
WAKE_HOLD_MARGIN = 1.5  # a wake's expected arrivals x this: Poisson bursts and re-arriving retries


def duration(seconds: float) -> str:
    """A Kubernetes / Gateway API duration (Go's time.ParseDuration; Gateway API's `Duration` pattern takes
    whole units only): whole seconds, else milliseconds."""
    millis = round(seconds * 1000)
    return f"{millis // 1000}s" if millis % 1000 == 0 else f"{millis}ms"


@dataclass(frozen=True)
class FlowControlPlan:
    saturation_queue_depth: int  # Q: vLLM waiting requests per pod at which the pool counts as saturated
    saturation_kv_cache: float  # K
    held_per_picker: int  # requests one picker holds once the pool is saturated
    ttl_seconds: float  # how long the picker holds a request before it answers 429
    # a model at minReplicas 0: the from-zero hold (plan/zero.py), which is then also `ttl_seconds`
    from_zero_hold_s: float | None = None
    # a model at minReplicas 0: the requests/s expected while at zero, which sized `held_per_picker`
    wake_requests_per_second: float | None = None

    @property
    def wake_arrivals(self) -> int | None:
        """A model at zero: the requests its hold is sized for, the expected arrivals during one wake with
        WAKE_HOLD_MARGIN (None for a model that keeps a replica)."""
        if self.from_zero_hold_s is None or self.wake_requests_per_second is None:
            return None
        return math.ceil(WAKE_HOLD_MARGIN * self.wake_requests_per_second * self.from_zero_hold_s)

    @property
    def ttl(self) -> str:
        """`defaultRequestTTL` as the picker reads it (a Kubernetes duration: Go's time.ParseDuration)."""
        return duration(self.ttl_seconds)

    @property
    def route_timeout_s(self) -> float:
        """The routes' request timeout: the serving budget, plus the hold for a model at zero (the request
        that wakes it waits that long before a replica can start on it)."""
        return SERVING_BUDGET_S + (self.from_zero_hold_s or 0.0)

    @property
    def route_timeout(self) -> str:
        return duration(self.route_timeout_s)

    @property
    def held_requests(self) -> int:
        """Requests the model's pickers hold together: past it, 429."""
        return self.held_per_picker * EPP_REPLICAS


def saturation_queue_depth(autoscaling: Autoscaling) -> int:
    """Twice the autoscaler's queue target, so the queue KEDA scales on can still grow past its target (at 1x
    the HPA's ratio would stay 1)."""
    return max(MIN_SATURATION_QUEUE_DEPTH, math.ceil(2 * autoscaling.queue_depth_per_replica))


def flow_control(autoscaling: Autoscaling, slo: Slo, max_pending_per_replica: int) -> FlowControlPlan:
    """`gateway.maxPendingPerReplica` held per vLLM replica at maxReplicas, shared by the pickers (rounded up),
    each for at most the model's TTFT objective."""
    held = max_pending_per_replica * autoscaling.max_replicas
    return FlowControlPlan(
        saturation_queue_depth=saturation_queue_depth(autoscaling),
        saturation_kv_cache=SATURATION_KV_CACHE,
        held_per_picker=max(1, math.ceil(held / EPP_REPLICAS)),
        ttl_seconds=slo.ttft_seconds,
    )


def wake_rate(autoscaling: Autoscaling, gateway: GatewayConfig) -> float:
    """Requests/s a model at zero is expected to receive: `autoscaling.wakeRequestsPerSecond`, else the most
    the gateway admits (its clients' requestsPerMinute together, per second)."""
    if autoscaling.wake_requests_per_second is not None:
        return autoscaling.wake_requests_per_second
    return sum(c.requests_per_minute for c in gateway.clients) / 60


def at_zero(queue: FlowControlPlan, hold_s: float, wake_rps: float) -> FlowControlPlan:
    """The queue of a model at minReplicas 0: the picker holds a request for the from-zero hold, and holds
    every request of a wake (`wake_rps` x the hold x WAKE_HOLD_MARGIN) split over the pickers, or the
    overload bound if that is larger."""
    sized = replace(queue, ttl_seconds=hold_s, from_zero_hold_s=hold_s, wake_requests_per_second=wake_rps)
    wake = sized.wake_arrivals or 0
    return replace(sized, held_per_picker=max(queue.held_per_picker, math.ceil(wake / EPP_REPLICAS)))


def request_received_timeout_s(queues: Iterable[FlowControlPlan | None]) -> float:
    """The Gateway's `requestReceivedTimeout` over the stack's models' queues: the longest from-zero hold plus
    REQUEST_RECEIVED_TIMEOUT_S when a model is at zero, else REQUEST_RECEIVED_TIMEOUT_S."""
    holds = [q.from_zero_hold_s for q in queues if q is not None and q.from_zero_hold_s is not None]
    return max(holds, default=0.0) + REQUEST_RECEIVED_TIMEOUT_S
