"""The CPU KV tier in the stack schema (config/schema/kv_offload.py): each rule refuses with the file, line,
field, value and what is allowed, before any resource."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from llm_platform.config.loader import parse
from llm_platform.config.schema import KvCacheOffload, forecast_config_hash
from tests.conftest import config_error, fixture_stack, load_fixture, stack_values


def _values() -> dict[str, Any]:
    return stack_values("kvtier")


def _chat(values: dict[str, Any]) -> dict[str, Any]:
    return values["models"][0]


def test_fixture_has_a_native_and_an_lmcache_tier() -> None:
    cfg = load_fixture("kvtier")
    tiers = {m.name: m.kv_cache_offload for m in cfg.models}
    assert tiers == {
        "chat-tier": KvCacheOffload.model_validate({"backend": "native", "cpuGiBPerReplica": 12}),
        "docs-tier": KvCacheOffload.model_validate({"backend": "lmcache", "cpuGiBPerReplica": 10}),
    }


def test_a_model_without_the_block_has_no_tier() -> None:
    assert all(m.kv_cache_offload is None for m in load_fixture("dev").models)


def test_backend_defaults_to_native() -> None:
    assert KvCacheOffload.model_validate({"cpuGiBPerReplica": 12}).backend == "native"


def test_unknown_backend_is_refused_with_the_allowed_ones() -> None:
    values = _values()
    _chat(values)["kvCacheOffload"]["backend"] = "mooncake"
    message = config_error(values)
    assert "models[0] (chat-tier).kvCacheOffload.backend" in message and "'native' or 'lmcache'" in message


def test_a_tier_not_larger_than_the_gpu_kv_cache_is_refused_with_the_numbers(tmp_path: Path) -> None:
    """Qwen2.5-1.5B on a 24 GB GPU at gpuMemoryUtilization 0.5: 12 GiB less 2.9 GiB of weights = 9.1 GiB."""
    path = tmp_path / "Pulumi.kvtier.yaml"
    path.write_text(
        fixture_stack("kvtier").read_text().replace("cpuGiBPerReplica: 12", "cpuGiBPerReplica: 8")
    )
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "cpuGiBPerReplica: 8" in text)
    message = config_error(path)
    assert message.startswith(f"{path}:{line}: models[0] (chat-tier).kvCacheOffload.cpuGiBPerReplica: 8 ")
    assert "is not larger than the 9.1 GiB of KV cache one replica can hold in GPU memory" in message
    assert "allowed: more than 9.1 GiB" in message


@pytest.mark.parametrize(
    "arg",
    [
        '--kv-transfer-config={"kv_connector":"NixlConnector"}',
        "--kv-offloading-size=64",
        "--kv-offloading-backend",
    ],
)
def test_the_users_own_offload_flags_are_refused(arg: str) -> None:
    values = _values()
    _chat(values)["extraArgs"] = [arg]
    message = config_error(values)
    assert "models[0] (chat-tier).extraArgs[0]" in message
    assert "the platform writes vLLM's KV offload flags itself from kvCacheOffload" in message


@pytest.mark.parametrize("arg", ["--no-enable-prefix-caching", "--enable-prefix-caching=false"])
def test_prefix_caching_off_is_refused(arg: str) -> None:
    values = _values()
    _chat(values)["extraArgs"] = ["--max-num-batched-tokens", "2048", arg]
    message = config_error(values)
    assert "models[0] (chat-tier).extraArgs[2]" in message and "turns prefix caching off" in message


@pytest.mark.parametrize("args", [["--max-num-batched-tokens", "8192"], ["--max-num-batched-tokens=16384"]])
def test_batched_tokens_not_below_max_model_len_are_refused(args: list[str]) -> None:
    values = _values()
    _chat(values)["extraArgs"] = args
    message = config_error(values)
    assert "models[0] (chat-tier).extraArgs[0]" in message
    assert "is not below maxModelLen 8192" in message and "--max-num-batched-tokens 8191 or less" in message


def test_batched_tokens_below_max_model_len_pass_and_the_rules_are_off_without_a_tier() -> None:
    values = _values()
    del _chat(values)["kvCacheOffload"]
    _chat(values)["extraArgs"] = ["--max-num-batched-tokens", "8192", "--no-enable-prefix-caching"]
    assert parse(values).models[0].kv_cache_offload is None


def test_an_mla_model_is_refused() -> None:
    values = _values()
    model = _chat(values)
    model["huggingFaceId"] = "deepseek-ai/DeepSeek-V2-Lite-Chat"
    model["geometry"] = {"parameters": 15.7e9, "layers": 27, "kvHeads": 16, "headDim": 128}
    model["gpuMemoryUtilization"] = 0.9
    values["gpuNodePools"][0]["instanceFamilies"] = ["p5"]
    values["gpuNodePools"][0]["instanceSizes"] = ["48xlarge"]
    values["gpuNodePools"][0]["gpuLimit"] = 48
    del values["models"][1]
    message = config_error(values)
    assert "models[0] (chat-tier).huggingFaceId" in message and "multi-head latent attention (MLA)" in message


def test_a_zero_or_negative_tier_is_refused() -> None:
    values = _values()
    _chat(values)["kvCacheOffload"]["cpuGiBPerReplica"] = 0
    assert "kvCacheOffload.cpuGiBPerReplica: 0 is not allowed" in config_error(values)


def test_a_forecast_hash_keeps_its_value_without_a_tier_and_changes_with_one() -> None:
    """A key added after forecasts were written is left out of the hash while unset: the costs fixture's
    forecasts (hashed before kvCacheOffload existed) still load; a tier is part of what was simulated."""
    cfg = load_fixture("costs")
    assert cfg.costs.forecasts, "the costs fixture holds forecasts validated against their hashes"
    tiered = load_fixture("kvtier")
    model, pool = tiered.models[0], tiered.pool("gpu-tier")
    bare = model.model_copy(update={"kv_cache_offload": None})
    assert forecast_config_hash(model, pool, tiered.environment) != forecast_config_hash(
        bare, pool, tiered.environment
    )
