"""`python -m simulator`: cost per day and SLO misses of autoscaling strategies, before deploying them.

Commands: (none) simulate a day; `capacity` one replica at a concurrency; `calibrate` the calibration table.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from simulator import capacity_cmd, report
from simulator.engine import Result
from simulator.scenarios import (
    Setup,
    capacity_summary,
    recommended_for,
    run_all,
    seed_setup,
    seed_strategies,
    stack_run,
)
from simulator.strategies import Strategy
from simulator.traffic import TokenMix, load
from simulator.yaml_out import autoscaling_yaml


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m simulator", description=__doc__)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--stack", help="stack name (reads Pulumi.<stack>.yaml)")
    src.add_argument("--scenario", choices=["seed-benchmark"], help="a built-in scenario")
    p.add_argument("--model", help="model name in the stack (default: the first)")
    p.add_argument("--traffic", default="builtin:seed-day", help="builtin:seed-day or a CSV file")
    p.add_argument(
        "--input-tokens", type=float, default=128, help="median uncached prompt tokens (built-in mix)"
    )
    p.add_argument("--output-tokens", type=float, default=96, help="median output tokens (built-in mix)")
    p.add_argument("--scale", type=float, default=1.0, help="multiply the built-in day's request rate")
    p.add_argument(
        "--image",
        choices=["registry", "soci", "prebaked"],
        default="registry",
        help="vLLM image on new nodes",
    )
    p.add_argument("--spot-discount", type=float, default=0.6, help="spot price = on-demand x (1 - discount)")
    p.add_argument("--spot-interruptions-per-hour", type=float, default=0.0, help="per spot node")
    p.add_argument("--scrape-interval", type=int, default=15, help="Prometheus scrape interval, seconds")
    p.add_argument("--memory-target", type=float, default=0.9, help="HPA-on-GPU-memory target (fraction)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print JSON rows instead of the table")
    p.add_argument("--plot", help="write traffic, replicas and latency over the day to this PNG")
    return p


def _run(setup: Setup, strategies: Sequence[Strategy], quiet: bool) -> list[Result]:
    total = setup.traffic.duration * len(strategies)
    with Progress(
        TextColumn("simulating"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"), TimeElapsedColumn(),
        console=Console(stderr=True), disable=quiet, transient=True,
    ) as bar:  # fmt: skip
        task = bar.add_task("day", total=total)
        return run_all(setup, list(strategies), lambda n: bar.advance(task, n))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {"capacity": capacity_cmd.run, "calibrate": capacity_cmd.calibrate}
    if argv and argv[0] in commands:
        try:
            return commands[argv[0]](argv[1:])
        except (ValueError, KeyError, OSError) as exc:
            print(f"python -m simulator {argv[0]}: error: {exc}", file=sys.stderr)
            return 2
    return _day(argv)


def _day(argv: Sequence[str]) -> int:
    args = _parser().parse_args(argv)
    console = Console()
    quiet = args.json or not sys.stderr.isatty()
    try:
        if args.scenario == "seed-benchmark":
            setup = seed_setup(args.seed)
            strategies = seed_strategies(setup)
            title = "seed benchmark: Mistral-7B GPTQ on g5.2xlarge, SLO TTFT<200 ms ITL<30 ms"
            recommendation = recommended_for(setup)
            note = ""
        else:
            mix = TokenMix(input_median=args.input_tokens, output_median=args.output_tokens)
            traffic = load(args.traffic, args.seed, mix, args.scale)
            run = stack_run(
                args.stack, args.model, traffic, args.seed, args.image, args.spot_discount,
                args.spot_interruptions_per_hour, args.scrape_interval, args.memory_target,
            )  # fmt: skip
            setup, strategies = run.setup, run.strategies
            title = f"{args.stack}/{run.model_name} on {run.instance.instance_type}, traffic {traffic.name}"
            recommendation = None
            note = run.note
    except (ValueError, KeyError, OSError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        return 2
    results = _run(setup, strategies, quiet)
    if args.json:
        print(report.to_json(results))
    else:
        report.print_table(results, title, console)
        console.print(capacity_summary(setup.table, setup.traffic, setup.config.slo), markup=False)
        if note:
            console.print(note, markup=False)
        if recommendation is not None:
            console.print("recommended config (stack YAML, models[].autoscaling):")
            console.print(autoscaling_yaml(recommendation), markup=False)
    if args.plot:
        report.plot(results, args.plot, title)
    return 0
