"""The stack file as a whole (`StackConfig`) and the blocks a serving component is given (`ServingConfig`),
with the rules that need more than one block: a model's pool, the prod-only rules, the region's offerings,
the cost forecasts."""

from __future__ import annotations

from pydantic import Field, ValidationInfo, model_validator

from llm_platform.config.catalog import KNOWN_REGIONS
from llm_platform.config.schema.alerting import AlertingConfig
from llm_platform.config.schema.base import Environment, RuleError, Schema
from llm_platform.config.schema.cluster import ClusterConfig
from llm_platform.config.schema.costs import CostsConfig, forecast_config_hash
from llm_platform.config.schema.gateway import GatewayConfig
from llm_platform.config.schema.model_cache import ModelCacheConfig
from llm_platform.config.schema.models import ModelConfig
from llm_platform.config.schema.pools import GpuNodePool
from llm_platform.config.schema.serving import _serving_rules


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
    def _region_rules(self, info: ValidationInfo) -> StackConfig:
        """With the stack's AWS region known (`aws:region`, passed as validation context): zones are in it and
        every pool's instances are offered there."""
        region = (info.context or {}).get("region")
        if region is None or self.cluster.mode == "existing":
            return self
        if region not in KNOWN_REGIONS:
            raise ValueError(
                f"aws:region {region!r}: the instance catalog has no offerings for this region; "
                f"known: {', '.join(sorted(KNOWN_REGIONS))}"
            )
        for zone in self.cluster.availability_zones:
            if not (zone.startswith(region) and len(zone) == len(region) + 1):
                raise ValueError(
                    f"cluster.availabilityZones: {zone!r} is not a zone of the stack's region {region} "
                    f"(aws:region); use {region}a, {region}b, ..."
                )
        for pool in self.gpu_node_pools:
            missing = [i for i in pool.instances if region not in i.regions]
            if not missing:
                continue
            names = ", ".join(i.instance_type for i in missing)
            where = f"gpuNodePools[{pool.name}].instanceFamilies {pool.instance_families}"
            if len(missing) < len(pool.instances):
                sold = [i.size for i in pool.instances if i not in missing]
                raise ValueError(
                    f"{where}: {names} is not sold in {region} (aws:region); set instanceSizes to {sold}"
                )
            offered = sorted(set.intersection(*(set(i.regions) for i in missing)))
            raise ValueError(
                f"{where}: {names} is not sold in {region} (aws:region); regions that sell it: {', '.join(offered)}"
            )
        return self

    @model_validator(mode="after")
    def _cross_field_rules(self) -> StackConfig:
        prod = self.environment is Environment.PROD
        if prod and len(self.cluster.availability_zones) < 2:
            raise ValueError("cluster.availabilityZones: prod needs at least 2 zones")
        addon_types = self.cluster.addon_nodes.capacity_types or []
        if prod and "spot" in addon_types:
            raise RuleError(
                ("cluster", "addonNodes", "capacityTypes"),
                addon_types,
                "may not include spot in prod: Prometheus, Alertmanager, KEDA and the gateway would be "
                "interrupted at two minutes' notice; use [on-demand]",
            )
        if self.environment is not Environment.DEV:
            for family, version in self.cluster.ami_versions.model_dump().items():
                if version == "latest":
                    raise ValueError(
                        f"cluster.amiVersions.{family}: 'latest' is allowed in dev only; pin a version in "
                        f"{self.environment.value}"
                    )
        _serving_rules(self, has_bucket=self.cluster.mode == "eks", zones=self.cluster.availability_zones)
        if self.environment is not Environment.DEV and self.alerting.receiver == "none":
            raise ValueError(
                f"alerting.receiver: 'none' is allowed in dev only; {self.environment.value} must notify "
                "someone: use slack, pagerduty or webhook (its URL or key in the alertReceiver secret)"
            )
        _cost_rules(self)
        return self

    def pool(self, name: str) -> GpuNodePool:
        return next(p for p in self.gpu_node_pools if p.name == name)


def _cost_rules(c: StackConfig) -> None:
    """Forecasts name a model of the stack, once each, made for its deployed config (forecast_config_hash)."""
    models = {m.name: m for m in c.models}
    seen: set[str] = set()
    for i, f in enumerate(c.costs.forecasts):
        at = ("costs", "forecasts", i)
        if f.model in seen:
            raise RuleError((*at, "model"), f.model, "has a forecast already; one per model")
        seen.add(f.model)
        m = models.get(f.model)
        if m is None:
            raise RuleError(
                (*at, "model"), f.model, f"is not a model of the stack; allowed: {', '.join(models)}"
            )
        deployed = forecast_config_hash(m, c.pool(m.node_pool), c.environment)
        if f.config_hash != deployed:
            raise RuleError(
                (*at, "configHash"),
                f.config_hash,
                f"is not the deployed config's ({deployed}): model {m.name!r} or its pool changed since the "
                f"forecast; rerun `simulator replay <stack> --model {m.name} --prometheus <url> --date <day>` "
                "(or --export <file>) and paste the costs.forecasts entry it prints",
            )
    if c.costs.forecasts and not c.costs.enabled:
        raise RuleError(
            ("costs", "enabled"), False, "forecasts are compared with OpenCost's figures: set true"
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
