"""Per-step costs a roofline leaves out: the linear layers near the ridge, and with tensor parallelism the
all-reduces of a decoder layer over NVLink or PCIe.

Linear layers near the ridge. A 16-bit GEMM of M tokens against a weight matrix is neither purely
bandwidth-bound (time = weight read) nor purely compute-bound below the ridge: the weight read and the
tensor-core work overlap imperfectly, and vLLM's own GEMM sweeps (benchmarks/kernels/bench_fp8_gemm.py,
torch-bf16 column, H100) put its time at hypot(weight read, M x FLOPs at the dense peak) within 4 % at
M = 16-256, where max() is 15-25 % low at M = 256 (`BF16_GEMM_SWEEPS`, tests/simulator/test_physics.py).
Well past the ridge the prefill MFU the replica is calibrated with bounds it instead. Applied
to every GPU's 16-bit GEMMs (Unverified off H100: no sweep of the A10G, L4, L40S or A100 is in the reference set). Quantized weights
run other kernels (Marlin, FP8 CUTLASS) that no sweep here covers: they keep the plain roofline's max().

A tensor-parallel decoder layer all-reduces its activations twice (after the attention output projection and
after the MLP down projection; Megatron-style row-parallel linears, vllm/model_executor/layers/linear.py
`RowParallelLinear`), so a step of T tokens does 2 x layers all-reduces of T x hidden x 2 bytes (BF16).

One all-reduce of S bytes over TP ranks costs alpha + f x S / B with f = 2 (TP - 1) / TP (ring traffic):
- NVLink (A100 SXM, H100 SXM, H200, B200): one-shot custom all-reduce kernels, measured on H100 in
  sgl-project/sglang#2904. Outside CUDA graphs vLLM's kernel pays an input copy (512 B-32 KB: 8.5-11.8 us at
  TP 2/4/8); the copy-free kernel, which is what vLLM's runs as inside the CUDA graph a decode step replays
  (the PR's own explanation), takes 3.7-5.9 us up to 32 KB and 19.9/31.1/33.8 us at 1 MB: alpha = 4 us and
  B = 65 GB/s fit those rows within 10 % at TP 2, 4 and 8 up to 1 MB; beyond 1 MB NCCL's ring runs at
  its bus bandwidth, taken as 0.8 x the NVLink per-direction peak (Unverified: nccl-tests figures are not
  in the reference set). A100's NVLink 3 (300 GB/s per direction) scales H100's NVLink 4 (450 GB/s) figures
  by 300/450 (derived).
- PCIe (A10G on g5, L4 on g6, L40S on g6e: no NVLink): vLLM disables its custom all-reduce for more than
  two PCIe-only GPUs (vllm/distributed/device_communicators/custom_all_reduce.py, quoted in
  vllm-project/vllm#56128) and NCCL goes through the host bridge: alpha = 20 us and B = 12 GB/s
  (Unverified: PCIe Gen4 x16 is 32 GB/s per direction; no published vLLM all-reduce sweep on these parts).
Each GPU of the catalog carries its interconnect with these figures (facts/catalog.py `GpuModel.interconnect`).
"""

from __future__ import annotations

import numpy as np

from llm_platform.facts.catalog import GpuModel, Interconnect
from llm_platform.facts.model_profiles import ModelProfile

KNEE_BYTES = 2**20  # 1 MB: largest message of the measured latency-bound sweep

# (source, N, K, {M: TFLOP/s}) of torch-bf16 GEMMs on H100: M = 1 is the weight read, the rest check the form.
BF16_GEMM_SWEEPS: tuple[tuple[str, int, int, dict[int, float]], ...] = (
    ("vllm-project/vllm#49363 (gemma-4-31B, H100)", 43008, 5376,
     {1: 3.072025, 16: 48.328807, 64: 187.994464, 128: 364.745064, 256: 593.264799}),
    ("vllm-project/vllm#17126 (Llama-3.1-8B; GPU unnamed, 544 TFLOP/s is past an A100's peak)", 6144, 4096,
     {1: 2.513023, 16: 39.110705, 64: 160.586644, 128: 307.854920, 256: 544.327503}),
)  # fmt: skip


def linear_seconds(
    read_s: float, peak_compute_s: np.ndarray | float, mfu_compute_s: np.ndarray | float, near_ridge: bool
) -> np.ndarray:
    """Linear layers of one step: weight read `read_s`, its tokens' FLOPs at the dense peak and at the prefill
    MFU (module doc); `near_ridge` False (quantized weights) keeps the roofline's max(read, compute at MFU)."""
    if not near_ridge:
        return np.maximum(read_s, mfu_compute_s)
    return np.maximum(np.hypot(read_s, peak_compute_s), mfu_compute_s)


def allreduce_seconds(size_bytes: np.ndarray | float, tp: int, link: Interconnect) -> np.ndarray:
    """One all-reduce of `size_bytes` over `tp` ranks (module doc); 0 without tensor parallelism."""
    if tp <= 1:
        return np.zeros_like(np.asarray(size_bytes, dtype=np.float64))
    f = 2 * (tp - 1) / tp
    small = np.minimum(size_bytes, KNEE_BYTES)
    large = np.maximum(np.asarray(size_bytes, dtype=np.float64) - KNEE_BYTES, 0.0)
    return link.alpha_s + f * (small / (link.small_gbps * 1e9) + large / (link.large_gbps * 1e9))


def step_allreduce_seconds(
    profile: ModelProfile, gpu: GpuModel, tp: int, tokens: np.ndarray | float
) -> np.ndarray:
    """All-reduce time of one engine step carrying `tokens` tokens: 2 per layer (module doc); 0 without tensor
    parallelism (the steady-state solver asks for it thousands of times per table)."""
    if tp <= 1:
        return np.zeros_like(np.asarray(tokens, dtype=np.float64))
    size = np.maximum(tokens, 1.0) * profile.hidden_size * 2
    return 2 * profile.layers * allreduce_seconds(size, tp, gpu.interconnect)
