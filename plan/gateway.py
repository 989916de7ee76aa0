"""The inference gateway's bounded queue per model: what the endpoint picker's flow control renders and what
the simulator serves behind.

llm-d router v0.10.0 flow control (../shared/reference/GATEWAY.md; components/specs/inference_pool.py renders
it): a pool is saturated when its pods' mean of max(vLLM waiting / Q, KV use / K) reaches 1; past that the
picker holds requests, at most `held_requests` of them (split over the active-active pickers) and `ttl` each,
and answers 429 beyond (503 when the pool has no endpoint). vLLM's own queue per pod stays near Q.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from config.schema import Autoscaling

EPP_REPLICAS = 2  # pickers per model, active-active: each holds its share of the queue
QUEUE_TTL_SECONDS = 30  # a request held longer has missed any TTFT objective; a 429 lets the client back off
MIN_SATURATION_QUEUE_DEPTH = 5  # the utilization detector's default
SATURATION_KV_CACHE = 0.95  # vLLM preempts running sequences at a full KV cache


@dataclass(frozen=True)
class FlowControlPlan:
    saturation_queue_depth: int  # Q: vLLM waiting requests per pod at which the pool counts as saturated
    saturation_kv_cache: float  # K
    held_per_picker: int  # requests one picker holds once the pool is saturated
    ttl_seconds: int

    @property
    def held_requests(self) -> int:
        """Requests the model's pickers hold together: past it, 429."""
        return self.held_per_picker * EPP_REPLICAS


def saturation_queue_depth(autoscaling: Autoscaling) -> int:
    """Twice the autoscaler's queue target, so the queue KEDA scales on can still grow past its target (at 1x
    the HPA's ratio would stay 1)."""
    return max(MIN_SATURATION_QUEUE_DEPTH, math.ceil(2 * autoscaling.queue_depth_per_replica))


def flow_control(autoscaling: Autoscaling, max_pending_per_replica: int) -> FlowControlPlan:
    """`gateway.maxPendingPerReplica` held per vLLM replica at maxReplicas, shared by the pickers (rounded up)."""
    held = max_pending_per_replica * autoscaling.max_replicas
    return FlowControlPlan(
        saturation_queue_depth=saturation_queue_depth(autoscaling),
        saturation_kv_cache=SATURATION_KV_CACHE,
        held_per_picker=max(1, math.ceil(held / EPP_REPLICAS)),
        ttl_seconds=QUEUE_TTL_SECONDS,
    )
