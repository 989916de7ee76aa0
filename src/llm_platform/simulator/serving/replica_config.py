"""What a replica is built from besides its model and GPU: vLLM's serve settings and the limits it picks from
them (EngineConfig, default_limits), each GPU's efficiencies fitted to published points (CALIBRATION, checked
by serving/calibration.py), and the host and memory overheads vLLM adds. serving/replica.py's ReplicaModel
runs the engine on them."""

from __future__ import annotations

from dataclasses import dataclass

from llm_platform.facts.catalog import GpuModel

# Host overhead, sources and what is measured vs assumed: docs/simulator/calibration.md "Host overhead". Neither constant
# grows with TP (at TP > 1 one shared-memory broadcast of the scheduler output per step, vllm#9856/#5399:
# < 3 % of a step, not charged); what grows is the step (all-reduces, serving/physics.py) and waits in steps.
STEP_OVERHEAD_SECONDS = 0.001  # H03 batch-1 ITL fit intercept 6.44 ms less its weight read: 1.09 ms
REQUEST_OVERHEAD_SECONDS = 0.0086  # API server: H25 C=1 TTFT p50 13.98 ms less one H100 8B weight read
ASYNC_SCHEDULING_LAG_STEPS = 1.0  # vllm#19970: step N+1 is scheduled while N runs; arrivals start in N+2
RUNTIME_OVERHEAD_GIB = (
    0.83  # kvplan, Llama-3-8B on L4: activations 0.22 + compile 0.11 + graphs 0.25 + other 0.25
)
CUDA_CONTEXT_GIB = 0.45  # outside torch's accounting; DCGM framebuffer-used includes it (Unverified)
KV_BLOCK_TOKENS = 16  # vLLM CacheConfig.DEFAULT_BLOCK_SIZE


@dataclass(frozen=True)
class GpuCalibration:
    """Per-GPU efficiencies, each fitted to one published point and checked on the others (calibration.py)."""

    bandwidth_efficiency: float  # eta: achieved / peak HBM bandwidth in a batch-1 decode step
    prefill_mfu: float  # achieved / dense tensor peak in a prefill step
    usable_gib: float  # what torch sees as total memory (gpu_memory_utilization applies to it)
    source: str


CALIBRATION: dict[str, GpuCalibration] = {
    "A10G": GpuCalibration(
        0.77,
        0.85,
        22.05,
        "llmperf Llama-3-8B C=1: ITL 30.65 ms, TTFT 137 ms (Llama-2 tokens, calibration.py)",
    ),
    "L4": GpuCalibration(0.80, 0.50, 22.49, "Qwen2.5-0.5B C=1: ITL 5.1 ms (ai.wmx.dev, calibration.py)"),
    "L40S": GpuCalibration(0.80, 0.50, 44.4, "Unverified: no 8B L40S sweep; eta/MFU as L4"),
    "A100-40GB": GpuCalibration(0.84, 0.55, 39.39, "Llama-3.1-8B C=1: 13.3 ms ITL (johnmusgrave.com)"),
    "A100-80GB": GpuCalibration(0.84, 0.55, 79.1, "as A100-40GB (same part); checked on Qwen2-7B bursts"),
    "H100": GpuCalibration(0.895, 0.50, 79.1, "Llama-3.1-8B batch-1 ITL vs context fit (vLLM blog, H03)"),
}
DEFAULT_CALIBRATION = GpuCalibration(0.8, 0.5, 0.0, "uncalibrated default")


@dataclass(frozen=True)
class EngineConfig:
    """vLLM serve settings that bound a replica; None means vLLM's default for the device (§3)."""

    gpu_memory_utilization: float = 0.9
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    chunked_prefill: bool = True  # V1 always; False models V0's prefill-only steps
    max_model_len: int = 8192
    prefix_hit_rate: float = 0.0  # fraction of prompt tokens served from the prefix cache
    async_scheduling: bool = True  # vLLM's default where supported (V1 only: ignored without chunked prefill)

    def __post_init__(self) -> None:
        if not 0.0 <= self.prefix_hit_rate < 1.0:
            raise ValueError(f"prefix hit rate {self.prefix_hit_rate} must be in [0, 1)")
        if not 0.0 < self.gpu_memory_utilization < 1.0:
            raise ValueError(f"gpu_memory_utilization {self.gpu_memory_utilization} must be in (0, 1)")


def default_limits(gpu: GpuModel, engine: EngineConfig) -> tuple[int, int]:
    """(max_num_seqs, max_num_batched_tokens) as `vllm serve` picks them (EngineArgs._set_default_args)."""
    big = gpu.memory_gib >= 70 and "A100" not in gpu.name
    seqs, tokens = (1024, 8192) if big else (256, 2048)
    if not engine.chunked_prefill:
        tokens = max(engine.max_model_len, 2048)
    seqs = engine.max_num_seqs or seqs
    tokens = engine.max_num_batched_tokens or tokens
    return min(seqs, tokens), tokens
