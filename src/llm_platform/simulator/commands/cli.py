"""`python -m llm_platform.simulator`: cost per day and SLO misses of autoscaling strategies, before deploying them.

Commands: (none) simulate a day; `capacity` one replica at a concurrency; `calibrate` the calibration table;
`tune` the cheapest config under a miss target on every given day (simulator/tune.py); `reservations` the
day's cost over reserved instance counts (how many reserved GPUs minimise cost, simulator/reservations_cmd.py).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from llm_platform.config.loader import ConfigError, Stack, stack_arg
from llm_platform.simulator.commands import capacity_cmd, report
from llm_platform.simulator.commands.args import (
    clock_time,
    fraction,
    non_negative_float,
    non_negative_int,
    png_path,
    positive_float,
    positive_int,
)
from llm_platform.simulator.controllers.platform_nodes import platform_nodes
from llm_platform.simulator.controllers.strategies import Strategy
from llm_platform.simulator.day.engine import Result
from llm_platform.simulator.search.scenarios import (
    Setup,
    StackRun,
    capacity_summary,
    recommended_for,
    run_all,
    seed_setup,
    seed_strategies,
    slo_rate_per_replica,
    stack_run,
)
from llm_platform.simulator.search.yaml_out import autoscaling_yaml
from llm_platform.simulator.traffic.traffic import HistogramMix, TokenMix, histogram_mix, load
from llm_platform.tools.cli import ArgumentParser, error, invalid_config, known_stack, message

PROG = "python -m llm_platform.simulator"

STACK_ONLY = (
    "model", "image", "spot_discount", "spot_interruptions_per_hour", "scrape_interval", "reserved_instances",
    "reserved_usd_per_hour", "reserved_until",
)  # fmt: skip


def _parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog=PROG, description=__doc__)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--stack", type=known_stack, help="stack name (reads Pulumi.<stack>.yaml) or a stack file's path"
    )
    src.add_argument("--scenario", choices=["seed-benchmark"], help="a built-in scenario")
    p.add_argument("--model", help="model name in the stack (default: the first)")
    p.add_argument(
        "--traffic", help="builtin:seed-day (default), a CSV (minute,requests_per_second or a request trace) "
        "or a Prometheus query_range JSON export",
    )  # fmt: skip
    p.add_argument(
        "--input-tokens", type=positive_float, help="median prompt tokens (rate traffic; default 128)"
    )
    p.add_argument(
        "--output-tokens", type=positive_float, help="median output tokens (rate traffic; default 96)"
    )
    p.add_argument("--input-spread", type=non_negative_float, help="lognormal sigma of prompt lengths (0.6)")
    p.add_argument("--output-spread", type=non_negative_float, help="lognormal sigma of output lengths (0.5)")
    p.add_argument(
        "--token-histogram", help="Prometheus JSON of vllm:request_prompt_tokens_bucket and "
        "vllm:request_generation_tokens_bucket: lengths drawn from those histograms",
    )  # fmt: skip
    p.add_argument("--scale", type=positive_float, help="multiply the traffic's request rate (rate traffic)")
    p.add_argument("--prefix-hit-rate", type=fraction, default=0.0, help="fraction of prompt tokens cached")
    p.add_argument(
        "--image",
        choices=["registry", "soci", "prebaked"],
        help="what-if: vLLM image pull on new nodes (stack; default as deployed: soci on al2023 pools)",
    )
    p.add_argument(
        "--spot-discount", type=fraction, help="spot = on-demand x (1 - discount); spot pools only"
    )
    p.add_argument(
        "--spot-interruptions-per-hour", type=non_negative_float, help="per spot node; spot pools only"
    )
    p.add_argument(
        "--scrape-interval",
        type=positive_int,
        help="what-if: Prometheus scrape interval, seconds (stack; default as deployed: the PodMonitor's)",
    )
    p.add_argument(
        "--reserved-instances", type=non_negative_int,
        help="instances of the pool's capacity reservations: prepaid all day, free to launch into (stack; 0)",
    )  # fmt: skip
    p.add_argument(
        "--reserved-usd-per-hour", type=positive_float,
        help="prepaid $/h of one reserved instance (stack; default on-demand, what an ODCR bills; a Capacity Block's price)",
    )  # fmt: skip
    p.add_argument(
        "--reserved-until", type=clock_time, metavar="HH:MM",
        help="the Capacity Block ends then (first day of the traffic): paid up to it, its nodes drained 40 min "
        "before, replacements on-demand/spot with a cold start (stack; default: outlasts the traffic)",
    )  # fmt: skip
    p.add_argument("--memory-target", type=fraction, default=0.9, help="HPA-on-GPU-memory target (fraction)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--json", action="store_true", help="JSON rows with per-day figures and the per-minute timeline"
    )
    p.add_argument("--plot", type=png_path, help="write the day's timeline to this PNG")
    p.add_argument(
        "--explain", action="store_true",
        help="print the inputs the simulator runs for the model as deployed (ScaledObject, scrape, cold start) and stop",
    )  # fmt: skip
    return p


def _mix(args: argparse.Namespace) -> TokenMix | HistogramMix | None:
    if args.token_histogram:
        spread = [
            f for f in ("input_tokens", "output_tokens", "input_spread", "output_spread") if getattr(args, f)
        ]
        if spread:
            raise ValueError(f"--token-histogram sets the lengths; drop --{spread[0].replace('_', '-')}")
        return histogram_mix(args.token_histogram)
    given = {f: getattr(args, f) for f in ("input_tokens", "output_tokens", "input_spread", "output_spread")}
    if all(v is None for v in given.values()):
        return None
    base = TokenMix()
    return TokenMix(
        input_median=given["input_tokens"] or base.input_median,
        input_sigma=base.input_sigma if given["input_spread"] is None else given["input_spread"],
        output_median=given["output_tokens"] or base.output_median,
        output_sigma=base.output_sigma if given["output_spread"] is None else given["output_spread"],
    )


def _check_flags(args: argparse.Namespace) -> None:
    """A flag that does not apply to the chosen mode is an error, never silently ignored."""
    if args.explain and (args.scenario or args.plot):
        raise ValueError("--explain prints a stack model's simulated inputs: it takes --stack and no --plot")
    if args.scenario:
        for name in STACK_ONLY:
            if getattr(args, name) is not None:
                raise ValueError(
                    f"--{name.replace('_', '-')} applies to --stack; the seed scenario is the article's setup "
                    "(Mistral-7B GPTQ, g5.2xlarge on-demand, pre-baked image, 5 s scrape)"
                )
    if args.reserved_until is not None and not args.reserved_instances:
        raise ValueError("--reserved-until: the Capacity Block's end needs --reserved-instances N (N >= 1)")


def _run(setup: Setup, strategies: Sequence[Strategy], quiet: bool) -> list[Result]:
    total = setup.traffic.duration * len(strategies)
    with Progress(
        TextColumn(f"simulating {len(strategies)} strategies"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
        TextColumn("elapsed"), TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
        console=Console(stderr=True), disable=quiet, transient=True,
    ) as bar:  # fmt: skip
        task = bar.add_task("day", total=total)
        return run_all(setup, list(strategies), lambda n: bar.advance(task, n))


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {
        "capacity": capacity_cmd.run,
        "calibrate": capacity_cmd.calibrate,
        "tune": _tune,
        "reservations": _reservations,
        "family": _family,
    }
    if argv and argv[0] in commands:
        prog = f"{PROG} {argv[0]}"
        try:
            return commands[argv[0]](argv[1:])
        except ConfigError as exc:
            return invalid_config(prog, _stack_of(argv[1:]), exc)
        except (ValueError, KeyError, OSError) as exc:
            return error(prog, message(exc))
    return _day(argv)


def _stack_of(argv: Sequence[str]) -> Stack:
    """The --stack argument of a command's argv (for naming the stack whose config is bad)."""
    for i, word in enumerate(argv):
        if word.startswith("--stack="):
            return stack_arg(word.split("=", 1)[1])
        if word == "--stack" and i + 1 < len(argv):
            return stack_arg(argv[i + 1])
    return "?"


