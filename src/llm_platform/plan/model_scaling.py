"""A model's scaling intent resolved from its `autoscaling` block (a stack's, or one the simulator proposes):
the KEDA triggers with their PromQL and smoothing, the fallback, and the ScalingPlan the ScaledObject carries.

Re-exported by `plan.model`, which resolves it for each model.
"""

from __future__ import annotations

import math
from typing import Protocol

from llm_platform.config.schema import Autoscaling
from llm_platform.plan import naming, promql
from llm_platform.plan.scaling import MetricTrigger, PrewarmTrigger, SaturationMemory, ScalingPlan, Smoothing


class ScaledNames(Protocol):
    """What the triggers need of a model's names (plan.model.ModelNames, which imports this module)."""

    @property
    def namespace(self) -> str: ...

    @property
    def deployment(self) -> str: ...


# Prometheus scrapes every vLLM pod this often (PodMonitor): KEDA's decisions are only as fresh as the scrape
SCRAPE_INTERVAL_SECONDS = 5
# KEDA substitutes `fallback.replicas` after this many consecutive failed queries of a trigger
FALLBACK_FAILURE_THRESHOLD = 3


# scale from zero: the wake trigger reads the requests the endpoint pickers hold or counted (promql.wake_signal);
# KEDA activates the model (0 -> 1) once it exceeds WAKE_ACTIVATION (a single held request reads 1), and past
# one replica the HPA sizes it at WAKE_REQUESTS_PER_REPLICA per replica, above which the other triggers lead
WAKE_ACTIVATION = 0.0
WAKE_REQUESTS_PER_REPLICA = 1000.0
# the saturation hold's target: the load in replicas' worth (promql.saturation_hold) per replica. Below 1 by the
# HPA's default tolerance (0.1): N replicas go to N-1 only once N-1 would serve at most 90 % of the per-replica
# load at which the pool last asked to grow, so a pool at its cap that is calm only because it has one replica
# more than that stays there
SATURATION_HOLD_PER_REPLICA = 0.9


def fallback_replicas(autoscaling: Autoscaling) -> int | None:
    """While the metrics are missing although replicas serve (Prometheus down, a renamed vLLM metric), hold
    half the ceiling. KEDA's fallback replaces the failing triggers' value after `failureThreshold` errors;
    it never applies while no replica is available, because the queries then read 0 (see
    `promql.until_a_replica_serves`): a first rollout stays at minReplicas while its pods load.

    None (no fallback) for a model at minReplicas 0: KEDA 2.20.2 counts a trigger in fallback as active
    (pkg/scaling/scale_handler.go getScalerState: `isActiveOrFallback := fallbackActive || isMetricActive`,
    with the error cleared by pkg/fallback/fallback.go GetMetricsWithFallback once failures exceed the
    threshold), and an active ScaledObject at 0 replicas is scaled from zero (pkg/scaling/executor/
    scale_scaledobjects.go RequestScale, `currentReplicas == 0`), then the HPA lands on the fallback count: a
    Prometheus outage would wake the model to half its ceiling. Without a fallback the errors leave it where
    it is (RequestScale's `isError && Fallback == nil` case: neither woken nor scaled to zero), and above zero
    the HPA keeps its replicas while no metric answers."""
    if autoscaling.min_replicas == 0:
        return None
    return max(autoscaling.min_replicas, math.ceil(autoscaling.max_replicas / 2))


