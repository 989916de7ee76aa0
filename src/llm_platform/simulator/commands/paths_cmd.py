"""`python -m llm_platform.simulator serving-paths STACK`: for one model and a traffic day, what aggregated
serving, prefill/decode disaggregation, a CPU KV tier and both would cost and miss, whatever the stack enables
(search/serving_paths*.py), the cheapest that meets the SLO with the stack-file block that selects it, and the
model's error against the published P/D and offload measurements (serving/kv_paths_points.py)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import replace

import yaml

from llm_platform.commandline import ArgumentParser, shown_prog
from llm_platform.config.schema import Slo
from llm_platform.simulator.commands import report
from llm_platform.simulator.commands.args import (
    add_stack,
    fraction,
    positive_float,
    take_stack,
)
from llm_platform.simulator.commands.day_args import add_traffic_options, mix
from llm_platform.simulator.search.serving_paths_day import PathDay
from llm_platform.simulator.search.serving_paths_stack import PathsRun, paths_run
from llm_platform.simulator.search.stacks import stack_model
from llm_platform.simulator.serving.kv_paths_points import Comparison, compare_all
from llm_platform.simulator.traffic.traffic import HistogramMix, TokenMix, load

DEFAULT_WORKING_SET_GIB = 64.0


def parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog=shown_prog("python -m llm_platform.simulator serving-paths"),
        description=(
            "Cost per day and SLO misses of four serving paths for one model on a traffic day (aggregated, "
            "prefill/decode disaggregation, a CPU KV tier, both), whatever the stack enables; recommends the "
            "cheapest that meets the model's SLO and prints the stack-file block for it."
        ),
    )
    add_stack(p)
    p.add_argument("--model", help="model name in the stack (default: the first)")
    add_traffic_options(p)
    p.add_argument(
        "--prefix-reuse", type=fraction, default=0.0,
        help="fraction of prompt tokens that are a shared prefix (system prompts, documents, history); default 0",
    )  # fmt: skip
    p.add_argument(
        "--working-set-gib", type=positive_float, default=DEFAULT_WORKING_SET_GIB,
        help=f"KV GiB of all distinct shared prefixes a replica sees (default {DEFAULT_WORKING_SET_GIB:g})",
    )  # fmt: skip
    p.add_argument(
        "--cpu-gib", type=positive_float,
        help="CPU tier per replica, GiB (default: half the replica's share of the instance's memory)",
    )  # fmt: skip
    p.add_argument(
        "--ttft-seconds", type=positive_float, help="what-if TTFT objective (default: the model's slo)"
    )
    p.add_argument(
        "--itl-seconds", type=positive_float, help="what-if ITL objective (default: the model's slo)"
    )
    p.add_argument(
        "--day-engine", action="store_true",
        help="also run each path's roles through the day engine (KEDA, HPA, Karpenter, cold starts): its "
        "replicas and $/day beside the steady-state sizing (about 10 s per role)",
    )  # fmt: skip
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--json", action="store_true", help="the paths, the recommendation and the comparison as JSON"
    )
    return p


def _row(d: PathDay) -> tuple[str, ...]:
    replicas = " + ".join(
        f"{r.peak} {r.name}" + (f" TP{r.gpus}" if len(d.roles) > 1 else "") for r in d.roles
    )
    hits = f"{d.path.hbm_hit * 100:.0f}/{d.path.cpu_hit * 100:.0f}"
    moved = d.path.transfer_s + d.path.cpu_load_s
    return (
        d.name, replicas, f"{sum(r.replica_hours for r in d.roles):,.1f}", f"{d.usd_per_day:,.2f}",
        f"{d.ttft_p50_ms:,.0f}", f"{d.ttft_p95_ms:,.0f}", f"{d.itl_miss_pct:.2f}", f"{d.miss_pct:.2f}", hits,
        f"{moved * 1000:,.1f}", "yes" if d.meets_slo else "no",
    )  # fmt: skip


def _print(run: PathsRun, title: str, comparisons: list[Comparison]) -> None:
    out = report.console()
    headers = (
        "path", "peak replicas", "replica-h", "$/day", "TTFT p50 ms", "TTFT p95 ms", "ITL miss %", "SLO miss %",
        "hit % HBM/CPU", "KV moved ms", "meets SLO",
    )  # fmt: skip
    report.print_rows(title, headers, [_row(d) for d in run.days], out)
    if run.engine is not None:
        rows = [
            (
                e.path,
                " + ".join(f"{r.peak} {r.name}" for r in e.roles) or "-",
                "-" if e.usd_per_day is None else f"{e.usd_per_day:,.2f}",
            )
            for e in run.engine
        ]
        report.print_rows(
            "the same roles through the day engine (recommended ScaledObject per role; replicas and cost only)",
            ("path", "peak replicas", "$/day"), rows, out,
        )  # fmt: skip
    if run.best is None:
        out.print("no path meets the SLO on this day: see the miss columns", markup=False)
    elif not run.block():
        out.print(f"recommended: {run.best.name} (as deployed; no block to add)", markup=False)
    else:
        out.print(
            f"recommended: {run.best.name}; set under {run.model_path} in the stack file:", markup=False
        )
        out.print(yaml.safe_dump(run.block(), sort_keys=False).rstrip(), markup=False, soft_wrap=True)
    out.print("model vs published measurements (serving/kv_paths_points.py):", markup=False)
    for c in comparisons:
        out.print(f"  {c.line()}", markup=False)


def _up_to_max_model_len(args: argparse.Namespace, lengths: TokenMix | HistogramMix | None):
    """Lognormal lengths clipped at the model's maxModelLen (what vLLM accepts) rather than the day command's
    4096/1024, so a stated long-prompt median is not silently cut (the paths differ most on long prompts)."""
    if not isinstance(lengths, TokenMix):
        return lengths
    limit = stack_model(args.stack, args.model)[2].model.max_model_len
    return replace(
        lengths, max_input=max(lengths.max_input, limit), max_output=max(lengths.max_output, limit)
    )


def _what_if_slo(args: argparse.Namespace) -> Slo | None:
    """--ttft-seconds / --itl-seconds over the model's own SLO; None: the model's."""
    if args.ttft_seconds is None and args.itl_seconds is None:
        return None
    deployed = stack_model(args.stack, args.model)[2].model.slo
    return Slo(
        ttft_seconds=args.ttft_seconds or deployed.ttft_seconds,
        itl_seconds=args.itl_seconds or deployed.itl_seconds,
    )


def run(argv: Sequence[str]) -> int:
    p = parser()
    args = take_stack(p, p.parse_args(argv), required=True)
    spec, lengths = args.traffic or "builtin:seed-day", _up_to_max_model_len(args, mix(args))
    traffic = load(spec, args.seed, lengths, args.scale or 1.0)
    if traffic.is_trace and (lengths is not None or args.scale is not None):
        raise ValueError(f"{spec} is a request trace: --scale and token-length flags apply to rate traffic")
    result = paths_run(
        args.stack, args.model, traffic, args.prefix_reuse, args.working_set_gib, args.cpu_gib, args.day_engine,
        _what_if_slo(args),
    )  # fmt: skip
    comparisons = compare_all()
    if args.json:
        print(json.dumps({
            "model": result.model_name, "instance": result.instance_type, "cpu_gib_per_replica": result.cpu_gib,
            "slo": None if result.slo is None else result.slo.model_dump(by_alias=True),
            "paths": [d.row() for d in result.days],
            "recommended": None if result.best is None else result.best.name,
            "stack_file": {"under": result.model_path, "block": result.block()},
            "day_engine": None if result.engine is None else [e.row() for e in result.engine],
            "published": [c.row() for c in comparisons],
        }, indent=2))  # fmt: skip
        return 0
    slo_of = result.slo or Slo(ttft_seconds=0, itl_seconds=0)
    title = (
        f"{args.stack}/{result.model_name} on {result.instance_type} (TP {result.tensor_parallel}), traffic "
        f"{traffic.name}, prefix reuse {args.prefix_reuse:g} of a {args.working_set_gib:g} GiB working set, "
        f"CPU tier {result.cpu_gib:g} GiB/replica, SLO TTFT {slo_of.ttft_seconds:g} s ITL {slo_of.itl_seconds:g} s"
    )
    _print(result, title, comparisons)
    return 0
