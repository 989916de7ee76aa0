"""A model's drain plan (plan/drain.py): sized from its maxModelLen and the replica model's decode speed on its
GPU and tensor-parallel size, so the pod's grace period covers the longest generation it can be serving."""

from __future__ import annotations

import pytest

from llm_platform.facts.catalog import GPU_INSTANCES
from llm_platform.plan.drain import (
    DRAIN_MARGIN,
    EXIT_SECONDS,
    PRESTOP_SLEEP_SECONDS,
    drain_plan,
    replica_model,
)
from tests.plans import model_plan


@pytest.mark.parametrize(
    ("stack", "name"), [("dev", "qwen-1-5b"), ("prod", "llama-70b"), ("multinode", "llama-405b")]
)
def test_the_drain_covers_max_model_len_tokens_at_the_slowest_decode_step(stack: str, name: str) -> None:
    m = model_plan(stack, name)
    d = m.drain
    replica = replica_model(m.model, m.instance.gpu, m.replica_gpus, m.lora)
    seqs, _ = replica.limits
    # the slowest decode-only step: every running sequence decodes while the whole KV cache is read
    assert d.slowest_step_seconds == pytest.approx(replica.step_seconds(seqs, replica.kv_capacity_tokens))
    assert d.slowest_step_seconds > replica.step_seconds(1, 0), "slower than a lone stream's step"
    assert d.longest_generation_seconds == pytest.approx(m.model.max_model_len * d.slowest_step_seconds)
    assert d.shutdown_timeout_seconds >= d.longest_generation_seconds * DRAIN_MARGIN
    assert d.termination_grace_seconds == PRESTOP_SLEEP_SECONDS + d.shutdown_timeout_seconds + EXIT_SECONDS


def test_a_longer_context_drains_longer() -> None:
    m = model_plan("dev", "qwen-1-5b")
    longer = m.model.model_copy(update={"max_model_len": 2 * m.model.max_model_len})
    short = drain_plan(replica_model(m.model, m.instance.gpu, m.replica_gpus, m.lora))
    long = drain_plan(replica_model(longer, m.instance.gpu, m.replica_gpus, m.lora))
    assert long.longest_generation_seconds > 1.9 * short.longest_generation_seconds


def test_a_slower_gpu_drains_longer() -> None:
    """Same model and context: the decode speed comes from the GPU (HBM bandwidth), not a constant."""
    m = model_plan("staging", "mistral-7b")
    gpus = {i.gpu.name: i.gpu for i in GPU_INSTANCES.values()}
    fast = drain_plan(replica_model(m.model, gpus["H100"], 1, None))
    slow = drain_plan(replica_model(m.model, gpus["A10G"], 1, None))
    assert slow.slowest_step_seconds > fast.slowest_step_seconds
