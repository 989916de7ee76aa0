"""The PromQL the platform runs against vLLM's own metrics: one place for names and label filters.

Metric names follow current vLLM (see shared/reference/README.md): `vllm:num_requests_waiting`,
`vllm:kv_cache_usage_perc` (0..1), `vllm:time_to_first_token_seconds`, `vllm:inter_token_latency_seconds`.
Every query is filtered to one model's namespace and `model_name` (= `--served-model-name`), and every
KEDA query is wrapped in `sum()` because KEDA's Prometheus scaler fails on more than one series.
"""

from __future__ import annotations

QUEUE = "vllm:num_requests_waiting"
RUNNING = "vllm:num_requests_running"
KV_CACHE = "vllm:kv_cache_usage_perc"
TTFT = "vllm:time_to_first_token_seconds"
ITL = "vllm:inter_token_latency_seconds"
E2E = "vllm:e2e_request_latency_seconds"
PROMPT_TOKENS = "vllm:prompt_tokens_total"
GENERATION_TOKENS = "vllm:generation_tokens_total"
PREEMPTIONS = "vllm:num_preemptions_total"
SUCCESS = "vllm:request_success_total"
# the gateway's endpoint picker (llm-d router v0.10.0, pkg/epp/metrics/llm_d_router_metrics.go; scraped by
# the chart's ServiceMonitor): requests it dispatched to a pod, and requests it answered with an error
# (`error_code`); `model_name` is the request's `model` field, the served model name. Both counters appear
# with the first request they count.
EPP_REQUESTS = "llm_d_epp_request_total"
EPP_REQUEST_ERRORS = "llm_d_epp_request_error_total"
FLOW_CONTROL_QUEUE = (
    "llm_d_epp_flow_control_queue_size"  # requests the picker holds (llm-d router docs/metrics.md)
)
# errors that are demand the pool did not serve (pkg/epp/requestcontrol/admission.go): flow control's 429 (queue
# full, held past its TTL) and 503 (no endpoint, client gone); a pod's own failure (ModelServerError) was
# already counted as dispatched
SHED_ERROR_CODES = ("ResourceExhausted", "ServiceUnavailable")
# the window the load triggers rate their counters over: four scrapes at the 5 s interval of the vLLM PodMonitor
# and the picker's ServiceMonitor (Prometheus needs two samples in a range; four keep one missed scrape
# harmless). A burst shows in full after one window: 20 s instead of a minute's 60 s, a third of a minute's
# lag off every scale-up; at prod's loads a 20 s window still averages hundreds of requests
THROUGHPUT_WINDOW_SECONDS = 20
THROUGHPUT_WINDOW = f"{THROUGHPUT_WINDOW_SECONDS}s"


# the window the gauge triggers (queue, KV fill) average over: four syncs of the HPA (kube-controller-manager's
# `--horizontal-pod-autoscaler-sync-period`, 15 s). The queue and the KV fill are instants: the HPA acts on
# whatever one scrape read at its sync, scale-up has no stabilization window, so a burst of a few seconds (a
# queue of 30 at one scrape) asks for the cap at once and the down-stabilization window brings the pool back
# minutes later, a flap below the cap. Averaged over four syncs, one scrape's burst counts a twelfth of itself
# (at the PodMonitor's 5 s), while a load that stays shows in full after one window: a minute, a fraction of a
# replica's cold start, the delay that matters for scaling up
HPA_SYNC_PERIOD_SECONDS = 15
GAUGE_WINDOW_SECONDS = 4 * HPA_SYNC_PERIOD_SECONDS


# vLLM's fixed histogram buckets at the pinned image (vllm/v1/metrics/buckets.py: TIME_TO_FIRST_TOKEN_BUCKETS,
# INTER_TOKEN_LATENCY_BUCKETS; the same lists since the V1 engine's loggers.py). An SLO alert can only tell
# requests apart at these boundaries: inside a bucket, histogram_quantile interpolates linearly and is wrong
# both ways. `--custom-histogram-buckets` (vLLM PR #48867) is newer than the pinned v0.30.0.
TTFT_BUCKETS: tuple[float, ...] = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0,
    80.0, 160.0, 640.0, 2560.0,
)  # fmt: skip
ITL_BUCKETS: tuple[float, ...] = (
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
)  # fmt: skip
BUCKETS = {TTFT: TTFT_BUCKETS, ITL: ITL_BUCKETS}


