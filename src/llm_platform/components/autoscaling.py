"""Autoscaling: a model's KEDA ScaledObject and its PrometheusRule (scaling, SLO and health alerts)."""

from typing import Any, NotRequired, TypedDict

import pulumi

from llm_platform.components import child_options, typed_options
from llm_platform.components.kubernetes import apply_manifest
from llm_platform.components.specs import alerts
from llm_platform.components.specs import autoscaling as spec
from llm_platform.components.specs import disaggregation as pd_spec
from llm_platform.config.stack_args import (
    EnvironmentValue,
    GatewaySettings,
    GpuNodePoolSettings,
    ModelCacheSettings,
    ModelSettings,
)
from llm_platform.plan import ModelPlan
from llm_platform.plan.stack import model_plan


class ModelAutoscalingArgs(TypedDict):
    """The model to scale: the stack file's entry for it and the blocks its plan depends on (camelCase keys,
    checked by the stack's rules), as InferenceServiceArgs carries them."""

    environment: EnvironmentValue
    """dev, staging or prod."""
    model: ModelSettings
    """The stack file's `models` entry of the model (its `autoscaling` and `slo` above all)."""
    gpu_node_pools: list[GpuNodePoolSettings]
    """The stack file's `gpuNodePools`: the model's `nodePool` names one."""
    models: NotRequired[list[ModelSettings]]
    """Every model served on these pools, this one among them (they share each pool's gpuLimit). Default:
    this model alone."""
    model_cache: NotRequired[ModelCacheSettings]
    """The stack file's `modelCache` (the fsx cache needs its `fsx` block)."""
    gateway: NotRequired[GatewaySettings]
    """The stack file's `gateway`: behind an enabled gateway, `requestsPerSecondPerReplica` counts the
    gateway's arrivals (served or shed) instead of vLLM's completions."""
    prefix: NotRequired[str]
    """The prefix of the model's InferenceService (its namespace). Default: none."""
    prometheus_url: NotRequired[str]
    """The Prometheus the KEDA triggers query (one that scrapes the model's PodMonitor). Default: the
    platform's kube-prometheus-stack, `http://kube-prometheus-stack-prometheus.monitoring.svc.cluster.local:9090`."""
    monitor_labels: NotRequired[dict[str, str]]
    """Labels the cluster's Prometheus selects PrometheusRules by (kube-prometheus-stack's default:
    `{"release": "<its Helm release>"}`). Default: none, as the platform's own Prometheus selects every rule."""


class ModelAutoscaling(pulumi.ComponentResource):
    """Scales the model's Deployment on queue depth and KV-cache usage (plus cron pre-warm windows) and
    alerts on queueing, KV-cache pressure, TTFT/ITL SLO misses, missing metrics, scaler errors and the
    replica ceiling.

    It names the model's Deployment (its InferenceService, with the same `prefix`: give it `depends_on`
    it). Cluster prerequisites: KEDA and the Prometheus Operator's CRDs (the `Keda` and `Observability`
    components, or the cluster's own: give it `depends_on` their releases) and a Prometheus at
    `prometheus_url` that scrapes the model's PodMonitor."""

    def __init__(
        self,
        name: str,
        args: ModelAutoscalingArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        plan: ModelPlan | None = None,
    ) -> None:
        """`plan`: the model's plan, already resolved from these args (`LlmPlatform` passes its own); without
        it the args are validated and resolved here."""
        # the plan's cache facts (bucket or not) never reach the ScaledObject or the alerts
        model = plan if plan is not None else model_plan(args)  # bad input stops before any resource
        super().__init__(
            "llm-platform:index:ModelAutoscaling",
            name,
            None,
            typed_options(opts, "llm-platform:autoscaling:ModelAutoscaling"),
        )
        outputs: dict[str, Any] = {"scaledObject": model.names.scaled_object}
        if model.disaggregation is None:
            scaled_object = spec.scaled_object(model, args["environment"])
            apply_manifest(f"{name}-scaledobject", scaled_object, child_options(self, opts))
        else:  # one ScaledObject per role, each on its own signal (components/specs/disaggregation.py)
            for role in model.disaggregation.roles:
                role_object = pd_spec.role_scaled_object(model, role, args["environment"])
                apply_manifest(f"{name}-{role.role}-scaledobject", role_object, child_options(self, opts))
            # the objects it has: no aggregated ScaledObject exists to name
            outputs = {"scaledObjects": [r.scaled_object for r in model.disaggregation.roles]}
        rule = alerts.prometheus_rule(model, labels=args.get("monitor_labels"))
        apply_manifest(f"{name}-alerts", rule, child_options(self, opts))
        self.register_outputs(outputs)
