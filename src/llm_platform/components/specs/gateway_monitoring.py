"""Alerts and a dashboard for the models' endpoint pickers (EPP, llm-d router v0.10.0, docs/metrics.md).

The EPP's own series carry the scrape target's `namespace` (the model's namespace; the chart's ServiceMonitor
keeps no honorLabels); pool gauges add `name` (the InferencePool), flow-control series `inference_pool`.
Availability comes from kube-state-metrics (`namespace` = the Deployment's namespace).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llm_platform.components.specs import dashboards, zero
from llm_platform.components.specs.alerts import DEPLOYMENT_AVAILABLE, VALUE, _rule
from llm_platform.components.specs.common import rule_manifest
from llm_platform.components.specs.inference_pool import epp_name, release_name
from llm_platform.plan import ModelPlan, promql
from llm_platform.plan.gateway import EPP_REPLICAS

READY_ENDPOINTS = "llm_d_epp_ready_endpoints"
SCHEDULER_ATTEMPTS = "llm_d_epp_scheduler_attempts_total"
FLOW_CONTROL_REQUESTS = "llm_d_epp_flow_control_requests_total"
FLOW_CONTROL_QUEUE = "llm_d_epp_flow_control_queue_size"
POOL_SATURATION = "llm_d_epp_flow_control_pool_saturation"
STALE_ENDPOINTS = "llm_d_epp_flow_control_stale_endpoints"
EPP_TTFT = "llm_d_epp_request_ttft_seconds"
PREFIX_HIT_RATIO = "llm_d_epp_prefix_indexer_hit_ratio"
# flow-control outcomes that reach the client as 429 or 503
SHED_OUTCOMES = "RejectedCapacity|RejectedNoEndpoints|RejectedOther|EvictedTTL|EvictedOther"

EPP_DOWN_FOR = "1m"
EPP_DEGRADED_FOR = "10m"
NO_ENDPOINTS_FOR = "2m"
SCHEDULING_ERRORS_RATIO = 0.05
SHEDDING_FOR = "5m"
STALE_FOR = "2m"
WINDOW = "5m"


def epp_alert_rules(model: ModelPlan) -> list[dict[str, Any]]:
    ns = model.names.namespace
    pool = release_name(model)
    epp = epp_name(model)
    labels = {"namespace": ns, "inference_pool": pool}
    kubectl = f"kubectl -n {ns}"
    available = f'sum({DEPLOYMENT_AVAILABLE}{{namespace="{ns}",deployment="{epp}"}})'
    attempts = f'{SCHEDULER_ATTEMPTS}{{namespace="{ns}"}}'
    return [
        _rule(
            "InferenceGatewayPickerDown",
            f"({available} or vector(0)) < 1",
            EPP_DOWN_FOR,
            "critical",
            labels,
            f"No endpoint picker of {pool} is available: every request to it fails",
            f"Deployment {epp} has no available replica. AI Gateway v1.1.0 runs the picker's ext_proc "
            "fail-closed whatever the pool's failureMode says (envoyproxy/ai-gateway#2502), so the gateway "
            f"answers 5xx for {pool} until a picker is back.",
            f"{kubectl} get pods -l llm-d-router-gateway={epp}; {kubectl} describe deploy {epp} (add-on node "
            "capacity: the addons NodePool's limits, image pull); the chart's Recreate strategy takes both pickers down during an upgrade.",
        ),
        _rule(
            "InferenceGatewayPickerDegraded",
            f"{available} < {EPP_REPLICAS}",
            EPP_DEGRADED_FOR,
            "warning",
            labels,
            f"Endpoint picker of {pool} runs on {VALUE} of {EPP_REPLICAS} replicas",
            f"One more lost picker replica stops all traffic to {pool} (fail-closed).",
            f"{kubectl} get pods -l llm-d-router-gateway={epp} -o wide: both must be Ready, on different "
            "add-on nodes.",
        ),
        _rule(
            "InferencePoolNoReadyEndpoints",
            f'max({READY_ENDPOINTS}{{namespace="{ns}",name="{pool}"}}) < 1',
            NO_ENDPOINTS_FOR,
            "critical",
            labels,
            f"InferencePool {pool} has no ready vLLM endpoint",
            "The picker sees no ready pod: requests wait in its queue and are shed with 503.",
            f"{kubectl} get pods -l app.kubernetes.io/instance={model.name}; check the vLLM Deployment, "
            "its GPU node (Karpenter) and the pool's selector.",
        ),
        _rule(
            "InferenceGatewaySchedulingErrors",
            f'sum(rate({SCHEDULER_ATTEMPTS}{{namespace="{ns}",status="failure"}}[{WINDOW}]))'
            f" / sum(rate({attempts}[{WINDOW}])) > {SCHEDULING_ERRORS_RATIO:g}",
            WINDOW,
            "warning",
            labels,
            f"The picker of {pool} fails to schedule more than {SCHEDULING_ERRORS_RATIO:.0%} of requests",
            f"{VALUE} of scheduling attempts failed over {WINDOW}.",
            f"{kubectl} logs deploy/{epp} -c epp; compare with the pool's ready endpoints and vLLM metrics.",
        ),
        _rule(
            "InferenceGatewayShedding",
            f'sum(rate({FLOW_CONTROL_REQUESTS}{{namespace="{ns}",inference_pool="{pool}",'
            f'outcome=~"{SHED_OUTCOMES}"}}[{WINDOW}])) > 0',
            SHEDDING_FOR,
            "warning",
            labels,
            f"The gateway sheds requests for {pool} (429/503)",
            f"{VALUE} requests/s leave the picker's queue unserved: the pool has been saturated longer "
            "than the queue timeout, or its queue bound is reached.",
            "Check autoscaling (queue depth, replicas at maximum) and gateway.maxPendingPerReplica.",
        ),
        _rule(
            "InferenceGatewayStaleMetrics",
            f'max({STALE_ENDPOINTS}{{namespace="{ns}"}}) > 0',
            STALE_FOR,
            "warning",
            labels,
            f"The picker of {pool} cannot read some vLLM pods' metrics",
            f"{VALUE} endpoints have stale metrics and count as saturated: dispatch to them halts.",
            f"Check the NetworkPolicy {model.name}-from-epp and the pods' /metrics on port 8000.",
        ),
        *(_held_timeout_rule(model, labels) if model.scaling.min_replicas == 0 else []),
        *(_wake_signal_missing_rule(model, labels) if model.scaling.min_replicas == 0 else []),
    ]


# what a request held for a model at zero ends in when no replica came up in time: evicted at its TTL (the hold:
# 503 with the pool still empty, 429 if it came up but is saturated), refused for want of an endpoint with the
# queue full (503), or evicted because its stream ended while held (the client gave up, or Envoy ended it: the
# picker's request context is cancelled, internal/item.go `inferOutcome` maps context.Canceled to
# EvictedContextCancelled, a TTL deadline to EvictedTTL) (flow-control outcomes: llm-d router v0.10.0
# pkg/epp/flowcontrol/types/outcomes.go `String`, counted by pkg/epp/flowcontrol/controller/controller.go
# `EnqueueAndWait` in llm_d_epp_flow_control_requests_total{outcome})
HELD_TIMEOUT_OUTCOMES = "EvictedTTL|RejectedNoEndpoints|EvictedContextCancelled"


def held_timeouts(namespace: str, pool: str, window: str = WINDOW) -> str:
    """Held requests of the pool that timed out over `window`. The counter's outcome series is created by its
    first increment (a CounterVec: pkg/epp/metrics/metrics.go IncFlowControlRequestsTotal), so the first
    timeout after a picker (re)start is a series born at 1, which increase() reads as 0: such a series counts
    with its value."""
    series = (
        f'{FLOW_CONTROL_REQUESTS}{{namespace="{namespace}",inference_pool="{pool}",'
        f'outcome=~"{HELD_TIMEOUT_OUTCOMES}"}}'
    )
    grown = f"sum(increase({series}[{window}])) > 0"
    born = f"sum({series} unless {series} offset {window}) > 0"
    return f"({grown}) or ({born})"


def _held_timeout_rule(model: ModelPlan, labels: dict[str, str]) -> list[dict[str, Any]]:
    """A model that scales to zero: any request that waited for it and was not served fires at once."""
    ns, pool = model.names.namespace, release_name(model)
    return [
        _rule(
            "InferenceGatewayHeldRequestTimedOut",
            held_timeouts(ns, pool),
            "0m",
            "warning",
            labels,
            f"A request held for {pool} (scaled to zero) timed out",
            f"{VALUE} requests over {WINDOW} waited for a replica of {pool} and were not served: answered 503 "
            "(with Retry-After) or 429 when the start from zero took longer than the hold, or their stream "
            "ended while held (EvictedContextCancelled: the client's own timeout or Envoy's).",
            f"kubectl -n {ns} get pods,events; check the GPU node launch (Karpenter), the image pull and "
            "the weight load against the model's cold-start budget.",
        )
    ]


WAKE_SIGNAL_MISSING_FOR = "5m"  # a picker restart (the chart's Recreate) is back well within it


def wake_signal_missing(namespace: str, deployment: str, pool: str) -> str:
    """The model is at zero (its Deployment's desired replicas, kube-state-metrics) and Prometheus has no picker
    series of its pool. A running picker sets `llm_d_epp_ready_endpoints{name=<pool>}` on every metrics refresh
    once its pool is known, 0 with no pod (llm-d router v0.10.0 pkg/epp/datalayer/logger/logger.go
    `refreshPrometheusMetrics`: RecordInferencePoolReadyPods before its `podCount == 0` return), so the series
    is absent only when no picker is scraped: the wake trigger then reads `or vector(0)` (plan/promql.py
    `wake_signal`) and nothing wakes the model."""
    at_zero = f'sum({DEPLOYMENT_SPEC_REPLICAS}{{namespace="{namespace}",deployment="{deployment}"}}) == 0'
    picker = f'max({READY_ENDPOINTS}{{namespace="{namespace}",name="{pool}"}})'
    return f"({at_zero}) unless on() ({picker})"


def _wake_signal_missing_rule(model: ModelPlan, labels: dict[str, str]) -> list[dict[str, Any]]:
    """A model at zero whose pickers' series are absent: its wake trigger reads 0 whatever arrives."""
    ns, pool, epp = model.names.namespace, release_name(model), epp_name(model)
    return [
        _rule(
            "InferenceGatewayWakeSignalMissing",
            wake_signal_missing(ns, model.names.deployment, pool),
            WAKE_SIGNAL_MISSING_FOR,
            "critical",
            labels,
            f"{pool} is at zero replicas and Prometheus has no series of its endpoint pickers: nothing can wake it",
            f"KEDA wakes {pool} from the pickers' held and arriving requests (its wake trigger reads them "
            "`or vector(0)`); with no picker series scraped it reads 0, so requests are held, then answered 503, "
            "and the model stays at zero.",
            f"kubectl -n {ns} get pods -l llm-d-router-gateway={epp}; kubectl -n {ns} get servicemonitor; check the pickers run "
            "(InferenceGatewayPickerDown), Prometheus's target for them (Status > Targets: the ServiceMonitor, "
            "its metrics token, the NetworkPolicy to port 9090).",
        )
    ]


def epp_prometheus_rule(model: ModelPlan, monitor_labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """`monitor_labels`: what the cluster's Prometheus selects rules by (none: the platform's, which selects
    every rule)."""
    labels = {
        "app.kubernetes.io/name": "llm-d-router",
        "app.kubernetes.io/component": "alerting",
        **(monitor_labels or {}),
    }
    groups = [{"name": f"endpoint-picker.{model.name}", "rules": epp_alert_rules(model)}]
    return rule_manifest(f"{model.name}-endpoint-picker", model.names.namespace, groups, labels)


def epp_dashboard() -> dict[str, Any]:
    """One board for every pool: pick the model's namespace and its pool.

    why long: a list of panels, each a few lines of data over the same selectors, in the order Grafana
    shows them."""
    sel = '{namespace="$namespace"}'
    pool_sel = '{namespace="$namespace",name="$pool"}'
    flow_sel = '{namespace="$namespace",inference_pool="$pool"}'
    rate = "[$__rate_interval]"

    def quantile(q: float, histogram: str) -> str:
        return f"histogram_quantile({q}, sum by (le) (rate({histogram}_bucket{sel}{rate})))"

    panels = [
        dashboards._panel(
            "Ready vLLM endpoints",
            [(f"max({READY_ENDPOINTS}{pool_sel})", "ready")],
            unit="short",
            description="vLLM pods the picker can route to; 0 means every request is shed (503).",
        ),
        dashboards._panel(
            "Picker replicas available",
            [(f'sum({DEPLOYMENT_AVAILABLE}{{namespace="$namespace",deployment="$pool-epp"}})', "available")],
            unit="short",
            description="0 stops all traffic to the model: AI Gateway runs the picker fail-closed.",
        ),
        dashboards._panel(
            "Gateway queue (flow control)",
            [(f"sum({FLOW_CONTROL_QUEUE}{flow_sel})", "queued")],
            unit="short",
            description="Requests held by the pickers while the pool is saturated.",
        ),
        dashboards._panel(
            "Pool saturation",
            [(f"max({POOL_SATURATION}{flow_sel})", "saturation")],
            unit="short",
            description="At 1 the pickers hold new requests; exactly 1 with stale endpoints means blind.",
        ),
        dashboards._panel(
            "Flow-control outcomes",
            [(f"sum by (outcome) (rate({FLOW_CONTROL_REQUESTS}{flow_sel}{rate}))", "{{outcome}}")],
            unit="reqps",
            description="Dispatched, or shed with 429 (capacity, queue timeout) / 503 (no endpoint).",
        ),
        dashboards._panel(
            "Requests arriving per second (served or shed)",
            [
                (
                    promql.picker_arrivals('namespace="$namespace"'),
                    "arriving (arrival-rate trigger, all replicas)",
                )
            ],
            unit="reqps",
            description=(
                "Dispatched plus answered 429/503: the load requestsPerSecondPerReplica sizes the pool by "
                "behind the gateway (KEDA divides it by the replicas)."
            ),
        ),
        dashboards._panel(
            "Scheduling attempts",
            [(f"sum by (status) (rate({SCHEDULER_ATTEMPTS}{sel}{rate}))", "{{status}}")],
            unit="reqps",
            description="Picks per second by outcome.",
        ),
        dashboards._panel(
            "TTFT seen by the picker",
            [(quantile(0.5, EPP_TTFT), "p50"), (quantile(0.95, EPP_TTFT), "p95")],
            unit="s",
            description="Time to first token from the gateway's side, queueing included.",
        ),
        dashboards._panel(
            "Prefix-cache hit ratio (approximate index)",
            [(quantile(0.5, PREFIX_HIT_RATIO), "p50")],
            unit="percentunit",
            description="Share of a prompt the chosen pod already holds, as the picker estimates it.",
        ),
    ]
    return dashboards._dashboard(
        "llm-platform-endpoint-picker",
        "Inference gateway: endpoint pickers",
        "Per model: the InferencePool's ready endpoints, the gateway queue, shedding and routing quality.",
        [
            dashboards._query_variable(
                "namespace", "Model namespace", f"label_values({READY_ENDPOINTS}, namespace)"
            ),
            dashboards._query_variable(
                "pool", "InferencePool", f'label_values({READY_ENDPOINTS}{{namespace="$namespace"}}, name)'
            ),
        ],
        panels,
    )


DEPLOYMENT_SPEC_REPLICAS = (
    "kube_deployment_spec_replicas"  # kube-state-metrics: the replicas KEDA/the HPA set
)


def zero_dashboard(models: list[ModelPlan]) -> dict[str, Any]:
    """The stack's models that scale to zero (minReplicas 0 behind the gateway): which are at zero, the
    requests the pickers hold for them, the holds that timed out, and the signal that wakes them.

    why long: a list of panels, each a few lines of data over the same selectors, in the order Grafana
    shows them."""
    if not models:
        raise ValueError("zero_dashboard: no model at minReplicas 0 behind the gateway")
    rate = "[$__rate_interval]"

    def per_model(query: Any) -> list[tuple[str, str]]:
        return [(query(m), m.name) for m in models]

    def replicas(m: ModelPlan) -> str:
        return f'sum({DEPLOYMENT_SPEC_REPLICAS}{{namespace="{m.names.namespace}",deployment="{m.names.deployment}"}})'

    def flow(m: ModelPlan) -> str:
        return f'namespace="{m.names.namespace}",inference_pool="{release_name(m)}"'

    # a model whose Deployment is not there yet counts as not at zero
    at_zero = " + ".join(f"((({replicas(m)}) == bool 0) or vector(0))" for m in models)
    timed_out = f'outcome=~"{HELD_TIMEOUT_OUTCOMES}"'
    panels = [
        dashboards._panel(
            "Models at zero replicas",
            [(at_zero, "at zero")],
            unit="short",
            kind="stat",
            instant=True,
            width=6,
            description=f"Of the {len(models)} model(s) that scale to zero, how many have 0 desired replicas now.",
        ),
        dashboards._panel(
            "Desired replicas (0 = scaled to zero)",
            per_model(replicas),
            unit="short",
            width=18,
            description="The replicas KEDA and the HPA set on each model's Deployment (kube-state-metrics).",
        ),
        dashboards._panel(
            "Requests held by the gateway",
            per_model(lambda m: f"sum({FLOW_CONTROL_QUEUE}{{{flow(m)}}})"),
            unit="short",
            description=(
                "Requests the endpoint pickers hold while the model has no ready replica (or is saturated); "
                "each is held for at most the model's from-zero hold (the picker's defaultRequestTTL)."
            ),
        ),
        dashboards._panel(
            "Held requests that timed out (503 + Retry-After)",
            per_model(
                lambda m: f"sum(rate({FLOW_CONTROL_REQUESTS}{{{flow(m)},{timed_out}}}{rate})) or vector(0)"
            ),
            unit="reqps",
            description=(
                "Held past the hold (EvictedTTL) or refused with the queue full and no endpoint "
                "(RejectedNoEndpoints): the client got 503 with Retry-After; or the client or Envoy ended the "
                "stream while it was held (EvictedContextCancelled). Alert InferenceGatewayHeldRequestTimedOut."
            ),
        ),
        dashboards._panel(
            "Wake signal (KEDA's wake trigger)",
            per_model(lambda m: promql.wake_signal(m.names.namespace, m.model.served_model_name)),
            unit="short",
            description="Held plus arriving requests: above 0, KEDA scales the model from 0 to 1.",
        ),
        dashboards._panel(
            "Ready vLLM endpoints",
            per_model(
                lambda m: (
                    f'max({READY_ENDPOINTS}{{namespace="{m.names.namespace}",name="{release_name(m)}"}})'
                )
            ),
            unit="short",
            description="0 while the model is at zero or starting: the pickers hold what arrives.",
        ),
    ]
    return dashboards._dashboard(
        zero.DASHBOARD,
        "Scale to zero",
        "The models that scale to zero: at zero or not, held requests, holds that timed out, the wake signal.",
        [],
        panels,
    )
