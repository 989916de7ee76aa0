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
from typing import Annotated

from pydantic import Field, model_validator

from llm_platform.config.schema.base import Problems, RuleError, Schema, _dns_label

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


def check_adapter_source(source: str, revision: str | None) -> None:
    """One adapter's source and revision (LoraAdapter's validator raises these RuleErrors at its fields)."""
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
    if rank > VLLM_MAX_LORA_RANKS[-1]:
        raise RuleError(
            ("rank",),
            rank,
            f"is above vLLM's largest --max-lora-rank {VLLM_MAX_LORA_RANKS[-1]}; allowed: 1 to "
            f"{VLLM_MAX_LORA_RANKS[-1]} (vLLM's --max-lora-rank choices: "
            f"{', '.join(map(str, VLLM_MAX_LORA_RANKS))}; the platform rounds up to the next)",
        )
    return rank


class LoraAdapter(Schema):
    """A LoRA adapter of the model (config/schema/adapters.py): served by the model's vLLM under its own name."""

    name: Annotated[str, _dns_label(40)]
    # s3://<bucket>/<prefix> (the adapter's directory) or a Hugging Face repo id <owner>/<name>
    source: str
    # a Hub source's pinned commit (40-hex sha); none for an S3 prefix
    revision: str | None = None
    rank: Annotated[int, Field(ge=1)]

    @model_validator(mode="after")
    def _source_rules(self) -> LoraAdapter:
        problems = Problems()
        with problems.check():
            check_adapter_source(self.source, self.revision)
        with problems.check():
            check_adapter_rank(self.rank)
        problems.raise_all()
        return self
