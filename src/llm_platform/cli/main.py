"""`llm-platform`: one command line for the offline tools. Each command is the tool its module runs
(`python -m llm_platform.tools.render` is `llm-platform render`; those entry points stay as aliases), named
the way it was invoked in its usage, --help and errors."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version

from llm_platform import commandline

NAME = "llm-platform"
SIMULATOR = "python -m llm_platform.simulator"


@dataclass(frozen=True)
class Command:
    summary: str
    module: str  # the module whose main(argv) runs it
    prog: str  # the tool's own name, shown as `llm-platform <command>` instead
    simulator: str | None = None  # a simulator subcommand: main([simulator, *argv])


COMMANDS: dict[str, Command] = {
    "plan": Command(
        "[STACK] render, schema check, preflight and each model's $/day and SLO misses; --against REF, --markdown",
        "llm_platform.cli.plan", "llm-platform plan",
    ),
    "upgrade": Command(
        "STACK... --to NAME=VERSION: what candidate chart, CRD and image versions change, object by object",
        "llm_platform.cli.upgrade", "llm-platform upgrade",
    ),
    "render": Command(
        "STACK [--out DIR] what the stack deploys, written to build/<stack> (resources, manifests, Helm values)",
        "llm_platform.tools.render", "python -m llm_platform.tools.render",
    ),
    "check": Command("STACK the stack file against the schema, without rendering", "llm_platform.cli.check", "llm-platform check"),
    "preflight": Command(
        "STACK will `pulumi up` finish, will every controller and alert work",
        "llm_platform.tools.preflight.__main__", "python -m llm_platform.tools.preflight",
    ),
    "validate": Command(
        "STACK the render's objects against the pinned CRDs and Kubernetes' schemas",
        "llm_platform.tools.validate_render", "python -m llm_platform.tools.validate_render",
    ),
    "scan": Command(
        "STACK... checkov over the render (--render renders first)",
        "llm_platform.tools.security_scan", "python -m llm_platform.tools.security_scan",
    ),
    "simulate": Command(
        "STACK | --scenario seed-benchmark: a traffic day, cost and SLO misses per autoscaling strategy",
        "llm_platform.simulator.commands.cli", SIMULATOR,
    ),
    "tune": Command(
        "STACK --traffic DAY... --max-miss-pct N: the cheapest autoscaling config under a miss target",
        "llm_platform.simulator.commands.cli", f"{SIMULATOR} tune", "tune",
    ),
    "reservations": Command(
        "STACK how many reserved instances minimise the day's cost",
        "llm_platform.simulator.commands.cli", f"{SIMULATOR} reservations", "reservations",
    ),
    "replay": Command(
        "STACK (--prometheus URL --date DAY | --export FILE): forecast vs a past day's actual cost and misses",
        "llm_platform.simulator.commands.cli", f"{SIMULATOR} replay", "replay",
    ),
    "serving-paths": Command(
        "STACK aggregated vs prefill/decode vs a CPU KV tier vs both: cost, SLO misses, the cheapest",
        "llm_platform.simulator.commands.cli", f"{SIMULATOR} serving-paths", "serving-paths",
    ),
    "capacity": Command(
        "one replica of a model on an instance at a concurrency or a request rate",
        "llm_platform.simulator.commands.cli", f"{SIMULATOR} capacity", "capacity",
    ),
    "calibrate": Command(
        "the simulator's calibration table against published measurements",
        "llm_platform.simulator.commands.cli", f"{SIMULATOR} calibrate", "calibrate",
    ),
    "family": Command(
        "--out DIR: the generated traffic days the stacks were tuned on, as CSVs",
        "llm_platform.simulator.commands.cli", f"{SIMULATOR} family", "family",
    ),
    "routing": Command(
        "gateway routing: round robin vs prefix-aware on a shared-prefix workload",
        "llm_platform.simulator.commands.routing", "python -m llm_platform.simulator.routing",
    ),
}  # fmt: skip


def usage() -> str:
    width = max(len(c) for c in COMMANDS)
    lines = [
        f"usage: {NAME} COMMAND [ARGS...]   ({NAME} COMMAND --help: the command's own flags)",
        "",
        "What a stack deploys, whether it comes up and what it costs, offline (no cloud, no Pulumi CLI).",
        "",
        "commands:",
        *(f"  {name:<{width}}  {c.summary}" for name, c in COMMANDS.items()),
        "",
        "STACK is a stack name (Pulumi.<stack>.yaml beside Pulumi.yaml) or the path of a stack file, first on",
        "every command; --json prints the command's result as JSON on stdout; progress goes to stderr on a",
        "terminal only, so a piped or CI run reads plain. Each command's module also runs as `python -m ...`.",
        "",
        commandline.EXIT_CODES,
    ]
    return "\n".join(lines)


def _runner(command: Command) -> Callable[[list[str]], int | None]:
    module = import_module(command.module)
    main: Callable[[list[str]], int | None] = module.main
    if command.simulator is None:
        return main
    sub = command.simulator
    return lambda argv: main([sub, *argv])


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    if args[0] == "--version":
        try:
            print(f"{NAME} {version(NAME)}")
        except PackageNotFoundError:
            print(f"{NAME} (not installed)")
        return 0
    name, rest = args[0], args[1:]
    command = COMMANDS.get(name)
    if command is None:
        print(
            commandline.error_line(NAME, f"unknown command {name!r}; commands: {', '.join(COMMANDS)}"),
            file=sys.stderr,
        )
        return 2
    commandline.PROG_ALIASES[command.prog] = f"{NAME} {name}"
    try:
        code = _runner(command)(rest)
    except SystemExit as exc:  # argparse and the tools' own exits; a message exits 1, as Python's does
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    finally:
        commandline.PROG_ALIASES.pop(command.prog, None)
    return code or 0


def entry() -> None:
    """The console script."""
    sys.exit(main())
