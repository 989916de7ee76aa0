"""Published vLLM measurements the replica model is checked against: predicted vs published, error per metric.

Each GPU's two efficiencies (HBM bandwidth eta, prefill MFU; serving/replica_config.py CALIBRATION) come from its
concurrency-1 point; every other point is a prediction of the physical model. The points: closed-loop and burst
sweeps (serving/calibration_points.py) and held-out H100 runs at fixed request rates
(serving/calibration_rates.py), solved with the same benchmark shapes `simulator capacity` uses
(serving/benchmark.py: closed_loop, burst, open_loop). Metrics: TTFT mean and median, TPOT (ITL where a source
gives only that) and output tok/s; for rate points also whether the run was overloaded (published: requests
failed; model: the rate is above the replica's saturation rate), and for those the published overloaded runs
replayed request by request with the run's client (serving/calibration_runs.py).

`python -m llm_platform.simulator calibrate` prints the table docs/simulator/calibration.md carries between its
`calibrate:begin`/`calibrate:end` markers (`--write-docs` rewrites it there); tests/simulator/test_calibration.py
checks the doc against it and that every cell is within TOLERANCE or carries an explanation.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from llm_platform.simulator.serving.benchmark import (
    burst,
    closed_loop,
    llmperf_requests,
    llmperf_waves,
    open_loop,
)
from llm_platform.simulator.serving.calibration_points import (
    LLMPERF_REQUESTS,
    LLMPERF_SPACING_S,
    METRICS,
    SWEEP_POINTS,
    TOLERANCE,
    Metric,
    Point,
)
from llm_platform.simulator.serving.calibration_rates import RATE_POINTS
from llm_platform.simulator.serving.calibration_runs import overload_run, run_table
from llm_platform.simulator.serving.replica import (
    ReplicaModel,
    ReplicaTable,
    TokenStats,
)

POINTS: tuple[Point, ...] = (*SWEEP_POINTS, *RATE_POINTS)
SAMPLES = 4000  # TTFT samples per point (fixed prompts: the spread is the queue's)
BEGIN, END = "<!-- calibrate:begin -->", "<!-- calibrate:end -->"
COMMAND = "uv run python -m llm_platform.simulator calibrate --write-docs"
HEADER = (
    "| point | model | GPU x TP | load | TTFT mean ms published / model | TTFT median ms | TPOT ms | "
    "output tok/s | overloaded published / model |"
)


def _table(point: Point) -> ReplicaTable:
    model = ReplicaModel(point.profile, point.gpu, point.tp, engine=point.engine)
    return model.table(TokenStats.fixed(point.input_tokens, point.output_tokens))


def _closed_loop_ttft_median(table: ReplicaTable, point: Point, lam: float, wait: float) -> float:
    """Median TTFT of a closed loop: the table's sampled TTFT with what C - 1 other users put ahead, plus the
    queue wait past saturation (the same terms as ReplicaTable.mean_ttft_seconds, sampled)."""
    others = (point.load - 1) / point.load
    state = table.at(lam)
    seen = {**state, "rho_prefill": state["rho_prefill"] * others, "running": state["running"] * others}
    prompts = np.full(SAMPLES, point.input_tokens)
    return float(np.median(table.ttft_seconds(prompts, seen, np.random.default_rng(0)))) + wait


def _llmperf(point: Point) -> dict[str, float | bool | None]:
    """llmperf's figures as it computes them: TTFT mean, ITL = mean over requests of latency / output tokens,
    tok/s = all output tokens / the run's duration (published tokens: x 1 / unit_tokens)."""
    model = ReplicaModel(point.profile, point.gpu, point.tp, engine=point.engine)
    n = llmperf_requests(LLMPERF_REQUESTS, int(point.load))
    prompts, outputs = np.full(n, point.input_tokens), np.full(n, int(point.output_tokens))
    run = llmperf_waves(model, int(point.load), prompts, outputs, LLMPERF_SPACING_S)
    ttft = run.ttft_s * 1000
    out = point.output_tokens / point.unit_tokens
    return {
        "ttft": float(ttft.mean()),
        "ttft_median": float(np.median(ttft)),
        "tpot": float((run.latency_s / out).mean()) * 1000,
        "tok_s": run.output_tokens_per_s / point.unit_tokens,
        "sustainable": None,
    }


