"""The engine's step loop run request by request (simulator/serving/steps.py) and llmperf's waves on it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from llm_platform.facts.catalog import A10G, H100
from llm_platform.facts.model_profiles import profile
from llm_platform.simulator.serving import steps
from llm_platform.simulator.serving.benchmark import llmperf_requests, llmperf_waves
from llm_platform.simulator.serving.replica import ReplicaModel
from llm_platform.simulator.serving.replica_config import REQUEST_OVERHEAD_SECONDS, EngineConfig

LLAMA = profile("meta-llama/Llama-3.1-8B-Instruct")


def _model(**engine) -> ReplicaModel:
    return ReplicaModel(LLAMA, H100, 1, EngineConfig(**engine))


def test_one_request_on_an_idle_engine_is_its_prefill_then_its_decode_steps():
    m = _model()
    trace = steps.run(m, np.array([0.0]), np.array([1024.0]), np.array([128]))
    prefill = m.step_overhead_seconds + float(m.linear_seconds(1024))
    assert trace.ttft[0] == pytest.approx(REQUEST_OVERHEAD_SECONDS + prefill)
    decode = m.step_overhead_seconds + float(m.linear_seconds(1))
    kv = m.kv_read_seconds_per_token * sum(1024 + j for j in range(127))
    assert trace.latency[0] - trace.ttft[0] == pytest.approx(127 * decode + kv)


def test_async_scheduling_starts_an_arrival_two_steps_later():
    """A request arriving while step N runs is first computed in N + 2 with async scheduling, in N + 1 without."""
    first = np.array([0.0, 0.05])
    prompts, outputs = np.array([128.0, 128.0]), np.array([400, 4])
    lagged = steps.run(_model(), first, prompts, outputs)
    eager = steps.run(_model(async_scheduling=False), first, prompts, outputs)
    step = _model().step_overhead_seconds + _model().weight_read_seconds
    assert lagged.ttft[1] - eager.ttft[1] == pytest.approx(step, rel=0.2)


def test_v0_prefills_a_burst_in_one_step_and_pauses_decoding():
    m = replace(
        _model(chunked_prefill=False), gpu=A10G, profile=profile("meta-llama/Meta-Llama-3-8B-Instruct")
    )
    trace = steps.run(m, np.zeros(4), np.full(4, 400.0), np.full(4, 50))
    assert np.ptp(trace.ttft) == pytest.approx(0.0)
    assert trace.ttft[0] > REQUEST_OVERHEAD_SECONDS + 4 * 400 * m.seconds_per_token


def test_a_full_kv_cache_preempts_the_newest_and_every_request_still_finishes():
    """With KV for under three whole requests, four sent at once: decode growth preempts the newest, which
    recomputes its prompt and what it generated."""
    small = _model(gpu_memory_utilization=0.24)
    assert 2 * 9000 < small.kv_capacity_tokens < 3 * 9000
    trace = steps.run(small, np.zeros(4), np.full(4, 6000.0), np.full(4, 3000))
    assert trace.preemptions > 0
    assert np.isfinite(trace.done).all()
    # the two oldest finish together; the newest running one was preempted and finishes after its recompute
    assert trace.done[0] == pytest.approx(trace.done[1], abs=0.5)
    assert trace.done[2] > trace.done[1] + 1.0


def test_llmperf_runs_whole_waves_back_to_back_paced_by_the_driver():
    m = _model()
    n = llmperf_requests(10, 4)
    assert n == 12  # ten results asked for: three waves of four
    paced = llmperf_waves(m, 4, np.full(n, 512.0), np.full(n, 64), 0.1)
    one = steps.run(m, 0.1 * np.arange(1, 5), np.full(4, 512.0), np.full(4, 64))
    assert paced.duration_s == pytest.approx(3 * one.done.max())
    assert paced.ttft_s == pytest.approx(np.tile(one.ttft, 3))
    assert paced.output_tokens_per_s == pytest.approx(12 * 64 / paced.duration_s)
    burst = llmperf_waves(m, 4, np.full(n, 512.0), np.full(n, 64), 0.0)
    assert burst.ttft_s.mean() > paced.ttft_s.mean()  # prompts sent together queue for their prefill
    mixed = llmperf_waves(m, 4, np.repeat([256.0, 2048.0, 512.0], 4), np.full(n, 64), 0.1)
    assert mixed.ttft_s[4:8].mean() > mixed.ttft_s[:4].mean()  # each wave runs its own lengths
