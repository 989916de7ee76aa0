"""The stack file as a whole (`StackConfig`) and the blocks a serving component is given (`ServingConfig`),
with the rules that need more than one block: a model's pool, the prod-only rules, the region's offerings,
the cost forecasts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import Field, ValidationInfo, model_validator

from llm_platform.config.schema.alerting import AlertingConfig
from llm_platform.config.schema.base import Environment, Problems, RuleError, Schema
from llm_platform.config.schema.cluster import ClusterConfig
from llm_platform.config.schema.costs import CostForecast, CostsConfig, forecast_config_hash
from llm_platform.config.schema.gateway import GatewayConfig
from llm_platform.config.schema.model_cache import ModelCacheConfig
from llm_platform.config.schema.models import ModelConfig
from llm_platform.config.schema.pools import GpuNodePool
from llm_platform.config.schema.serving import _serving_rules
from llm_platform.facts.catalog import KNOWN_REGIONS


class StackConfig(Schema):
    environment: Environment
    cluster: ClusterConfig
    gpu_node_pools: list[GpuNodePool] = Field(min_length=1)
    models: list[ModelConfig] = []
    model_cache: ModelCacheConfig = Field(default_factory=ModelCacheConfig)
    gateway: GatewayConfig = Field(default_factory=GatewayConfig)
    alerting: AlertingConfig = Field(default_factory=AlertingConfig)
    costs: CostsConfig = Field(default_factory=CostsConfig)

    @model_validator(mode="after")
    def _rules(self, info: ValidationInfo) -> StackConfig:
        """Every rule across blocks (STACK_RULES), each broken one reported: all of them in one run."""
        problems = Problems()
        for rule in STACK_RULES:
            rule.run(self, problems, info.context or {})
        problems.raise_all()
        return self

    def pool(self, name: str) -> GpuNodePool:
        return next(p for p in self.gpu_node_pools if p.name == name)


def _region_rules(c: StackConfig, problems: Problems, context: dict[str, Any]) -> None:
    """With the stack's AWS region known (`aws:region`, passed as validation context): zones are in it and
    every pool's instances are offered there."""
    region = context.get("region")
    if region is None or c.cluster.mode == "existing":
        return
    if region not in KNOWN_REGIONS:
        problems.errors.append(
            RuleError(
                ("aws:region",),
                region,
                f"has no offerings in the instance catalog; allowed: {', '.join(sorted(KNOWN_REGIONS))}",
            )
        )
        return
    for i, zone in enumerate(c.cluster.availability_zones):
        if not (zone.startswith(region) and len(zone) == len(region) + 1):
            problems.errors.append(
                RuleError(
                    ("cluster", "availabilityZones", i),
                    zone,
                    f"is not a zone of the stack's region {region} (aws:region); allowed: {region}a, {region}b, ...",
                )
            )
    for i, pool in enumerate(c.gpu_node_pools):
        missing = [t for t in pool.instances if region not in t.regions]
        if not missing:
            continue
        names = ", ".join(t.instance_type for t in missing)
        if len(missing) < len(pool.instances):
            sold = [t.size for t in pool.instances if t not in missing]
            allowed = f"instanceSizes: [{', '.join(sold)}]"
        else:
            offered = sorted(set.intersection(*(set(t.regions) for t in missing)))
            allowed = f"a region that sells it: {', '.join(offered)}"
        problems.errors.append(
            RuleError(
                ("gpuNodePools", i, "instanceFamilies"),
                pool.instance_families,
                f"admits {names}, not sold in {region} (aws:region); allowed: {allowed}",
            )
        )


def _cluster_rules(c: StackConfig, problems: Problems, context: dict[str, Any]) -> None:
    """The environment's rules for the cluster: on-demand add-on nodes and pinned AMIs outside dev."""
    addon_types = c.cluster.addon_nodes.capacity_types or []
    if c.environment is Environment.PROD and "spot" in addon_types:
        problems.errors.append(
            RuleError(
                ("cluster", "addonNodes", "capacityTypes"),
                addon_types,
                "may not include spot in prod: Prometheus, Alertmanager, KEDA and the gateway would be "
                "interrupted at two minutes' notice; use [on-demand]",
            )
        )
    if c.environment is not Environment.DEV:
        for family, version in c.cluster.ami_versions.model_dump().items():
            if version == "latest":
                problems.errors.append(
                    RuleError(
                        ("cluster", "amiVersions", family),
                        version,
                        f"is allowed in dev only; pin a version in {c.environment.value} (al2023: v<YYYYMMDD>, "
                        "bottlerocket: v<major>.<minor>.<patch>)",
                    )
                )


