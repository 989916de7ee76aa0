"""A model's `kvCacheOffload` block: a CPU tier under the GPU prefix cache (vLLM's native OffloadingConnector,
or LMCache in vLLM's process), sized per replica, and the rules that keep it from failing quietly.

The rules follow the requirements upstream states for the tier (awsdocs-neuron vllm-neuron guide
"How to use CPU KV offloading", 2026-11-20, which configures the same upstream OffloadingConnector): prefix
caching on, `--max-num-batched-tokens` below `--max-model-len` (chunked prefill), and a host tier larger than the
HBM KV cache ("a host tier that is not larger than HBM adds few hits"). MLA models are refused: Vultr's
inference cookbook (kv-cache-offloading, 2026-03-17: "MLA models are not supported", DeepSeek V3.2 failing
with a KeyError on its indexer's k_cache, Kimi-K2.5 listed unsupported) and the research notes
(../shared/research/serving_paths_2026.md, "KV offload flags") say so, and the pinned v0.30.0 tag could not be
read to prove otherwise. The platform writes vLLM's offload flags itself, so a model's
own `--kv-transfer-config` or offload flags would contradict them.
"""

from __future__ import annotations

import re
from typing import Literal, Protocol

from pydantic import Field

from llm_platform.config.schema.base import RuleError, Schema, plural
from llm_platform.config.schema.pools import GpuNodePool
from llm_platform.facts.model_profiles import ModelProfile

_GIB = 2**30

# vLLM flags the tier's own flags would contradict (vllm/engine/arg_utils.py: --kv-transfer-config,
# --kv-offloading-backend, --kv-offloading-size; the tier is written from kvCacheOffload)
OFFLOAD_FLAGS = ("--kv-transfer-config", "--kv-offloading-backend", "--kv-offloading-size")
# prefix caching off: argparse's BooleanOptionalAction negative form, or the flag given a false value
PREFIX_CACHING_OFF = re.compile(r"^--no-enable-prefix-caching$|^--enable-prefix-caching=(false|False|0|no)$")
BATCHED_TOKENS_FLAG = "--max-num-batched-tokens"
# multi-head latent attention (DeepSeek-V2/V3/R1, Kimi K2): one compressed latent per token instead of K and V
# per head; a model whose Hugging Face id matches is refused a tier (module docstring)
MLA_MODELS = re.compile(r"^(deepseek-ai/DeepSeek-(V2|V3|R1)(?!-Distill)|moonshotai/Kimi-K2)", re.IGNORECASE)


class KvCacheOffload(Schema):
    """A CPU tier of `cpuGiBPerReplica` GiB per replica (all its tensor-parallel ranks together, vLLM's
    `kv_offloading_size`), read by `native` (vLLM's OffloadingConnector) or `lmcache` (LMCacheConnectorV1)."""

    backend: Literal["native", "lmcache"] = "native"
    cpu_gib_per_replica: float = Field(gt=0, le=4096, alias="cpuGiBPerReplica")


class TieredModel(Protocol):
    """What the tier's rules read of a model (schema/models.py ModelConfig, which holds the block, so this
    module cannot import it back)."""

    @property
    def hugging_face_id(self) -> str: ...
    @property
    def tensor_parallel_size(self) -> int: ...
    @property
    def pipeline_parallel_size(self) -> int: ...
    @property
    def max_model_len(self) -> int: ...
    @property
    def gpu_memory_utilization(self) -> float: ...
    @property
    def extra_args(self) -> list[str]: ...
    @property
    def kv_cache_offload(self) -> KvCacheOffload | None: ...
    @property
    def multi_node(self) -> bool: ...
    @property
    def profile(self) -> ModelProfile: ...


