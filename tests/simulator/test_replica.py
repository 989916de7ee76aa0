"""The replica model: geometry, vLLM's scheduling limits, KV capacity and preemption, prefix hits, chunking.

Published measurements are asserted in test_calibration.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from llm_platform.facts.catalog import A10G, A100_40, H100, L4
from llm_platform.facts.model_profiles import UnknownModelError, profile
from llm_platform.simulator.serving.benchmark import closed_loop
from llm_platform.simulator.serving.replica import ReplicaModel, TokenStats
from llm_platform.simulator.serving.replica_config import EngineConfig

LLAMA3_8B = "meta-llama/Meta-Llama-3-8B-Instruct"


def test_kv_bytes_per_token_llama3_8b():
    assert profile(LLAMA3_8B).kv_bytes_per_token == 131_072  # §5.1, kvplan


def test_weights_llama3_8b_and_gptq_mistral():
    assert profile(LLAMA3_8B).weight_bytes / 2**30 == pytest.approx(14.96, rel=0.02)  # kvplan
    assert profile("TheBloke/Mistral-7B-Instruct-v0.2-GPTQ").weights_gb == pytest.approx(4.16, rel=0.03)


def test_kv_capacity_llama3_8b_on_l4():
    """kvplan: L4 at gpu_memory_utilization 0.92 holds 40,208 KV tokens."""
    model = ReplicaModel(profile(LLAMA3_8B), L4, engine=EngineConfig(gpu_memory_utilization=0.92))
    assert model.kv_capacity_tokens == pytest.approx(40_208, rel=0.05)


@pytest.mark.parametrize(("gpu", "floor_ms"), [(A10G, 26.8), (A100_40, 10.3), (H100, 4.8)])
def test_batch_one_roofline_floor(gpu, floor_ms):
    """§5.3: weights / HBM bandwidth, the floor before efficiency."""
    model = ReplicaModel(profile(LLAMA3_8B), gpu)
    assert model.weight_read_seconds * model.cal.bandwidth_efficiency * 1000 == pytest.approx(
        floor_ms, rel=0.03
    )


def test_unknown_model_names_the_id_and_the_known_ones():
    with pytest.raises(UnknownModelError) as err:
        profile("acme/unknown-7b")
    assert "acme/unknown-7b" in str(err.value)
    assert "mistralai/Mistral-7B-Instruct-v0.2" in str(err.value)


def test_a10g_is_not_an_a10():
    """The A10G's dense tensor peak is 70 TFLOPS (vllm_capacity_points.md §2), not the A10's 125."""
    assert A10G.fp16_tflops == 70


def test_vllm_serve_default_limits_by_device():
    """EngineArgs._set_default_args: 1024/8192 on >= 70 GiB non-A100 GPUs, else 256/2048; V0 uses max_model_len."""
    llama = profile(LLAMA3_8B)
    assert ReplicaModel(llama, H100).limits == (1024, 8192)
    assert ReplicaModel(llama, A100_40).limits == (256, 2048)
    assert ReplicaModel(llama, A10G).limits == (256, 2048)
    v0 = EngineConfig(chunked_prefill=False, max_model_len=8192)
    assert ReplicaModel(llama, A10G, engine=v0).limits == (256, 8192)
    assert ReplicaModel(llama, A10G, engine=EngineConfig(max_num_seqs=32)).limits == (32, 2048)


def test_kv_capacity_is_whole_blocks():
    model = ReplicaModel(profile(LLAMA3_8B), A10G)
    assert model.kv_capacity_tokens % 16 == 0


def test_max_num_seqs_caps_the_running_batch():
    """A 4-bit 7B leaves ~124k KV tokens: max_num_seqs (or a lower setting) binds before the cache."""
    gptq = profile("TheBloke/Mistral-7B-Instruct-v0.2-GPTQ")
    stats = TokenStats.fixed(128, 96)
    assert ReplicaModel(gptq, A10G).table(stats).max_running == 256
    small = ReplicaModel(gptq, A10G, engine=EngineConfig(max_num_seqs=8)).table(stats)
    assert small.max_running == 8
    point = closed_loop(small, 32)
    assert point.running <= 8 and point.waiting > 20


def test_kv_cache_binds_and_preempts_at_high_concurrency():
    """Llama-3-8B FP16 on an A10G: ~33k KV tokens hold ~50 sequences of 550+150; at 64 the cache is full,
    requests wait and decode growth forces recompute preemptions."""
    table = ReplicaModel(profile(LLAMA3_8B), A10G).table(TokenStats.fixed(550, 150))
    assert table.kv_bound and table.max_running < 64
    full = closed_loop(table, 64)
    assert full.kv_usage == pytest.approx(1.0, abs=0.02)
    assert full.preempted_per_s > 0 and full.waiting > 0
    assert closed_loop(table, 8).preempted_per_s == 0


def test_prefix_hits_shorten_ttft_not_itl():
    llama = profile(LLAMA3_8B)
    cold = closed_loop(ReplicaModel(llama, A10G).table(TokenStats.fixed(2000, 100)), 1)
    warm = closed_loop(
        ReplicaModel(llama, A10G, engine=EngineConfig(prefix_hit_rate=0.9)).table(
            TokenStats.fixed(2000, 100)
        ),
        1,
    )
    short = closed_loop(ReplicaModel(llama, A10G).table(TokenStats.fixed(200, 100)), 1)
    assert warm.ttft_s < 0.3 * cold.ttft_s
    assert warm.ttft_s == pytest.approx(short.ttft_s, rel=0.1)  # same uncached prefill
    assert warm.itl_s > short.itl_s  # the cached prefix is still read by every decode step


def test_chunked_prefill_bounds_the_decode_stall():
    """Without chunking a long prompt stalls every decoder for its whole prefill (V0); with chunking a step
    carries at most max_num_batched_tokens, so ITL under load stays lower."""
    llama = profile(LLAMA3_8B)
    stats = TokenStats.fixed(4000, 200)
    v1 = closed_loop(ReplicaModel(llama, A100_40).table(stats), 16)
    v0 = closed_loop(
        ReplicaModel(llama, A100_40, engine=EngineConfig(chunked_prefill=False)).table(stats), 16
    )
    assert v1.itl_s < v0.itl_s


def test_throughput_saturates_with_concurrency():
    table = ReplicaModel(profile(LLAMA3_8B), A10G).table(TokenStats.fixed(550, 150))
    tok = [closed_loop(table, c).output_tokens_per_s for c in (1, 4, 16, 64, 256)]
    assert tok == sorted(tok)
    assert tok[-1] == pytest.approx(tok[-2], rel=0.02)  # saturated: more users only wait
    assert closed_loop(table, 256).ttft_s > 10 * closed_loop(table, 16).ttft_s


def test_latency_grows_with_load_and_saturation_is_finite():
    table = ReplicaModel(profile("TheBloke/Mistral-7B-Instruct-v0.2-GPTQ"), A10G).table(
        TokenStats.fixed(128, 96)
    )
    assert np.all(np.diff(table.itl) >= -1e-12)
    assert np.all(np.diff(table.running) >= -1e-12)
    assert 0 < table.capacity_rps < 100
    assert table.max_running == 256  # 4-bit weights leave ~124k KV tokens: max_num_seqs binds first


def test_memory_signal_is_flat():
    model = ReplicaModel(profile(LLAMA3_8B), A10G)
    assert 0.9 <= model.framebuffer_used_fraction < 0.95


def test_tensor_parallel_70b_fits_on_p4d_not_on_one_gpu():
    big = profile("meta-llama/Llama-3.1-70B-Instruct")
    assert ReplicaModel(big, A100_40, tensor_parallel=8).kv_capacity_tokens > 100_000
    with pytest.raises(ValueError, match="does not fit") as err:
        _ = ReplicaModel(big, A100_40, tensor_parallel=1).kv_capacity_tokens
    assert "141.2 GB of weights" in str(err.value) and "allowed: more GPUs per replica" in str(err.value)
