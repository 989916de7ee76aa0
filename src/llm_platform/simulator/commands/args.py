"""Typed argument values shared by the simulator's commands (the parser itself is llm_platform/commandline.py's, shared by
every command-line tool: one-line errors with exit status 2)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llm_platform.commandline import known_stack

STACK_HELP = "stack name (reads Pulumi.<stack>.yaml) or the path of a stack file"


def _number(text: str, convert: type[float] | type[int], ok: Callable[[float], bool], allowed: str) -> float:
    """`text` as a number of `convert`'s kind, or an argparse error naming the value and what is allowed."""
    kind = "number" if convert is float else "whole number"
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a {kind}") from None
    if not ok(value) or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} must be {allowed}")
    return value


def positive_float(text: str) -> float:
    return float(_number(text, float, lambda v: v > 0, "a number > 0"))


def request_rate(text: str) -> float:
    """A request rate > 0, or `inf` (every request at once, as `vllm bench serve --request-rate inf`)."""
    return float("inf") if text.strip().lower() == "inf" else positive_float(text)


def non_negative_float(text: str) -> float:
    return float(_number(text, float, lambda v: v >= 0, "a number >= 0"))


def positive_int(text: str) -> int:
    return int(_number(text, int, lambda v: v >= 1, "a whole number >= 1"))


def non_negative_int(text: str) -> int:
    return int(_number(text, int, lambda v: v >= 0, "a whole number >= 0"))


def fraction(text: str) -> float:
    """A value in [0, 1)."""
    return float(_number(text, float, lambda v: 0 <= v < 1, ">= 0 and < 1"))


def png_path(text: str) -> str:
    """An output PNG whose directory exists (checked before the day is simulated)."""
    path = Path(text)
    if path.suffix.lower() != ".png":
        raise argparse.ArgumentTypeError(f"{text}: the plot is written as PNG; use a .png file name")
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: directory {str(path.parent)!r} does not exist")
    return text


def clock_time(text: str) -> float:
    """HH:MM on the traffic's first day, as seconds from its start (00:00 up to 24:00)."""
    hours, sep, minutes = text.partition(":")
    if not (sep and hours.isdigit() and minutes.isdigit() and len(minutes) == 2):
        raise argparse.ArgumentTypeError(f"{text!r} is not a time of day; use HH:MM, e.g. 13:30")
    seconds = int(hours) * 3600 + int(minutes) * 60
    if int(minutes) > 59 or seconds > 86_400:
        raise argparse.ArgumentTypeError(f"{text} must be a time from 00:00 to 24:00")
    return float(seconds)


def add_stack(p: argparse.ArgumentParser, group: Any = None) -> None:
    """STACK, first and positional as every tool takes it, and `--stack` (the older spelling, kept) in
    `group` (a mutually exclusive group) when given; `take_stack` merges them into `args.stack`."""
    p.add_argument("stack_arg", nargs="?", type=known_stack, metavar="STACK", help=STACK_HELP)
    (group or p).add_argument("--stack", type=known_stack, help="the same as STACK")


def take_stack(p: argparse.ArgumentParser, args: argparse.Namespace, required: bool) -> argparse.Namespace:
    """`args.stack` from STACK or `--stack` (not both); a usage error when `required` and neither is given."""
    if args.stack_arg is not None:
        if args.stack is not None:
            p.error("give the stack once: STACK or --stack")
        args.stack = args.stack_arg
    if required and args.stack is None:
        p.error("the following arguments are required: STACK")
    return args
