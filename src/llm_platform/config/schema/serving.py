"""The rules of the blocks that say what is served, on which pools: the models, the pools they run on, the model
cache and the gateway. `StackConfig` and `ServingConfig` (schema/stack.py) share them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from llm_platform.config.schema.adapters import RESERVED_LORA_FLAGS
from llm_platform.config.schema.base import Environment, Problems, RuleError, _unique, plural
from llm_platform.config.schema.capacity import _check_fits_gpus, _check_headroom, _check_pool_limit
from llm_platform.config.schema.disaggregation import check_disaggregated_model
from llm_platform.config.schema.gateway import GatewayConfig
from llm_platform.config.schema.kv_offload import check_kv_offload
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
from llm_platform.config.schema.rollout import check_model_rollout
from llm_platform.facts.model_profiles import PROFILES


class ServingBlocks(Protocol):
    """The blocks the serving rules read: a StackConfig's or a ServingConfig's."""

    @property
    def environment(self) -> Environment: ...
    @property
    def gpu_node_pools(self) -> list[GpuNodePool]: ...
    @property
    def models(self) -> list[ModelConfig]: ...
    @property
    def model_cache(self) -> ModelCacheConfig: ...
    @property
    def gateway(self) -> GatewayConfig: ...


def _serving_rules(
    c: ServingBlocks,
    *,
    has_bucket: bool,
    zones: Sequence[str] | None = None,
    gateway_known: bool = True,
) -> None:
    """The rules of the models, the pools they run on, the model cache and the gateway: the one definition
    StackConfig and ServingConfig share; every broken one is raised (RuleErrors). `has_bucket`: the stack
    has the model bucket (not an existing cluster's). `zones`: the cluster's availability zones (None on its
    own: a multi-node pool's `placementZone` is then the only zone it knows)."""
    problems = Problems()
    with problems.check():
        _unique(("gpuNodePools",), [p.name for p in c.gpu_node_pools])
    with problems.check():
        _unique(("models",), [m.name for m in c.models])
    with problems.check():
        check_adapters(c.models)
    pools = {p.name: p for p in c.gpu_node_pools}
    for i, m in enumerate(c.models):
        at = ("models", i)
        pool = pools.get(m.node_pool)
        with problems.check():
            if pool is None:
                raise RuleError(
                    (*at, "nodePool"), m.node_pool, f"does not exist; allowed: {', '.join(pools)}"
                )
            _model_on_pool(c, at, m, pool, zones)
        with problems.check():
            _autoscaling_rules(c, at, m.autoscaling, gateway_known)
        with problems.check():
            _cache_rules(c, at, m, has_bucket)
        if m.rollout is not None:
            with problems.check():
                check_model_rollout(
                    at,
                    m,
                    gateway_enabled=c.gateway.enabled,
                    gateway_known=gateway_known,
                    reserved_flags=RESERVED_LORA_FLAGS,
                )
    for i, pool in enumerate(c.gpu_node_pools):
        with problems.check():
            _check_pool_limit(("gpuNodePools", i), pool, c.models)
    with problems.check():
        check_multi_node_pools(c.gpu_node_pools, c.models)
    for i, pool in enumerate(c.gpu_node_pools):
        if pool.headroom is not None:
            with problems.check():
                _check_headroom(("gpuNodePools", i, "headroom"), pool, c.models)
    _gateway_and_cache_rules(c, problems)
    problems.raise_all()


def _model_on_pool(
    c: ServingBlocks,
    at: tuple[str | int, ...],
    m: ModelConfig,
    pool: GpuNodePool,
    zones: Sequence[str] | None,
) -> None:
    """A model against its pool, each rule needing the one before it: parallelism within a node, a known
    geometry, weights and KV cache within the GPUs, a multi-node replica's network and zone."""
    if m.tensor_parallel_size > pool.max_gpus_per_node:
        raise RuleError(
            (*at, "tensorParallelSize"),
            m.tensor_parallel_size,
            f"is larger than the {plural(pool.max_gpus_per_node, 'GPU')} of the largest instance "
            f"pool {pool.name!r} allows ({pool.instances[-1].instance_type}); tensor parallelism must "
            f"stay within one node; allowed: 1 to {pool.max_gpus_per_node}, a power of two",
        )
    if m.geometry is None and m.hugging_face_id not in PROFILES:
        raise RuleError(
            (*at, "huggingFaceId"),
            m.hugging_face_id,
            "has no built-in geometry (facts/model_profiles.py), so its GPU fit and start time "
            "cannot be sized; describe it from its config.json under the model's `geometry:` "
            "{parameters, layers, kvHeads, headDim, weightBits}; built-in: " + ", ".join(sorted(PROFILES)),
        )
    if m.disaggregation is not None:
        check_disaggregated_model(
            at,
            m.disaggregation,
            model_tp=m.tensor_parallel_size,
            pipeline_parallel_size=m.pipeline_parallel_size,
            has_adapters=bool(m.adapters),
            precise_prefix_routing=m.precise_prefix_routing,
            kv_cache_offload=m.kv_cache_offload is not None,
            pool=pool,
        )
    if m.multi_node:
        check_fits_nodes(at, m, pool)
    else:
        _check_fits_gpus(at, m, pool)
    check_kv_offload(at, m, pool)
    if m.multi_node:
        known = zones if zones is not None else [z for z in [pool.placement_zone] if z]
        check_multi_node_model(at, m, pool, c.gpu_node_pools.index(pool), known)


def _autoscaling_rules(
    c: ServingBlocks, at: tuple[str | int, ...], a: Autoscaling, gateway_known: bool
) -> None:
    if a.min_replicas > a.max_replicas:
        raise RuleError(
            (*at, "autoscaling", "minReplicas"),
            a.min_replicas,
            f"is larger than maxReplicas {a.max_replicas}; allowed: 0 to {a.max_replicas}",
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


def _cache_rules(c: ServingBlocks, at: tuple[str | int, ...], m: ModelConfig, has_bucket: bool) -> None:
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
        raise RuleError(
            (*at, "cache"),
            m.cache,
            "needs modelCache.fsx settings, which are missing; allowed: add modelCache.fsx, or nvme or s3",
        )


def _gateway_and_cache_rules(c: ServingBlocks, problems: Problems) -> None:
    prod = c.environment is Environment.PROD
    if c.gateway.enabled and not c.models:
        problems.errors.append(
            RuleError(
                ("gateway", "enabled"),
                True,
                "needs at least one model to route to; allowed: false, or add a model",
            )
        )
    if prod and c.gateway.enabled and c.gateway.certificate_arn is None:
        problems.errors.append(
            RuleError(
                ("gateway", "certificateArn"),
                None,
                "is required in prod, which serves its gateway over TLS; give an ACM certificate ARN",
            )
        )
    fsx = c.model_cache.fsx
    if prod and fsx is not None and fsx.deployment_type != "PERSISTENT_2":
        problems.errors.append(
            RuleError(
                ("modelCache", "fsx", "deploymentType"),
                fsx.deployment_type,
                "is not allowed in prod; allowed: PERSISTENT_2",
            )
        )


def scale_to_zero_allowed(c: ServingBlocks, a: Autoscaling) -> bool:
    """Whether the stack's rules let a model with autoscaling `a` run at minReplicas 0: the conditions
    `check_scale_to_zero` refuses it without (the gateway, and in prod the model's opt-in). The simulator's
    oracle reads it through `replica_floor` (a bound at 0 only where the stack would accept minReplicas 0)."""
    return c.gateway.enabled and (c.environment is not Environment.PROD or a.allow_scale_to_zero)


def check_scale_to_zero(
    at: tuple[str | int, ...], a: Autoscaling, c: ServingBlocks, *, gateway_known: bool = True
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
