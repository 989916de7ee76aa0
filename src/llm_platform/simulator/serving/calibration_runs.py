"""The published overloaded rate runs replayed request by request: failures, goodput and the successes' TTFT.

The calibration table (serving/calibration.py) says for a rate point only whether the replica saturates. A run
past saturation is what its client makes of the queue: inference-perf sent the run's requests at a constant
rate and gave each one attempt of 300 s (calibration_rates.INFERENCE_PERF), so the requests that waited too long
failed. serving/overload.py runs the same requests through one replica with that client; this module sets the
run's figures (successes, successful requests/s over the run, mean TTFT of the successes) beside the published
ones. Where one is off by more than TOLERANCE, `why_off` says how far the model's TPOT at the running cap, within
the calibration's tolerance, moves the saturation rate from the one the published TPOT gives.
"""

from __future__ import annotations

import numpy as np

from llm_platform.simulator.serving.calibration_points import TOLERANCE, Point
from llm_platform.simulator.serving.calibration_rates import INFERENCE_PERF
from llm_platform.simulator.serving.overload import arrival_times, simulate
from llm_platform.simulator.serving.replica import ReplicaTable

RUN_METRICS = ("succeeded", "goodput_rps", "ttft_s")
RUN_HEADER = "| overloaded run | requests | succeeded published / model | successful req/s | mean TTFT of the successes s |"


def overload_run(point: Point, table: ReplicaTable, tpot_model_ms: float) -> dict[str, object]:
    """The run's requests at its constant rate through `table`'s replica with the run's client: published and
    model figures, their errors, and why a figure is off (None if none is)."""
    assert point.requests is not None and point.failed is not None and point.tok_s is not None
    arrivals = arrival_times(point.requests, point.load, "constant", np.random.default_rng(0))
    out = simulate(table, arrivals, np.array([point.output_tokens]), INFERENCE_PERF)
    published = {
        "succeeded": round(point.requests * (1 - point.failed)),
        "goodput_rps": point.tok_s / point.output_tokens,
        "ttft_s": (point.ttft_ms or 0.0) / 1000,
    }
    ttft = float(out.ttft_s.mean()) if out.succeeded else 0.0
    model = {"succeeded": out.succeeded, "goodput_rps": out.goodput_rps, "ttft_s": ttft}
    run: dict[str, object] = {"requests": point.requests, "saturation_rps": round(table.capacity_rps, 3)}
    off = False
    for metric in RUN_METRICS:
        err = model[metric] / published[metric] - 1 if published[metric] else None
        run[f"{metric}_published"] = round(published[metric], 3)
        run[f"{metric}_model"] = round(model[metric], 3)
        run[f"{metric}_error"] = None if err is None else round(err, 3)
        off = off or (err is not None and abs(err) > TOLERANCE)
    run["why_off"] = why_off(point, table, tpot_model_ms) if off else None
    return run


def published_tpot_rps(point: Point) -> float:
    """What the run's running cap serves at the published TPOT: max_num_seqs / ((output - 1) x TPOT)."""
    assert point.engine.max_num_seqs is not None and point.tpot_ms is not None
    return point.engine.max_num_seqs / ((point.output_tokens - 1) * point.tpot_ms / 1000)


def why_off(point: Point, table: ReplicaTable, tpot_model_ms: float) -> str:
    """The saturation rates the model's and the published TPOT give, and the queues they leave at the stage's
    end, which is what the client's timeout acts on."""
    assert point.requests is not None and point.tpot_ms is not None
    duration = point.requests / point.load
    served = published_tpot_rps(point)
    err = tpot_model_ms / point.tpot_ms - 1
    within = "within" if abs(err) <= TOLERANCE else "outside"
    return (
        f"the model's TPOT at the running cap is {err:+.0%} of the published "
        f"({tpot_model_ms:.1f} vs {point.tpot_ms:.1f} ms, {within} the table's tolerance); it saturates the replica "
        f"at {table.capacity_rps:.2f} req/s, the published TPOT at {served:.2f} "
        f"({point.engine.max_num_seqs} slots / ({point.output_tokens - 1:,.0f} x TPOT)): after {duration:,.0f} s at "
        f"{point.load:g} req/s the queue is {max(point.load - table.capacity_rps, 0) * duration:,.0f} requests "
        f"in the model against {max(point.load - served, 0) * duration:,.0f}, and a request waits "
        f"{max(point.load / table.capacity_rps - 1, 0) * duration:,.0f} s against "
        f"{max(point.load / served - 1, 0) * duration:,.0f} s by then, beside the client's "
        f"{INFERENCE_PERF.timeout_s:.0f} s"
    )


def run_table(rows: list[dict[str, object]]) -> list[str]:
    """Markdown lines of the overloaded runs (rows carrying a `run`), with their explanations numbered."""
    runs = [(str(r["id"]), r["run"]) for r in rows if isinstance(r.get("run"), dict)]
    if not runs:
        return []
    lines = ["", RUN_HEADER, "|---|---|---|---|---|"]
    notes: list[str] = []
    for point_id, run in runs:
        assert isinstance(run, dict)
        mark = ""
        if run["why_off"]:
            notes.append(str(run["why_off"]))
            mark = f" [r{len(notes)}]"
        cells = []
        for metric, fmt in zip(RUN_METRICS, ("{:,.0f}", "{:.3f}", "{:,.1f}"), strict=True):
            published, model, err = (run[f"{metric}_{k}"] for k in ("published", "model", "error"))
            text = f"{fmt.format(published)} / {fmt.format(model)}"
            cells.append(text if err is None else f"{text} ({err:+.0%})")
        lines.append(f"| {point_id}{mark} | {run['requests']:,} | {' | '.join(cells)} |")
    lines.append("")
    lines += [f"[r{n}] {text}." for n, text in enumerate(notes, start=1)]
    return lines
