"""Output: the strategy table (rich), JSON rows, and the day plot (matplotlib)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from simulator.engine import Result

COLUMNS = (
    "strategy",
    "peak_replicas",
    "offpeak_replicas",
    "p95_ttft_ms",
    "slo_violation_pct",
    "gpu_cost_usd_per_day",
)


def to_json(results: Sequence[Result]) -> str:
    return json.dumps([r.row() for r in results], indent=2)


def table(results: Sequence[Result], title: str) -> Table:
    t = Table(title=title)
    for name, justify in (
        ("strategy", "left"), ("peak", "right"), ("off-peak", "right"), ("P95 TTFT ms", "right"),
        ("SLO misses %", "right"), ("GPU $/day", "right"),
    ):  # fmt: skip
        t.add_column(name, justify=justify)  # pyright: ignore[reportArgumentType]
    for r in results:
        t.add_row(
            r.strategy,
            str(r.peak_replicas),
            str(r.offpeak_replicas),
            f"{r.p95_ttft_ms:,.0f}",
            f"{r.slo_violation_pct:.2f}",
            f"{r.gpu_cost_usd_per_day:,.2f}",
        )
    return t


def print_table(results: Sequence[Result], title: str, console: Console | None = None) -> None:
    console = console or Console()
    console.print(table(results, title))
    for r in results:
        console.print(f"  {r.strategy}: {r.description}", markup=False)


def plot(results: Sequence[Result], path: str | Path, title: str) -> None:
    """Traffic, Ready replicas and per-minute P95 TTFT over the day, one line per strategy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(12, 9), sharex=True)
    hours = np.arange(len(results[0].minute_rate)) / 60
    axes[0].plot(hours, results[0].minute_rate, color="black")
    axes[0].set_ylabel("requests/s")
    axes[0].set_title(title)
    for r in results:
        axes[1].step(hours, r.minute_ready, where="post", label=r.strategy)
        axes[2].plot(hours, np.maximum(r.minute_p95_ttft_ms, 1), label=r.strategy, linewidth=0.8)
    axes[1].set_ylabel("Ready replicas")
    axes[1].legend(loc="upper right", fontsize="small")
    axes[2].set_ylabel("P95 TTFT per minute (ms)")
    axes[2].set_yscale("log")
    axes[2].set_xlabel("hour of day")
    axes[2].set_xlim(0, 24)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