def predict(point: Point) -> dict[str, float | bool | None]:
    """The model's figures for a point in its published units (ms, ms/token, tok/s) and `sustainable`
    (rate points: the offered rate is at or below the replica's saturation rate; None for other shapes)."""
    if point.kind == "llmperf":
        return _llmperf(point)
    table = _table(point)
    u = point.unit_tokens
    if point.kind == "rate":
        prompts = np.full(SAMPLES, point.input_tokens)
        outputs = np.full(SAMPLES, point.output_tokens)
        r = open_loop(table, point.load, "constant", prompts, outputs, np.random.default_rng(0))
        return {
            "ttft": float(r.ttft_s.mean()) * 1000,
            "ttft_median": float(np.median(r.ttft_s)) * 1000,
            "tpot": r.itl_s * 1000,
            "tok_s": r.output_tokens_per_s,
            "sustainable": r.sustainable,
        }
    if point.kind == "burst":
        b = burst(table, int(point.load), point.cached_prompts)
        assert b.ttft_median_s is not None
        ttft, median, itl, tok = b.ttft_s, b.ttft_median_s, b.itl_s, b.output_tokens_per_s
    else:
        c = closed_loop(table, int(point.load))
        wait = c.waiting / c.requests_per_s if c.requests_per_s > 0 else math.inf
        median = _closed_loop_ttft_median(table, point, c.requests_per_s, wait)
        ttft, itl, tok = c.ttft_s, c.itl_s, c.output_tokens_per_s
    return {
        "ttft": ttft * 1000,
        "ttft_median": median * 1000,
        "tpot": itl * 1000 * u,
        "tok_s": tok / u,
        "sustainable": None,
    }


def little_tok_s(point: Point) -> float | None:
    """Output tok/s that a closed-loop row's own TTFT and ITL imply by Little's law (published units)."""
    ttft = point.ttft_ms if point.ttft_ms is not None else point.ttft_median_ms
    if point.kind != "concurrency" or ttft is None or point.tpot_ms is None:
        return None
    out = point.output_tokens / point.unit_tokens
    return point.load * out / (ttft / 1000 + out * point.tpot_ms / 1000)


def bandwidth_floor_ms(point: Point) -> float:
    """The least time an engine step of a rate point can take at 100 % of the GPUs' peak HBM bandwidth: the
    weights once plus the KV cache of the running set (Little's law on the published latency), no overhead."""
    p = point.profile
    running = (
        point.load * (point.ttft_ms or 0.0) / 1000
        + point.load * (point.output_tokens - 1) * (point.tpot_ms or 0.0) / 1000
    )
    context = point.input_tokens + point.output_tokens / 2
    peak = point.tp * point.gpu.hbm_bandwidth_gbps * 1e9
    return (p.weight_bytes + running * context * p.kv_bytes_per_token) / peak * 1000


def ttft_gap_in_tpot_shortfalls(row: dict[str, object]) -> float:
    """(published - model TTFT) / (published - model TPOT): the TTFT a row's model misses, counted in the
    per-step time its model misses (docs/simulator/calibration.md "Host overhead")."""
    ttft = (row["ttft_published"], row["ttft_model"])
    tpot = (row["tpot_published"], row["tpot_model"])
    assert all(isinstance(x, float) for x in (*ttft, *tpot))
    return (float(ttft[0]) - float(ttft[1])) / (float(tpot[0]) - float(tpot[1]))  # type: ignore[arg-type]


def _published(point: Point, metric: Metric) -> float | None:
    return {
        "ttft": point.ttft_ms,
        "ttft_median": point.ttft_median_ms,
        "tpot": point.tpot_ms,
        "tok_s": point.tok_s,
    }[metric]


