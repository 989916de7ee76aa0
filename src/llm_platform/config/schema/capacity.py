"""A pool's GPUs against the models it serves: the one definition of the GPUs a pool's models take (the plan
and the simulator read it too), and the rules built on it: a replica's GPUs hold its weights and KV cache,
`gpuLimit` lets every model reach maxReplicas, headroom holds whole replicas within the limit."""

from __future__ import annotations

from collections.abc import Sequence

from llm_platform.config.schema.base import RuleError, plural
from llm_platform.config.schema.models import ModelConfig
from llm_platform.config.schema.pools import GpuNodePool, Headroom
from llm_platform.facts.catalog import GpuModel


def served_by(pool: GpuNodePool, models: Sequence[ModelConfig]) -> list[ModelConfig]:
    """The models whose replicas run on `pool`."""
    return [m for m in models if m.node_pool == pool.name]


def replica_gpus(pool: GpuNodePool, models: Sequence[ModelConfig]) -> int:
    """GPUs of one headroom placeholder: the largest replica (tensor-parallel size) among the pool's models,
    so preempting one placeholder frees room for any one replica of the pool. The one definition: the
    schema's headroom rules, the plan's placeholders and the simulator's tuner read it."""
    return max((_largest_pod_group_gpus(m) for m in served_by(pool, models)), default=0)


def _largest_pod_group_gpus(model: ModelConfig) -> int:
    """GPUs of the model's largest replica: for a disaggregated model its larger role's pod (its prefill role's
    tensor parallelism may exceed the model's, which is the decode role's)."""
    d = model.disaggregation
    if d is None:
        return model.replica_gpus
    return max(r.tensor_parallel_size for _, r in d.roles())


def gpus_at_max_replicas(pool: GpuNodePool, models: Sequence[ModelConfig]) -> int:
    """GPUs the pool's models request with every one at maxReplicas: what its `gpuLimit` must allow (the
    schema's rule) and what the plan's `pool_headroom_gpus` subtracts from it."""
    return sum(m.gpus_at_replicas("max") for m in served_by(pool, models))


def gpus_at_min_replicas(pool: GpuNodePool, models: Sequence[ModelConfig]) -> int:
    """GPUs the pool's models hold with every one at minReplicas (what headroom must fit next to)."""
    return sum(m.gpus_at_replicas("min") for m in served_by(pool, models))


def _check_headroom(at: tuple[str | int, ...], pool: GpuNodePool, models: list[ModelConfig]) -> None:
    """Headroom the placeholders can hold: whole replicas, raised (never lowered) by windows, and within
    the pool's GPU limit next to what the pool's models hold at their minimum. `at`: the pool's `headroom`."""
    headroom = pool.headroom
    assert headroom is not None
    served = served_by(pool, models)
    if not served:
        raise RuleError(
            at,
            headroom.gpus,
            f"is not allowed: pool {pool.name!r} serves no model, so warm GPUs there would never be used; "
            "allowed: remove headroom, or point a model's nodePool at the pool",
        )
    if headroom.peak_gpus == 0:
        raise RuleError(
            (*at, "gpus"),
            0,
            "with no window above 0 keeps nothing warm; allowed: 1 or more GPUs, or remove headroom",
        )
    unit = replica_gpus(pool, models)
    largest = max(served, key=lambda m: m.tensor_parallel_size)
    fields: list[tuple[tuple[str | int, ...], int]] = [(("gpus",), headroom.gpus)]
    fields += [(("schedule", j, "gpus"), w.gpus) for j, w in enumerate(headroom.schedule)]
    for field, gpus in fields:
        if gpus % unit:
            raise RuleError(
                (*at, *field),
                gpus,
                f"is not a multiple of {unit}, the GPUs of one {largest.name} replica (tensorParallelSize "
                f"{unit}); placeholders hold whole replicas; allowed: 0, {unit}, {2 * unit}, ...",
            )
    for j, w in enumerate(headroom.schedule):
        if w.gpus < headroom.gpus:
            raise RuleError(
                (*at, "schedule", j, "gpus"),
                w.gpus,
                f"is below headroom.gpus {headroom.gpus}; a window can only raise the warm GPUs (KEDA's cron "
                f"trigger adds replicas); allowed: {headroom.gpus} or more (set headroom.gpus to the lowest level)",
            )
    at_minimum = gpus_at_min_replicas(pool, models)
    if headroom.peak_gpus + at_minimum > pool.gpu_limit:
        held = ", ".join(f"{m.name} {m.autoscaling.min_replicas}x{m.tensor_parallel_size}" for m in served)
        peak = ("gpus",) if headroom.peak_gpus == headroom.gpus else _peak_window(headroom)
        raise RuleError(
            (*at, *peak),
            headroom.peak_gpus,
            f"warm GPUs plus the {plural(at_minimum, 'GPU')} the pool's models hold at minReplicas ({held}) "
            f"exceed gpuLimit {pool.gpu_limit}; the placeholders could never all run; allowed: at most "
            f"{max(0, pool.gpu_limit - at_minimum)} warm GPUs, or raise gpuLimit",
        )