def bucket_at_or_above(histogram: str, seconds: float) -> float:
    """The smallest bucket boundary of `histogram` at or above `seconds` (the SLO itself when it is one)."""
    for bound in BUCKETS[histogram]:
        if bound >= seconds - 1e-12:
            return bound
    raise ValueError(f"{seconds} s is above the largest {histogram} bucket {BUCKETS[histogram][-1]} s")


def le_matcher(bound: float) -> str:
    """`le` as Prometheus stores it, whichever way it was written: vLLM's client writes 1.0 as "1.0",
    Prometheus 3 normalises classic-histogram `le` values to "1"."""
    forms = sorted({f"{bound:g}", repr(float(bound))})
    return "|".join(f.replace(".", "\\\\.") for f in forms)


def selector(namespace: str, model_name: str) -> str:
    return f'{{namespace="{namespace}",model_name="{model_name}"}}'


def queue_depth(namespace: str, model_name: str) -> str:
    """Requests waiting across all replicas: the HPA divides by replicas (AverageValue)."""
    return f"sum({QUEUE}{selector(namespace, model_name)})"


def kv_cache_usage(namespace: str, model_name: str) -> str:
    """Sum of each replica's KV-cache fill (0..1): divided by replicas, the average fill.

    An idle replica reads exactly 0 with prefix caching on, so the KV trigger (KEDA's default activation, 0)
    goes inactive and a model at minReplicas 0 can reach zero (issue #49). vLLM v0.30.0 (facts/versions.py
    VLLM_IMAGE), vllm/v1/core/block_pool.py: `free_blocks` puts every block whose ref_cnt falls to 0, cached
    (hashed) ones included, back in `free_block_queue`, where prefix hits find them; `get_usage` is
    `1 - get_num_free_blocks() / (num_gpu_blocks - 1)` (the null block left out of both), so with no request
    running every block but the null one is free and the usage is 0.0. vllm/v1/core/sched/scheduler.py:
    `update_from_output` frees finished requests before `make_stats` (`kv_cache_usage=self.kv_cache_manager
    .usage`) and returns the stats even with no request output, so the step that finishes (or flushes the abort
    of) the last request reports the 0; vllm/v1/metrics/loggers.py sets the `vllm:kv_cache_usage_perc` gauge
    from it. Read in the source index's snapshots on both sides of the tag (vllm-project/vllm@c59cb79, before
    the 0.23 `free_blocks` reorder, and one after #51482 of 2026-08): the same in both; the tag itself is over
    the fetch limit."""
    return f"sum({KV_CACHE}{selector(namespace, model_name)})"


def smoothed(query: str, window_s: int, step_s: int) -> str:
    """`query` (one label-less series) averaged over the last `window_s`, evaluated every `step_s` (the scrape
    interval: one point per scrape): a subquery of the sum, so a replica added or removed inside the window
    counts for the steps it served, not as a whole. Steps with no series (no replica Ready) are left out of the
    average; with none in the window the result is empty, as `query`'s would be. One series (`sum`, for KEDA)."""
    return f"sum(avg_over_time(({query})[{window_s}s:{step_s}s]))"


def served_throughput(namespace: str, model_name: str) -> str:
    """Requests the replicas completed per second over THROUGHPUT_WINDOW: the HPA divides by replicas."""
    return f"sum(rate({SUCCESS}{selector(namespace, model_name)}[{THROUGHPUT_WINDOW}]))"


# the saturation hold (plan/model.py, docs/simulator/commands.md "Flaps"): how long the pool remembers the requests one
# replica served per second the last time it asked to grow (saturated, or its KV fill past the HPA's tolerance
# over the target), and the resolution of that memory (the subquery's step). Three hours: at its replica cap the
# pool tries fewer replicas at most once in three hours while the load stays where one fewer would ask to grow
# (only asking to grow refreshes the memory); a token mix that changes during the day is relearned the next
# time. A 30 s step: a saturation that lasts a cold start on a warm node is seen, at 360 inner evaluations
SATURATION_MEMORY_SECONDS = 3 * 3600
SATURATION_STEP_SECONDS = 30
# the HPA's default tolerance (kubernetes/kubernetes pkg/controller/podautoscaler/config/v1alpha1/defaults.go
# `Tolerance = 0.1`; replica_calculator.go GetExternalPerPodMetricReplicas): past target x (1 + it) an
# AverageValue trigger scales up. Subqueries and last_over_time run on the pinned Prometheus (v3.14.0,
# kube-prometheus-stack 88.5.3 values `prometheus.prometheusSpec.image.tag`; last_over_time since v2.26)
HPA_TOLERANCE = 0.1
# not a series: the key of the saturation hold's value (the simulator reads it under this name)
SATURATION_HOLD = "saturation-hold"
# not a series: the key of the wake signal's value (`wake_signal`: the pickers' held plus counted requests)
WAKE_SIGNAL = "wake-signal"


