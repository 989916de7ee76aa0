"""LoRA adapters of a model: `models[].adapters: [{name, source, revision, rank}]`, served by the model's own vLLM.

vLLM (the pinned image, vllm/config/lora.py `LoRAConfig`): `--enable-lora` turns LoRA on; `--max-loras` is the
number of adapters one batch may carry (each a GPU slot pre-allocated at `--max-lora-rank`); `--max-lora-rank`
takes only the values of `MaxLoRARanks` = Literal[1, 8, 16, 32, 64, 128, 256, 320, 512]; `--max-cpu-loras` (>=
max-loras, default max-loras) bounds the adapters kept loaded in CPU memory, from which a GPU slot is refilled;
`--lora-modules name=path` registers an adapter under its own model name (vllm/entrypoints/openai/cli_args.py
LoRAParserAction), so a request with `model: <name>` runs on the base model with that adapter.

The platform writes those flags itself (components/specs/serving.py `lora_args`): max-lora-rank is the smallest
allowed value at or above the largest adapter's rank, max-cpu-loras the number of adapters (every adapter stays
in CPU memory: a GPU slot refills by a host-to-device copy, never a disk read), and max-loras the number of
adapters unless the model's `adapterSlots` asks for fewer (fewer slots: less GPU memory, but a batch needing an
adapter no slot holds waits for a swap).

Adapters are synced like weights (components/specs/model_cache.py): the model's loader Job copies each one,
from the Hub at its pinned commit or from an S3 prefix, to `s3://<bucket>/models/_adapters/<model>/<adapter>/`
with a completion marker; nvme nodes sync that prefix beside the weights, FSx imports it with `models/`, and an
s3-mode pod copies it to a local volume (vLLM reads adapters from a directory only).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from llm_platform.config.schema import LoraAdapter, ModelConfig

# vllm/config/lora.py at the pinned image: `MaxLoRARanks = Literal[1, 8, 16, 32, 64, 128, 256, 320, 512]`
VLLM_MAX_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
# AI Gateway turns an AIGatewayRoute into an HTTPRoute, whose rules take at most 64 matches (Gateway API v1.5.1
# HTTPRouteRule.matches maxItems 64): the base model's match plus one per adapter share one rule
MAX_ADAPTERS = 63
HUB_REVISION = re.compile(r"^[0-9a-f]{40}$")
S3_SOURCE = re.compile(r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/[^\s]+$")
HUB_SOURCE = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")

# vLLM flags the platform writes from `adapters`: in extraArgs they would contradict the list
RESERVED_LORA_FLAGS = ("--enable-lora", "--max-loras", "--max-lora-rank", "--max-cpu-loras", "--lora-modules")


def is_s3(source: str) -> bool:
    return source.startswith("s3://")


def max_lora_rank(adapters: Sequence[LoraAdapter]) -> int:
    """vLLM's `--max-lora-rank`: the smallest value it allows at or above every adapter's rank."""
    top = max(a.rank for a in adapters)
    return next(r for r in VLLM_MAX_LORA_RANKS if r >= top)


def max_loras(model: ModelConfig) -> int:
    """vLLM's `--max-loras`: GPU slots, one per adapter unless `adapterSlots` sets fewer."""
    return model.adapter_slots or len(model.adapters)


def check_adapter_source(source: str, revision: str | None) -> None:
    """One adapter's source and revision (LoraAdapter's validator raises these RuleErrors at its fields)."""
    from llm_platform.config.schema import RuleError

    if is_s3(source):
        if not S3_SOURCE.match(source):
            raise RuleError(
                ("source",),
                source,
                "is not an S3 prefix; allowed: s3://<bucket>/<prefix> (the adapter's directory, with "
                "adapter_config.json and the adapter weights)",
            )
        if revision is not None:
            raise RuleError(
                ("revision",),
                revision,
                "is only for Hugging Face sources; an S3 prefix has no commit: version the prefix itself "
                "(s3://bucket/adapter/v3); allowed: remove revision",
            )
        return
    if not HUB_SOURCE.match(source):
        raise RuleError(
            ("source",),
            source,
            "is neither an S3 prefix nor a Hugging Face repo id; allowed: s3://<bucket>/<prefix> or <owner>/<name>",
        )
    if revision is None or not HUB_REVISION.match(revision):
        raise RuleError(
            ("revision",),
            revision,
            "is not a pinned commit: a Hugging Face source needs the 40-hex sha of the repo's commit "
            f"(huggingface.co/{source}/commits/main), so every sync copies the same files; allowed: 40 "
            "lowercase hex digits",
        )


def check_adapter_rank(rank: int) -> int:
    from llm_platform.config.schema import RuleError

    if rank > VLLM_MAX_LORA_RANKS[-1]:
        raise RuleError(
            ("rank",),
            rank,
            f"is above vLLM's largest --max-lora-rank {VLLM_MAX_LORA_RANKS[-1]}; allowed: 1 to "
            f"{VLLM_MAX_LORA_RANKS[-1]} (vLLM's --max-lora-rank choices: "
            f"{', '.join(map(str, VLLM_MAX_LORA_RANKS))}; the platform rounds up to the next)",
        )
    return rank


def check_adapters(models: Sequence[ModelConfig]) -> None:
    """Across models: adapter names are model names at the gateway and vLLM, so unique and distinct from every
    model's name; slots within the list; adapters need the model bucket (not `cache: hub`). Every broken rule
    is raised (RuleErrors)."""
    from llm_platform.config.schema import Problems, RuleError

    problems = Problems()
    model_names = {m.name: i for i, m in enumerate(models)}
    seen: dict[str, str] = {}
    for i, m in enumerate(models):
        at = ("models", i)
        for j, a in enumerate(m.adapters):
            where = (*at, "adapters", j, "name")
            if a.name in model_names:
                problems.errors.append(
                    RuleError(
                        where,
                        a.name,
                        f"is the name of models[{model_names[a.name]}]; a client selects an adapter by its name "
                        "as the request's model, so adapter names must differ from every model's name",
                    )
                )
            elif a.name in seen:
                problems.errors.append(
                    RuleError(
                        where,
                        a.name,
                        f"is already an adapter of model {seen[a.name]!r}; adapter names must be unique",
                    )
                )
            seen.setdefault(a.name, m.name)
        with problems.check():
            _check_slots_and_cache(at, m)
    problems.raise_all()


def _check_slots_and_cache(at: tuple[str | int, ...], m: ModelConfig) -> None:
    from llm_platform.config.schema import RuleError

    if m.adapter_slots is not None and not m.adapters:
        raise RuleError(
            (*at, "adapterSlots"), m.adapter_slots, "needs adapters; allowed: remove it, or list adapters"
        )
    if m.adapters and m.adapter_slots is not None and m.adapter_slots > len(m.adapters):
        raise RuleError(
            (*at, "adapterSlots"),
            m.adapter_slots,
            f"is more than the model's {len(m.adapters)} adapters; vLLM would reserve GPU memory for slots "
            f"no adapter fills; allowed: 1 to {len(m.adapters)}",
        )
    if m.adapters and m.cache == "hub":
        raise RuleError(
            (*at, "cache"),
            m.cache,
            "cannot serve adapters: they are synced like weights through the model bucket (at their pinned "
            "revision) and 'hub' has no bucket copy; use nvme, fsx or s3, or remove adapters",
        )