def _peak_window(headroom: Headroom) -> tuple[str | int, ...]:
    """The field of the window holding the most warm GPUs."""
    j = max(range(len(headroom.schedule)), key=lambda k: headroom.schedule[k].gpus)
    return ("schedule", j, "gpus")


GIB = 2**30


def weights_and_kv_gib(m: ModelConfig) -> tuple[float, float]:
    """GiB of the model's weights and of one maxModelLen sequence's KV cache: the least a replica's GPUs hold."""
    prof = m.profile
    return prof.weight_bytes / GIB, prof.kv_bytes_per_token * m.max_model_len / GIB


def _check_fits_gpus(at: tuple[str | int, ...], m: ModelConfig, pool: GpuNodePool) -> None:
    """Weights plus the KV cache of one maxModelLen sequence, split over the tensor-parallel GPUs, must fit
    in gpuMemoryUtilization of the smallest GPU the pool may give a replica (vLLM refuses to start otherwise;
    activations and CUDA graphs need a little more, so this is the floor). A multi-node replica's fit is
    config/schema/multinode.py `check_fits_nodes`."""
    tp = m.tensor_parallel_size
    gpu: GpuModel = min((i.gpu for i in pool.instances if i.gpus >= tp), key=lambda g: g.memory_gib)
    weights, kv = weights_and_kv_gib(m)
    usable = gpu.memory_gib * m.gpu_memory_utilization
    if (weights + kv) / tp <= usable:
        return
    fitting_tp = next((t for t in (2, 4, 8) if t > tp and (weights + kv) / t <= usable), None)
    longest = int((usable * tp - weights) * GIB / m.profile.kv_bytes_per_token)
    options = (
        [f"tensorParallelSize {fitting_tp} on a pool with {fitting_tp}-GPU instances"] if fitting_tp else []
    )
    if longest >= 1:
        options.append(f"maxModelLen {longest} or less")
    options.append("a pool with larger GPUs")
    raise RuleError(
        (*at, "tensorParallelSize"),
        tp,
        f"is too small for {m.hugging_face_id} at maxModelLen {m.max_model_len}: {weights:.1f} GiB of weights "
        f"+ {kv:.1f} GiB of KV cache for one {m.max_model_len}-token sequence = {weights + kv:.1f} GiB, "
        f"{(weights + kv) / tp:.1f} GiB per GPU over {plural(tp, 'GPU')}, but one {gpu.name} of pool "
        f"{pool.name!r} gives {gpu.memory_gib} GiB x gpuMemoryUtilization {m.gpu_memory_utilization} = "
        f"{usable:.1f} GiB; allowed: {', or '.join(options)}",
    )


def _replica_shape(m: ModelConfig) -> str:
    """`8 GPUs`, or for a multi-node replica `2 nodes x 8 GPUs`."""
    gpus = plural(m.tensor_parallel_size, "GPU")
    return f"{m.pipeline_parallel_size} nodes x {gpus}" if m.multi_node else gpus


def _check_pool_limit(at: tuple[str | int, ...], pool: GpuNodePool, models: list[ModelConfig]) -> None:
    """The NodePool's GPU limit must let every model of the pool reach maxReplicas at once."""
    served = served_by(pool, models)
    needed = gpus_at_max_replicas(pool, models)
    if pool.gpu_limit >= needed:
        return
    parts = ", ".join(f"{m.name} {m.autoscaling.max_replicas} x {_replica_shape(m)}" for m in served)
    raise RuleError(
        (*at, "gpuLimit"),
        pool.gpu_limit,
        f"is less than the {plural(needed, 'GPU')} the pool's models reach at maxReplicas ({parts}); "
        f"Karpenter would stop adding nodes before them; allowed: gpuLimit {needed} or more, or lower maxReplicas",
    )