def growth_throughput_per_replica(
    namespace: str,
    model_name: str,
    deployment: str,
    queue_per_replica: float,
    kv_per_replica: float,
    multi_node: bool = False,
    rolled: bool = False,
) -> str:
    """Requests one available replica completes per second while the pool asks to grow: at least
    `queue_per_replica` requests wait per available replica (saturated; behind the gateway vLLM's queue stops at
    its saturation depth, twice that, and the picker holds the rest), or the KV fill per available replica is
    past `kv_per_replica` x (1 + HPA_TOLERANCE) (the KV trigger scales up); no sample otherwise. Label-less (sums
    on both sides), positive."""
    series = replicas_available(namespace, deployment, multi_node, rolled)
    available = f"sum({series})"
    # the replicas over the same window the completions are rated over: right after a scale step the window's
    # completions are still the previous count's
    serving = f"sum(avg_over_time({series}[{THROUGHPUT_WINDOW}]))"
    waiting = queue_depth(namespace, model_name)
    kv = kv_cache_usage(namespace, model_name)
    kv_edge = kv_per_replica * (1 + HPA_TOLERANCE)
    served = served_throughput(namespace, model_name)
    return (
        f"(({served} / {serving}) > 0) and on() "
        f"(({waiting} >= {queue_per_replica:g} * {available}) or ({kv} > {kv_edge:g} * {available}))"
    )


def saturation_hold(
    namespace: str,
    model_name: str,
    deployment: str,
    queue_per_replica: float,
    kv_per_replica: float,
    multi_node: bool = False,
    rolled: bool = False,
) -> str:
    """The load in replicas' worth: requests completed per second now over what one replica completed per second
    the last time the pool asked to grow within SATURATION_MEMORY_SECONDS (`last_over_time` of a subquery at
    SATURATION_STEP_SECONDS); 0 when it did not in that time. Proportional to the load, where the queue (zero
    below saturation: unloaded pods wait for nothing) and the KV fill (small until the batch fills, then steep,
    so one replica fewer fills far more than the HPA's linear estimate) are not: against a per-replica target
    below 1 it keeps the replicas whose removal would make the pool ask to grow again. One series (`sum`, for
    KEDA); a missing vLLM series reads 0 here (the queue and KV triggers stay loud)."""
    per = growth_throughput_per_replica(
        namespace, model_name, deployment, queue_per_replica, kv_per_replica, multi_node, rolled
    )
    memory = f"[{SATURATION_MEMORY_SECONDS}s:{SATURATION_STEP_SECONDS}s]"
    served = served_throughput(namespace, model_name)
    return f"sum(({served} / on() last_over_time(({per}){memory})) or on() vector(0))"


def gateway_arrivals(namespace: str, model_name: str) -> str:
    """Requests per second that reached the model through the gateway over THROUGHPUT_WINDOW, served or shed:
    the load itself, which completions understate while the pool is saturated (the gateway holds or sheds the
    excess) and overstate while a backlog drains. Until the picker has counted a request its series do not
    exist, and vLLM's completions stand in (its counter exists from the start), so the trigger never errors.
    Each part is one label-less series; the outer sum() keeps it one for KEDA's scaler."""
    labels = f'namespace="{namespace}",model_name="{model_name}"'
    return f"sum(({picker_arrivals(labels)}) or {served_throughput(namespace, model_name)})"


def wake_signal(namespace: str, model_name: str) -> str:
    """What wakes a model at zero replicas: series that exist while no vLLM pod does, the endpoint pickers'.
    The requests the pickers' flow control holds for the pool (llm_d_epp_flow_control_queue_size, labelled
    by `inference_pool`; a model's namespace holds its one pool) plus those they counted per second over THROUGHPUT_WINDOW, served or shed. Not
    wrapped in until_a_replica_serves: at zero it must read the waiting requests, not 0. A picker that has
    counted nothing yet has no series: `or vector(0)` (idle, stay at zero)."""
    labels = f'namespace="{namespace}",model_name="{model_name}"'
    held = f'sum({FLOW_CONTROL_QUEUE}{{namespace="{namespace}"}})'
    return f"sum(({held}) or vector(0)) + sum(({picker_arrivals(labels)}) or vector(0))"


