"""A model's LoRA adapters as the platform serves them: vLLM's LoRA settings and where each adapter is synced.

The one definition the vLLM args (components/specs/serving.py), the sync (components/specs/model_cache.py), the
gateway routes (components/specs/inference_pool.py) and the simulator (simulator/serving/lora.py) read.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_platform.config.schema import ModelConfig
from llm_platform.config.schema.adapters import is_s3, max_lora_rank
from llm_platform.plan import naming


def max_loras(model: ModelConfig) -> int:
    """vLLM's `--max-loras`: GPU slots, one per adapter unless `adapterSlots` sets fewer."""
    return model.adapter_slots or len(model.adapters)


@dataclass(frozen=True)
class AdapterPlan:
    name: str  # the model name a client sends (vLLM --lora-modules name=..., the gateway's route match)
    source: str  # s3://bucket/prefix or a Hub repo id
    revision: str | None  # the Hub commit copied (None for S3)
    rank: int
    prefix: str  # s3://<model bucket>/<prefix>/: the synced copy
    relative_dir: str  # the copy's directory below the models mount: `_adapters/<model>/<adapter>`

    @property
    def marker_key(self) -> str:
        return f"{self.prefix}/{naming.READY_MARKER}"

    @property
    def from_s3(self) -> bool:
        return is_s3(self.source)


@dataclass(frozen=True)
class LoraPlan:
    adapters: tuple[AdapterPlan, ...]
    max_loras: int  # --max-loras: GPU slots, adapters in one batch
    max_lora_rank: int  # --max-lora-rank: one of vLLM's choices, at or above every adapter's rank
    max_cpu_loras: int  # --max-cpu-loras: every adapter stays loaded in CPU memory
    prefix: str  # s3://<bucket>/<prefix>/: all the model's adapters

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.adapters)

    @property
    def s3_sources(self) -> tuple[str, ...]:
        """The S3 prefixes the loader copies from (its role reads them)."""
        return tuple(a.source for a in self.adapters if a.from_s3)


def lora_plan(model: ModelConfig) -> LoraPlan | None:
    if not model.adapters:
        return None
    root = naming.adapters_prefix(model.name)
    adapters = tuple(
        AdapterPlan(
            name=a.name,
            source=a.source,
            revision=a.revision,
            rank=a.rank,
            prefix=f"{root}/{a.name}",
            relative_dir=f"{naming.ADAPTERS_DIR}/{model.name}/{a.name}",
        )
        for a in model.adapters
    )
    return LoraPlan(
        adapters=adapters,
        max_loras=max_loras(model),
        max_lora_rank=max_lora_rank(model.adapters),
        max_cpu_loras=len(adapters),
        prefix=root,
    )
