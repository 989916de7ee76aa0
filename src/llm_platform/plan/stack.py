"""A stack's resolved plan: `resolve(StackConfig) -> Plan`, pure (no Pulumi, no I/O).

`__main__.py` validates the stack file and builds one `LlmPlatform`, which resolves the plan once
(`resolve`) and hands each child the slice it needs: a model's `ModelPlan` to its InferenceService and
ModelAutoscaling, the pools' plans to GpuHeadroom, the plan to the Gateway and CostAllocation. A component
built on its own (no `LlmPlatform`) validates and resolves its own args here instead (`serving_config`,
`serving_plans`, `model_plan`). The offline tools and the simulator read the same plan, so what they check or
predict is what is deployed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from llm_platform.config.errors import ConfigError
from llm_platform.config.loader import parse_serving
from llm_platform.config.schema import (
    AlertingConfig,
    AmiVersions,
    ClusterConfig,
    CostsConfig,
    Environment,
    GatewayConfig,
    GpuNodePool,
    ModelCacheConfig,
    ServingConfig,
    StackConfig,
)
from llm_platform.plan import naming
from llm_platform.plan.headroom import PoolPlan, pool_plans
from llm_platform.plan.model import FAST_IMAGE_PULL_AMI_FAMILIES, ModelPlan, resolve_model
from llm_platform.plan.nodes import AddonPoolPlan, addon_pool_plan, reservation_node_classes


@dataclass(frozen=True)
class PrometheusSizing:
    retention: str
    storage_gib: int
    replicas: int

    @property
    def retention_size(self) -> str:
        """Delete the oldest blocks before the volume fills: a full volume stops ingestion, and with it
        every KEDA trigger and alert. Prometheus counts WAL and checkpoints in it (units are powers of 2)."""
        return f"{math.floor(self.storage_gib * RETENTION_SIZE_SHARE)}GB"


RETENTION_SIZE_SHARE = 0.85
# Prometheus keeps what each environment needs to look back on: a dev day, a staging week, a prod fortnight;
# prod runs two replicas (each scrapes everything), so KEDA and the alerts survive one Prometheus restart
PROMETHEUS_SIZING = {
    "dev": PrometheusSizing("3d", 20, 1),
    "staging": PrometheusSizing("7d", 50, 1),
    "prod": PrometheusSizing("15d", 100, 2),
}


@dataclass(frozen=True)
class NodeClassPlan:
    """What the GPU EC2NodeClass of one AMI family adds to the AMI at boot."""

    ami_family: str
    ami_version: str
    fast_image_pull: bool  # nodeadm's FastImagePull (the simulator's `soci` image mode)
    lustre_client: bool  # a model reads its weights from FSx for Lustre


@dataclass(frozen=True)
class MonitoringPlan:
    namespace: str
    release: str
    prometheus_url: str
    prometheus: PrometheusSizing


@dataclass(frozen=True)
class Plan:
    environment: str
    prod: bool
    eks: bool  # False: an existing cluster, no AWS resources
    cluster: ClusterConfig
    tags: dict[str, str]
    gpu_node_pools: tuple[GpuNodePool, ...]
    addon_pool: AddonPoolPlan | None  # EKS only: the CPU NodePool of the platform's add-ons
    node_classes: tuple[NodeClassPlan, ...]
    reservation_node_classes: tuple[str, ...]  # the EC2NodeClasses that select capacity reservations
    models: tuple[ModelPlan, ...]
    pools: tuple[PoolPlan, ...]  # every GPU pool with the models it serves and its warm headroom
    model_cache: ModelCacheConfig
    uses_fsx: bool
    mig_in_use: bool
    needs_hf_token: bool  # some model is gated: the stack must hold the Hugging Face token secret
    monitoring: MonitoringPlan
    alerting: AlertingConfig
    gateway: GatewayConfig
    costs: CostsConfig = field(default_factory=CostsConfig)

    def model(self, name: str) -> ModelPlan:
        for m in self.models:
            if m.name == name:
                return m
        raise KeyError(f"no model {name!r}; models: {', '.join(m.name for m in self.models) or 'none'}")

    def pool(self, name: str) -> PoolPlan:
        return next(p for p in self.pools if p.name == name)


def resolve(config: StackConfig, stack: str = "") -> Plan:
    """The one place a validated stack config becomes names and facts."""
    environment = config.environment.value
    uses_fsx = any(m.cache == "fsx" for m in config.models)
    ami_versions = config.cluster.ami_versions
    extra_tags = {"llm-platform/stack": stack} if stack else {}
    eks = config.cluster.mode == "eks"
    models, gpu_pools = resolve_serving(config, has_bucket=eks)
    return Plan(
        environment=environment,
        prod=config.environment is Environment.PROD,
        eks=eks,
        cluster=config.cluster,
        tags=naming.tags(config.cluster.name, environment, **extra_tags),
        gpu_node_pools=tuple(config.gpu_node_pools),
        addon_pool=addon_pool_plan(
            config.cluster.addon_nodes,
            prod=config.environment is Environment.PROD,
            al2023_version=ami_versions.al2023,
        )
        if eks
        else None,
        node_classes=node_class_plans(config.gpu_node_pools, ami_versions, lustre_client=uses_fsx),
        reservation_node_classes=tuple(reservation_node_classes(config.gpu_node_pools)),
        models=models,
        pools=gpu_pools,
        model_cache=config.model_cache,
        uses_fsx=uses_fsx,
        mig_in_use=any(p.mig for p in config.gpu_node_pools),
        needs_hf_token=any(m.needs_hf_token for m in config.models),
        monitoring=MonitoringPlan(
            namespace=naming.MONITORING_NAMESPACE,
            release=naming.PROMETHEUS_RELEASE,
            prometheus_url=naming.PROMETHEUS_URL,
            prometheus=PROMETHEUS_SIZING[environment],
        ),
        alerting=config.alerting,
        gateway=config.gateway,
        costs=config.costs,
    )


def resolve_serving(
    config: StackConfig | ServingConfig,
    *,
    has_bucket: bool,
    prefix: str = "",
    prometheus_url: str = naming.PROMETHEUS_URL,
) -> tuple[tuple[ModelPlan, ...], tuple[PoolPlan, ...]]:
    """Every model's plan and every GPU pool's (its models, its warm headroom): the one place for both, for
    the whole stack (`resolve`) and for a serving component built on its own. `has_bucket`: the stack has
    the model bucket (an EKS cluster). `prefix`: a team's on a shared cluster (its namespaces, NodePools
    and PriorityClasses, plan.naming.scoped); `prometheus_url`: the Prometheus the triggers query."""
    naming.check_prefix(prefix)
    pools = {p.name: p for p in config.gpu_node_pools}
    models = tuple(
        resolve_model(
            m,
            pools[m.node_pool],
            config.models,
            has_bucket,
            config.gateway,
            prefix=prefix,
            prometheus_url=prometheus_url,
        )
        for m in config.models
    )
    return models, pool_plans(config.gpu_node_pools, models, prefix)


def node_class_plans(
    pools: Sequence[GpuNodePool], ami_versions: AmiVersions, *, lustre_client: bool
) -> tuple[NodeClassPlan, ...]:
    """Per AMI family the pools use: its pinned version and what its EC2NodeClass adds at boot."""
    versions = ami_versions.model_dump()
    return tuple(
        NodeClassPlan(
            ami_family=family,
            ami_version=versions[family],
            fast_image_pull=family in FAST_IMAGE_PULL_AMI_FAMILIES,
            lustre_client=lustre_client,
        )
        for family in sorted({p.ami_family for p in pools})
    )


# the args of a serving component (snake_case) -> the stack file's keys of the blocks they carry
SERVING_KEYS = {
    "environment": "environment",
    "gpu_node_pools": "gpuNodePools",
    "models": "models",
    "model_cache": "modelCache",
    "gateway": "gateway",
}


def serving_config(args: Mapping[str, Any], *, has_bucket: bool = True) -> ServingConfig:
    """A serving component's args (the stack file's blocks under their snake_case names, `SERVING_KEYS`),
    validated by the stack's rules, with its messages."""
    blocks = {key: args[name] for name, key in SERVING_KEYS.items() if args.get(name) is not None}
    return parse_serving(blocks, has_bucket=has_bucket)


def serving_plans(
    args: Mapping[str, Any], *, has_bucket: bool = True
) -> tuple[tuple[ModelPlan, ...], tuple[PoolPlan, ...]]:
    """The model and pool plans from a serving component's args, validated first (`serving_config`); its
    `prefix` and `prometheus_url` args, when given, name the team's objects and the triggers' Prometheus."""
    return resolve_serving(
        serving_config(args, has_bucket=has_bucket),
        has_bucket=has_bucket,
        prefix=args.get("prefix") or "",
        prometheus_url=args.get("prometheus_url") or naming.PROMETHEUS_URL,
    )


def model_plan(args: Mapping[str, Any], *, has_bucket: bool = True) -> ModelPlan:
    """The plan of the model a model-level component serves: its args' `model` entry, resolved among
    `models` (every model of the stack, this one among them; default: this model alone)."""
    entry = args["model"]
    models = args.get("models") or [entry]
    if entry not in models:
        names = ", ".join(str(m.get("name")) for m in models)
        raise ConfigError(f"model {entry.get('name')!r}: not among models ({names}); pass it as one of them")
    plans, _ = serving_plans({**args, "models": models}, has_bucket=has_bucket)
    return next(m for m in plans if m.name == entry["name"])
