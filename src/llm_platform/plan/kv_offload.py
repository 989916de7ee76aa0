"""A model's CPU KV tier, resolved once (schema: config/schema/kv_offload.py): its backend, its size, the ranks
it is split over, and how much the pod's memory and its `/dev/shm` grow for it.

The pod grows by the tier x 1.2 in both its memory (request and limit) and its memory-backed `/dev/shm`
(opendatahub-io/kserve PR #1842 sizes KServe's CPU KV offload the same way): the tier is pinned host memory
the kernel cannot reclaim, and a pod whose limit was not grown for it is OOM-killed once the tier fills.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from llm_platform.config.schema import GpuNodePool, ModelConfig, hbm_kv_gib
from llm_platform.facts.catalog import GpuInstance
from llm_platform.plan.node_capacity import GI, allocatable, gpu_node_daemon_memory_mib, replica_memory_gib
from llm_platform.plan.nodes import efa_pool

# memory and /dev/shm grow by the tier times this (opendatahub-io/kserve PR #1842)
TIER_MEMORY_FACTOR = 1.2


@dataclass(frozen=True)
class KvOffloadPlan:
    backend: Literal["native", "lmcache"]
    # the whole replica's tier, every tensor-parallel rank together (vLLM's kv_offloading_size)
    cpu_gib: float
    ranks: int  # the tensor-parallel ranks the tier is split over, one share each
    growth_gib: int  # what the pod's memory request and limit, and its /dev/shm, grow by: ceil(tier x 1.2)
    hbm_kv_gib: float  # the most KV cache a replica holds in GPU memory (what the tier must exceed)

    @property
    def gib_per_rank(self) -> float:
        """Each rank's share (LMCache's `max_local_cpu_size` is per process, one process per rank)."""
        return self.cpu_gib / self.ranks


def kv_offload_plan(model: ModelConfig, pool: GpuNodePool) -> KvOffloadPlan | None:
    """The model's tier, or None when it has no `kvCacheOffload`."""
    tier = model.kv_cache_offload
    if tier is None:
        return None
    return KvOffloadPlan(
        backend=tier.backend,
        cpu_gib=tier.cpu_gib_per_replica,
        ranks=model.tensor_parallel_size,
        growth_gib=math.ceil(tier.cpu_gib_per_replica * TIER_MEMORY_FACTOR),
        hbm_kv_gib=hbm_kv_gib(model, pool),
    )


def grown_request_mib(gpus: int, sizing: GpuInstance, tier: KvOffloadPlan) -> int:
    """The vLLM container's memory request with its tier: its share of the instance it is sized on, plus the
    tier x 1.2 (components/specs/kv_offload.py `grown_resources`)."""
    return (replica_memory_gib(gpus, sizing.memory_gib, sizing.gpus)[0] + tier.growth_gib) * GI


def node_free_mib(instance: GpuInstance, pool: GpuNodePool, stack_models: Sequence[ModelConfig]) -> int:
    """MiB of memory a node of `instance` offers a pod next to the DaemonSets there (preflight's kv-offload check
    counts the same from the render: tools/preflight/kv_offload.py)."""
    daemons = gpu_node_daemon_memory_mib(
        nvme_models=sum(1 for m in stack_models if m.node_pool == pool.name and m.cache == "nvme"),
        efa=efa_pool(pool),
        fsx=any(m.cache == "fsx" for m in stack_models),
    )
    return allocatable(instance.vcpus, instance.memory_gib, 0, instance.gpus)["memory"] - daemons


def tier_instance(
    pool: GpuNodePool,
    gpus: int,
    sizing: GpuInstance,
    tier: KvOffloadPlan | None,
    stack_models: Sequence[ModelConfig],
) -> GpuInstance:
    """What Karpenter launches for a replica: `sizing` (the pool's cheapest instance with its GPUs, which the
    pod's CPU and memory are a share of), or with a CPU tier the cheapest pool instance whose memory holds the
    grown request next to its DaemonSets (the xlarge a tier outgrows becomes a 2xlarge). None holds it:
    `sizing`, and preflight blocks the replica that would stay Pending."""
    if tier is None:
        return sizing
    need = grown_request_mib(gpus, sizing, tier)
    fitting = [i for i in pool.instances if i.gpus >= gpus and node_free_mib(i, pool, stack_models) >= need]
    return min(fitting, key=lambda i: i.list_usd_per_hour) if fitting else sizing
