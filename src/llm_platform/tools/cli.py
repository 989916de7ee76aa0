"""What every command-line tool here (render, security_scan, preflight, simulator) does the same way:
a bad argument is one line and exit 2 (never a usage dump or a traceback), an unknown stack lists the
stacks, and a render older than its stack file or the program is refused instead of checked."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import NoReturn

from llm_platform.config.loader import ROOT, Stack, stack_arg, stack_file, stack_name, stack_names

# what a render is made from: the project's program and the package's code it composes
PACKAGE = Path(__file__).resolve().parents[1]
PROGRAM = (ROOT / "__main__.py", PACKAGE / "components", PACKAGE / "config", PACKAGE / "plan")


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose errors are one line on stderr and exit 2 (no usage dump)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


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


def fail(message: str) -> NoReturn:
    """One line on stderr, exit 2: a setup problem the user fixes (not a failed check)."""
    print(message, file=sys.stderr)
    raise SystemExit(2)


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
