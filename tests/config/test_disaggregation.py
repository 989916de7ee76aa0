"""Prefill/decode disaggregation in the stack schema (config/schema/disaggregation.py): what a P/D model needs of
its pool and its roles, refused before any resource with the field, the value and what is allowed."""

from __future__ import annotations

from typing import Any

import pytest

from llm_platform.facts.versions import EFA_VLLM_IMAGE, VLLM_IMAGE
from tests.conftest import config_error, load_fixture, stack_values


def _values() -> dict[str, Any]:
    return stack_values("pd")


def _pd(values: dict[str, Any]) -> dict[str, Any]:
    return values["models"][0]["disaggregation"]


def test_fixture_resolves_both_roles_on_the_efa_image() -> None:
    cfg = load_fixture("pd")
    (model,) = cfg.models
    d = model.disaggregation
    assert d is not None and d.kv_transport == "nixl-libfabric"
    assert (d.prefill.tensor_parallel_size, d.decode.tensor_parallel_size) == (4, 4)
    assert (d.prefill.autoscaling.signal, d.decode.autoscaling.signal) == ("queueDepth", "kvCacheUsage")
    # the model names no image: a model that needs EFA runs the EFA image, an aggregated one the stock one
    assert model.image == EFA_VLLM_IMAGE and model.needs_efa
    assert load_fixture("dev").models[0].image == VLLM_IMAGE
    # a multi-node LeaderWorkerSet talks NCCL over EFA: the EFA image too
    assert load_fixture("multinode").models[0].image == EFA_VLLM_IMAGE


def test_pool_gpu_limit_counts_every_role_at_max() -> None:
    """prefill 2 x 4 + decode 4 x 4 = 24 GPUs at maxReplicas: a limit of 16 is refused with the 24."""
    values = _values()
    values["gpuNodePools"][0]["gpuLimit"] = 16
    message = config_error(values)
    assert "gpuLimit" in message and "24" in message


@pytest.mark.parametrize(
    ("role", "signal"), [("prefill", "kvCacheUsage"), ("decode", "queueDepth"), ("decode", "ttft")]
)
def test_each_role_scales_on_its_own_signal(role: str, signal: str) -> None:
    values = _values()
    _pd(values)[role]["autoscaling"]["signal"] = signal
    message = config_error(values)
    assert f"disaggregation.{role}.autoscaling.signal: {signal!r} is not a {role} signal" in message
    allowed = "queueDepth, ttft" if role == "prefill" else "kvCacheUsage, runningRequests"
    assert f"allowed: {allowed}" in message


def test_pool_without_efa_is_refused() -> None:
    values = _values()
    values["gpuNodePools"][0] |= {"instanceFamilies": ["g6e"], "instanceSizes": ["xlarge"]}
    values["models"][0] |= {"huggingFaceId": "meta-llama/Llama-3.1-8B-Instruct", "tensorParallelSize": 1}
    _pd(values)["prefill"]["tensorParallelSize"] = _pd(values)["decode"]["tensorParallelSize"] = 1
    message = config_error(values)
    assert "g6e.xlarge, which has no EFA interface" in message and "NIXL" in message


def test_pool_without_placement_zone_is_refused() -> None:
    values = _values()
    del values["gpuNodePools"][0]["placementZone"]
    message = config_error(values)
    assert "nodePool: 'p5-efa' has no placementZone" in message and "one zone" in message


def test_role_tensor_parallel_must_divide_the_node() -> None:
    """A role of TP 8 on an 8-GPU node is fine; the decode TP must be the model's own."""
    values = _values()
    _pd(values)["decode"]["tensorParallelSize"] = 8
    message = config_error(values)
    assert (
        "disaggregation.decode.tensorParallelSize: 8 must equal the model's tensorParallelSize 4" in message
    )


def test_not_with_pipeline_parallel() -> None:
    values = _values()
    values["models"][0]["pipelineParallelSize"] = 2
    message = config_error(values)
    assert "pipelineParallelSize: 2 cannot be combined with disaggregation" in message


def test_min_above_max_is_refused() -> None:
    values = _values()
    _pd(values)["prefill"]["autoscaling"] |= {"minReplicas": 3, "maxReplicas": 2}
    message = config_error(values)
    assert "disaggregation.prefill.autoscaling.minReplicas: 3 is larger than maxReplicas 2" in message


def test_kv_transport_other_than_libfabric_is_refused() -> None:
    values = _values()
    _pd(values)["kvTransport"] = "nixl-ucx"
    assert "kvTransport" in config_error(values)


def test_a_cpu_kv_tier_on_a_disaggregated_model_is_refused() -> None:
    """vLLM takes one --kv-transfer-config: the roles' NixlConnector and a CPU tier's connector would be two."""
    values = _values()
    values["models"][0]["kvCacheOffload"] = {"cpuGiBPerReplica": 512}
    message = config_error(values)
    assert ".kvCacheOffload: true cannot be combined with disaggregation" in message
    assert "allowed: remove kvCacheOffload, or remove disaggregation" in message
