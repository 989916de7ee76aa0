"""One vLLM replica: the engine's step loop in steady state, as a function of its request rate.

Every engine step runs the model once over the step's tokens. Its time is a roofline per kernel class:
- the linear layers read every weight byte once and do 2 x parameters FLOPs per token, so they take
  max(W / (BW * eta), tokens * k), k = 2 * params / (tensor FLOPs * MFU); with 16-bit weights the read
  and the compute at peak overlap imperfectly near the ridge: max(hypot(W / (BW * eta), tokens * k_peak),
  tokens * k) (serving/physics.py `linear_seconds`, from vLLM's GEMM sweeps);
- attention reads the KV cache of every running sequence: context tokens x KV bytes / (BW * eta);
- a fixed CPU/launch overhead per step (scheduler, sampler, CUDA-graph launch);
- with tensor parallelism, 2 all-reduces per layer over NVLink or PCIe (serving/physics.py).

The scheduler is vLLM's (vllm_capacity_points.md §3): with chunked prefill (V1, always on) every step carries
one token for each running sequence first, then prompt chunks up to `max_num_batched_tokens`; the running set
is capped by `max_num_seqs` and by the KV cache (blocks of 16 tokens). Without chunked prefill (V0, <= 0.5)
prompts run in prefill-only steps that pause decoding. Prefix-cache hits skip the cached part of a prompt's
prefill but its KV is still read during decode. When the KV cache is full, decode growth is paid for by
preempting the newest request (recompute): in steady state each decoded token forces one token of recompute.

Little's law closes the loop (decoding sequences R = rate x output tokens x ITL). Above the saturation rate
requests wait (vllm:num_requests_waiting). TTFT = API overhead + residual of the step in flight (+ the step
scheduled behind it with async scheduling) + own prefill x (1 + G), G ~ Geometric(rho_p): the prompts ahead
of it in the prefill queue. The engine settings, GPU efficiencies and overhead constants it runs on:
serving/replica_config.py; checked against published measurements: serving/calibration.py and docs/simulator/calibration.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache

import numpy as np

from llm_platform.facts.catalog import GpuModel
from llm_platform.facts.model_profiles import ModelProfile
from llm_platform.simulator.serving.lora import LoraCost
from llm_platform.simulator.serving.physics import linear_seconds, step_allreduce_seconds
from llm_platform.simulator.serving.replica_config import (
    ASYNC_SCHEDULING_LAG_STEPS,
    CALIBRATION,
    CUDA_CONTEXT_GIB,
    DEFAULT_CALIBRATION,
    KV_BLOCK_TOKENS,
    REQUEST_OVERHEAD_SECONDS,
    RUNTIME_OVERHEAD_GIB,
    STEP_OVERHEAD_SECONDS,
    EngineConfig,
    GpuCalibration,
    default_limits,
)


@dataclass(frozen=True)
class TokenStats:
    """Moments of the request mix a replica serves (whole prompts, generated tokens)."""

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
    engine: EngineConfig = field(default_factory=EngineConfig)
    calibration: GpuCalibration | None = None
    lora: LoraCost | None = None  # LoRA adapters served (simulator/serving/lora.py)

    @property
    def cal(self) -> GpuCalibration:
        if self.calibration is not None:
            return self.calibration
        fallback = replace(DEFAULT_CALIBRATION, usable_gib=self.gpu.memory_gib * 0.93)
        return CALIBRATION.get(self.gpu.name, fallback)

    @property
    def limits(self) -> tuple[int, int]:
        return default_limits(self.gpu, self.engine)

    def allreduce_seconds(self, tokens: np.ndarray | float) -> np.ndarray:
        """All-reduce time of a step of `tokens` tokens (0 at TP 1; serving/physics.py)."""
        return step_allreduce_seconds(self.profile, self.gpu, self.tensor_parallel, tokens)

    def step_seconds(self, tokens: float, context_tokens: float = 0.0) -> float:
        """One engine step carrying `tokens` tokens while its decoders hold `context_tokens` of KV (module doc's
        roofline), for a step loop or a drain taken step by step (serving/steps.py, serving/benchmark.py)."""
        return (
            self.step_overhead_seconds
            + float(self.allreduce_seconds(tokens))
            + float(self.linear_seconds(tokens))
            + self.kv_read_seconds_per_token * context_tokens
        )

    @property
    def bandwidth(self) -> float:
        """Effective bytes/s the replica reads (all tensor-parallel ranks)."""
        peak = self.tensor_parallel * self.gpu.hbm_bandwidth_gbps * 1e9
        return peak * self.cal.bandwidth_efficiency

    @property
    def step_overhead_seconds(self) -> float:
        """Fixed time of every step: scheduler, sampler, launch, and with adapters the LoRA kernels."""
        return STEP_OVERHEAD_SECONDS + (self.lora.step_seconds(self.bandwidth) if self.lora else 0.0)

    @property
    def wait_steps(self) -> float:
        """Steps a request arriving at a busy engine waits before its first computes: half the one in flight,
        plus the one scheduled ahead of it under async scheduling (module constants)."""
        lag = self.engine.async_scheduling and self.engine.chunked_prefill
        return 0.5 + (ASYNC_SCHEDULING_LAG_STEPS if lag else 0.0)

    @property
    def weight_read_seconds(self) -> float:
        """a: time to stream the weights once (the floor of every step)."""
        return self.profile.weight_bytes / self.bandwidth

    @property
    def kv_read_seconds_per_token(self) -> float:
        return self.profile.kv_bytes_per_token / self.bandwidth

    @property
    def peak_seconds_per_token(self) -> float:
        """Compute time of one token through the linear layers at the dense tensor peak."""
        return self.profile.flops_per_token / (self.tensor_parallel * self.gpu.fp16_tflops * 1e12)

    @property
    def seconds_per_token(self) -> float:
        """k: compute time of one token through the linear layers at the prefill MFU."""
        return self.peak_seconds_per_token / self.cal.prefill_mfu

    def linear_seconds(self, tokens: np.ndarray | float) -> np.ndarray:
        """The linear layers of a step carrying `tokens` tokens (module doc; serving/physics.py)."""
        return linear_seconds(
            self.weight_read_seconds,
            tokens * self.peak_seconds_per_token,
            tokens * self.seconds_per_token,
            near_ridge=self.profile.weight_bits == 16,
        )

    @property
    def kv_capacity_tokens(self) -> int:
        """vLLM: util * usable memory - weights - runtime overhead, in whole 16-token blocks (all ranks)."""
        per_gpu = self.engine.gpu_memory_utilization * self.cal.usable_gib - RUNTIME_OVERHEAD_GIB
        free = self.tensor_parallel * per_gpu * 2**30 - self.profile.weight_bytes
        if free <= 0:
            raise ValueError(
                f"{self.profile.hugging_face_id} does not fit on {self.tensor_parallel} x {self.gpu.name} at "
                f"gpu_memory_utilization {self.engine.gpu_memory_utilization}: {self.profile.weights_gb:.1f} GB "
                f"of weights, {self.tensor_parallel * per_gpu * 2**30 / 1e9:.1f} GB for them and the KV cache; "
                "allowed: more GPUs per replica (tensor parallelism), a larger GPU or a quantized checkpoint"
            )
        blocks = int(free // (self.profile.kv_bytes_per_token * KV_BLOCK_TOKENS))
        return blocks * KV_BLOCK_TOKENS

    @property
    def framebuffer_used_fraction(self) -> float:
        """DCGM framebuffer used / total: vLLM pre-allocates, so this ignores load (§6.3)."""
        return min(1.0, self.engine.gpu_memory_utilization + CUDA_CONTEXT_GIB / self.cal.usable_gib)

    def table(self, stats: TokenStats, points: int = 384, recompute_on: bool = True) -> ReplicaTable:
        """The steady-state table, built once per process for a model and request mix: a build solves a few
        thousand fixed-point steps (about 0.6 s), and a day's strategies, the what-ifs and a tune ask for the
        same one again. Its arrays are read-only, so one caller cannot change another's."""
        return _shared_table(self, stats, points, recompute_on)


