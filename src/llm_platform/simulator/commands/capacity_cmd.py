"""`python -m llm_platform.simulator capacity`: one replica at a closed-loop concurrency, from the day simulation's model.

`python -m llm_platform.simulator calibrate` prints the calibration table (simulator/calibration.py) that docs/simulator.md
carries: published measurements against this same model.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

import numpy as np

from llm_platform.config.catalog import GPU_INSTANCES
from llm_platform.config.model_profiles import profile
from llm_platform.simulator.commands.args import fraction, positive_float, positive_int
from llm_platform.simulator.serving.benchmark import closed_loop
from llm_platform.simulator.serving.replica import (
    EngineConfig,
    ReplicaModel,
    ReplicaTable,
    TokenStats,
)
from llm_platform.tools.cli import ArgumentParser


def parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="python -m llm_platform.simulator capacity", description=__doc__)
    p.add_argument("--model", required=True, help="Hugging Face id (config/model_profiles.py)")
    p.add_argument("--instance", required=True, help="EC2 instance type (config/catalog.py)")
    p.add_argument("--tp", type=positive_int, default=1, help="tensor-parallel size (GPUs per replica)")
    p.add_argument("--input-tokens", type=positive_float, required=True, help="prompt tokens per request")
    p.add_argument("--output-tokens", type=positive_float, required=True, help="generated tokens per request")
    load = p.add_mutually_exclusive_group(required=True)
    load.add_argument("--concurrency", type=positive_int, help="requests in flight (closed loop)")
    load.add_argument("--rate", type=positive_float, help="Poisson arrivals, requests/s (open loop)")
    p.add_argument("--prefix-hit-rate", type=fraction, default=0.0, help="fraction of prompt tokens cached")
    p.add_argument("--gpu-memory-utilization", type=fraction, default=0.9)
    p.add_argument("--max-num-seqs", type=positive_int, help="default: vLLM's for the GPU")
    p.add_argument("--max-num-batched-tokens", type=positive_int, help="default: vLLM's for the GPU")
    p.add_argument("--max-model-len", type=positive_int, default=8192)
    p.add_argument(
        "--no-chunked-prefill", action="store_true", help="V0 scheduling (prefill-only steps), vLLM <= 0.5"
    )
    p.add_argument("--json", action="store_true")
    return p


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    if args.instance not in GPU_INSTANCES:
        raise ValueError(f"unknown instance {args.instance!r}; allowed: {', '.join(GPU_INSTANCES)}")
    instance = GPU_INSTANCES[args.instance]
    if args.tp > instance.gpus:
        raise ValueError(f"--tp {args.tp} needs {args.tp} GPUs; {args.instance} has {instance.gpus}")
    engine = EngineConfig(
        gpu_memory_utilization=args.gpu_memory_utilization,
        max_num_seqs=args.max_num_seqs,
        max_num_batched_tokens=args.max_num_batched_tokens,
        chunked_prefill=not args.no_chunked_prefill,
        max_model_len=args.max_model_len,
        prefix_hit_rate=args.prefix_hit_rate,
    )
    model = ReplicaModel(profile(args.model), instance.gpu, args.tp, engine)
    table = model.table(TokenStats.fixed(args.input_tokens, args.output_tokens))
    seqs, tokens = model.limits
    if args.rate is not None:
        return _open_loop(args, model, table)
    point = closed_loop(table, args.concurrency)
    out = {
        "ttft_ms": round(point.ttft_s * 1000, 1),
        "itl_ms": round(point.itl_s * 1000, 2),
        "output_tokens_per_s": round(point.output_tokens_per_s, 1),
        "requests_per_s": round(point.requests_per_s, 3),
        "kv_cache_tokens": model.kv_capacity_tokens,
        "preempted": round(point.preempted_per_s, 3),
        "running": round(point.running, 1),
        "waiting": round(point.waiting, 1),
        "kv_cache_usage": round(point.kv_usage, 3),
        "saturation_requests_per_s": round(table.capacity_rps, 3),
        "limited_by": "kv-cache"
        if table.kv_bound
        else ("max_num_seqs" if table.max_running >= seqs else "gpu"),
        "max_num_seqs": seqs,
        "max_num_batched_tokens": tokens,
        "chunked_prefill": engine.chunked_prefill,
    }
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(
            f"{args.model} on {args.tp} x {instance.gpu.name} ({args.instance}), {args.input_tokens:g} in / "
            f"{args.output_tokens:g} out, concurrency {args.concurrency}:"
        )
        for key, value in out.items():
            print(f"  {key}: {value}")
        print("  (preempted: KV-cache preemptions per second; waiting: requests queued for a running slot)")
    return 0


def _open_loop(args: argparse.Namespace, model: ReplicaModel, table: ReplicaTable) -> int:
    """Poisson arrivals at --rate: the steady state at that rate, or the saturation point if it is not sustainable."""
    rate = float(args.rate)
    sustainable = rate <= table.capacity_rps
    served = min(rate, table.capacity_rps)
    state = table.at(np.full(20_000, served))
    ttft = table.ttft_seconds(np.full(20_000, args.input_tokens), state, np.random.default_rng(0))
    out: dict[str, object] = {
        "rate_requests_per_s": rate,
        "sustainable": sustainable,
        "ttft_ms_mean": round(float(ttft.mean()) * 1000, 1),
        "ttft_ms_median": round(float(np.median(ttft)) * 1000, 1),
        "ttft_ms_p90": round(float(np.percentile(ttft, 90)) * 1000, 1),
        "tpot_ms": round(float(state["itl"][0]) * 1000, 2),
        "output_tokens_per_s": round(served * args.output_tokens, 1),
        "requests_per_s": round(served, 3),
        "running": round(float(state["running"][0]), 1),
        "kv_cache_usage": round(float(state["kv_usage"][0]), 3),
        "saturation_requests_per_s": round(table.capacity_rps, 3),
        "kv_cache_tokens": model.kv_capacity_tokens,
    }
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{args.model} on {args.tp} x {model.gpu.name}, Poisson arrivals at {rate:g} req/s:")
        for key, value in out.items():
            print(f"  {key}: {value}")
        if not sustainable:
            print("  (not sustainable: the queue grows without bound; figures are the saturated replica's)")
    return 0


def calibrate(argv: Sequence[str]) -> int:
    from llm_platform.simulator.serving import calibration

    p = ArgumentParser(prog="python -m llm_platform.simulator calibrate", description=calibration.__doc__)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    table_rows = calibration.rows()
    print(json.dumps(table_rows, indent=2) if args.json else calibration.markdown_table(table_rows))
    return 0
