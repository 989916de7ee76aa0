"""Output: the strategy table (rich on a terminal, plain text when piped), JSON, cap notes and the day plot."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from rich import box
from rich.console import Console
from rich.table import Table

from llm_platform.config.schema import Autoscaling, Slo
from llm_platform.simulator.day.result import Result
from llm_platform.simulator.traffic.traffic import Traffic

CAPPED_SECONDS = 60.0  # latencies past this are shown as "> 60 s": the queue, not the engine, sets them
HEADERS = (
    "strategy", "peak", "off-peak", "P95 TTFT", "P95 ITL ms", "timeouts %", "retries %", "failed %", "SLO misses %",
    "GPU $/day", "vs oracle",
)  # fmt: skip


def console() -> Console:
    """Rich on a terminal; plain, unwrapped text when piped (no colour, no box drawing, no 80-column wrap)."""
    if sys.stdout.isatty():
        return Console()
    return Console(no_color=True, highlight=False, width=10_000, force_terminal=False, emoji=False)


def latency(ms: float) -> str:
    return f"> {CAPPED_SECONDS:.0f} s" if ms > CAPPED_SECONDS * 1000 else f"{ms:,.0f} ms"


def _cells(r: Result) -> list[str]:
    vs = r.cost_vs_oracle
    return [
        r.strategy, str(r.peak_replicas), str(r.offpeak_replicas), latency(r.p95_ttft_ms),
        f"{r.p95_itl_ms:.1f}" if r.p95_itl_ms <= CAPPED_SECONDS * 1000 else latency(r.p95_itl_ms),
        *(f"{pct:.2f}" for pct in r.client_pct.values()), f"{r.slo_violation_pct:.2f}",
        f"{r.gpu_cost_usd_per_day:,.2f}", "n/a" if vs is None else f"{vs:.2f}x",
    ]  # fmt: skip


def to_json(results: Sequence[Result], recommendation: Autoscaling | None = None) -> str:
    """One row per strategy with its oracle, per-day figures and per-minute timeline."""
    from llm_platform.simulator.search.yaml_out import autoscaling_yaml

    rows = []
    for r in results:
        row: dict[str, object] = dict(r.row())
        row.update(
            {"days": round(r.days, 4), "per_day": r.per_day, "oracle": r.oracle, "timeline": r.timeline()}
        )
        if recommendation is not None and r.strategy == "recommended":
            row["yaml"] = autoscaling_yaml(recommendation)
        rows.append(row)
    return json.dumps(rows, indent=1)


def table(results: Sequence[Result], title: str, plain: bool = False) -> Table:
    t = Table(title=title, box=box.ASCII if plain else box.HEAVY_HEAD)
    for i, name in enumerate(HEADERS):
        t.add_column(name, justify="left" if i == 0 else "right")
    for r in results:
        t.add_row(*_cells(r))
    return t


def print_rows(
    title: str, headers: Sequence[str], rows: Sequence[Sequence[str]], out: Console, first_left: bool = True
) -> None:
    """A table as rich draws it on a terminal, or as plain aligned columns when piped (no box drawing)."""
    if out.is_terminal:
        t = Table(title=title, box=box.HEAVY_HEAD)
        for i, name in enumerate(headers):
            t.add_column(name, justify="left" if i == 0 and first_left else "right")
        for cells in rows:
            t.add_row(*cells)
        out.print(t)
        return
    every = [list(headers), *[list(r) for r in rows]]
    widths = [max(len(row[i]) for row in every) for i in range(len(headers))]
    out.print(title, markup=False)
    for row in every:
        cells = (
            c.ljust(w) if i == 0 and first_left else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        out.print("  ".join(cells).rstrip(), markup=False)


def print_table(results: Sequence[Result], title: str, out: Console | None = None) -> None:
    out = out or console()
    print_rows(title, HEADERS, [_cells(r) for r in results], out)
    if results and results[0].oracle:
        o = results[0].oracle
        out.print(
            f"  vs oracle: cost / the perfect-foresight bound at the same miss rate (whole nodes launched one "
            f"cold start ahead, per-second billing; saturation {o['saturation_rps']:.1f} req/s per replica; "
            "simulator/search/oracle.py)",
            markup=False,
        )
    cut = [f"{r.strategy} {r.streams_cut}" for r in results if r.streams_cut is not None]
    if cut:
        out.print(
            "  streams cut by scale-down and rollouts (still generating past the pods' grace period): "
            + ", ".join(cut),
            markup=False,
        )
    for r in results:
        out.print(f"  {r.strategy}: {r.description}", markup=False)


def cap_notes(results: Sequence[Result], traffic: Traffic, lam_slo: float, max_replicas: int) -> list[str]:
    """Say so when maxReplicas, not the autoscaler, is why a strategy misses."""
    if lam_slo <= 0 or max_replicas <= 0 or not results:
        return []
    peak_rate = float(np.max(results[0].minute_rate)) if len(results[0].minute_rate) else 0.0
    need = math.ceil(peak_rate / lam_slo)
    if need <= max_replicas:
        return []
    capped = [
        r.strategy for r in results if r.peak_replicas >= r.max_replicas > 0 and r.slo_violation_pct > 1
    ]
    return [
        f"note: maxReplicas {max_replicas} caps this traffic: its peak minute ({peak_rate:,.1f} req/s) needs "
        f"{need} replicas at {lam_slo:.1f} req/s each. Strategies at the cap ({', '.join(capped) or 'none'}) "
        f"miss because of it, not because of their triggers; raise maxReplicas (and the pool's gpuLimit) or "
        f"scale the traffic down (--scale)."
    ]


def plot(results: Sequence[Result], path: str | Path, title: str, slo: Slo | None = None) -> None:
    """Over the day: traffic, desired and Ready replicas, queue depth, KV-cache usage, P95 TTFT and ITL against
    the SLO lines, cumulative cost; one line per strategy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(7, 1, figsize=(12, 18), sharex=True)
    hours = np.arange(len(results[0].minute_rate)) / 60
    axes[0].plot(hours, results[0].minute_rate, color="black")
    axes[0].set_ylabel("requests/s")
    axes[0].set_title(title)
    for r in results:
        line = axes[1].step(hours, r.minute_ready, where="post", label=f"{r.strategy} ready")[0]
        axes[1].step(
            hours, r.minute_desired, where="post", color=line.get_color(), linestyle=":", linewidth=0.8
        )
        axes[2].plot(hours, r.minute_queue, label=r.strategy, linewidth=0.8)
        axes[3].plot(hours, r.minute_kv_usage, label=r.strategy, linewidth=0.8)
        axes[4].plot(hours, np.maximum(r.minute_p95_ttft_ms, 1), label=r.strategy, linewidth=0.8)
        axes[5].plot(hours, np.maximum(r.minute_p95_itl_ms, 0.1), label=r.strategy, linewidth=0.8)
        axes[6].plot(hours, r.minute_cost_usd, label=r.strategy)
    if slo is not None:
        axes[4].axhline(slo.ttft_seconds * 1000, color="red", linestyle="--", linewidth=1, label="SLO")
        axes[5].axhline(slo.itl_seconds * 1000, color="red", linestyle="--", linewidth=1, label="SLO")
    labels = (
        "requests/s", "replicas (ready; desired dotted)", "queue depth", "KV-cache usage (avg)",
        "P95 TTFT ms", "P95 ITL ms", "cumulative $",
    )  # fmt: skip
    for ax, label in zip(axes, labels, strict=True):
        ax.set_ylabel(label, fontsize="small")
    axes[1].legend(loc="upper right", fontsize="x-small")
    axes[4].set_yscale("log")
    axes[5].set_yscale("log")
    axes[4].legend(loc="upper right", fontsize="x-small")
    axes[6].set_xlabel("hour")
    axes[6].set_xlim(0, hours[-1] if len(hours) else 24)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
