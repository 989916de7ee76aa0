"""The replay fixture: a known day the simulator itself produced, written as the export a Prometheus of that
day would give (`simulator replay --save`), so replaying it must forecast what it "actually" did.

`uv run python -m tests.simulator.replay_export --write` regenerates tests/fixtures/replay/simulated-day.json;
tests/simulator/test_replay.py checks the file is what this helper makes.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from llm_platform.simulator.day.engine import simulate
from llm_platform.simulator.day.result import Result
from llm_platform.simulator.search.stacks import stack_run
from llm_platform.simulator.traffic import replay_data
from llm_platform.simulator.traffic.traffic import TokenMix, rate_traffic
from tests.conftest import fixture_stack

FIXTURE = Path(__file__).parents[1] / "fixtures" / "replay" / "simulated-day.json"
STACK = "prod"
MODEL = "mistral-7b"
START = int(datetime(2026, 12, 1, 6, tzinfo=UTC).timestamp())  # 06:00 UTC, before the morning ramp
HOURS = 4


def rate_curve() -> np.ndarray:
    """4 h: quiet, a 40-minute surge to 40 req/s, a day-time plateau, then nothing for the last 30 minutes."""
    rate = np.full(HOURS * 3600, 4.0)
    rate[3600 : 3600 + 2400] = 40.0
    rate[3600 + 2400 : HOURS * 3600 - 1800] = 15.0
    rate[HOURS * 3600 - 1800 :] = 0.0
    return rate


def simulated_day(seed: int = 7) -> tuple[Any, Result]:
    traffic = rate_traffic(rate_curve(), TokenMix(), seed, "simulated", datetime.fromtimestamp(START, tz=UTC))
    run = stack_run(fixture_stack(STACK), MODEL, traffic, seed)
    strategy = next(s for s in run.strategies if s.name == "stack-config")
    return (run, traffic), simulate(traffic, run.setup.table, strategy, run.setup.config)


def _matrix(values: np.ndarray, step: int = 60) -> dict[str, Any]:
    rows = [[START + k * step, repr(float(v))] for k, v in enumerate(values) if np.isfinite(v)]
    return {"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {}, "values": rows}]}}


def export(
    result: Result, traffic: Any, model: Any, extra_replicas: np.ndarray | None = None
) -> dict[str, Any]:
    """The export of `result` as Prometheus would have recorded it (one sample per minute); `extra_replicas`
    adds serving replicas per minute (a cluster that ran more than the forecast)."""
    minutes = len(result.minute_rate)
    by_minute = np.minimum((traffic.arrivals // 60).astype(np.int64), minutes - 1)
    count = np.bincount(by_minute, minlength=minutes)
    with np.errstate(invalid="ignore", divide="ignore"):
        input_mean = np.bincount(by_minute, traffic.input_tokens, minutes) / count
        output_mean = np.bincount(by_minute, traffic.output_tokens, minutes) / count
    ready = result.minute_ready + (0 if extra_replicas is None else extra_replicas)
    desired = result.minute_desired + (0 if extra_replicas is None else extra_replicas)
    spent = np.diff(np.concatenate(([0.0], result.minute_cost_usd)))  # $ per minute
    per_replica_minute = spent / np.maximum(result.minute_ready, 1)
    cost = (spent + (0 if extra_replicas is None else extra_replicas * per_replica_minute.mean())) * 60
    series = {
        "requests_per_second": result.minute_rate,
        "input_tokens_mean": input_mean,
        "output_tokens_mean": output_mean,
        "ttft_miss_ratio": np.where(count > 0, result.minute_violation_pct / 100, np.nan),
        "replicas_available": ready,
        "replicas_desired": np.maximum(desired, ready),
        "cost_dollars_per_hour": cost,
    }
    return {
        "kind": replay_data.KIND,
        "model": model.model.served_model_name,
        "start": START,
        "end": START + minutes * 60,
        "step": 60,
        "queries": replay_data.queries(model),
        "series": {k: _matrix(v) for k, v in series.items()},
    }


def fixture_doc() -> dict[str, Any]:
    (run, traffic), result = simulated_day()
    return export(result, traffic, run.plan)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="write the fixture")
    if parser.parse_args().write:
        FIXTURE.parent.mkdir(parents=True, exist_ok=True)
        FIXTURE.write_text(json.dumps(fixture_doc(), indent=1) + "\n")
        print(f"wrote {FIXTURE}")
