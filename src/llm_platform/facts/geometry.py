"""A model profile from its Hugging Face `config.json` geometry (one definition for the CLI and the day simulation).

Fields read (transformers' LlamaConfig/Qwen2Config/MistralConfig names): `hidden_size`, `num_hidden_layers`,
`num_attention_heads`, `num_key_value_heads` (default: `num_attention_heads`, i.e. MHA), `head_dim` (default:
`hidden_size // num_attention_heads`), `intermediate_size`, `vocab_size`, `tie_word_embeddings` (default false) and
`torch_dtype` (float16/bfloat16) and `quantization_config` (GPTQ and AWQ at 4 or 8 bits: `bits`, `group_size`,
-1 for one group per input row; other methods are refused). The parameter count is the
model card's when given (`params`); otherwise it is counted from the geometry of a dense decoder with gated MLP
(q, k, v, o projections; gate, up, down; embeddings and LM head; norms ignored, < 0.01 %). A mixture of experts
(Mixtral's `num_local_experts`, Qwen-MoE's `num_experts`, DeepSeek's `n_routed_experts`) is refused: the replica
model reads every weight and computes 2 x parameters FLOPs per token, where an MoE's step reads only the experts
its tokens chose, and counting its geometry as dense would read Mixtral-8x7B as a 7B model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from llm_platform.facts.model_profiles import ModelProfile

DTYPES = ("bfloat16", "float16")
REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
EXPERT_FIELDS = ("num_local_experts", "num_experts", "n_routed_experts")
QUANT_METHODS = (
    "gptq",
    "awq",
)  # integer weights, FP16 scales and zero points per group (ModelProfile.weight_bytes)
QUANT_BITS = (4, 8)


class GeometryError(ValueError):
    """Bad geometry; the message names the source, the field, the value and what is allowed."""


def _int(source: str, config: Mapping[str, object], field: str) -> int:
    value = config.get(field)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise GeometryError(f"{source}: {field} = {value!r}; allowed: a whole number >= 1")
    return value


def counted_parameters(
    hidden: int,
    layers: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    intermediate: int,
    vocab: int,
    tied: bool,
) -> float:
    """Parameters of a dense gated-MLP decoder from its geometry."""
    attention = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2
    mlp = 3 * hidden * intermediate
    return float(layers * (attention + mlp) + vocab * hidden * (1 if tied else 2))


def from_config(
    config: Mapping[str, object], name: str, source: str = "config.json", params: float | None = None
) -> ModelProfile:
    """The profile of a model whose `config.json` is `config`; errors name `source` and the field."""
    for field in EXPERT_FIELDS:
        experts = config.get(field)
        if isinstance(experts, int) and not isinstance(experts, bool) and experts > 1:
            raise GeometryError(
                f"{source}: {field} = {experts}, a mixture-of-experts model; allowed: a dense decoder (no experts "
                "field, or 1): the replica model reads every weight each step, which an MoE does not"
            )
    for field in REQUIRED:
        _int(source, config, field)
    hidden = _int(source, config, "hidden_size")
    layers = _int(source, config, "num_hidden_layers")
    heads = _int(source, config, "num_attention_heads")
    kv_heads = _int(source, config, "num_key_value_heads") if "num_key_value_heads" in config else heads
    if heads % kv_heads:
        raise GeometryError(
            f"{source}: num_key_value_heads = {kv_heads}; allowed: a divisor of num_attention_heads ({heads})"
        )
    head_dim = _int(source, config, "head_dim") if config.get("head_dim") is not None else hidden // heads
    vocab = _int(source, config, "vocab_size")
    tied = config.get("tie_word_embeddings", False)
    if not isinstance(tied, bool):
        raise GeometryError(f"{source}: tie_word_embeddings = {tied!r}; allowed: true or false")
    dtype = config.get("torch_dtype", "bfloat16")
    if dtype not in DTYPES:
        raise GeometryError(f"{source}: torch_dtype = {dtype!r}; allowed: {', '.join(DTYPES)}")
    if params is None:
        if "intermediate_size" not in config:
            raise GeometryError(
                f"{source}: intermediate_size missing; allowed: a whole number >= 1 (or give the parameter count)"
            )
        intermediate = _int(source, config, "intermediate_size")
        params = counted_parameters(hidden, layers, heads, kv_heads, head_dim, intermediate, vocab, tied)
    bits, group = _quantization(source, config, hidden)
    return ModelProfile(
        name, params, layers, hidden, kv_heads, head_dim, vocab, tied_embeddings=tied, weight_bits=bits,
        group_size=group,
    )  # fmt: skip


def _quantization(source: str, config: Mapping[str, object], hidden: int) -> tuple[int, int]:
    """(weight bits, group size) of a checkpoint: 16-bit without `quantization_config`; GPTQ/AWQ's `bits` and
    `group_size` (-1: one group per input row, counted as hidden_size weights); any other method is refused
    rather than read as 16-bit weights, which would overstate a 4-bit model's weight read four times."""
    quant = config.get("quantization_config")
    if quant is None:
        return 16, 128
    field = "quantization_config"
    if not isinstance(quant, Mapping):
        raise GeometryError(
            f"{source}: {field} = {quant!r}; allowed: an object with quant_method, bits, group_size"
        )
    method = quant.get("quant_method")
    if method not in QUANT_METHODS:
        raise GeometryError(
            f"{source}: {field}.quant_method = {method!r}; allowed: {', '.join(QUANT_METHODS)} (the replica model "
            "knows integer weights with FP16 group scales; FP8 and other formats change the kernels and FLOPs)"
        )
    bits = quant.get("bits")
    if not isinstance(bits, int) or isinstance(bits, bool) or bits not in QUANT_BITS:
        raise GeometryError(f"{source}: {field}.bits = {bits!r}; allowed: {', '.join(map(str, QUANT_BITS))}")
    group = quant.get("group_size", 128)
    if group == -1:
        return bits, hidden
    if isinstance(group, bool) or not isinstance(group, int) or group < 1:
        raise GeometryError(f"{source}: {field}.group_size = {group!r}; allowed: a whole number >= 1, or -1")
    return bits, group


def from_file(path: str, params: float | None = None) -> ModelProfile:
    """The profile of the model whose Hugging Face `config.json` is at `path`."""
    try:
        config = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise GeometryError(
            f"--geometry {path}: {exc}; allowed: a readable Hugging Face config.json"
        ) from None
    if not isinstance(config, dict):
        raise GeometryError(f"--geometry {path}: not a JSON object; allowed: a Hugging Face config.json")
    name = config.get("_name_or_path") or Path(path).stem
    return from_config(config, str(name), source=path, params=params)
