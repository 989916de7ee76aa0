"""Policy vllm-kv-offload-memory: a vLLM pod with a CPU KV tier has memory request, limit and memory-backed
/dev/shm of at least the tier x 1.2, on any render (the platform's own renders pass: test_render_compliance)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from policy.llm_platform_policies import vllm_kv_offload_memory
from policy.llm_platform_policies.kv_offload import quantity_bytes, tier_gib
from tests.policy.builders import (
    DEPLOYMENT,
    UNKNOWN_STRING,
    container_of,
    pod_spec_of,
    resource_args,
    violations,
    vllm_deployment,
)

LMCACHE = json.dumps({"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}, separators=(",", ":"))


def _tiered(gib: str = "20", memory: str = "40Gi", shm: str = "26Gi") -> dict[str, Any]:
    d = vllm_deployment(tp=1)
    container = container_of(d)
    container["args"] += ["--kv-offloading-backend", "native", "--kv-offloading-size", gib]
    container["resources"] = {
        "requests": {"memory": memory, "nvidia.com/gpu": 1},
        "limits": {"memory": memory, "nvidia.com/gpu": 1},
    }
    pod_spec_of(d)["volumes"][0]["emptyDir"]["sizeLimit"] = shm
    return d


def _violations(d: dict[str, Any]) -> list[str]:
    return violations(vllm_kv_offload_memory, resource_args(DEPLOYMENT, d, stack="dev"))


def test_memory_and_shm_grown_for_the_tier_pass() -> None:
    assert _violations(_tiered()) == []


def test_a_pod_without_a_tier_is_not_checked() -> None:
    assert _violations(vllm_deployment(tp=1)) == []


def test_memory_below_the_tier_times_1_2_is_rejected() -> None:
    (message,) = _violations(_tiered(memory="20Gi"))
    assert "a CPU KV tier of 20 GiB needs at least 24 GiB" in message
    assert "memory request 20Gi" in message and "memory limit 20Gi" in message
    assert "/dev/shm" not in message.split("but has", 1)[1].split(";")[0]


def test_shm_not_grown_is_rejected() -> None:
    (message,) = _violations(_tiered(shm="16Gi"))
    assert "/dev/shm (memory emptyDir) sizeLimit 16Gi" in message


def test_shm_on_disk_counts_as_no_shm() -> None:
    d = _tiered()
    pod_spec_of(d)["volumes"][0] = {"name": "shm", "emptyDir": {"sizeLimit": "64Gi"}}
    (message,) = _violations(d)
    assert "/dev/shm (memory emptyDir) sizeLimit unset" in message


def test_lmcache_tier_is_per_rank_times_tensor_parallel() -> None:
    """LMCACHE_MAX_LOCAL_CPU_SIZE 10 on TP 2 is a 20 GiB tier: 24 GiB needed, 22 GiB is short."""
    d = vllm_deployment(tp=2)
    container = container_of(d)
    container["args"] += ["--kv-transfer-config", LMCACHE]
    container["env"].append({"name": "LMCACHE_MAX_LOCAL_CPU_SIZE", "value": "10"})
    container["resources"]["requests"] = {"memory": "22Gi"}
    container["resources"]["limits"]["memory"] = "30Gi"
    pod_spec_of(d)["volumes"][0]["emptyDir"]["sizeLimit"] = "30Gi"
    assert tier_gib(container) == 20
    (message,) = _violations(d)
    assert "tier of 20 GiB needs at least 24 GiB" in message and "memory request 22Gi" in message


def test_unknown_values_during_preview_are_not_reported() -> None:
    d = _tiered(memory="1Gi")
    container_of(d)["resources"]["requests"]["memory"] = UNKNOWN_STRING
    container_of(d)["resources"]["limits"]["memory"] = UNKNOWN_STRING
    assert _violations(d) == []


@pytest.mark.parametrize(
    ("value", "expected"), [("24Gi", 24 * 2**30), ("24576Mi", 24 * 2**30), ("30G", 30e9), ("abc", None)]
)
def test_quantities(value: str, expected: float | None) -> None:
    assert quantity_bytes(value) == expected
