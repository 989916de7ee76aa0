"""`python -m llm_platform.simulator capacity`: one replica at a closed-loop concurrency or an open-loop request
rate, from the day simulation's model. The model is a known Hugging Face id (`--model`), a `config.json`
(`--geometry FILE`) or its fields on the command line (`--hidden-size ...`); all three become the same
ModelProfile (facts/geometry.py) the day simulation uses.

`python -m llm_platform.simulator calibrate` prints the calibration table (simulator/serving/calibration.py) that docs/simulator/calibration.md
carries: published measurements against this same model.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from llm_platform.commandline import ArgumentParser
from llm_platform.facts import geometry
from llm_platform.facts.catalog import GPU_INSTANCES
from llm_platform.facts.model_profiles import ModelProfile, profile
from llm_platform.simulator.commands import overload_args as overload
from llm_platform.simulator.commands.args import (
    fraction,
    non_negative_float,
    positive_float,
    positive_int,
    request_rate,
)
from llm_platform.simulator.commands.token_dist import TokenDist, token_dist
from llm_platform.simulator.serving.benchmark import (
    closed_loop,
    llmperf_requests,
    llmperf_waves,
    open_loop,
)
from llm_platform.simulator.serving.calibration_points import LLMPERF_SPACING_S
from llm_platform.simulator.serving.replica import ReplicaModel, ReplicaTable, TokenStats
from llm_platform.simulator.serving.replica_config import EngineConfig


def parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="python -m llm_platform.simulator capacity", description=__doc__)
    model = p.add_argument_group("model (one of --model, --geometry, or the config.json fields)")
    model.add_argument("--model", help="Hugging Face id (facts/model_profiles.py)")
    model.add_argument("--geometry", metavar="FILE", help="the model's Hugging Face config.json")
    for flag, field in GEOMETRY_FLAGS.items():
        model.add_argument(f"--{flag}", type=positive_int, help=f"config.json {field}")
    model.add_argument("--dtype", choices=geometry.DTYPES, default=None, help="config.json torch_dtype")
    model.add_argument("--tie-word-embeddings", action="store_true", help="config.json tie_word_embeddings")
    model.add_argument(
        "--params", type=positive_float, help="parameter count (default: counted from geometry)"
    )
    p.add_argument("--instance", required=True, help="EC2 instance type (facts/catalog.py)")
    p.add_argument("--tp", type=positive_int, default=1, help="tensor-parallel size (GPUs per replica)")
    p.add_argument(
        "--input-tokens", type=token_dist, required=True, help="prompt tokens: N or a distribution"
    )
    p.add_argument(
        "--output-tokens", type=token_dist, required=True, help="generated tokens: N or a distribution"
    )
    load = p.add_mutually_exclusive_group(required=True)
    load.add_argument("--concurrency", type=positive_int, help="requests in flight (closed loop)")
    load.add_argument("--rate", type=request_rate, help="arrivals, requests/s (open loop; inf: all at once)")
    p.add_argument(
        "--arrivals", choices=("poisson", "constant"), default="poisson", help="--rate's arrival process"
    )
    p.add_argument(
        "--llmperf",
        type=positive_int,
        metavar="N",
        help="with --concurrency: llmperf's run for N results as it ran before 2024-06-19 (waves of C, the next "
        "when the last ends; serving/benchmark.py llmperf_waves), run step by step; prints llmperf's figures",
    )
    p.add_argument(
        "--llmperf-spacing",
        type=non_negative_float,
        help=f"with --llmperf: seconds between the driver's prompts (default {LLMPERF_SPACING_S:.3f}: the "
        "published A10G run's)",
    )
    overload.add_arguments(p)
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


GEOMETRY_FLAGS = {
    "hidden-size": "hidden_size",
    "num-layers": "num_hidden_layers",
    "num-attention-heads": "num_attention_heads",
    "num-kv-heads": "num_key_value_heads",
    "head-dim": "head_dim",
    "intermediate-size": "intermediate_size",
    "vocab-size": "vocab_size",
}
SAMPLES = 20_000


def model_profile(args: argparse.Namespace) -> ModelProfile:
    """The profile the flags name: --model, --geometry FILE or the config.json fields (exactly one)."""
    fields = {field: getattr(args, flag.replace("-", "_")) for flag, field in GEOMETRY_FLAGS.items()}
    given = {k: v for k, v in fields.items() if v is not None}
    if args.tie_word_embeddings:
        given["tie_word_embeddings"] = True
    if args.dtype is not None:
        given["torch_dtype"] = args.dtype
    chosen = [
        name for name, on in (("--model", args.model), ("--geometry", args.geometry), ("fields", given)) if on
    ]
    if len(chosen) != 1:
        raise ValueError(
            f"model given as {' and '.join(chosen) or 'nothing'}; allowed: exactly one of --model ID, "
            "--geometry FILE, or --hidden-size --num-layers --num-attention-heads --vocab-size "
            "[--num-kv-heads --head-dim --intermediate-size --dtype --params]"
        )
    if args.model:
        if args.params is not None:
            raise ValueError(
                "--params with --model; allowed: --params only with --geometry or the geometry fields"
            )
        return profile(args.model)
    if args.geometry:
        return geometry.from_file(args.geometry, params=args.params)
    flags = {field: f"--{flag}" for flag, field in GEOMETRY_FLAGS.items()}
    missing = [flags[f] for f in geometry.REQUIRED if f not in given]
    if missing:
        raise ValueError(
            f"geometry flags miss {', '.join(missing)}; allowed: all of them with the fields given"
        )
    return geometry.from_config(given, "command-line geometry", source="command line", params=args.params)


def _tokens(dist: TokenDist, seed: int) -> np.ndarray:
    return dist.sample(SAMPLES, np.random.default_rng(seed))


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    if args.arrivals != "poisson" and args.rate is None:
        raise ValueError(f"--arrivals {args.arrivals} without --rate; allowed: --arrivals only with --rate")
    if args.llmperf is not None and args.concurrency is None:
        raise ValueError("--llmperf without --concurrency; allowed: --concurrency C --llmperf N")
    if args.llmperf_spacing is not None and args.llmperf is None:
        raise ValueError("--llmperf-spacing without --llmperf; allowed: only with --llmperf")
    overload.check(args)
    model_geometry = model_profile(args)
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
    model = ReplicaModel(model_geometry, instance.gpu, args.tp, engine)
    inputs, outputs = _tokens(args.input_tokens, 1), _tokens(args.output_tokens, 2)
    table = model.table(TokenStats.from_arrays(inputs, outputs))
    seqs, tokens = model.limits
    if args.rate is not None:
        return _open_loop(args, model, table, inputs, outputs)
    if args.llmperf is not None:
        return _llmperf(args, model, inputs, outputs)
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
            f"{model_geometry.hugging_face_id} on {args.tp} x {instance.gpu.name} ({args.instance}), "
            f"{args.input_tokens.spec} in / {args.output_tokens.spec} out, concurrency {args.concurrency}:"
        )
        for key, value in out.items():
            print(f"  {key}: {value}")
        print("  (preempted: KV-cache preemptions per second; waiting: requests queued for a running slot)")
    return 0


def _open_loop(
    args: argparse.Namespace,
    model: ReplicaModel,
    table: ReplicaTable,
    inputs: np.ndarray,
    outputs: np.ndarray,
) -> int:
    """Arrivals at --rate: the steady state at that rate, or the saturation point if it is not sustainable."""
    rate = float(args.rate)
    run = overload.run(args, table, outputs)
    point = open_loop(table, rate, args.arrivals, inputs, outputs, np.random.default_rng(0))
    # a finite run (--num-prompts) is sustained if every request succeeds; an endless one also needs rate <= mu
    sustainable = not run.overloaded and (args.num_prompts is not None or point.sustainable)
    ttft = point.ttft_s
    itl_ms = round(point.itl_s * 1000, 2)
    out: dict[str, object] = {
        "rate_requests_per_s": rate,
        "arrivals": args.arrivals,
        "sustainable": sustainable,
        "ttft_ms_mean": round(float(ttft.mean()) * 1000, 1),
        "ttft_ms_median": round(float(np.median(ttft)) * 1000, 1),
        "ttft_ms_p90": round(float(np.percentile(ttft, 90)) * 1000, 1),
        # The model's decode step is the same for every running sequence, so mean ITL = TPOT.
        "tpot_ms": itl_ms,
        "itl_ms": itl_ms,
        "output_tokens_per_s": round(point.output_tokens_per_s, 1),
        "requests_per_s": round(point.requests_per_s, 3),
        "running": round(point.running, 1),
        "kv_cache_usage": round(point.kv_usage, 3),
        "saturation_requests_per_s": round(table.capacity_rps, 3),
        "kv_cache_tokens": model.kv_capacity_tokens,
        **overload.figures(run),
    }
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(
            f"{model.profile.hugging_face_id} on {args.tp} x {model.gpu.name}, {args.arrivals} arrivals at "
            f"{rate:g} req/s, {args.input_tokens.spec} in / {args.output_tokens.spec} out:"
        )
        for key, value in out.items():
            print(f"  {key}: {value}")
        if rate > table.capacity_rps:
            print(
                "  (above saturation: steady-state figures are the saturated replica's; run_* are the run's)"
            )
        if run.overloaded:
            print(f"  (overloaded: {run.failed} of {run.requests} requests failed after their retries)")
    return 0


def _llmperf(args: argparse.Namespace, model: ReplicaModel, inputs: np.ndarray, outputs: np.ndarray) -> int:
    """llmperf's waves on the engine's step loop: the figures llmperf reports (its ITL is a request's latency
    over its output tokens, first token included; its tok/s counts the waves' whole duration)."""
    c = args.concurrency
    n = llmperf_requests(args.llmperf, c)
    spacing = LLMPERF_SPACING_S if args.llmperf_spacing is None else args.llmperf_spacing
    run = llmperf_waves(model, c, np.round(inputs[:n]), np.round(outputs[:n]).astype(int), spacing)
    seqs, tokens = model.limits
    out = {
        "requests": n,
        "ttft_ms_mean": round(float(run.ttft_s.mean()) * 1000, 1),
        "ttft_ms_median": round(float(np.median(run.ttft_s)) * 1000, 1),
        "itl_ms": round(float((run.latency_s / run.output_tokens).mean()) * 1000, 2),
        "output_tokens_per_s": round(run.output_tokens_per_s, 1),
        "duration_s": round(run.duration_s, 1),
        "kv_cache_tokens": model.kv_capacity_tokens,
        "max_num_seqs": seqs,
        "max_num_batched_tokens": tokens,
        "chunked_prefill": model.engine.chunked_prefill,
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(
        f"{model.profile.hugging_face_id} on {args.tp} x {model.gpu.name}, llmperf: {n // c} waves of {c}, "
        f"prompts {spacing:.3g} s apart, {args.input_tokens.spec} in / {args.output_tokens.spec} out:"
    )
    for key, value in out.items():
        print(f"  {key}: {value}")
    return 0


def calibrate(argv: Sequence[str]) -> int:
    from llm_platform.config.loader import ROOT
    from llm_platform.simulator.serving import calibration

    p = ArgumentParser(prog="python -m llm_platform.simulator calibrate", description=calibration.__doc__)
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true")
    out.add_argument(
        "--write-docs",
        nargs="?",
        const=str(ROOT / "docs" / "simulator" / "calibration.md"),
        metavar="FILE",
        help="rewrite the table between the calibrate markers of FILE (default: docs/simulator/calibration.md)",
    )
    args = p.parse_args(argv)
    table_rows = calibration.rows()
    if args.json:
        print(json.dumps(table_rows, indent=2))
        return 0
    table = calibration.markdown_table(table_rows)
    if args.write_docs:
        changed = calibration.write_docs(Path(args.write_docs), table)
        print(f"{args.write_docs}: calibration table {'rewritten' if changed else 'unchanged'}")
        return 0
    print(table)
    return 0
