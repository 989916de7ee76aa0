"""A stack's own model as the simulator runs it (`StackRun`): its resolved plan, pool, traffic, engine and
strategies (the stack's ScaledObject as "stack-config", the seed strategies beside it), from the stack file."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from llm_platform.config.schema import (
    Autoscaling,
    GpuNodePool,
    ModelConfig,
    StackConfig,
    gpus_at_min_replicas,
    replica_floor,
    scale_to_zero_allowed,
)
from llm_platform.facts.catalog import GpuInstance
from llm_platform.facts.cold_start import ImageMode
from llm_platform.plan import ModelPlan, Plan, PoolPlan, resolve
from llm_platform.plan.nodes import DISRUPTION_BUDGET_PERCENT
from llm_platform.simulator.controllers.strategies import (
    Strategy,
    for_stack,
    from_plan,
    scaling_for,
)
from llm_platform.simulator.day.engine import SimConfig
from llm_platform.simulator.search.multinode import replica_instance, reserved_groups
from llm_platform.simulator.search.scenarios import Setup, recommend
from llm_platform.simulator.serving.capacity_config import CapacityConfig, start_times
from llm_platform.simulator.serving.lora import LoraCost
from llm_platform.simulator.serving.replica import ReplicaModel, TokenStats
from llm_platform.simulator.serving.replica_config import EngineConfig
from llm_platform.simulator.traffic.traffic import Traffic

if TYPE_CHECKING:
    from llm_platform.config.loader import Stack


def reservation_note(pool: GpuNodePool, reserved_instances: int) -> str:
    """Say when the reserved count and the pool's config disagree: the simulator prices what it is told."""
    admits = "reserved" in pool.capacity_types
    if admits and reserved_instances == 0:
        fallback = {"on-demand", "spot"} & set(pool.capacity_types)
        return (
            f"pool {pool.name} launches into capacity reservations: pass --reserved-instances N (and "
            "--reserved-usd-per-hour for a Capacity Block) to price them as prepaid; "
            + (
                "priced as on-demand here"
                if fallback
                else "it lists no on-demand or spot, so no node launches here"
            )
        )
    if reserved_instances and not admits:
        return (
            f"pool {pool.name} has no capacityReservations / 'reserved' capacity type yet: the "
            f"{reserved_instances} reserved instance(s) priced here are a what-if"
        )
    return ""


def gpus_left_to(model: ModelConfig, pool: GpuNodePool, models: list[ModelConfig]) -> int:
    """The pool's GPU limit less what its other models hold at minReplicas (they are not simulated)."""
    others = [o for o in models if o.name != model.name]
    return pool.gpu_limit - gpus_at_min_replicas(pool, others)


@dataclass(frozen=True)
class StackRun:
    setup: Setup
    strategies: list[Strategy]
    plan: ModelPlan  # the model as deployed (plan/): names, instance, cold start, scaling intent
    pool: PoolPlan  # its GPU pool as deployed: the headroom placeholders, their windows and refill
    note: str = ""
    recommendation: Autoscaling | None = None
    model_path: str = ""  # where the autoscaling block goes in the stack file
    pool_index: int = 0  # the pool's index under gpuNodePools (where its `headroom` block goes)

    @property
    def model_name(self) -> str:
        return self.plan.name

    @property
    def instance(self) -> GpuInstance:
        return self.plan.instance

    @property
    def max_replicas(self) -> int:
        return self.plan.scaling.max_replicas


def stack_model(stack: Stack, model_name: str | None) -> tuple[StackConfig, Plan, ModelPlan]:
    """The stack's config, its plan and one model's plan (the first model when `model_name` is None)."""
    from llm_platform.config.loader import load_stack

    cfg = load_stack(stack)
    if not cfg.models:
        raise ValueError(f"stack {stack!r} defines no models")
    plan = resolve(cfg, str(stack))
    if model_name is None:
        return cfg, plan, plan.models[0]
    try:
        return cfg, plan, plan.model(model_name)
    except KeyError:
        names = ", ".join(m.name for m in plan.models)
        raise ValueError(f"stack {stack!r} has no model {model_name!r}; models: {names}") from None