def picker_arrivals(labels: str) -> str:
    """Requests per second the endpoint pickers dispatched or shed, over the series matching `labels` (a
    label-matcher list without braces); `or vector(0)` while nothing has been shed yet."""
    shed = f'{labels},error_code=~"{"|".join(SHED_ERROR_CODES)}"'
    return (
        f"sum(rate({EPP_REQUESTS}{{{labels}}}[{THROUGHPUT_WINDOW}])) + "
        f"(sum(rate({EPP_REQUEST_ERRORS}{{{shed}}}[{THROUGHPUT_WINDOW}])) or vector(0))"
    )


def latency_quantile(
    histogram: str, quantile: float, namespace: str, model_name: str, window: str = "5m"
) -> str:
    return (
        f"histogram_quantile({quantile}, sum by (le) "
        f"(rate({histogram}_bucket{selector(namespace, model_name)}[{window}])))"
    )


def replicas_available(
    namespace: str, deployment: str, multi_node: bool = False, rolled: bool = False
) -> str:
    """The series whose sum is the model's available replicas: its Deployment's, or for a multi-node model (a
    LeaderWorkerSet, which kube-state-metrics does not report) its Ready leader pods, `<name>-<group index>`
    (workers are `<name>-<group>-<index>`), or for a progressive rollout (an Argo Rollout, which it does not
    report either) the Ready pods of both versions' ReplicaSets, `<name>-<template hash>-<suffix>`."""
    if rolled:
        return (
            f'kube_pod_status_ready{{namespace="{namespace}",condition="true",'
            f'pod=~"{deployment}-[a-z0-9]+-[a-z0-9]+"}}'
        )
    if multi_node:
        return f'kube_pod_status_ready{{namespace="{namespace}",condition="true",pod=~"{deployment}-[0-9]+"}}'
    return f'kube_deployment_status_replicas_available{{namespace="{namespace}",deployment="{deployment}"}}'


def until_a_replica_serves(
    query: str, namespace: str, deployment: str, multi_node: bool = False, rolled: bool = False
) -> str:
    """`query`, or 0 while no replica of the Deployment is available (first rollout: every pod still loads,
    no vLLM series exists yet). Once a replica is available a missing series stays empty, so a renamed
    metric still errors loudly in KEDA instead of reading 0."""
    available = replicas_available(namespace, deployment, multi_node, rolled)
    return f"{query} or on() (vector(0) unless on() (sum({available}) > 0))"


def share_slower_than(histogram: str, bound: float, namespace: str, model_name: str, window: str) -> str:
    """Share of requests over `window` whose latency exceeded `bound`, a bucket boundary: exact, where a
    histogram_quantile inside a bucket is an interpolation."""
    sel = selector(namespace, model_name)
    le = f'{sel[:-1]},le=~"{le_matcher(bound)}"}}'
    return f"(1 - sum(rate({histogram}_bucket{le}[{window}])) / sum(rate({histogram}_count{sel}[{window}])))"


# the cost allocation's recorded series (components/specs/costs.py records them; one definition: its rules,
# alert and dashboard and `simulator replay --prometheus` read these)
INSTANCE_PRICE = "llm_platform:instance_price_dollars_per_hour"
NODE_PRICE = "llm_platform:node_price_dollars_per_hour"
NODE_GPU_PRICE = "llm_platform:node_gpu_price_dollars_per_hour"
MODEL_COST_HOURLY = "llm_platform:model_cost_dollars_per_hour"
MODEL_COST_DAILY = "llm_platform:model_cost_dollars_per_day"
MODEL_TOKENS = "llm_platform:model_tokens_per_second"
MODEL_PER_MTOK = "llm_platform:model_dollars_per_million_tokens"
UNALLOCATED_HOURLY = "llm_platform:gpu_unallocated_cost_dollars_per_hour"
CLIENT_TOKENS = "llm_platform:client_tokens_per_second"
CLIENT_COST_HOURLY = "llm_platform:client_cost_dollars_per_hour"
CLIENT_COST_DAILY = "llm_platform:client_cost_dollars_per_day"
CLIENT_PER_MTOK = "llm_platform:client_dollars_per_million_tokens"
FORECAST_DAILY = "llm_platform:model_forecast_cost_dollars_per_day"
