"""`simulator capacity --rate`'s run: how many prompts, the client's timeout and retries, the gateway's limits
(serving/overload.py), and the figures the run prints."""

from __future__ import annotations

import argparse
import math

import numpy as np

from llm_platform.simulator.commands.args import positive_float, positive_int
from llm_platform.simulator.serving.overload import (
    ENVOY_MAX_IN_FLIGHT,
    OPENAI_SDK,
    VLLM_BENCH,
    Client,
    Gateway,
    Outcome,
    arrival_times,
    simulate,
)
from llm_platform.simulator.serving.replica import ReplicaTable

CLIENTS = {"vllm-bench": VLLM_BENCH, "openai": OPENAI_SDK}
WINDOW_S = 600.0  # without --num-prompts: ten minutes of arrivals at --rate
MAX_PROMPTS = 100_000


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("overload (with --rate): the run, the client and the gateway")
    g.add_argument(
        "--num-prompts", type=positive_int, help=f"requests in the run (default: {WINDOW_S:g} s of --rate)"
    )
    g.add_argument(
        "--client",
        choices=tuple(CLIENTS),
        default="vllm-bench",
        help="vllm-bench: one attempt, 6 h total timeout; openai: openai-python defaults (600 s to the first "
        "token, 2 retries, backoff 0.5 s doubling to 8 s)",
    )
    g.add_argument("--timeout", type=positive_float, help="seconds per attempt (default: the client's)")
    g.add_argument(
        "--timeout-on",
        choices=("total", "first-token"),
        help="what the timeout counts to (default: client's)",
    )
    g.add_argument("--max-attempts", type=positive_int, help="attempts per request (default: the client's)")
    g.add_argument("--backoff", type=positive_float, help="first retry delay, s, doubling (default: 0.5)")
    g.add_argument(
        "--rate-limit", type=positive_int, help="gateway local rate limit, requests/s (429 beyond)"
    )
    g.add_argument(
        "--max-in-flight",
        type=positive_int,
        help=f"gateway circuit breaker on requests in flight (503 beyond; Envoy's defaults: {ENVOY_MAX_IN_FLIGHT})",
    )


def check(args: argparse.Namespace) -> None:
    flags = ("num_prompts", "timeout", "timeout_on", "max_attempts", "backoff", "rate_limit", "max_in_flight")
    given = [f"--{f.replace('_', '-')}" for f in flags if getattr(args, f) is not None]
    if args.rate is None and (given or args.client != "vllm-bench"):
        raise ValueError(f"{', '.join(given) or '--client'} without --rate; allowed: only with --rate")
    if args.rate is not None and math.isinf(args.rate) and args.num_prompts is None:
        raise ValueError("--rate inf without --num-prompts; allowed: --rate inf --num-prompts N (one burst)")


def client(args: argparse.Namespace) -> Client:
    base = CLIENTS[args.client]
    return Client(
        args.timeout if args.timeout is not None else base.timeout_s,
        args.timeout_on or base.timeout_on,
        args.max_attempts or base.max_attempts,
        args.backoff if args.backoff is not None else base.backoff_s,
        base.max_backoff_s,
    )


def run(args: argparse.Namespace, table: ReplicaTable, outputs: np.ndarray) -> Outcome:
    rate = float(args.rate)
    n = args.num_prompts or min(MAX_PROMPTS, max(1, math.ceil(rate * WINDOW_S)))
    arrivals = arrival_times(n, rate, args.arrivals, np.random.default_rng(3))
    gateway = Gateway(args.rate_limit, args.max_in_flight)
    return simulate(table, arrivals, outputs, client(args), gateway)


def figures(o: Outcome) -> dict[str, object]:
    """What the run prints: counts, goodput (successful requests only) and the successes' TTFT with queueing."""
    ttft = o.ttft_s * 1000 if len(o.ttft_s) else np.array([math.nan])
    return {
        "run_requests": o.requests,
        "run_succeeded": o.succeeded,
        "run_failed": o.failed,
        "run_timeouts": o.timed_out,
        "run_aborted_running": o.aborted_running,
        "run_rate_limited_429": o.rate_limited,
        "run_overflowed_503": o.overflowed,
        "run_retries": o.retries,
        "run_duration_s": round(o.duration_s, 1),
        "run_goodput_requests_per_s": round(o.goodput_rps, 3),
        "run_goodput_output_tokens_per_s": round(o.output_tokens_per_s, 1),
        "run_ttft_ms_mean": round(float(ttft.mean()), 1),
        "run_ttft_ms_median": round(float(np.median(ttft)), 1),
        "run_ttft_ms_p90": round(float(np.percentile(ttft, 90)), 1),
        "run_peak_waiting": o.peak_waiting,
        "run_preemptions": round(o.preemptions),
        "run_recompute_tokens": round(o.recompute_tokens),
        "overloaded": o.overloaded,
    }