def _print_explained(run: StackRun, as_json: bool) -> None:
    import json

    import yaml

    from llm_platform.simulator.commands.explain import explain

    inputs = explain(run)
    print(json.dumps(inputs, indent=2) if as_json else yaml.safe_dump(inputs, sort_keys=False, width=1000))


def _tune(argv: Sequence[str]) -> int:
    from llm_platform.simulator.search import tune

    return tune.run(argv)


def _family(argv: Sequence[str]) -> int:
    from llm_platform.simulator.traffic import family

    return family.run(argv)


def _reservations(argv: Sequence[str]) -> int:
    from llm_platform.simulator.commands import reservations_cmd

    return reservations_cmd.run(argv)


def _day(argv: Sequence[str]) -> int:
    args = _parser().parse_args(argv)
    quiet = args.json or not sys.stderr.isatty()
    try:
        _check_flags(args)
        mix = _mix(args)
        spec = args.traffic or "builtin:seed-day"
        traffic = load(spec, args.seed, mix, args.scale or 1.0)
        if traffic.is_trace and (mix is not None or args.scale is not None):
            raise ValueError(
                f"{spec} is a request trace: --scale and token-length flags apply to rate traffic"
            )
        if args.scenario == "seed-benchmark":
            setup = seed_setup(args.seed, traffic, args.prefix_hit_rate)
            strategies = seed_strategies(setup)
            title = f"seed benchmark: Mistral-7B GPTQ on g5.2xlarge, SLO TTFT<200 ms ITL<30 ms, traffic {traffic.name}"
            recommendation, path, cap, note = recommended_for(setup), "models[].autoscaling", 10, ""
        else:
            run = stack_run(
                args.stack, args.model, traffic, args.seed, args.image,
                0.6 if args.spot_discount is None else args.spot_discount,
                args.spot_interruptions_per_hour or 0.0, args.scrape_interval, args.memory_target,
                args.prefix_hit_rate, args.reserved_instances or 0, args.reserved_usd_per_hour,
                args.reserved_until,
            )  # fmt: skip
            if not run.setup.config.capacity.spot:
                for name in ("spot_discount", "spot_interruptions_per_hour"):
                    if getattr(args, name) is not None:
                        raise ValueError(
                            f"--{name.replace('_', '-')}: the pool of {run.model_name} allows no spot"
                        )
            if args.explain:
                _print_explained(run, args.json)
                return 0
            setup, strategies = run.setup, run.strategies
            title = f"{args.stack}/{run.model_name} on {run.instance.instance_type}, traffic {traffic.name}"
            recommendation, path, cap, note = run.recommendation, run.model_path, run.max_replicas, run.note
    except ConfigError as exc:  # one line per problem of the stack file, all of them
        return invalid_config(PROG, args.stack, exc)
    except (ValueError, KeyError, OSError) as exc:
        return error(PROG, message(exc))
    results = _run(setup, strategies, quiet)
    if args.json:
        print(report.to_json(results, recommendation))
    else:
        console = report.console()
        report.print_table(results, title, console)
        lam_slo = slo_rate_per_replica(setup.table, setup.traffic, setup.config.slo)
        console.print(capacity_summary(setup.table, setup.traffic, setup.config.slo), markup=False)
        for line in report.cap_notes(results, setup.traffic, lam_slo, cap):
            console.print(line, markup=False)
        if note:
            console.print(note, markup=False)
        if args.stack is not None and (nodes := platform_nodes(args.stack)) is not None:
            discount = 0.6 if args.spot_discount is None else args.spot_discount
            console.print(nodes.line(discount), markup=False)
        if recommendation is not None:
            console.print(f"recommended config: paste under {path} in the stack file", markup=False)
            console.print(autoscaling_yaml(recommendation), markup=False, soft_wrap=True)
    if args.plot:
        report.plot(results, args.plot, title, setup.config.slo)
    return 0
