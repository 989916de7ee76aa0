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

The hold is capped at HOLD_CAP_S, the longest the gateway can keep a request in the picker: Envoy AI Gateway
v1.1.0 configures the picker's ext_proc filter with a hard-coded `MessageTimeout: 300 s`
(internal/extensionserver/inferencepool.go, `MessageTimeout: durationpb.New(300 * time.Second)`), and the
picker holds its reply to the request-body message for the whole hold, so a hold of 300 s or more ends in an
ext_proc error in Envoy instead of the picker's 503 (which carries Retry-After). The cap keeps one rounding step
(HOLD_STEP_S) of margin below it: 270 s. A model whose from-zero wake is longer (dev's qwen-1-5b: 347 s start,
no persisted compile cache) is 503'd at the cap and served on a client retry (RETRY_ATTEMPTS, the OpenAI SDK's
default); preflight warns about it (tools/preflight/zero.py).
"""

from __future__ import annotations

import math

from llm_platform.plan.cold_start import ColdStartBudget
from llm_platform.plan.scaling import ScalingPlan

HOLD_STEP_S = 30.0  # the hold is rounded up to the next 30 s
RETRY_AFTER_S = 30  # the `Retry-After` of a 503 on a model at zero's routes (whole seconds, RFC 9110 10.2.3)
# AI Gateway v1.1.0 internal/extensionserver/inferencepool.go: the picker's ext_proc MessageTimeout (hard-coded)
EXT_PROC_MESSAGE_TIMEOUT_S = 300.0
HOLD_CAP_S = EXT_PROC_MESSAGE_TIMEOUT_S - HOLD_STEP_S  # the longest hold the gateway keeps: 270 s
# Envoy's HTTP connection manager `stream_idle_timeout` default (5 min), which Envoy Gateway v1.8.3 leaves unset
# unless a ClientTrafficPolicy sets `timeout.http.streamIdleTimeout` (internal/xds/translator/listener.go; the
# pinned CRD: "Default: 5 minutes"). Nothing flows on a held stream, so the hold must end before it: the cap
# (270 s) does, so the platform leaves it unset (components/specs/gateway.py `client_traffic_policy`).
ENVOY_STREAM_IDLE_TIMEOUT_S = 300.0
# attempts of a client that retries a 503 and honours Retry-After: the OpenAI Python SDK's default, 1 + its
# DEFAULT_MAX_RETRIES = 2 (openai-python src/openai/_constants.py); `_should_retry` in src/openai/_base_client.py
# retries 408, 409, 429 and >= 500, and `_calculate_retry_timeout` sleeps a Retry-After of at most 60 s as sent
RETRY_ATTEMPTS = 3


def from_zero_start_s(budget: ColdStartBudget) -> float:
    """Pod-needs-a-GPU to Ready from zero: at zero the pool's GPU node is consolidated away, so a new node."""
    if budget.new_node is not None:
        return budget.new_node.total
    return budget.warm_node_seconds  # the unknown-geometry fallback the plan already uses


def from_zero_wake_s(budget: ColdStartBudget, scaling: ScalingPlan) -> float:
    """Arrival to Ready at zero, at most: the arrival reaching KEDA (one scrape, at most one pollingInterval)
    plus the new-node start."""
    return scaling.scrape_interval_s + scaling.polling_interval_s + from_zero_start_s(budget)


def from_zero_hold_s(budget: ColdStartBudget, scaling: ScalingPlan) -> float:
    """How long the gateway holds a request that wakes a model at zero: its from-zero wake rounded up to the
    next 30 s, at most HOLD_CAP_S (a longer wake is served on a retry: `exceeds_hold_cap`)."""
    rounded = math.ceil(from_zero_wake_s(budget, scaling) / HOLD_STEP_S) * HOLD_STEP_S
    return float(min(rounded, HOLD_CAP_S))


def exceeds_hold_cap(budget: ColdStartBudget, scaling: ScalingPlan) -> bool:
    """The wake outlasts the longest hold: the waking request gets a 503 + Retry-After and is served on a retry."""
    return from_zero_wake_s(budget, scaling) > HOLD_CAP_S
