"""`python -m llm_platform.simulator --stack S --model M --explain`: the inputs the simulator will run, read back from
its own model of the stack (the strategy it simulates as "stack-config", its scrape and capacity config),
so they can be compared with the rendered ScaledObject, PodMonitor, Deployment and EC2NodeClass."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from llm_platform.config.schema import ScalingRules
from llm_platform.simulator.controllers.keda import CronTrigger, PrometheusTrigger, ScaledObjectSpec
from llm_platform.simulator.search.stacks import StackRun
from llm_platform.simulator.serving.capacity_config import start_times

# the strategy that is the stack's own ScaledObject (simulator/controllers/strategies.py)
DEPLOYED = "stack-config"


def _rules(rules: ScalingRules | None) -> dict[str, Any]:
    return {} if rules is None else rules.model_dump(by_alias=True, exclude_none=True)


def _deployed(run: StackRun) -> ScaledObjectSpec:
    strategy = next(s for s in run.strategies if s.name == DEPLOYED)
    assert strategy.scaled_object is not None
    return strategy.scaled_object


def explain(run: StackRun) -> dict[str, Any]:
    spec = _deployed(run)
    sim = run.setup.config
    capacity = sim.capacity
    starts = start_times(capacity)
    behavior = spec.behavior
    return {
        "model": run.model_name,
        "instance": capacity.instance.instance_type,
        "gpus_per_replica": capacity.gpus_per_pod,
        "triggers": [
            {
                "name": t.name,
                "type": "prometheus",
                "query": t.query,
                "threshold": t.threshold,
                "metric_type": "AverageValue",
                "simulated_as": t.metric,
            }
            for t in spec.triggers
            if isinstance(t, PrometheusTrigger)
        ],
        "polling_interval_s": spec.polling_interval,
        "cooldown_period_s": spec.cooldown_period,
        "scrape_interval_s": sim.scrape_interval,
        "fallback_replicas": spec.fallback.replicas if spec.fallback else None,
        "fallback_failure_threshold": spec.fallback.failure_threshold if spec.fallback else None,
        "behavior": {
            "scaleUp": _rules(behavior.scale_up if behavior else None),
            "scaleDown": _rules(behavior.scale_down if behavior else None),
        },
        "min_replicas": spec.min_replica_count,
        "max_replicas": spec.max_replica_count,
        "prewarm": [
            {
                "name": t.name,
                "start": t.start,
                "end": t.end,
                "timezone": t.timezone,
                "replicas": t.desired_replicas,
            }
            for t in spec.triggers
            if isinstance(t, CronTrigger)
        ],
        "image_pull": capacity.image,
        "cache": capacity.cache_mode,
        "compile_cache_persisted": capacity.compile_cache_persisted,
        "headroom": None
        if capacity.headroom is None
        else {
            "placeholders": capacity.headroom.placeholders,
            "windows": [
                {"start": w.start, "end": w.end, "timezone": w.timezone, "placeholders": w.placeholders}
                for w in capacity.headroom.windows
            ],
            "refill_s": round(capacity.headroom.refill_seconds, 1),
        },
        "consolidate_after_s": capacity.consolidate_after,
        # empty nodes deleted per disruption pass: ceil(this % x the pool's Ready nodes)
        "disruption_budget_percent": capacity.disruption_budget_percent,
        # the gateway's bounded queue in front of the model (None: vLLM's queue alone, unbounded)
        "flow_control": None
        if sim.flow_control is None
        else {
            "saturation_queue_depth": sim.flow_control.saturation_queue_depth,
            "held_requests": sim.flow_control.held_requests,
            "ttl_s": sim.flow_control.ttl_seconds,
        },
        # who sends the requests: each attempt's timeout, the attempts, the backoff (simulator/day/clients.py)
        "client": asdict(sim.client),
        "cold_start_s": {
            "new_node": round(starts.new_node, 1),
            "warm_node": round(starts.warm_node, 1),
            "preempting_placeholder": round(starts.preempting_placeholder, 1),
            "node_ready": starts.node_ready,
            "image_wait": starts.image_wait,
        },
        "slo": {"ttft_seconds": sim.slo.ttft_seconds, "itl_seconds": sim.slo.itl_seconds},
    }
