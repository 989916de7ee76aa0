"""One vLLM replica under continuous batching, as a steady-state function of its request rate.

Physics (shared/research/autoscaling_sim.md §5.3): a decode step reads every weight byte plus the KV cache of
every running sequence, so it is HBM-bandwidth-bound: t_mem(R) = (W + R*L*kv_bytes) / (BW*eta). Prefill is
FLOP-bound: 2*params FLOPs per token at MFU of the tensor-core peak. Both come from the model geometry
(config/model_profiles.py), the tensor-parallel size and the catalog's bandwidth/FLOPs (config/catalog.py).

Scheduling (vLLM V1, chunked prefill on by default): every step carries one token for each running sequence
and, when prompts are waiting, their prefill tokens. At low load each prompt gets a step of its own
(t_p = max(t_mem, (p + R)*k)); at high load the prompts that arrive during a step are batched into the next
one (t_p = R*k / (1 - rho_p)). Decode-only steps fill the rest of the time. Little's law closes the loop:
R = lambda * output_tokens * ITL. The replica saturates when R would exceed max_num_seqs or the KV-cache
tokens, or the GPU runs out of time; above that rate requests queue (vllm:num_requests_waiting).

Prefills share the GPU like an M/G/1 processor-sharing queue (their work is compute and batched together):
TTFT = residual of the current step + own step overhead + p*k*(1 + G), with G ~ Geometric(rho_p) — the
number of other prompts in service, whose distribution in M/G/1-PS is geometric whatever the job sizes, and
which makes the mean p*k/(1 - rho_p), the PS response time. Validated against §5.4 in tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from config.catalog import GpuModel
from config.model_profiles import ModelProfile


@dataclass(frozen=True)
class GpuCalibration:
    """Measured efficiencies per GPU (§5.3): eta = batch-1 roofline ITL / measured ITL."""

    bandwidth_efficiency: float
    usable_gib: float  # what torch sees as total memory (vLLM's gpu_memory_utilization applies to it)
    source: str


CALIBRATION: dict[str, GpuCalibration] = {
    "A10G": GpuCalibration(0.87, 22.49, "30.65 ms measured vs 26.8 ms floor, Llama-3-8B vLLM 0.4.3 (§5.3)"),
    "L4": GpuCalibration(0.80, 22.49, "usable 22.49 GiB (kvplan); eta Unverified, no L4 measurement (§5.3)"),
    "L40S": GpuCalibration(0.80, 44.4, "eta Unverified (§5.3); usable ~45 GiB approx (§5.2)"),
    "A100-40GB": GpuCalibration(
        0.77, 39.39, "13.3 ms measured vs 10.3 ms floor (§5.3); 39.39 GiB torch (§5.2)"
    ),
    "A100-80GB": GpuCalibration(0.77, 79.1, "eta as A100-40GB (same part, Unverified); ~79 GiB (§5.2)"),
    "H100": GpuCalibration(0.74, 79.1, "6.48 ms measured vs 4.8 ms floor (§5.3); ~79 GiB (§5.2)"),
}
PREFILL_MFU = 0.5  # §5.3: 2*8.03e9*550/(125e12*0.5) = 141 ms vs 137 ms measured TTFT at concurrency 1
RUNTIME_OVERHEAD_GIB = (
    0.83  # kvplan, Llama-3-8B on L4: activations 0.22 + compile 0.11 + graphs 0.25 + other 0.25
)
CUDA_CONTEXT_GIB = 0.45  # outside torch's accounting; DCGM framebuffer-used includes it (Unverified)
TP_EFFICIENCY = 0.85  # per-step all-reduce cost for tensor parallelism > 1 (Unverified)
KV_BLOCK_TOKENS = 16


@dataclass(frozen=True)
class TokenStats:
    """Moments of the request mix a replica serves (uncached prompt tokens, generated tokens)."""

    mean_input: float
    mean_output: float
    mean_decode_context: float  # E[o*(p+o/2)]/E[o]: context length averaged over decode time

    @classmethod
    def from_arrays(cls, input_tokens: np.ndarray, output_tokens: np.ndarray) -> TokenStats:
        p = input_tokens.astype(np.float64)
        o = output_tokens.astype(np.float64)
        return cls(float(p.mean()), float(o.mean()), float((o * (p + o / 2)).sum() / o.sum()))

    @classmethod
    def fixed(cls, input_tokens: float, output_tokens: float) -> TokenStats:
        return cls(input_tokens, output_tokens, input_tokens + output_tokens / 2)


@dataclass(frozen=True)
class ReplicaModel:
    profile: ModelProfile
    gpu: GpuModel
    tensor_parallel: int = 1
    gpu_memory_utilization: float = 0.9
    max_num_seqs: int = 256  # vLLM default
    calibration: GpuCalibration | None = None

    @property
    def cal(self) -> GpuCalibration:
        if self.calibration is not None:
            return self.calibration
        return CALIBRATION.get(
            self.gpu.name, GpuCalibration(0.8, self.gpu.memory_gib * 0.93, "uncalibrated default")
        )

    @property
    def _tp_eff(self) -> float:
        return 1.0 if self.tensor_parallel == 1 else TP_EFFICIENCY

    @property
    def bandwidth(self) -> float:
        """Effective bytes/s the replica reads (all tensor-parallel ranks)."""
        return (
            self.tensor_parallel
            * self.gpu.hbm_bandwidth_gbps
            * 1e9
            * self.cal.bandwidth_efficiency
            * self._tp_eff
        )

    @property
    def weight_read_seconds(self) -> float:
        """a: time to stream the weights once (the batch-1 decode step)."""
        return self.profile.weight_bytes / self.bandwidth

    @property
    def kv_read_seconds_per_token(self) -> float:
        return self.profile.kv_bytes_per_token / self.bandwidth

    @property
    def seconds_per_token(self) -> float:
        """k: compute time of one token's forward pass at the prefill MFU."""
        flops = self.tensor_parallel * self.gpu.fp16_tflops * 1e12 * PREFILL_MFU * self._tp_eff
        return self.profile.flops_per_token / flops

    @property
    def kv_capacity_tokens(self) -> int:
        """vLLM: util * usable memory - weights - runtime overhead, in KV tokens (all ranks)."""
        per_gpu = self.gpu_memory_utilization * self.cal.usable_gib - RUNTIME_OVERHEAD_GIB
        free = self.tensor_parallel * per_gpu * 2**30 - self.profile.weight_bytes
        if free <= 0:
            raise ValueError(
                f"{self.profile.hugging_face_id} does not fit on {self.tensor_parallel} x {self.gpu.name} at "
                f"gpu_memory_utilization {self.gpu_memory_utilization}"
            )
        return int(free // self.profile.kv_bytes_per_token)

    @property
    def framebuffer_used_fraction(self) -> float:
        """DCGM framebuffer used / total: vLLM pre-allocates, so this ignores load (§6.3)."""
        return min(1.0, self.gpu_memory_utilization + CUDA_CONTEXT_GIB / self.cal.usable_gib)

    def table(self, stats: TokenStats, points: int = 384) -> ReplicaTable:
        return ReplicaTable.build(self, stats, points)


def _steady_state(model: ReplicaModel, stats: TokenStats, lam: np.ndarray, iterations: int = 400):
    """Fixed point R = lam * o * ITL(R) for each rate in `lam` (vectorized)."""
    a = model.weight_read_seconds
    b = model.kv_read_seconds_per_token * stats.mean_decode_context
    k = model.seconds_per_token
    p, o = stats.mean_input, stats.mean_output
    rho_p = lam * p * k

    def step(r: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Decode step, prefill step, prompts per prefill step and ITL for R running requests."""
        t_mem = a + b * r
        t_d = np.maximum(t_mem, r * k)
        t_p1 = np.maximum(t_mem, (p + r) * k)
        single = lam * t_p1 <= 1.0
        with np.errstate(divide="ignore", invalid="ignore"):
            t_pb = np.where(rho_p < 1, np.maximum(t_mem, r * k / (1 - rho_p)), np.inf)
        t_p = np.where(single, t_p1, t_pb)
        m = np.where(single, 1.0, lam * t_p)
        busy = np.minimum(lam / np.maximum(m, 1e-12) * t_p, 1.0)
        itl = 1 / (lam / np.maximum(m, 1e-12) + (1 - busy) / t_d)
        return t_d, t_p, m, itl

    r = np.zeros_like(lam)
    for _ in range(iterations):
        r_new = lam * o * step(r)[3]
        if np.allclose(r_new, r, rtol=1e-9, atol=1e-9):
            r = r_new
            break
        r = np.minimum(r_new, 1e9)
    t_d, t_p, m, itl = step(r)
    overhead = np.maximum(t_p - m * p * k, 0.0)
    return r, itl, rho_p, t_d, overhead


@dataclass(frozen=True)
class ReplicaTable:
    """Steady state on a grid of per-replica rates up to saturation, for fast lookups in the engine."""

    model: ReplicaModel
    stats: TokenStats
    capacity_rps: float  # saturation throughput per replica (requests/s)
    max_running: float  # R at saturation: max_num_seqs or the KV cache, whichever binds
    lam: np.ndarray
    running: np.ndarray
    itl: np.ndarray
    rho_prefill: np.ndarray
    decode_step: np.ndarray
    step_overhead: np.ndarray
    kv_usage: np.ndarray = field(repr=False)

    @classmethod
    def build(cls, model: ReplicaModel, stats: TokenStats, points: int = 384) -> ReplicaTable:
        kv_per_seq = stats.mean_decode_context + KV_BLOCK_TOKENS / 2
        r_cap = float(min(model.max_num_seqs, model.kv_capacity_tokens / kv_per_seq))
        lo, hi = 0.0, 1.0
        while _feasible(model, stats, hi, r_cap):
            hi *= 2
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if _feasible(model, stats, mid, r_cap) else (lo, mid)
        mu = lo
        lam = np.linspace(0.0, mu, points)
        r, itl, rho, t_d, over = _steady_state(model, stats, lam)
        r = np.minimum(r, r_cap)
        kv = np.minimum(r * kv_per_seq / model.kv_capacity_tokens, 1.0)
        return cls(model, stats, mu, r_cap, lam, r, itl, rho, t_d, over, kv)

    @cached_property
    def saturated(self) -> dict[str, float]:
        return {
            "running": float(self.running[-1]),
            "itl": float(self.itl[-1]),
            "rho_prefill": float(self.rho_prefill[-1]),
            "kv_usage": float(self.kv_usage[-1]),
        }

    def at(self, lam: np.ndarray | float) -> dict[str, np.ndarray]:
        """Interpolated steady state at per-replica admitted rates (clipped to capacity)."""
        x = np.clip(np.asarray(lam, dtype=np.float64), 0.0, self.capacity_rps)
        return {
            "running": np.interp(x, self.lam, self.running),
            "itl": np.interp(x, self.lam, self.itl),
            "rho_prefill": np.interp(x, self.lam, self.rho_prefill),
            "decode_step": np.interp(x, self.lam, self.decode_step),
            "step_overhead": np.interp(x, self.lam, self.step_overhead),
            "kv_usage": np.interp(x, self.lam, self.kv_usage),
        }

    def ttft_seconds(self, lam: float, input_tokens: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Sampled TTFTs of requests admitted at a per-replica rate (no queueing beyond the replica)."""
        s = self.at(lam)
        return ttft(
            input_tokens,
            np.full(len(input_tokens), float(s["rho_prefill"])),
            np.full(len(input_tokens), float(s["decode_step"])),
            np.full(len(input_tokens), float(s["step_overhead"])),
            np.full(len(input_tokens), float(s["running"])),
            self.model.seconds_per_token,
            rng,
        )


def _feasible(model: ReplicaModel, stats: TokenStats, lam: float, r_cap: float) -> bool:
    if lam * stats.mean_input * model.seconds_per_token >= 0.999:
        return False
    r, itl, *_ = _steady_state(model, stats, np.array([lam]))
    return bool(np.isfinite(r[0]) and r[0] <= r_cap and np.isfinite(itl[0]))


def ttft(
    input_tokens: np.ndarray,
    rho_prefill: np.ndarray,
    decode_step: np.ndarray,
    step_overhead: np.ndarray,
    running: np.ndarray,
    seconds_per_token: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Residual of the step in flight + own step overhead + processor-shared prefill (see module doc)."""
    rho = np.clip(rho_prefill, 0.0, 0.99)
    u = rng.random(len(input_tokens))
    with np.errstate(divide="ignore"):
        others = np.where(
            rho > 0, np.floor(np.log(np.maximum(u, 1e-300)) / np.log(np.maximum(rho, 1e-300))), 0.0
        )
    residual = decode_step / 2 * (1 - np.exp(-running))
    return residual + step_overhead + input_tokens * seconds_per_token * (1 + others)
