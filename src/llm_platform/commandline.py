"""What every command-line tool of the package (tools' render, validate_render, security_scan, preflight; the
simulator and its commands; the benchmarks) does the same way, in one module below both tools/ and simulator/: a bad argument or setup is one line,
`python -m <tool>: error: <what> (see --help)`, and exit 2 (never a usage dump or a traceback; a bad stack
file adds its problems below it, one per line), an unknown stack lists the stacks, and a render older than
its stack file or the program is refused instead of checked."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

from llm_platform.config.loader import ROOT, Stack, stack_arg, stack_file, stack_name, stack_names

# what a render is made from: the project's program and the package's code it composes
PACKAGE = Path(__file__).resolve().parent
PROGRAM = (
    ROOT / "__main__.py",
    PACKAGE / "components",
    PACKAGE / "config",
    PACKAGE / "facts",
    PACKAGE / "plan",
)


# every tool's exit status, the end of its --help
EXIT_CODES = (
    "exit status: 0 ok; 1 a blocker or finding (a check failed); 2 a usage or config error (a bad argument, an "
    "unknown stack, an invalid stack file, a stale render)"
)
# `python -m <tool>` -> how the tool was invoked instead (`llm-platform <command>` sets these), for its
# usage, --help and error lines
PROG_ALIASES: dict[str, str] = {}


def shown_prog(prog: str) -> str:
    """A tool's name as the user invoked it: `llm-platform render` when run as that, else `python -m ...`."""
    return PROG_ALIASES.get(prog, prog)


def error_line(prog: str, what: str) -> str:
    """The one error format of every tool here."""
    return f"{shown_prog(prog)}: error: {what} (see --help)"


def message(exc: BaseException) -> str:
    """What an exception says, as a user reads it: a KeyError's text without the quotes repr adds, the
    first line of a multi-line message."""
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    return text.splitlines()[0] if text.strip() else type(exc).__name__


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose errors are one line on stderr and exit 2 (no usage dump), whose --help ends with the
    exit statuses, and whose name is the one the tool was invoked by (`shown_prog`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("epilog", EXIT_CODES)
        super().__init__(*args, **kwargs)
        self.prog = shown_prog(self.prog)

    def error(self, message: str) -> NoReturn:
        self.exit(2, error_line(self.prog, message) + "\n")


def stack_parser(prog: str, description: str) -> ArgumentParser:
    """The parser of a tool that works on one stack, its first argument."""
    parser = ArgumentParser(prog=prog, description=description)
    parser.add_argument(
        "stack", type=known_stack, help="stack name (reads Pulumi.<stack>.yaml) or the path of a stack file"
    )
    return parser


def known_stack(text: str) -> Stack:
    """An argparse `type`: a stack name with a stack file, or the path of a stack file."""
    value = stack_arg(text)
    if not stack_file(value).exists():
        where = stack_file(value)
        known = ", ".join(stack_names(where.parent)) or "none"
        raise argparse.ArgumentTypeError(f"no stack {text!r} ({where.name} does not exist); stacks: {known}")
    return value


def error(prog: str, what: str) -> int:
    """`prog: error: what (see --help)` on stderr; returns the exit status, 2: a setup problem the user fixes
    (not a failed check)."""
    print(error_line(prog, what), file=sys.stderr)
    return 2


def fail(prog: str, what: str) -> NoReturn:
    """`error`, then exit."""
    raise SystemExit(error(prog, what))


def invalid_config(prog: str, stack_: Stack, problems: object) -> int:
    """A bad stack file on stderr: the error line, then every problem (file:line: field: value: what is
    allowed); returns the exit status, 2."""
    lines = str(problems).splitlines()
    count = f"{len(lines)} problem{'s' if len(lines) != 1 else ''}"
    print(
        error_line(prog, f"invalid config for stack {stack_name(stack_)!r}, {count} below"), file=sys.stderr
    )
    print("\n".join(lines), file=sys.stderr)
    return 2


@contextmanager
def working(what: str, quiet: bool = False) -> Iterator[None]:
    """A spinner saying `what` on stderr while a step of a few seconds or more runs, on a terminal only (a
    piped or CI run, and `quiet` (--json), print nothing)."""
    from rich.console import Console

    console = Console(stderr=True)
    if quiet or not console.is_terminal:
        yield
        return
    with console.status(what):
        yield


def shown_path(path: Path) -> str:
    """`build/prod` rather than an absolute path, when it is under the working directory."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _newest(paths: Iterable[Path]) -> tuple[float, Path | None]:
    newest, which = 0.0, None
    for root in paths:
        files = [root] if root.is_file() else root.rglob("*.py") if root.is_dir() else []
        for f in files:
            mtime = f.stat().st_mtime
            if mtime > newest:
                newest, which = mtime, f
    return newest, which


def stale_render(stack_: Stack, render_file: Path) -> str | None:
    """Why the render in `render_file` does not show the current stack and program, or None if it does."""
    name = stack_name(stack_)
    again = f"render it again: uv run python -m llm_platform.tools.render {name} --out {shown_path(render_file.parent)}"
    if not render_file.exists():
        return f"{shown_path(render_file)} does not exist; {again}"
    rendered = render_file.stat().st_mtime
    source = stack_file(stack_)
    if source.stat().st_mtime > rendered:
        return f"{shown_path(render_file)} is older than {source.name}, edited since; {again}"
    newest, which = _newest(PROGRAM)
    if which is not None and newest > rendered:
        return f"{shown_path(render_file)} is older than the program ({shown_path(which)} changed since); {again}"
    return None