def _alerting_rules(c: StackConfig, problems: Problems, context: dict[str, Any]) -> None:
    if c.environment is not Environment.DEV and c.alerting.receiver == "none":
        problems.errors.append(
            RuleError(
                ("alerting", "receiver"),
                c.alerting.receiver,
                f"is allowed in dev only; {c.environment.value} must notify someone: allowed: slack, "
                "pagerduty or webhook (its URL or key in the alertReceiver secret)",
            )
        )


def _stack_serving_rules(c: StackConfig, problems: Problems, context: dict[str, Any]) -> None:
    with problems.check():
        _serving_rules(c, has_bucket=c.cluster.mode == "eks", zones=c.cluster.availability_zones)


def _cost_rules(c: StackConfig, problems: Problems, context: dict[str, Any]) -> None:
    """Forecasts name a model of the stack, once each, made for its deployed config (forecast_config_hash)."""
    models = {m.name: m for m in c.models}
    seen: set[str] = set()
    for i, f in enumerate(c.costs.forecasts):
        with problems.check():
            _forecast_rules(c, ("costs", "forecasts", i), f, models, seen)
    seen = set()
    for i, t in enumerate(c.costs.expected_traffic):
        at = ("costs", "expectedTraffic", i, "model")
        if t.model in seen:
            others = [m for m in models if m not in seen]
            problems.errors.append(
                RuleError(
                    at,
                    t.model,
                    "has an expected traffic day already; one per model; allowed: "
                    + (
                        ", ".join(others)
                        if others
                        else "no other model (every model has one): remove this entry"
                    ),
                )
            )
        elif t.model not in models:
            problems.errors.append(
                RuleError(at, t.model, f"is not a model of the stack; allowed: {', '.join(models)}")
            )
        seen.add(t.model)
    if c.costs.forecasts and not c.costs.enabled:
        problems.errors.append(
            RuleError(
                ("costs", "enabled"),
                c.costs.enabled,
                "cannot be false with forecasts: they are compared with OpenCost's figures; allowed: true, or "
                "remove costs.forecasts",
            )
        )


def _forecast_rules(
    c: StackConfig, at: tuple[str | int, ...], f: CostForecast, models: dict[str, ModelConfig], seen: set[str]
) -> None:
    if f.model in seen:
        others = [m for m in models if m not in seen]
        raise RuleError(
            (*at, "model"),
            f.model,
            "has a forecast already; one per model; allowed: "
            + (", ".join(others) if others else "no other model (every model has one): remove this entry"),
        )
    seen.add(f.model)
    m = models.get(f.model)
    if m is None:
        raise RuleError((*at, "model"), f.model, f"is not a model of the stack; allowed: {', '.join(models)}")
    deployed = forecast_config_hash(m, c.pool(m.node_pool), c.environment)
    if f.config_hash != deployed:
        raise RuleError(
            (*at, "configHash"),
            f.config_hash,
            f"is not the deployed config's ({deployed}): model {m.name!r} or its pool changed since the "
            f"forecast; rerun `simulator replay <stack> --model {m.name} --prometheus <url> --date <day>` "
            "(or --export <file>) and paste the costs.forecasts entry it prints",
        )


@dataclass(frozen=True)
class StackRule:
    """Rules across blocks, and the stack-file blocks they read: when the schema refuses one of those blocks,
    config/loader.py still runs every rule whose blocks all validated, so one run reports every problem."""

    needs: tuple[str, ...]
    run: Callable[[StackConfig, Problems, dict[str, Any]], None]


STACK_RULES = (
    StackRule(("cluster", "gpuNodePools"), _region_rules),
    StackRule(("environment", "cluster"), _cluster_rules),
    StackRule(("environment", "alerting"), _alerting_rules),
    StackRule(
        ("environment", "cluster", "gpuNodePools", "models", "modelCache", "gateway"), _stack_serving_rules
    ),
    StackRule(("environment", "gpuNodePools", "models", "costs"), _cost_rules),
)


class ServingConfig(Schema):
    """The stack file's blocks that say what is served, on which pools (all but `cluster` and `alerting`),
    with the stack's rules for them: what a serving component resolves its model's plan from."""

    environment: Environment
    gpu_node_pools: list[GpuNodePool] = Field(min_length=1)
    models: list[ModelConfig] = []
    model_cache: ModelCacheConfig = Field(default_factory=ModelCacheConfig)
    gateway: GatewayConfig = Field(default_factory=GatewayConfig)

    @model_validator(mode="after")
    def _rules(self, info: ValidationInfo) -> ServingConfig:
        """`has_bucket` (validation context, default true): the model bucket exists (an EKS cluster)."""
        # a sub-component given no `gateway` (Headroom, GpuNodePools) cannot tell whether one routes to a model
        # at zero; the stack, and the components that serve the model, are given it and check
        _serving_rules(
            self,
            has_bucket=(info.context or {}).get("has_bucket", True),
            gateway_known="gateway" in self.model_fields_set,
        )
        return self
