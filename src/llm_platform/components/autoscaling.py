"""Autoscaling: a model's KEDA ScaledObject and its PrometheusRule (scaling, SLO and health alerts)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from llm_platform.components import child_options
from llm_platform.components.kubernetes import apply_manifest
from llm_platform.components.specs import alerts
from llm_platform.components.specs import autoscaling as spec
from llm_platform.plan import ModelPlan


@dataclass(frozen=True, kw_only=True)
class ModelAutoscalingArgs:
    model: ModelPlan
    environment: str


class ModelAutoscaling(pulumi.ComponentResource):
    """Scales the model's Deployment on queue depth and KV-cache usage (plus cron pre-warm windows) and
    alerts on queueing, KV-cache pressure, TTFT/ITL SLO misses, missing metrics, scaler errors and the
    replica ceiling. Give it `depends_on` the KEDA and kube-prometheus-stack releases (their CRDs)."""

    def __init__(
        self, name: str, args: ModelAutoscalingArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("llm-platform:autoscaling:ModelAutoscaling", name, None, opts)
        model = args.model
        scaled_object = spec.scaled_object(model, args.environment)
        apply_manifest(f"{name}-scaledobject", scaled_object, child_options(self, opts))
        apply_manifest(f"{name}-alerts", alerts.prometheus_rule(model), child_options(self, opts))
        self.register_outputs({"scaledObject": model.names.scaled_object})