def hbm_kv_gib(m: TieredModel, pool: GpuNodePool) -> float:
    """The most GPU KV cache one replica of `m` can hold on `pool`: gpuMemoryUtilization of the largest GPUs the
    pool may give it, less the weights (vLLM's profile also takes activations and CUDA graphs, so this is
    the upper bound the tier must exceed)."""
    tp = m.tensor_parallel_size
    gpu = max((i.gpu for i in pool.instances if i.gpus >= tp), key=lambda g: g.memory_gib)
    return tp * gpu.memory_gib * m.gpu_memory_utilization - m.profile.weight_bytes / _GIB


def _flag_value(args: list[str], i: int) -> str | None:
    """The value of the flag at `args[i]`: `--flag=value` or the next argument."""
    _, sep, value = args[i].partition("=")
    if sep:
        return value
    return args[i + 1] if i + 1 < len(args) else None


def _check_extra_args(at: tuple[str | int, ...], m: TieredModel) -> None:
    for i, arg in enumerate(m.extra_args):
        flag = arg.split("=", 1)[0]
        if flag in OFFLOAD_FLAGS:
            raise RuleError(
                (*at, "extraArgs", i),
                arg,
                "is not allowed with kvCacheOffload: the platform writes vLLM's KV offload flags itself from "
                "kvCacheOffload (backend, cpuGiBPerReplica); allowed: remove it, or remove kvCacheOffload",
            )
        if PREFIX_CACHING_OFF.match(arg):
            raise RuleError(
                (*at, "extraArgs", i),
                arg,
                "turns prefix caching off, and the CPU tier is a tier of the prefix cache: with it off nothing is "
                "ever loaded back; allowed: remove it (the platform turns prefix caching on)",
            )
        if flag == BATCHED_TOKENS_FLAG:
            value = _flag_value(m.extra_args, i)
            if value is not None and value.isdigit() and int(value) >= m.max_model_len:
                raise RuleError(
                    (*at, "extraArgs", i),
                    arg if "=" in arg else f"{arg} {value}",
                    f"is not below maxModelLen {m.max_model_len}; the CPU tier needs prefill in chunks "
                    f"(--max-num-batched-tokens < --max-model-len); allowed: {BATCHED_TOKENS_FLAG} "
                    f"{m.max_model_len - 1} or less, or leave it unset",
                )


def check_kv_offload(at: tuple[str | int, ...], m: TieredModel, pool: GpuNodePool) -> None:
    """The model's tier against the model and its pool (`at`: the model); needs a known geometry."""
    tier = m.kv_cache_offload
    if tier is None:
        return
    where = (*at, "kvCacheOffload")
    if m.multi_node:
        raise RuleError(
            where,
            {"cpuGiBPerReplica": tier.cpu_gib_per_replica},
            f"is not allowed on a multi-node replica (pipelineParallelSize {m.pipeline_parallel_size}): the "
            "platform sizes the tier's memory and /dev/shm on a single-node pod only; allowed: remove "
            "kvCacheOffload, or pipelineParallelSize 1",
        )
    if MLA_MODELS.match(m.hugging_face_id):
        raise RuleError(
            (*at, "huggingFaceId"),
            m.hugging_face_id,
            "uses multi-head latent attention (MLA), which vLLM's CPU offload is not known to support at the "
            "pinned version; allowed: a model with per-head K and V (GQA/MHA), or remove kvCacheOffload",
        )
    _check_extra_args(at, m)
    hbm = hbm_kv_gib(m, pool)
    if tier.cpu_gib_per_replica <= hbm:
        raise RuleError(
            (*where, "cpuGiBPerReplica"),
            tier.cpu_gib_per_replica,
            f"is not larger than the {hbm:.1f} GiB of KV cache one replica can hold in GPU memory on pool "
            f"{pool.name!r} ({plural(m.tensor_parallel_size, 'GPU')} x gpuMemoryUtilization "
            f"{m.gpu_memory_utilization} less {m.profile.weight_bytes / _GIB:.1f} GiB of weights); a CPU tier no "
            f"larger than the GPU cache adds few hits; allowed: more than {hbm:.1f} GiB",
        )