@dataclass(frozen=True)
class _State:
    running: np.ndarray  # decoding sequences
    itl: np.ndarray
    rho_prefill: np.ndarray  # fraction of time a prompt is being prefilled
    step: np.ndarray  # mean step time (residual seen by an arrival)
    fixed: np.ndarray  # per prefill-carrying step: overhead + KV reads of the decoders
    decoders: np.ndarray  # R: the decoding sequences every step carries beside its prompt chunks
    chunk: np.ndarray  # prompt tokens one step can take
    busy: np.ndarray  # fraction of time the engine is stepping
    feasible: np.ndarray
    prefill_steps: np.ndarray  # prompt-carrying steps per second
    prefill_step: np.ndarray  # their mean duration
    decode_step: np.ndarray  # duration of a decode-only step


def _solve(model: ReplicaModel, stats: TokenStats, lam: np.ndarray, recompute: float = 0.0) -> _State:
    """Fixed point R = lam * o * ITL(R) for each rate in `lam` (see module doc)."""
    _, budget = model.limits
    a = model.weight_read_seconds
    linear = model.linear_seconds
    b = model.kv_read_seconds_per_token * stats.mean_decode_context
    k = model.seconds_per_token
    t0 = model.step_overhead_seconds
    p = stats.mean_input * (1 - model.engine.prefix_hit_rate) + recompute
    o = stats.mean_output
    chunked = model.engine.chunked_prefill

    # loop invariants, and no all-reduce term at TP 1 (x + 0 is x): the loop runs ~100-400 times a solve
    allreduce = model.allreduce_seconds if model.tensor_parallel > 1 else None
    lam_o, lam_pk = lam * o, lam * p * k
    drains = lam_pk < 1  # the prompts' compute fits in the time: a batch of chunks drains

    def evaluate(r: np.ndarray, full: bool = True):
        chunk = np.maximum(budget - r, 1.0) if chunked else np.full_like(r, float(budget))
        base = t0 + b * r
        t_d = (base + allreduce(r) if allreduce else base) + linear(r)
        prompt = np.minimum(p, chunk) if chunked else p
        fixed = base + allreduce(prompt + r if chunked else p) if allreduce else base
        n_chunks = np.maximum(1.0, p / chunk)
        if chunked:
            t_p1 = fixed + linear(prompt + r)
            lam_chunks = lam * n_chunks
            single = lam_chunks * t_p1 <= 1.0
            t_pb = np.where(drains, np.maximum(fixed + a, (fixed + r * k) / (1 - lam_pk)), np.inf)
            t_p = np.where(single, t_p1, t_pb)
            n_p = np.where(single, lam_chunks, 1 / t_pb)
            busy_p = np.minimum(n_p * t_p, 1.0)
            itl = 1 / (n_p + (1 - busy_p) / t_d)
            if not full:
                return itl
            ok = np.where(single, True, lam * p * t_pb <= chunk)
            rho = np.minimum(lam_chunks * t_p, 0.999)
        else:
            t_p1 = fixed - b * r + linear(p)
            busy_p = lam * t_p1
            itl = np.where(busy_p < 1, t_d / (1 - busy_p), np.inf)
            if not full:
                return itl
            t_p = t_p1
            n_p = lam
            ok = busy_p < 1
            rho = np.minimum(busy_p, 0.999)
        step = np.where(r > 0, busy_p * t_p + (1 - busy_p) * t_d, t_p)
        return itl, rho, step, fixed, r, chunk, ok, n_p, t_p, t_d

    r = np.zeros_like(lam)
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(400):
            itl = evaluate(r, full=False)
            r_new = np.minimum(np.where(np.isfinite(itl), lam_o * itl, 1e9), 1e9)
            # np.allclose(r_new, r, rtol=1e-9, atol=1e-9) for finite arrays, without its generality (a third
            # of a table build went to isclose)
            if (np.abs(r_new - r) <= 1e-9 + 1e-9 * np.abs(r)).all():
                r = r_new
                break
            r = r_new
        itl, rho, step, fixed, decoders, chunk, ok, n_p, t_p, t_d = evaluate(r)
    busy = np.minimum(1.0, lam * (o * itl + p * k) + (r > 0))
    return _State(r, itl, rho, step, fixed, decoders, chunk, busy, ok & np.isfinite(itl), n_p, t_p, t_d)


