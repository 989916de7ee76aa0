"""A model at zero replicas: how long the gateway holds the request that wakes it. The ONE definition; the
rendered picker (components/specs/inference_pool.py) and the simulator (simulator/serving/zero.py) read it.

At zero the model's InferencePool has no endpoint. llm-d router v0.10.0's utilization saturation detector
reports an empty pool as saturated (1.0: pkg/epp/framework/plugins/flowcontrol/saturationdetector/utilization/
detector.go), so flow control holds the request in its queue; when the picker's TTL runs out with the pool still
empty, it answers 503 with `x-llm-d-request-dropped-reason: rejected-no-endpoints` (pkg/epp/requestcontrol/
admission.go `Admit` / `translateFlowControlOutcome`; pkg/common/error/error.go `BuildErrResponse`), without
`Retry-After`: the gateway adds it (components/specs/zero.py `zero_hold_policy`, an Envoy Gateway
responseOverride on the model's routes).

Retry-After is RETRY_AFTER_S, not the hold: a retried request is held again by the picker for up to the whole
hold and dispatched the moment a replica is Ready, so the hold, not the client's back-off, covers the rest of
the start. Retry-After only adds to the wait of a client that honours it when the replica comes up during
its back-off: a back-off of the hold (240 s on the zero fixture) could add 240 s past Ready, 30 s adds at most
30 s. It cannot turn into a hot loop either: each retry is held (up to the hold) before its next 503.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from llm_platform.plan.model import ColdStartBudget, ScalingPlan

HOLD_STEP_S = 30.0  # the hold is rounded up to the next 30 s
RETRY_AFTER_S = 30  # the `Retry-After` of a 503 on a model at zero's routes (whole seconds, RFC 9110 10.2.3)


def from_zero_start_s(budget: ColdStartBudget) -> float:
    """Pod-needs-a-GPU to Ready from zero: at zero the pool's GPU node is consolidated away, so a new node."""
    if budget.new_node is not None:
        return budget.new_node.total
    return budget.warm_node_seconds  # the unknown-geometry fallback the plan already uses


def from_zero_hold_s(budget: ColdStartBudget, scaling: ScalingPlan) -> float:
    """How long the gateway holds a request that wakes a model at zero: its from-zero budget, i.e. the
    arrival reaching KEDA (one scrape, at most one pollingInterval) plus the new-node start, rounded up to
    the next 30 s."""
    wake = scaling.scrape_interval_s + scaling.polling_interval_s + from_zero_start_s(budget)
    return float(math.ceil(wake / HOLD_STEP_S) * HOLD_STEP_S)
