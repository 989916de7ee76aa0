"""LoRA adapters in the stack schema (config/schema/adapters.py): each bad list is refused before any resource, naming
the field, the value and what is allowed."""

from __future__ import annotations

from typing import Any

import pytest

from llm_platform.config.schema import VLLM_MAX_LORA_RANKS, max_lora_rank
from llm_platform.plan.lora import max_loras
from tests.conftest import config_error, load_fixture, stack_values


def _values() -> dict[str, Any]:
    return stack_values("lora")


def test_fixture_sizes_vllm_from_the_list() -> None:
    llama, chat = load_fixture("lora").models
    assert [a.name for a in llama.adapters] == ["sql-lora", "support-lora", "legal-lora"]
    # ranks 16, 8, 64 -> 64; two slots asked for; rank 4 rounds up to vLLM's 8
    assert (max_lora_rank(llama.adapters), max_loras(llama)) == (64, 2)
    assert (max_lora_rank(chat.adapters), max_loras(chat)) == (8, 1)


def test_adapter_name_may_not_be_a_model_name() -> None:
    values = _values()
    values["models"][0]["adapters"][0]["name"] = "chat-7b"
    message = config_error(values)
    assert "models[0] (llama-8b).adapters[0]" in message and "'chat-7b'" in message
    assert "models[1]" in message


def test_adapter_names_are_unique_across_models() -> None:
    values = _values()
    values["models"][1]["adapters"][0]["name"] = "sql-lora"
    message = config_error(values)
    assert (
        "models[1] (chat-7b).adapters[0]" in message and "already an adapter of model 'llama-8b'" in message
    )


def test_hub_source_needs_a_pinned_commit() -> None:
    values = _values()
    values["models"][0]["adapters"][0]["revision"] = "main"
    message = config_error(values)
    assert "adapters[0]" in message and "'main'" in message and "40-hex" in message
    del values["models"][0]["adapters"][0]["revision"]
    assert "(sql-lora).revision: is not a pinned commit" in config_error(values)


def test_s3_source_takes_no_revision() -> None:
    values = _values()
    values["models"][1]["adapters"][0]["revision"] = "a" * 40
    assert "only for Hugging Face sources" in config_error(values)


def test_rank_above_vllm_choices_is_refused() -> None:
    values = _values()
    values["models"][0]["adapters"][0]["rank"] = 1024
    message = config_error(values)
    assert "1024" in message and ", ".join(map(str, VLLM_MAX_LORA_RANKS)) in message


def test_slots_within_the_list() -> None:
    values = _values()
    values["models"][0]["adapterSlots"] = 4
    message = config_error(values)
    assert "models[0] (llama-8b).adapterSlots" in message and "allowed: 1 to 3" in message


def test_hub_cache_cannot_serve_adapters() -> None:
    values = _values()
    values["environment"] = "dev"
    values["cluster"]["amiVersions"] = {"al2023": "latest", "bottlerocket": "latest"}
    values["models"][0]["cache"] = "hub"
    message = config_error(values)
    assert "models[0] (llama-8b).cache" in message and "use nvme, fsx or s3" in message


@pytest.mark.parametrize("flag", ["--enable-lora", "--max-loras=4", "--lora-modules"])
def test_lora_flags_in_extra_args_are_refused(flag: str) -> None:
    values = _values()
    values["models"][0]["extraArgs"] = [flag]
    message = config_error(values)
    assert flag in message and "adapters" in message
