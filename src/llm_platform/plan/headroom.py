"""A GPU pool's resolved plan: the models it serves and its warm GPU headroom as the cluster will run it.

`HeadroomPlan` is what components/specs/headroom.py renders (the placeholder Deployment, its KEDA cron
ScaledObject, the buffer's alert) and what the simulator runs (simulator/serving/capacity.py): how many
placeholders each window holds, how long a replica that preempts one takes to be Ready, and how long the
buffer takes to refill through a new node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from llm_platform.config.schema import GpuNodePool, Headroom, gpus_at_max_replicas, replica_gpus
from llm_platform.facts.catalog import GpuInstance
from llm_platform.facts.cold_start import KARPENTER_LAUNCH_SECONDS, PREEMPTION_SECONDS, headroom_start
from llm_platform.plan import naming
from llm_platform.plan.model import ModelPlan, pod_instance


@dataclass(frozen=True)
class HeadroomWindowPlan:
    """A KEDA cron trigger on the placeholder Deployment: `placeholders` between `start` and `end`."""

    name: str
    start: str
    end: str
    timezone: str
    placeholders: int


@dataclass(frozen=True)
class HeadroomPlan:
    """Placeholders of one replica each (the pool's largest), `placeholders` outside every window."""

    deployment: str
    replica_gpus: int
    instance: GpuInstance  # what Karpenter launches for a placeholder (where its largest replica lands)
    placeholders: int
    windows: tuple[HeadroomWindowPlan, ...]
    # an evicted placeholder back on a warm node: Karpenter launch + node Ready + image pull / weights sync
    refill_seconds: float
    # per served model: a replica that preempts a placeholder is Ready this long after it was created
    warm_start_seconds: tuple[tuple[str, float], ...]
    # the instance the placeholder's requests are a share of, where it differs from `instance` (a CPU KV
    # tier's grown placeholder lands on a larger one)
    sizing_instance: GpuInstance | None = None

    @property
    def resources_instance(self) -> GpuInstance:
        return self.sizing_instance or self.instance

    @property
    def gpus(self) -> int:
        return self.placeholders * self.replica_gpus

    @property
    def peak_placeholders(self) -> int:
        return max([self.placeholders, *(w.placeholders for w in self.windows)])

    def warm_start(self, model: str) -> float:
        return dict(self.warm_start_seconds)[model]


@dataclass(frozen=True)
class PoolPlan:
    pool: GpuNodePool
    models: tuple[ModelPlan, ...]  # the models it serves
    headroom: HeadroomPlan | None
    prefix: str = ""  # the team's on a shared cluster (plan.naming.scoped); none: the platform's own names

    @property
    def name(self) -> str:
        return self.pool.name

    @property
    def node_pool(self) -> str:
        """Its Karpenter NodePool: the `llm-platform/gpu-pool` label value its pods select."""
        return naming.node_pool_name(self.pool.name, self.prefix)

    @property
    def headroom_namespace(self) -> str:
        return naming.headroom_namespace(self.prefix)

    @property
    def replica_gpus(self) -> int:
        """GPUs of one placeholder: the pool's largest replica (config.schema.replica_gpus)."""
        return replica_gpus(self.pool, [m.model for m in self.models])

    @property
    def gpus_at_max_replicas(self) -> int:
        """GPUs the pool's models request at maxReplicas (config.schema.gpus_at_max_replicas)."""
        return gpus_at_max_replicas(self.pool, [m.model for m in self.models])


def placeholder_name(pool: GpuNodePool) -> str:
    return f"headroom-{pool.name}"


def headroom_plan(pool: GpuNodePool, models: Sequence[ModelPlan]) -> HeadroomPlan | None:
    """None without `headroom` (the schema refuses headroom on a pool that serves no model)."""
    headroom = pool.headroom
    if headroom is None or not models:
        return None
    gpus = replica_gpus(pool, [m.model for m in models])  # one placeholder frees room for any one replica
    sizing = pod_instance(pool, gpus)
    # a placeholder grown for the largest CPU KV tier of the replicas its size (components/specs/headroom.py)
    # lands where that replica does (plan/kv_offload.py `tier_instance`)
    tiered = [
        (m.kv_offload.growth_gib, m.instance) for m in models if m.gpus == gpus and m.kv_offload is not None
    ]
    instance = max(tiered, key=lambda t: t[0])[1] if tiered else sizing
    # the largest replica's start on a new node (its plan's cold start: the placeholder's instance is its)
    largest = max(models, key=lambda m: (m.gpus, m.cold_start.weights_gb or 0.0))
    new = largest.cold_start.new_node
    if new is not None:
        refill = new.node_ready + new.image_wait
    else:
        refill = KARPENTER_LAUNCH_SECONDS + instance.node_ready_seconds
    starts = []
    for m in models:
        if m.cold_start.weights_gb is None:
            continue
        persisted = m.cache.compile_cache_prefix is not None
        start = headroom_start(m.model.cache, m.instance, m.cold_start.weights_gb, m.image_pull, persisted)
        starts.append((m.name, PREEMPTION_SECONDS + start.total))
    return HeadroomPlan(
        deployment=placeholder_name(pool),
        replica_gpus=gpus,
        instance=instance,
        placeholders=headroom.gpus // gpus,
        windows=tuple(
            HeadroomWindowPlan(f"window-{j}", w.start, w.end, w.timezone, w.gpus // gpus)
            for j, w in enumerate(headroom.schedule)
        ),
        refill_seconds=refill,
        warm_start_seconds=tuple(starts),
        sizing_instance=sizing if sizing != instance else None,
    )


def pool_plans(
    pools: Sequence[GpuNodePool], models: Sequence[ModelPlan], prefix: str = ""
) -> tuple[PoolPlan, ...]:
    plans = []
    for pool in pools:
        served = tuple(m for m in models if m.pool.name == pool.name)
        plans.append(PoolPlan(pool, served, headroom_plan(pool, served), prefix))
    return tuple(plans)


def with_headroom(p: PoolPlan, headroom: Headroom | None) -> HeadroomPlan | None:
    """What the plan renders for the pool with another `headroom` block (a benchmark level, a tuner
    candidate): the same placeholders, windows, warm start and refill a stack file with it would get."""
    return headroom_plan(p.pool.model_copy(update={"headroom": headroom}), p.models)
