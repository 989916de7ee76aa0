"""LoRA in the simulator (simulator/serving/lora.py): the per-step cost slows every step, a started replica's
first request per adapter pays the disk load, and fewer slots than adapters add host-to-GPU swaps."""

from __future__ import annotations

import numpy as np

from llm_platform.facts.model_profiles import PROFILES
from llm_platform.plan import resolve
from llm_platform.simulator.serving.lora import LORA_STEP_SECONDS, LoraCost, adapter_params_per_rank
from llm_platform.simulator.serving.replica import ReplicaModel, TokenStats
from tests.conftest import load_fixture

LLAMA = PROFILES["meta-llama/Llama-3.1-8B-Instruct"]


def test_adapter_size_of_llama_8b() -> None:
    """Every linear layer at rank 16 in BF16: ~84 MB (PEFT's all-linear Llama-3-8B r16 adapters are 168 MB FP32)."""
    assert 80e6 < adapter_params_per_rank(LLAMA) * 2 * 16 < 88e6


def test_plan_sizes_the_cost() -> None:
    cfg = load_fixture("lora")
    plan = resolve(cfg)
    mp = next(m for m in plan.models if m.name == "llama-8b")
    assert mp.lora is not None
    cost = LoraCost.of(
        LLAMA, adapters=len(mp.lora.adapters), slots=mp.lora.max_loras, max_rank=mp.lora.max_lora_rank
    )
    assert (cost.adapters, cost.slots) == (3, 2)
    assert abs(cost.swap_probability - 1 / 3) < 1e-9
    assert cost.disk_load_seconds > cost.swap_seconds > 0


def test_lora_slows_every_step_and_lowers_capacity() -> None:
    from llm_platform.facts.catalog import GPU_INSTANCES

    gpu = GPU_INSTANCES["g6e.xlarge"].gpu
    stats = TokenStats.fixed(500, 150)
    base = ReplicaModel(LLAMA, gpu)
    lora = ReplicaModel(LLAMA, gpu, lora=LoraCost(adapters=3, slots=3, adapter_bytes=84e6))
    assert lora.step_overhead_seconds > base.step_overhead_seconds + LORA_STEP_SECONDS * 0.99
    t0, t1 = base.table(stats), lora.table(stats)
    assert t1.at(1.0)["itl"] > t0.at(1.0)["itl"]
    assert t1.capacity_rps < t0.capacity_rps


def test_first_use_loads_per_started_replica() -> None:
    cost = LoraCost(adapters=3, slots=3, adapter_bytes=84e6)
    arrivals = np.arange(0.0, 100.0, 0.5)
    ready = np.zeros(100, dtype=np.int32)
    ready[10:] = 1
    ready[50:] = 3  # two more replicas at t=50
    delay = cost.request_delays(arrivals, ready, np.random.default_rng(0))
    loaded = np.flatnonzero(delay > 0)
    assert len(loaded) == 3 + 2 * 3  # no swaps: one slot per adapter
    assert arrivals[loaded[0]] == 10.0 and arrivals[loaded[3]] == 50.0
