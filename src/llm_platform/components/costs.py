"""Cost allocation: OpenCost priced from the catalogs, the cost recording rules, the forecasts and their
overrun alert, and the forecast-vs-actual dashboard (`costs.enabled`)."""

from collections.abc import Mapping
from typing import NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from llm_platform.components import child_options, typed_options
from llm_platform.components.kubernetes import apply_manifest
from llm_platform.components.specs import costs as spec
from llm_platform.components.specs import dashboards
from llm_platform.config.errors import ConfigError
from llm_platform.config.loader import parse_block
from llm_platform.config.schema import CostsConfig, GpuNodePool
from llm_platform.config.stack_args import (
    CostsSettings,
    GatewaySettings,
    GpuNodePoolSettings,
    ModelCacheSettings,
    ModelSettings,
)
from llm_platform.facts.addons import OPENCOST, version_of
from llm_platform.plan import ModelPlan, Plan
from llm_platform.plan.naming import MONITORING_NAMESPACE
from llm_platform.plan.stack import resolve_serving, serving_config


class CostAllocationArgs(TypedDict):
    """The stack file's `costs` block and the serving blocks it prices (camelCase keys, checked by the
    stack's rules), the cluster's name and region."""

    cluster_name: str
    """OpenCost's cluster id."""
    region: str
    """The AWS region whose catalog prices price the nodes."""
    costs: CostsSettings
    """The stack file's `costs`: the forecasts and the overrun share the alert allows."""
    environment: str
    """dev, staging or prod."""
    gpu_node_pools: list[GpuNodePoolSettings]
    """The stack file's `gpuNodePools`: the instance types whose prices the rules carry."""
    models: NotRequired[list[ModelSettings]]
    """The stack file's `models`: one cost series per model."""
    model_cache: NotRequired[ModelCacheSettings]
    """The stack file's `modelCache` (the models' rules read it)."""
    gateway: NotRequired[GatewaySettings]
    """The stack file's `gateway` (the models' rules read it)."""
    has_model_bucket: NotRequired[bool]
    """The model bucket exists (an EKS stack; default true), as the models' rules need to know."""
    monitoring: NotRequired[k8s.helm.v3.Release]
    """kube-prometheus-stack (Prometheus, the PrometheusRule and ServiceMonitor CRDs): needed first."""


class CostAllocation(pulumi.ComponentResource):
    """The OpenCost release (exporter only) in the monitoring namespace, the `llm-platform-costs`
    PrometheusRule and the forecast-vs-actual Grafana dashboard."""

    release: k8s.helm.v3.Release

    def __init__(
        self,
        name: str,
        args: CostAllocationArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        plan: Plan | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> None:
        """`plan`: the stack's plan, already resolved from these args (`LlmPlatform` passes its own; cost
        allocation reads its `costs`, `models` and `gpu_node_pools`); without it the args are validated and
        resolved here.
        `versions`: chart versions by add-on name (`llm_platform.facts.addons`) in place of the pinned ones
        (`LlmPlatform` passes its `addon_versions`)."""
        # bad input stops before any resource
        if plan is not None:
            costs, models, pools = plan.costs, plan.models, list(plan.gpu_node_pools)
        else:
            costs, models, pools = _resolved(args)
        unknown = sorted({f.model for f in costs.forecasts} - {m.name for m in models})
        if unknown:
            raise ConfigError(
                f"costs.forecasts: {', '.join(unknown)} is not a model of the stack; "
                f"allowed: {', '.join(m.name for m in models)}"
            )
        try:
            values = spec.helm_values(cluster_name=args["cluster_name"], pools=pools, region=args["region"])
            rule = spec.prometheus_rule(models, pools, args["region"], costs)
        except spec.PricingError as exc:
            raise ConfigError(str(exc)) from None
        super().__init__(
            "llm-platform:index:CostAllocation",
            name,
            None,
            typed_options(opts, "llm-platform:costs:CostAllocation"),
        )
        waits = [args["monitoring"]] if "monitoring" in args else []
        self.release = k8s.helm.v3.Release(
            f"{name}-opencost",
            name=spec.RELEASE,
            chart="opencost",
            version=version_of(OPENCOST, OPENCOST.chart, versions),
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=OPENCOST.chart.repo),
            namespace=MONITORING_NAMESPACE,
            values=values,
            opts=child_options(self, opts, *waits),
        )
        apply_manifest(f"{name}-rules", rule, child_options(self, opts, *waits))
        apply_manifest(
            f"{name}-dashboard",
            dashboards.dashboard_configmap(
                "llm-platform-costs", MONITORING_NAMESPACE, dashboards.cost_dashboard()
            ),
            child_options(self, opts, *waits),
        )
        self.register_outputs({"release": self.release.name})


def _resolved(args: CostAllocationArgs) -> tuple[CostsConfig, tuple[ModelPlan, ...], list[GpuNodePool]]:
    """The costs block, the models' plans and the GPU pools of a direct caller's args, validated first."""
    costs: CostsConfig = parse_block("costs", args["costs"])
    has_bucket = args.get("has_model_bucket", True)
    serving = serving_config(args, has_bucket=has_bucket)
    models, _ = resolve_serving(serving, has_bucket=has_bucket)
    return costs, models, list(serving.gpu_node_pools)
