"""A model's CPU KV tier, resolved once (schema: config/schema/kv_offload.py): its backend, its size, the ranks
it is split over, and how much the pod's memory and its `/dev/shm` grow for it.

The pod grows by the tier x 1.2 in both its memory (request and limit) and its memory-backed `/dev/shm`
(opendatahub-io/kserve PR #1842 sizes KServe's CPU KV offload the same way): the tier is pinned host memory
the kernel cannot reclaim, and a pod whose limit was not grown for it is OOM-killed once the tier fills.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from llm_platform.config.schema import GpuNodePool, ModelConfig, hbm_kv_gib

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
