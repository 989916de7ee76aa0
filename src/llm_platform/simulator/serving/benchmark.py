"""Benchmark shapes solved on a replica's steady-state table: a closed loop of C users and one burst wave.

These are what benchmark scripts measure (vllm_capacity_points.md): `vllm bench serve --max-concurrency C`
is a closed loop; a batch of N prompts sent at once is a burst. The steady-state engine model they read is
serving/replica.py (ReplicaTable); this module only adds the client side of each benchmark.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from llm_platform.simulator.serving.replica import REQUEST_OVERHEAD_SECONDS, ReplicaTable


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


def burst(table: ReplicaTable, requests: int) -> ClosedLoop:
    """One wave of `requests` sent at once: prompts drain FCFS through the prefill budget, then decode together.

    Mean TTFT is the API overhead plus half the wave's prefill time; ITL is the step time with the wave's
    sequences running (capped by max_num_seqs and the KV cache; the rest run in later waves); tok/s divides all
    output tokens by the time the last wave ends.
    """
    o = table.stats.mean_output
    running = min(float(requests), table.max_running)
    waves = math.ceil(requests / running)
    lam = _rate_for_running(table, running)
    s = table.at(lam)
    own = float(table.prefill_seconds(np.array([table.stats.mean_input]), s)[0])
    m = table.model
    _, budget = m.limits
    p = table.stats.mean_input * (1 - m.engine.prefix_hit_rate)
    per_step = min(float(budget), p * running)
    step = (
        m.step_overhead_seconds
        + float(m.allreduce_seconds(per_step))
        + max(m.weight_read_seconds, per_step * m.seconds_per_token)
    )
    drain = max(own, math.ceil(p * running / per_step) * step)
    itl = float(s["itl"])
    duration = waves * (drain + (o - 1) * itl)
    return ClosedLoop(
        REQUEST_OVERHEAD_SECONDS + drain / 2, itl, requests / duration, requests * o / duration,
        running, float(requests - running), float(s["kv_usage"]), 0.0,
    )  # fmt: skip


def _rate_for_running(table: ReplicaTable, running: float) -> float:
    """The steady rate at which `running` sequences decode (inverse of the table's running column)."""
    return float(np.interp(running, table.running, table.lam))
