"""Benchmark shapes solved on a replica's steady-state table: a closed loop of C users, one burst wave, and an
open loop at a request rate; and llmperf's waves, run request by request on the engine's step loop.

These are what benchmark scripts measure (vllm_capacity_points.md): `vllm bench serve --max-concurrency C`
is a closed loop; a batch of N prompts sent at once is a burst; `--request-rate R` (or inference-perf's
constant-rate stages) is an open loop; llmperf before June 2024 sent waves of C paced by its own prompt
preparation (`llmperf_waves`). The engine model they read is serving/replica.py (ReplicaTable), or its step
loop (serving/steps.py) where the load is a transient; this module only adds the client side of each benchmark.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from llm_platform.simulator.serving import steps
from llm_platform.simulator.serving.replica import ReplicaModel, ReplicaTable
from llm_platform.simulator.serving.replica_config import KV_BLOCK_TOKENS, REQUEST_OVERHEAD_SECONDS


@dataclass(frozen=True)
class ClosedLoop:
    """A closed-loop benchmark point (C users, each sends its next request when the last one ends)."""

    ttft_s: float
    itl_s: float
    requests_per_s: float
    output_tokens_per_s: float
    running: float
    waiting: float
    kv_usage: float
    preempted_per_s: float
    ttft_median_s: float | None = None  # bursts: the median request's TTFT (closed loops: not computed)


def closed_loop(table: ReplicaTable, concurrency: int) -> ClosedLoop:
    """Solve C = X * (TTFT + (o - 1) * ITL) on the table; past saturation the excess waits in the queue."""
    o = table.stats.mean_output
    others = (concurrency - 1) / concurrency

    def in_engine(lam: float) -> float:
        return lam * (table.mean_ttft_seconds(lam, others) + (o - 1) * table.itl_seen(lam, others))

    mu = table.capacity_rps
    if in_engine(mu) > concurrency:
        lo, hi = 0.0, mu
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if in_engine(mid) <= concurrency else (lo, mid)
        lam, waiting = lo, 0.0
    else:
        lam, waiting = mu, concurrency - in_engine(mu)
    s = table.at(lam)
    saturated = waiting > 0
    preempt = 0.0
    if saturated and table.kv_bound:  # recompute frees what decoding grows (serving/overload.py)
        preempt = lam * table.preemptions_per_request
    return ClosedLoop(
        table.mean_ttft_seconds(lam, others) + (waiting / lam if lam > 0 else math.inf),
        table.itl_seen(lam, others),
        lam,
        lam * o,
        float(s["running"]),
        waiting,
        float(s["kv_usage"]),
        preempt,
    )


def burst(table: ReplicaTable, requests: int, cached: int = 0) -> ClosedLoop:
    """One burst of `requests` sent at once: prompts drain FCFS through the prefill budget, then decode together.

    At most the running cap (max_num_seqs, the KV cache) run at once; the rest run in later waves, each starting
    when the one before ends (every request generates the same tokens, so a wave ends together). A wave's
    prompts are prefilled in shared steps of `max_num_batched_tokens`; a request's TTFT is the API overhead, the
    waves before its own, and its wave's drain up to the end of its own prompt (FCFS: the prompt tokens up to and
    including its own over the wave's; a lone prompt waits for its whole prefill). The first `cached` prompts are
    in the prefix cache (a benchmark's earlier runs sent them): only the tokens past their last whole cached
    block are computed (`cached_tokens`). The mean is `ttft_s`, the median `ttft_median_s`. ITL is the step time
    with a full wave running; tok/s divides all output tokens by the time the last wave ends.
    """
    o = table.stats.mean_output
    running = min(float(requests), table.max_running)
    lam = _rate_for_running(table, running)
    s = table.at(lam)
    m = table.model
    _, budget = m.limits
    p_in = table.stats.mean_input
    i = np.arange(requests, dtype=np.float64)
    p = np.where(i < cached, p_in - cached_tokens(p_in), p_in * (1 - m.engine.prefix_hit_rate))
    itl = float(s["itl"])
    ttft = np.empty(requests)
    start = 0.0
    size = max(1, int(running))
    for first in range(0, requests, size):
        wave = p[first : first + size]
        per_step = min(float(budget), float(wave.sum()))
        step = m.step_seconds(per_step)
        drain = math.ceil(float(wave.sum()) / per_step) * step
        ttft[first : first + len(wave)] = start + drain * np.cumsum(wave) / wave.sum()
        start += drain + (o - 1) * itl
    ttft += REQUEST_OVERHEAD_SECONDS
    return ClosedLoop(
        float(ttft.mean()), itl, requests / start, requests * o / start,
        running, float(requests - running), float(s["kv_usage"]), 0.0, float(np.median(ttft)),
    )  # fmt: skip


def cached_tokens(prompt: float) -> float:
    """Prompt tokens a prefix-cache hit serves: whole 16-token blocks up to the prompt's last token, which is
    always computed (vllm/v1/core/kv_cache_manager.py `get_computed_blocks`: max_cache_hit_length =
    request.num_tokens - 1)."""
    return math.floor((prompt - 1) / KV_BLOCK_TOKENS) * KV_BLOCK_TOKENS


@dataclass(frozen=True)
class OpenLoop:
    """An open-loop benchmark point: arrivals at `rate`, served at min(rate, saturation)."""

    rate: float
    sustainable: bool  # rate at or below the saturation rate (else the queue grows without bound)
    ttft_s: np.ndarray  # sampled TTFT of each prompt (seconds)
    itl_s: float  # = TPOT: every running sequence sees the same mean step
    requests_per_s: float
    output_tokens_per_s: float
    running: float
    kv_usage: float


def arrival_state(
    table: ReplicaTable, served: float, arrivals: str, inputs: np.ndarray
) -> dict[str, np.ndarray]:
    """The replica's steady state at `served` req/s, prompts queueing as the arrival process makes them.

    The replica model's prompt queue is M/G/1 (Poisson arrivals: a geometric number of prompts ahead, mean
    rho/(1-rho)). Constant (deterministic) arrivals queue less: Kingman's approximation scales the mean wait by
    (ca^2 + cs^2)/2 with ca^2 = 1 for Poisson and 0 for constant arrivals, so the number ahead is scaled by
    cs^2/(1 + cs^2), cs^2 the squared coefficient of variation of the prompt (service) sizes; the geometric law is
    kept with the rho that gives that mean.
    """
    state = table.at(np.full(len(inputs), served))
    if arrivals == "poisson":
        return state
    cs2 = float(inputs.var() / inputs.mean() ** 2)
    rho = np.clip(state["rho_prefill"], 0.0, 0.99)
    ahead = rho / (1 - rho) * cs2 / (1 + cs2)
    return {**state, "rho_prefill": ahead / (1 + ahead)}


def open_loop(
    table: ReplicaTable,
    rate: float,
    arrivals: str,
    inputs: np.ndarray,
    outputs: np.ndarray,
    rng: np.random.Generator,
) -> OpenLoop:
    """Arrivals at `rate`: the steady state at that rate, or the saturation point if it is not sustainable."""
    sustainable = rate <= table.capacity_rps
    served = min(rate, table.capacity_rps)
    state = arrival_state(table, served, arrivals, inputs)
    return OpenLoop(
        rate, sustainable, table.ttft_seconds(inputs, state, rng), float(state["itl"][0]), served,
        served * float(outputs.mean()), float(state["running"][0]), float(state["kv_usage"][0]),
    )  # fmt: skip


def _rate_for_running(table: ReplicaTable, running: float) -> float:
    """The steady rate at which `running` sequences decode (inverse of the table's running column)."""
    return float(np.interp(running, table.running, table.lam))


@dataclass(frozen=True)
class Waves:
    """An llmperf run: each request's TTFT and latency, and the run's duration (its waves back to back)."""

    ttft_s: np.ndarray
    latency_s: np.ndarray
    output_tokens: np.ndarray
    duration_s: float

    @property
    def output_tokens_per_s(self) -> float:
        return float(self.output_tokens.sum()) / self.duration_s


def llmperf_requests(requests: int, concurrency: int) -> int:
    """How many requests llmperf sends to collect `requests` results: whole waves (module doc of llmperf_waves)."""
    return math.ceil(requests / concurrency) * concurrency


def llmperf_waves(
    model: ReplicaModel, concurrency: int, prompts: np.ndarray, outputs: np.ndarray, spacing_s: float
) -> Waves:
    """llmperf as it ran before its fix of 2024-06-19 (ray-project/llmperf@e22c830 token_benchmark_ray.py).

    The driver prepares a prompt (sonnet lines, with a tokenizer loaded per prompt: the "artificial delay"
    of llmperf#54) and hands it to a free client, `spacing_s` apart; on every C-th prompt it collects the results
    of all requests in flight (RequestsLauncher.get_next_ready: `while has_next(): get_next_unordered()`, each
    blocking), so the next wave starts when this one's slowest request ends; it stops once it has the results it
    asked for: `llmperf_requests` of them, the lengths given, C to a wave. Each wave runs on the engine's step
    loop (serving/steps.py; a wave identical to the one before is not run again); the run's duration, llmperf's
    tok/s denominator, is the waves'.
    """
    if len(prompts) % concurrency or len(prompts) != len(outputs):
        raise ValueError(
            f"{len(prompts)} prompts and {len(outputs)} outputs; allowed: whole waves of {concurrency}"
        )
    sent = spacing_s * np.arange(1, concurrency + 1)
    ttft, latency, duration = [], [], 0.0
    last: tuple[bytes, steps.Trace] | None = None
    for first in range(0, len(prompts), concurrency):
        p, o = prompts[first : first + concurrency], outputs[first : first + concurrency]
        key = p.tobytes() + o.tobytes()
        wave = last[1] if last is not None and last[0] == key else steps.run(model, sent, p, o)
        last = (key, wave)
        ttft.append(wave.ttft)
        latency.append(wave.latency)
        duration += float(wave.done.max())
    return Waves(
        np.concatenate(ttft), np.concatenate(latency), np.asarray(outputs, dtype=np.float64), duration
    )