def stack_run(
    stack: Stack,
    model_name: str | None,
    traffic: Traffic,
    seed: int = 0,
    image: ImageMode | None = None,
    spot_discount: float = 0.6,
    spot_interruptions_per_hour: float = 0.0,
    scrape_interval: int | None = None,
    memory_target: float = 0.9,
    prefix_hit_rate: float = 0.0,
    reserved_instances: int = 0,
    reserved_usd_per_hour: float | None = None,
    reserved_until: float | None = None,
) -> StackRun:
    """Strategies for one model of a stack file, simulated as the plan deploys it (plan/): its instance,
    cache, image pull, scrape interval, ScaledObject (triggers, fallback, behaviour, cron windows) and SLO.
    `image` and `scrape_interval` are what-ifs (None: as deployed); the first `reserved_instances` nodes
    launch into the pool's reservations (prepaid, see simulator/serving/nodepool.py), a Capacity Block ending
    `reserved_until` seconds into the traffic."""
    from llm_platform.config.loader import stack_region

    cfg, plan, mp = stack_model(stack, model_name)
    m, pool = mp.model, mp.pool
    pool_plan = plan.pool(pool.name)
    region = stack_region(stack)
    prof = m.profile  # the stack file's geometry, else the built-in table
    engine = EngineConfig(
        gpu_memory_utilization=m.gpu_memory_utilization,
        max_model_len=m.max_model_len,
        prefix_hit_rate=prefix_hit_rate,
    )
    lora = (
        LoraCost.of(
            prof, adapters=len(mp.lora.adapters), slots=mp.lora.max_loras, max_rank=mp.lora.max_lora_rank
        )
        if mp.lora is not None
        else None
    )
    model = ReplicaModel(prof, mp.instance.gpu, mp.replica_gpus, engine, lora=lora)
    table = model.table(TokenStats.from_arrays(traffic.input_tokens, traffic.output_tokens))
    spot = "spot" in pool.capacity_types
    reserved_units, reserved_unit_usd = reserved_groups(mp, reserved_instances, reserved_usd_per_hour)
    capacity = CapacityConfig(
        replica_instance(mp),  # a multi-node replica's nodes as one unit (search/multinode.py)
        region,
        gpus_per_pod=mp.replica_gpus,
        cache_mode=m.cache,
        image=image or mp.image_pull,
        weights_gb=prof.weights_gb,
        nodes=mp.nodes,
        compile_cache_persisted=mp.cache.compile_cache_prefix is not None,
        consolidate_after=mp.consolidate_after_s,
        disruption_budget_percent=DISRUPTION_BUDGET_PERCENT,
        spot=spot,
        spot_discount=spot_discount,
        spot_interruptions_per_hour=spot_interruptions_per_hour if spot else 0.0,
        reserved_nodes=reserved_units,
        reserved_usd_per_hour=reserved_unit_usd,
        reserved_until=reserved_until,
        fallback=bool({"on-demand", "spot"} & set(pool.capacity_types)),
        gpu_limit=gpus_left_to(m, pool, cfg.models),
        headroom=pool_plan.headroom,
    )
    slo = m.slo
    sim = SimConfig(
        capacity, slo, scrape_interval=scrape_interval or mp.scaling.scrape_interval_s, seed=seed,
        replica_floor=replica_floor(cfg.environment, scale_to_zero_allowed(cfg, m.autoscaling)),
        flow_control=mp.flow_control,
        drain_grace_seconds=mp.drain.termination_grace_seconds,
    )  # fmt: skip
    setup = Setup(table, sim, traffic)
    strategies = for_stack(mp.scaling, memory_target)
    cold = start_times(capacity).new_node
    note = reservation_note(pool, reserved_instances)
    rec = None
    try:
        rec = recommend(table, traffic, slo, cold, m.autoscaling.max_replicas, m.autoscaling.min_replicas)
        strategies.append(from_plan("recommended", scaling_for(mp, rec)))
    except ValueError as exc:
        note = "\n".join(filter(None, [note, f"no recommendation: {exc}"]))
    path = f"models[{cfg.models.index(m)}] ({m.name}).autoscaling"
    pool_index = [p.name for p in cfg.gpu_node_pools].index(pool.name)
    return StackRun(setup, strategies, mp, pool_plan, note, rec, path, pool_index)
