"""Progress of the long commands (`tune`, the day command, the benchmarks) on stderr: how long they will take,
said once the first unit of work has been timed, then a rich progress bar (units done, elapsed, time left)
on a terminal. stdout keeps only the results, so a piped or `--json` run reads the same as before."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


def minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


class Tracker:
    """Counts units of work; after the first, says how long all of them will take at that pace."""

    def __init__(
        self,
        what: str,
        unit: str,
        total: int,
        console: Console,
        bar: Progress | None,
        quiet: bool,
        bounded: bool,
    ):
        self.what, self.unit, self.total, self.bounded = what, unit, total, bounded  # bounded: `total` is
        self.console, self.bar, self.quiet = console, bar, quiet  # an upper bound (a search stops early)
        self.done = 0
        self.started = time.perf_counter()
        self.task = bar.add_task(what, total=total) if bar is not None else None

    def advance(self, units: int = 1) -> None:
        first = self.done == 0
        self.done += units
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, completed=min(self.done, self.total))
        if first and not self.quiet:
            each = (time.perf_counter() - self.started) / units
            left = each * max(self.total - self.done, 0)
            self.console.print(
                f"{self.what}: {self.total:,} {self.unit} at about {each:,.1f} s each: "
                f"{'at most ' if self.bounded else ''}{minutes(left)} more",
                markup=False,
                highlight=False,
            )


@contextmanager
def track(what: str, total: int, unit: str, quiet: bool = False, bounded: bool = False) -> Iterator[Tracker]:
    """A tracker of `total` units on stderr: a bar on a terminal, the estimate line wherever stderr goes
    (a CI log too), nothing at all when `quiet` (`--json`)."""
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    show_bar = not quiet and sys.stderr.isatty()
    columns = (
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("elapsed"),
        TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
    )  # fmt: skip
    with Progress(*columns, console=console, disable=not show_bar, transient=True) as bar:
        yield Tracker(what, unit, total, console, bar if show_bar else None, quiet, bounded)