def _demand_triggers(
    names: ScaledNames,
    served_model_name: str,
    a: Autoscaling,
    behind_gateway: bool,
    multi_node: bool,
    rolled: bool,
) -> tuple[MetricTrigger, ...]:
    """The KEDA triggers of one model: queue depth and KV fill (smoothed gauges), the saturation hold, the
    request rate when sized by it, and the wake at minReplicas 0. Each reads 0 until a replica serves."""
    namespace = names.namespace

    def query(summed: str) -> str:
        return promql.until_a_replica_serves(summed, namespace, names.deployment, multi_node, rolled)

    # the queue and the KV fill are instants, averaged over GAUGE_WINDOW_SECONDS at one point per scrape; the
    # rates (served, arriving) are averages over their window already, the hold remembers, and the wake must
    # read a held request at once
    smooth = Smoothing(promql.GAUGE_WINDOW_SECONDS, SCRAPE_INTERVAL_SECONDS)

    def gauge(summed: str) -> str:
        return query(promql.smoothed(summed, smooth.window_s, smooth.step_s))

    return (
        MetricTrigger(
            "queue-depth",
            promql.QUEUE,
            gauge(promql.queue_depth(namespace, served_model_name)),
            a.queue_depth_per_replica,
            smoothing=smooth,
        ),
        MetricTrigger(
            "kv-cache-usage",
            promql.KV_CACHE,
            gauge(promql.kv_cache_usage(namespace, served_model_name)),
            a.kv_cache_usage,
            smoothing=smooth,
        ),
        MetricTrigger(
            "saturation-hold",
            promql.SATURATION_HOLD,
            promql.saturation_hold(
                namespace,
                served_model_name,
                names.deployment,
                a.queue_depth_per_replica,
                a.kv_cache_usage,
                multi_node,
                rolled,
            ),
            SATURATION_HOLD_PER_REPLICA,
            saturation=SaturationMemory(a.queue_depth_per_replica, a.kv_cache_usage),
        ),
        *(
            ()
            if a.requests_per_second_per_replica is None
            else (
                MetricTrigger(
                    "arrival-rate",
                    promql.EPP_REQUESTS,
                    query(promql.gateway_arrivals(namespace, served_model_name)),
                    a.requests_per_second_per_replica,
                )
                if behind_gateway
                else MetricTrigger(
                    "served-throughput",
                    promql.SUCCESS,
                    query(promql.served_throughput(namespace, served_model_name)),
                    a.requests_per_second_per_replica,
                ),
            )
        ),
        *_wake_triggers(namespace, served_model_name, a),
    )


def _wake_triggers(namespace: str, served_model_name: str, a: Autoscaling) -> tuple[MetricTrigger, ...]:
    """A model at minReplicas 0 wakes on the requests its endpoint pickers hold; it reads them at once, so
    unlike the other triggers it waits for no serving replica."""
    if a.min_replicas != 0:
        return ()
    return (
        MetricTrigger(
            "wake",
            promql.WAKE_SIGNAL,
            promql.wake_signal(namespace, served_model_name),
            WAKE_REQUESTS_PER_REPLICA,
            activation_threshold=WAKE_ACTIVATION,
        ),
    )


def scaling_plan(
    names: ScaledNames,
    served_model_name: str,
    autoscaling: Autoscaling,
    behind_gateway: bool = False,
    multi_node: bool = False,
    prometheus_url: str = naming.PROMETHEUS_URL,
    rolled: bool = False,
) -> ScalingPlan:
    """Resolve an `autoscaling` block (a stack's, or one the simulator proposes) for one model.
    `requestsPerSecondPerReplica` sizes by the load: behind the gateway its arrivals (served or shed), else
    vLLM's completions, which cannot exceed what the Ready replicas serve."""
    a = autoscaling

    return ScalingPlan(
        min_replicas=a.min_replicas,
        max_replicas=a.max_replicas,
        polling_interval_s=a.polling_interval,
        cooldown_period_s=a.cooldown_period,
        scrape_interval_s=SCRAPE_INTERVAL_SECONDS,
        prometheus_url=prometheus_url,
        # a missing series is an error (and triggers the fallback), never a silent 0
        ignore_null_values=False,
        fallback_replicas=fallback_replicas(a),
        fallback_failure_threshold=FALLBACK_FAILURE_THRESHOLD,
        triggers=_demand_triggers(names, served_model_name, a, behind_gateway, multi_node, rolled),
        prewarm=tuple(PrewarmTrigger(f"prewarm-{w.name}", w) for w in a.prewarm),
        scale_up=a.scale_up,
        scale_down=a.scale_down,
    )
