"""The stack file as a whole (`StackConfig`) and the blocks a serving component is given (`ServingConfig`),
with the rules that need more than one block: a model's pool, the prod-only rules, the region's offerings,
the cost forecasts."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field, ValidationInfo, model_validator

from llm_platform.config.schema.alerting import AlertingConfig
from llm_platform.config.schema.base import Environment, RuleError, Schema, _unique, plural
from llm_platform.config.schema.capacity import _check_fits_gpus, _check_headroom, _check_pool_limit
from llm_platform.config.schema.cluster import ClusterConfig
from llm_platform.config.schema.costs import CostsConfig, forecast_config_hash
from llm_platform.config.schema.gateway import GatewayConfig
from llm_platform.config.schema.model_cache import ModelCacheConfig
from llm_platform.config.schema.models import (
    PROD_MIN_REPLICAS,
    Autoscaling,
    ModelConfig,
    check_adapters,
    replica_floor,
)
from llm_platform.config.schema.multinode import (
    check_fits_nodes,
    check_multi_node_model,
    check_multi_node_pools,
)
from llm_platform.config.schema.pools import GpuNodePool
from llm_platform.facts.catalog import KNOWN_REGIONS
from llm_platform.facts.model_profiles import PROFILES


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
    seen = set()
    for i, t in enumerate(c.costs.expected_traffic):
        at = ("costs", "expectedTraffic", i, "model")
        if t.model in seen:
            raise RuleError(at, t.model, "has an expected traffic day already; one per model")
        seen.add(t.model)
        if t.model not in models:
            raise RuleError(at, t.model, f"is not a model of the stack; allowed: {', '.join(models)}")
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


def _serving_rules(
    c: StackConfig | ServingConfig,
    *,
    has_bucket: bool,
    zones: Sequence[str] | None = None,
    gateway_known: bool = True,
) -> None:
    """The rules of the models, the pools they run on, the model cache and the gateway: the one definition
    StackConfig and ServingConfig share. `has_bucket`: the stack has the model bucket (not an existing
    cluster's). `zones`: the cluster's availability zones (None on its own: a multi-node pool's
    `placementZone` is then the only zone it knows)."""
    _unique(("gpuNodePools",), [p.name for p in c.gpu_node_pools])
    _unique(("models",), [m.name for m in c.models])
    check_adapters(c.models)
    pools = {p.name: p for p in c.gpu_node_pools}
    prod = c.environment is Environment.PROD
    for i, m in enumerate(c.models):
        at = ("models", i)
        pool = pools.get(m.node_pool)
        if pool is None:
            raise RuleError((*at, "nodePool"), m.node_pool, f"does not exist; allowed: {', '.join(pools)}")
        if m.tensor_parallel_size > pool.max_gpus_per_node:
            raise RuleError(
                (*at, "tensorParallelSize"),
                m.tensor_parallel_size,
                f"is larger than the {plural(pool.max_gpus_per_node, 'GPU')} of the largest instance "
                f"pool {pool.name!r} allows ({pool.instances[-1].instance_type}); tensor parallelism must "
                "stay within one node",
            )
        if m.geometry is None and m.hugging_face_id not in PROFILES:
            raise RuleError(
                (*at, "huggingFaceId"),
                m.hugging_face_id,
                "has no built-in geometry (facts/model_profiles.py), so its GPU fit and start time "
                "cannot be sized; describe it from its config.json under the model's `geometry:` "
                "{parameters, layers, kvHeads, headDim, weightBits}; built-in: "
                + ", ".join(sorted(PROFILES)),
            )
        if m.multi_node:
            check_fits_nodes(at, m, pool)
        else:
            _check_fits_gpus(at, m, pool)
        if m.multi_node:
            known = zones if zones is not None else [z for z in [pool.placement_zone] if z]
            check_multi_node_model(at, m, pool, c.gpu_node_pools.index(pool), known)
        a = m.autoscaling
        if a.min_replicas > a.max_replicas:
            raise RuleError(
                (*at, "autoscaling", "minReplicas"),
                a.min_replicas,
                f"is larger than maxReplicas {a.max_replicas}",
            )
        for j, w in enumerate(a.prewarm):
            if not a.min_replicas <= w.replicas <= a.max_replicas:
                raise RuleError(
                    (*at, "autoscaling", "prewarm", j, "replicas"),
                    w.replicas,
                    f"must be between minReplicas {a.min_replicas} and maxReplicas {a.max_replicas}",
                )
        if a.min_replicas == 0:
            check_scale_to_zero(at, a, c, gateway_known=gateway_known)
        elif a.min_replicas < replica_floor(c.environment):
            raise RuleError(
                (*at, "autoscaling", "minReplicas"),
                a.min_replicas,
                f"is not allowed in prod; use at least {PROD_MIN_REPLICAS} so one node loss or rollout "
                "keeps the model up",
            )
        if m.cache == "hub" and c.environment is not Environment.DEV:
            raise RuleError(
                (*at, "cache"),
                m.cache,
                f"is allowed in dev only ({c.environment.value} would download weights from the "
                "Hugging Face Hub at every scale-out); use nvme, fsx or s3",
            )
        if not has_bucket and m.cache != "hub":
            raise RuleError(
                (*at, "cache"),
                m.cache,
                "needs the model bucket, which an 'existing' cluster does not get (that mode creates no "
                "AWS resources); allowed there: 'hub'",
            )
        if m.cache == "fsx" and c.model_cache.fsx is None:
            raise RuleError((*at, "cache"), m.cache, "needs modelCache.fsx settings, which are missing")
    for i, pool in enumerate(c.gpu_node_pools):
        _check_pool_limit(("gpuNodePools", i), pool, c.models)
    check_multi_node_pools(c.gpu_node_pools, c.models)
    for i, pool in enumerate(c.gpu_node_pools):
        if pool.headroom is not None:
            _check_headroom(f"gpuNodePools[{i}] ({pool.name}).headroom", pool, c.models)
    if c.gateway.enabled and not c.models:
        raise ValueError("gateway.enabled: true needs at least one model to route to")
    if prod and c.gateway.enabled and c.gateway.certificate_arn is None:
        raise ValueError(
            "gateway.certificateArn: prod serves its gateway over TLS; give an ACM certificate ARN"
        )
    fsx = c.model_cache.fsx
    if prod and fsx is not None and fsx.deployment_type != "PERSISTENT_2":
        raise ValueError(
            f"modelCache.fsx.deploymentType: {fsx.deployment_type} is not allowed in prod; use PERSISTENT_2"
        )


def scale_to_zero_allowed(c: StackConfig | ServingConfig, a: Autoscaling) -> bool:
    """Whether the stack's rules let a model with autoscaling `a` run at minReplicas 0: the conditions
    `check_scale_to_zero` refuses it without (the gateway, and in prod the model's opt-in). The simulator's
    oracle reads it through `replica_floor` (a bound at 0 only where the stack would accept minReplicas 0)."""
    return c.gateway.enabled and (c.environment is not Environment.PROD or a.allow_scale_to_zero)


def check_scale_to_zero(
    at: tuple[str | int, ...], a: Autoscaling, c: StackConfig | ServingConfig, *, gateway_known: bool = True
) -> None:
    """minReplicas 0: only behind the gateway (the only signal that exists while no vLLM pod does is the
    requests reaching the endpoint picker), and in prod only with `allowScaleToZero: true`."""
    if gateway_known and not c.gateway.enabled:
        raise RuleError(
            (*at, "autoscaling", "minReplicas"),
            a.min_replicas,
            "needs the gateway (gateway.enabled: true): with no vLLM pod only the endpoint picker sees the "
            "request that must wake the model; allowed without it: 1 or more",
        )
    if c.environment is Environment.PROD and not a.allow_scale_to_zero:
        raise RuleError(
            (*at, "autoscaling", "minReplicas"),
            a.min_replicas,
            f"is not allowed in prod unless the model opts in with autoscaling.allowScaleToZero: true "
            f"(its first request after idle waits a cold start); otherwise use at least {PROD_MIN_REPLICAS}",
        )
