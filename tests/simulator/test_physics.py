"""Per-step physics a roofline leaves out (serving/physics.py), against the published sweeps it is read from."""

from __future__ import annotations

import numpy as np
import pytest

from llm_platform.facts.catalog import H100
from llm_platform.facts.model_profiles import profile
from llm_platform.simulator.serving.physics import BF16_GEMM_SWEEPS, linear_seconds
from llm_platform.simulator.serving.replica import ReplicaModel


def _sweep_seconds(n: int, k: int, tflops: dict[int, float]) -> dict[int, float]:
    return {m: 2 * m * n * k / (t * 1e12) for m, t in tflops.items()}


@pytest.mark.parametrize(("source", "n", "k", "tflops"), BF16_GEMM_SWEEPS, ids=lambda v: str(v)[:24])
def test_a_bf16_gemm_near_the_ridge_takes_the_hypot_of_read_and_peak_compute(source, n, k, tflops):
    """Each M of vLLM's torch-bf16 sweep from its M = 1 time (the weight read) and the H100's dense peak: the
    hypot is within 4 % at every M up to 256, where the roofline's max() is 15 % or more short."""
    measured = _sweep_seconds(n, k, tflops)
    read = measured[1]
    peak = {m: 2 * m * n * k / (H100.fp16_tflops * 1e12) for m in measured}
    for m, seconds in measured.items():
        near = float(linear_seconds(read, peak[m], 0.0, near_ridge=True))
        assert near == pytest.approx(seconds, rel=0.04), (source, m)
    plain = float(linear_seconds(read, 0.0, peak[256], near_ridge=False))
    assert plain < 0.85 * measured[256], source


def test_the_prefill_mfu_bounds_a_step_well_past_the_ridge_and_quantized_weights_keep_the_max():
    read, peak, mfu = 5e-3, np.array([0.0, 2e-3, 20e-3]), np.array([0.0, 4e-3, 40e-3])
    near = linear_seconds(read, peak, mfu, near_ridge=True)
    assert near[0] == read and read < near[1] < read + peak[1] and near[2] == mfu[2]
    assert list(linear_seconds(read, peak, mfu, near_ridge=False)) == [read, read, mfu[2]]


def test_a_16_bit_decode_step_pays_the_ridge_and_a_gptq_one_does_not():
    """At 128 decoding sequences an 8B BF16 model's step on an H100 is longer than its weight read alone (the
    tokens' FLOPs at peak are ~40 % of the read); a 4-bit GPTQ model's step below its ridge is its read."""
    bf16 = ReplicaModel(profile("meta-llama/Llama-3.1-8B-Instruct"), H100)
    ratio = bf16.peak_seconds_per_token * 128 / bf16.weight_read_seconds
    assert float(bf16.linear_seconds(128)) == pytest.approx(bf16.weight_read_seconds * np.hypot(1, ratio))
    assert float(bf16.linear_seconds(1)) == pytest.approx(bf16.weight_read_seconds, rel=1e-4)
    gptq = ReplicaModel(profile("TheBloke/Mistral-7B-Instruct-v0.2-GPTQ"), H100)
    assert float(gptq.linear_seconds(32)) == gptq.weight_read_seconds < float(gptq.linear_seconds(128))