@dataclass(frozen=True)
class ReplicaTable:
    """Steady state on a grid of per-replica rates up to saturation, for fast lookups in the engine."""

    model: ReplicaModel
    stats: TokenStats
    capacity_rps: float  # saturation throughput per replica (requests/s), with recompute if KV-bound
    max_running: float  # R at saturation: max_num_seqs or the KV cache, whichever binds
    kv_bound: bool  # the KV cache, not max_num_seqs or compute, limits the running set
    lam: np.ndarray
    running: np.ndarray
    itl: np.ndarray
    rho_prefill: np.ndarray
    step: np.ndarray
    fixed: np.ndarray
    decoders: np.ndarray
    chunk: np.ndarray
    kv_usage: np.ndarray = field(repr=False)
    prefill_steps: np.ndarray = field(repr=False)
    prefill_step: np.ndarray = field(repr=False)
    decode_step: np.ndarray = field(repr=False)
    recompute_tokens: float = 0.0  # per request at saturation: preempted prefills it pays for

    @classmethod
    def build(
        cls, model: ReplicaModel, stats: TokenStats, points: int = 384, recompute_on: bool = True
    ) -> ReplicaTable:  # recompute_on=False: the what-if of a full KV cache that never preempts
        seqs, _ = model.limits
        kv_per_seq = stats.mean_decode_context + KV_BLOCK_TOKENS / 2
        r_kv = model.kv_capacity_tokens / kv_per_seq
        r_cap, kv_bound = float(min(seqs, r_kv)), r_kv < seqs
        recompute = stats.mean_output if kv_bound and recompute_on else 0.0
        mu = _saturation(model, stats, r_cap, recompute)  # a full cache: a decoded token, a recomputed one
        lam = np.linspace(0.0, mu, points)
        s = _solve(model, stats, lam)
        sat = _solve(model, stats, np.array([mu]), recompute)
        running = np.minimum(np.append(s.running[:-1], sat.running), r_cap)

        def last(x: np.ndarray, y: np.ndarray) -> np.ndarray:
            return np.append(x[:-1], y)

        kv = np.minimum(running * kv_per_seq / model.kv_capacity_tokens, 1.0)
        table = cls(
            model, stats, mu, r_cap, kv_bound, lam, running, last(s.itl, sat.itl),
            last(s.rho_prefill, sat.rho_prefill), last(s.step, sat.step), last(s.fixed, sat.fixed),
            last(s.decoders, sat.decoders), last(s.chunk, sat.chunk), kv,
            last(s.prefill_steps, sat.prefill_steps), last(s.prefill_step, sat.prefill_step),
            last(s.decode_step, sat.decode_step), recompute,
        )  # fmt: skip
        for value in vars(table).values():
            if isinstance(value, np.ndarray):
                value.setflags(write=False)
        return table

    @property
    def preemptions_per_request(self) -> float:
        """Preemptions a request causes at saturation: its recompute over the context a preempted one holds."""
        return self.recompute_tokens / (self.stats.mean_input + self.stats.mean_output / 2)

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
        names = ("running", "itl", "rho_prefill", "step", "fixed", "decoders", "chunk", "kv_usage",
                 "prefill_steps", "prefill_step", "decode_step")  # fmt: skip
        return {n: np.interp(x, self.lam, getattr(self, n)) for n in names}

    def prefill_seconds(self, input_tokens: np.ndarray, state: dict[str, np.ndarray]) -> np.ndarray:
        """Own prefill time of each prompt: its chunks' steps, sharing each step with the decoders."""
        m = self.model
        p = input_tokens * (1 - m.engine.prefix_hit_rate)
        if not m.engine.chunked_prefill:
            return m.step_overhead_seconds + m.allreduce_seconds(p) + m.linear_seconds(p)
        n = np.maximum(1.0, np.ceil(p / state["chunk"]))
        return n * (state["fixed"] + m.linear_seconds(p / n + state["decoders"]))

    def ttft_seconds(self, input_tokens: np.ndarray, state: dict[str, np.ndarray], rng: np.random.Generator):
        """Sampled TTFTs of requests admitted in the given states (no queueing beyond the replica)."""
        rho = np.clip(state["rho_prefill"], 0.0, 0.99)
        u = rng.random(len(input_tokens))
        with np.errstate(divide="ignore"):
            others = np.where(
                rho > 0, np.floor(np.log(np.maximum(u, 1e-300)) / np.log(np.maximum(rho, 1e-300))), 0.0
            )
        own = self.prefill_seconds(input_tokens, state)
        return self.host_wait_seconds(state) + own * (1 + others)

    def host_wait_seconds(self, state: dict[str, np.ndarray], others: float = 1.0) -> np.ndarray:
        """Before a request's own prefill: the API server, then `wait_steps` steps if the engine is busy (1 - e^-n)."""
        busy = 1 - np.exp(-np.asarray(state["running"], dtype=float) * others)
        return REQUEST_OVERHEAD_SECONDS + state["step"] * self.model.wait_steps * busy

    def itl_seen(self, lam: float, others: float = 1.0) -> float:
        """ITL a decoding request sees when only `others` of the prompt steps are other users' (closed loop:
        a user's own prompt is never prefilled while it decodes, so at C = 1 decode steps carry no chunks)."""
        s = self.at(lam)
        n_p = float(s["prefill_steps"]) * others
        busy = min(1.0, n_p * float(s["prefill_step"]))
        return 1 / (n_p + (1 - busy) / float(s["decode_step"]))

    def mean_ttft_seconds(self, lam: float, others: float = 1.0) -> float:
        """Mean TTFT at a rate; `others` scales what an arrival finds (C-1 of C users in a closed loop)."""
        s = self.at(lam)
        rho = float(np.clip(s["rho_prefill"] * others, 0.0, 0.99))
        own = float(self.prefill_seconds(np.array([self.stats.mean_input]), s)[0])
        return float(self.host_wait_seconds(s, others)) + own / (1 - rho)


@lru_cache(maxsize=256)
def _shared_table(model: ReplicaModel, stats: TokenStats, points: int, recompute_on: bool) -> ReplicaTable:
    return ReplicaTable.build(model, stats, points, recompute_on)


def _saturation(model: ReplicaModel, stats: TokenStats, r_cap: float, recompute: float) -> float:
    """Largest rate whose steady state is feasible with at most r_cap decoding sequences.

    Feasibility is monotone in the rate: bracket on a doubling grid, then refine on vectorized grids.
    """

    def feasible(lam: np.ndarray) -> np.ndarray:
        s = _solve(model, stats, lam, recompute)
        return s.feasible & (s.running <= r_cap)

    grid = 2.0 ** np.arange(-10, 16)
    ok = feasible(grid)
    if not ok[0]:
        return 0.0
    lo = float(grid[ok][-1])
    hi = float(grid[np.argmin(ok)]) if not ok.all() else float(grid[-1])
    for _ in range(4):
        grid = np.linspace(lo, hi, 33)
        ok = feasible(grid)
        lo = float(grid[ok][-1])
        hi = float(grid[min(int(np.argmin(ok)) if not ok.all() else len(grid) - 1, len(grid) - 1)])
        if hi <= lo:
            break
    return lo
