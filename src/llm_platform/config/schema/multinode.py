"""Rules for models larger than one node: one replica is a LeaderWorkerSet group of `pipelineParallelSize` pods,
one per node, each with all the node's GPUs (tensor parallel within the node, pipeline parallel across nodes),
talking NCCL over EFA.

vLLM (the pinned image's docs/serving/parallelism_scaling.md, "Running vLLM with MultiProcessing") launches such
a replica natively: every node runs `vllm serve` with `--tensor-parallel-size T --pipeline-parallel-size N
--nnodes N --node-rank R --master-addr <leader>`, the workers with `--headless` (entrypoints/cli/serve.py
run_headless: "Run headless workers (for multi-node PP/TP)"). Data parallel and expert parallel across nodes are a
different deployment (one engine per DP rank, `--data-parallel-address/--data-parallel-start-rank`, MoE only:
ParallelConfig.data_parallel_external_lb) that the platform does not render; they are refused here by name.

The stack's rules (config/schema/stack.py) call these, so every message names the stack file's field and the
numbers; the model block's own refusal of data and expert parallelism and of the flags the platform writes is
ModelConfig's (config/schema/models.py `refuse_unsupported_parallelism`).
"""

from __future__ import annotations

from collections.abc import Sequence

from llm_platform.config.schema.base import RuleError, plural
from llm_platform.config.schema.capacity import weights_and_kv_gib
from llm_platform.config.schema.models import ModelConfig
from llm_platform.config.schema.pools import GpuNodePool, check_efa_instances


def check_multi_node_model(
    at: tuple[str | int, ...], m: ModelConfig, pool: GpuNodePool, pool_index: int, zones: Sequence[str]
) -> None:
    """Each node of the replica: a whole instance (TP = its GPUs), EFA on every admitted instance type with the
    same count, one zone of the cluster, and no reservation mixed with other capacity."""
    sizes = sorted({i.gpus for i in pool.instances})
    if sizes != [m.tensor_parallel_size]:
        raise RuleError(
            (*at, "tensorParallelSize"),
            m.tensor_parallel_size,
            f"with pipelineParallelSize {m.pipeline_parallel_size} must equal the GPUs of every instance "
            f"pool {pool.name!r} admits ({', '.join(f'{i.instance_type}: {i.gpus}' for i in pool.instances)}): "
            "each node of a multi-node replica runs one pod with all its GPUs; allowed: tensorParallelSize "
            f"{sizes[-1]} on a pool of {sizes[-1]}-GPU instances only",
        )
    check_efa_instances(at, pool, "NCCL between the nodes of a multi-node replica")
    where = ("gpuNodePools", pool_index)
    if pool.placement_zone is None or pool.placement_zone not in zones:
        raise RuleError(
            (*where, "placementZone"),
            pool.placement_zone,
            f"must name one zone of cluster.availabilityZones ({', '.join(zones)}): pool {pool.name!r} serves "
            f"{m.name}, a {m.pipeline_parallel_size}-node replica; EFA does not cross zones and a cluster "
            "placement group lives in one zone (with capacity reservations: the reservations' zone)",
        )
    if "reserved" in pool.capacity_types and len(pool.capacity_types) > 1:
        raise RuleError(
            (*where, "capacityTypes"),
            pool.capacity_types,
            f"mixes reservations with other capacity for {m.name}, a multi-node replica: its nodes could come "
            "half from a Capacity Block (colocated by EC2, no placement group) and half from outside it; "
            "allowed: [reserved] alone, or no 'reserved'",
        )


def check_multi_node_pools(pools: Sequence[GpuNodePool], models: Sequence[ModelConfig]) -> None:
    """A pool serving a multi-node model: no headroom placeholders (a placeholder is one pod on one node, so it
    could never hold the room of a replica spanning nodes); placementZone only where a multi-node model is."""
    for i, pool in enumerate(pools):
        multi = [m.name for m in models if m.node_pool == pool.name and m.multi_node]
        disaggregated = [m.name for m in models if m.node_pool == pool.name and m.disaggregation is not None]
        if multi and pool.headroom is not None:
            raise RuleError(
                ("gpuNodePools", i, "headroom"),
                pool.headroom.gpus,
                f"is not allowed on pool {pool.name!r}: it serves {', '.join(multi)}, whose replicas span "
                "nodes, and a headroom placeholder is one pod on one node; remove headroom",
            )
        if pool.placement_zone is not None and not multi and not disaggregated:
            raise RuleError(
                ("gpuNodePools", i, "placementZone"),
                pool.placement_zone,
                "is only for pools serving a multi-node model (pipelineParallelSize > 1) or a disaggregated "
                f"one (disaggregation); pool {pool.name!r} serves neither, so remove it",
            )


def check_fits_nodes(at: tuple[str | int, ...], m: ModelConfig, pool: GpuNodePool) -> None:
    """Weights plus one maxModelLen sequence's KV cache, split over the replica's T x N GPUs (pipeline parallel
    splits the layers, so the weights and the KV cache of each layer live on one stage), must fit in
    gpuMemoryUtilization of one GPU."""
    gpus = m.replica_gpus
    gpu = min((i.gpu for i in pool.instances), key=lambda g: g.memory_gib)
    weights, kv = weights_and_kv_gib(m)
    usable = gpu.memory_gib * m.gpu_memory_utilization
    if (weights + kv) / gpus <= usable:
        return
    tp = m.tensor_parallel_size
    nodes = next(
        (n for n in range(m.pipeline_parallel_size + 1, 17) if (weights + kv) / (n * tp) <= usable), None
    )
    raise RuleError(
        (*at, "pipelineParallelSize"),
        m.pipeline_parallel_size,
        f"is too small for {m.hugging_face_id} at maxModelLen {m.max_model_len}: {weights:.1f} GiB of weights "
        f"+ {kv:.1f} GiB of KV cache for one {m.max_model_len}-token sequence = {weights + kv:.1f} GiB, "
        f"{(weights + kv) / gpus:.1f} GiB per GPU over {m.pipeline_parallel_size} nodes x "
        f"{plural(tp, 'GPU')}, but one {gpu.name} of pool {pool.name!r} gives {gpu.memory_gib} GiB x "
        f"gpuMemoryUtilization {m.gpu_memory_utilization} = {usable:.1f} GiB; allowed: "
        + (f"pipelineParallelSize {nodes} or more, " if nodes else "")
        + "a shorter maxModelLen, or a pool with larger GPUs",
    )