def rows() -> list[dict[str, object]]:
    """One row per point: published, predicted and relative error per metric, and the explanation if off."""
    out: list[dict[str, object]] = []
    for p in POINTS:
        got = predict(p)
        load = {"rate": f"rate {p.load:g} req/s", "llmperf": f"llmperf waves of {p.load:g}"}.get(
            p.kind, f"{p.kind} {p.load:g}"
        )
        row: dict[str, object] = {
            "id": p.id,
            "model": p.model,
            "gpu": p.gpu.name,
            "tp": p.tp,
            "source": p.source,
            "load": load,
        }
        explained: dict[str, str] = {}
        for metric in METRICS:
            published, model = _published(p, metric), got[metric]
            assert isinstance(model, float)
            err = None if published is None else round(model / published - 1, 3)
            row[f"{metric}_published"] = published
            row[f"{metric}_model"] = round(model, 1)
            row[f"{metric}_error"] = err
            why = p.explanation(metric)
            if err is not None and abs(err) > TOLERANCE and why is not None:
                explained[metric] = why
        row["overloaded_published"] = None if p.failed is None else p.failed > 0
        row["failed_published"] = p.failed
        sustainable = got["sustainable"]
        row["overloaded_model"] = None if sustainable is None else not sustainable
        little = little_tok_s(p)
        row["tok_s_little"] = None if little is None else round(little, 1)
        row["explained"] = explained
        tpot, row["run"] = got["tpot"], None
        if p.kind == "rate" and p.failed and isinstance(tpot, float):  # a published overloaded run
            row["run"] = overload_run(p, _table(p), tpot)
        out.append(row)
    return out


def within_tolerance(row: dict[str, object], metric: Metric) -> bool:
    err = row[f"{metric}_error"]
    return err is None or (isinstance(err, float) and math.isfinite(err) and abs(err) <= TOLERANCE)


def overload_agrees(row: dict[str, object]) -> bool:
    """Published and model agree on overload (true where the source does not say)."""
    published, model = row["overloaded_published"], row["overloaded_model"]
    return published is None or model is None or published == model


def markdown_table(table_rows: list[dict[str, object]]) -> str:
    """The calibration table docs/simulator/calibration.md carries: published / model (error), notes for explained cells."""
    notes: dict[str, int] = {}

    def cell(row: dict[str, object], metric: Metric) -> str:
        published = row[f"{metric}_published"]
        if published is None:
            return "n/a"
        err = row[f"{metric}_error"]
        text = f"{published:,.1f} / {row[f'{metric}_model']:,.1f} ({err:+.0%})"
        explained = row["explained"]
        assert isinstance(explained, dict)
        if metric in explained:
            n = notes.setdefault(explained[metric], len(notes) + 1)
            return f"{text} [{n}]"
        return text if within_tolerance(row, metric) else f"{text} **off**"

    def overload(row: dict[str, object]) -> str:
        published, model, failed = (
            row["overloaded_published"],
            row["overloaded_model"],
            row["failed_published"],
        )
        if published is None or model is None:
            return "n/a"
        assert isinstance(failed, float)
        share = f"{failed:.1%}" if 0 < failed < 0.01 else f"{failed:.0%}"
        text = f"{'yes' if published else 'no'} ({share} failed) / {'yes' if model else 'no'}"
        return text if overload_agrees(row) else f"{text} **off**"

    lines = [HEADER, "|---|---|---|---|---|---|---|---|---|"]
    for r in table_rows:
        cells = " | ".join(cell(r, m) for m in METRICS)
        lines.append(
            f"| {r['id']} | {r['model']} | {r['gpu']} x {r['tp']} | {r['load']} | {cells} | {overload(r)} |"
        )
    lines.append("")
    lines += [f"[{n}] {text}." for text, n in notes.items()]
    lines += run_table(table_rows)
    sources = sorted({str(r["source"]) for r in table_rows})
    lines.append("")
    lines += [f"- Source: {src}" for src in sources]
    return "\n".join(lines)


def with_table(doc: str, table: str) -> str:
    """`doc` with the text between its calibrate markers replaced by `table`."""
    pattern = re.compile(re.escape(BEGIN) + r"\n.*?\n" + re.escape(END), re.S)
    if len(pattern.findall(doc)) != 1:
        raise ValueError(f"the doc needs exactly one {BEGIN} ... {END} block")
    return pattern.sub(lambda _: f"{BEGIN}\n{table}\n{END}", doc)


def write_docs(path: Path, table: str) -> bool:
    """Rewrite the doc's calibration block; True if it changed."""
    doc = path.read_text()
    new = with_table(doc, table)
    if new != doc:
        path.write_text(new)
    return new != doc
