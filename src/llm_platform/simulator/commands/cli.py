"""`python -m llm_platform.simulator`: the day command and the dispatch to its subcommands (day_args.py holds
the day's flags and --help text)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from llm_platform.commandline import error, invalid_config, message
from llm_platform.config.loader import ConfigError, Stack, stack_arg
from llm_platform.simulator.commands import capacity_cmd, report
from llm_platform.simulator.commands.day_args import PROG, STACK_ONLY, parser
from llm_platform.simulator.commands.day_args import mix as mix_of
from llm_platform.simulator.commands.day_args import parse as day_parse
from llm_platform.simulator.commands.overload_args import CLIENTS
from llm_platform.simulator.controllers.platform_nodes import platform_nodes
from llm_platform.simulator.controllers.strategies import Strategy
from llm_platform.simulator.day.result import Result
from llm_platform.simulator.search.node_loss import gpu_node_loss
from llm_platform.simulator.search.scenarios import (
    Setup,
    capacity_summary,
    recommended_for,
    run_all,
    seed_setup,
    seed_strategies,
    slo_rate_per_replica,
)
from llm_platform.simulator.search.stacks import StackRun, stack_run
from llm_platform.simulator.search.yaml_out import autoscaling_yaml
from llm_platform.simulator.traffic.traffic import load


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
        "replay": _replay,
        "serving-paths": _serving_paths,
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
    if argv and not argv[0].startswith("-"):  # a command whose stack is positional (replay)
        return stack_arg(argv[0])
    return "?"


def _print_explained(run: StackRun, as_json: bool) -> None:
    import json

    import yaml

    from llm_platform.simulator.commands.explain import explain

    inputs = explain(run)
    print(json.dumps(inputs, indent=2) if as_json else yaml.safe_dump(inputs, sort_keys=False, width=1000))


def _tune(argv: Sequence[str]) -> int:
    from llm_platform.simulator.commands import tune_cmd

    return tune_cmd.run(argv)


def _family(argv: Sequence[str]) -> int:
    from llm_platform.simulator.commands import family_cmd

    return family_cmd.run(argv)


def _replay(argv: Sequence[str]) -> int:
    from llm_platform.simulator.commands import replay_cmd

    return replay_cmd.run(argv)


def _serving_paths(argv: Sequence[str]) -> int:
    from llm_platform.simulator.commands import paths_cmd

    return paths_cmd.run(argv)


def _reservations(argv: Sequence[str]) -> int:
    from llm_platform.simulator.commands import reservations_cmd

    return reservations_cmd.run(argv)


def _with_client(setup: Setup, client: str) -> Setup:
    return replace(setup, config=replace(setup.config, client=CLIENTS[client]))


def _day(argv: Sequence[str]) -> int:
    args = day_parse(parser(), argv)
    quiet = args.json or not sys.stderr.isatty()
    try:
        _check_flags(args)
        mix = mix_of(args)
        spec = args.traffic or "builtin:seed-day"
        traffic = load(spec, args.seed, mix, args.scale or 1.0)
        if traffic.is_trace and (mix is not None or args.scale is not None):
            raise ValueError(
                f"{spec} is a request trace: --scale and token-length flags apply to rate traffic"
            )
        if args.scenario == "seed-benchmark":
            setup = _with_client(seed_setup(args.seed, traffic, args.prefix_hit_rate), args.client)
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
            run = replace(run, setup=_with_client(run.setup, args.client))
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
        if args.gpu_node_loss:
            loss = gpu_node_loss(setup.traffic, setup.table, strategies[0], setup.config)
            for line in loss.lines():
                console.print(f"{strategies[0].name}: {line}", markup=False)
        if recommendation is not None:
            console.print(f"recommended config: paste under {path} in the stack file", markup=False)
            console.print(autoscaling_yaml(recommendation), markup=False, soft_wrap=True)
    if args.plot:
        report.plot(results, args.plot, title, setup.config.slo)
    return 0
