"""`simulator replay`: a day the simulator produced replays to a near-zero difference; more replicas than the
forecast are attributed to their phase; Prometheus is read through query_range; bad exports fail clearly."""

from __future__ import annotations

import copy
import http.server
import json
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from llm_platform.simulator.commands import replay_cmd
from llm_platform.simulator.commands.cli import main
from llm_platform.simulator.traffic import replay_data
from llm_platform.simulator.traffic.traffic import TrafficError
from tests.conftest import fixture_stack
from tests.simulator import replay_export

STACK = str(fixture_stack(replay_export.STACK))


@pytest.fixture(scope="module")
def fixture_doc() -> dict[str, Any]:
    return json.loads(replay_export.FIXTURE.read_text())


def replay(doc: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    path = tmp_path / "export.json"
    path.write_text(json.dumps(doc))
    assert main(["replay", STACK, "--model", replay_export.MODEL, "--export", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_fixture_is_what_the_helper_generates(fixture_doc: dict[str, Any]) -> None:
    assert replay_export.fixture_doc() == fixture_doc, (
        "run: uv run python -m tests.simulator.replay_export --write"
    )


def test_a_simulated_day_replays_to_a_near_zero_difference(
    fixture_doc: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = replay(fixture_doc, tmp_path, capsys)
    f, a = out["forecast"], out["actual"]
    assert f["cost_usd_per_day"] > 0 and a["cost_usd_per_day"] is not None
    assert abs(a["cost_usd_per_day"] - f["cost_usd_per_day"]) <= 0.02 * f["cost_usd_per_day"]
    assert abs(a["replica_hours_per_day"] - f["replica_hours_per_day"]) <= 0.02 * f["replica_hours_per_day"]
    assert abs(a["slo_miss_pct"] - f["slo_miss_pct"]) <= 0.5
    for phase in out["difference_by_phase"].values():
        assert abs(phase["replica_hours_per_day"]) <= 0.02 * f["replica_hours_per_day"]


def test_more_replicas_than_forecast_are_split_by_phase(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (run, traffic), result = replay_export.simulated_day()
    minutes = len(result.minute_rate)
    extra = np.zeros(minutes)
    extra[60:100] = 1  # one more replica serving through the 40-minute surge
    extra[minutes - 30 :] = 2  # two replicas left up in the last 30 minutes, which have no request
    assert not result.minute_rate[minutes - 30 :].any()
    out = replay(replay_export.export(result, traffic, run.plan, extra), tmp_path, capsys)
    per_day = 24 / replay_export.HOURS
    phases = out["difference_by_phase"]
    assert phases["capacity"]["replica_hours_per_day"] == pytest.approx(40 / 60 * per_day, abs=0.3)
    assert phases["idle"]["replica_hours_per_day"] == pytest.approx(1.0 * per_day, abs=0.3)
    assert abs(phases["cold_start"]["replica_hours_per_day"]) < 0.3
    more = out["actual"]["replica_hours_per_day"] - out["forecast"]["replica_hours_per_day"]
    assert more == pytest.approx(sum(p["replica_hours_per_day"] for p in phases.values()), abs=0.05)
    assert out["actual"]["cost_usd_per_day"] > out["forecast"]["cost_usd_per_day"]


def test_without_cost_series_the_forecast_is_shown_alone(
    fixture_doc: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = copy.deepcopy(fixture_doc)
    doc["series"]["cost_dollars_per_hour"]["data"]["result"] = []
    out = replay(doc, tmp_path, capsys)
    assert out["actual"]["cost_usd_per_day"] is None
    assert "OpenCost" in out["actual_cost_missing"]
    path = tmp_path / "export.json"
    assert main(["replay", STACK, "--model", replay_export.MODEL, "--export", str(path)]) == 0
    assert "actual cost unknown" in capsys.readouterr().out


@pytest.fixture
def prometheus(fixture_doc: dict[str, Any]) -> Iterator[tuple[str, list[dict[str, str]]]]:
    """A fake Prometheus on port 0 answering /api/v1/query_range with the fixture's series for each query."""
    by_query = {fixture_doc["queries"][k]: v for k, v in fixture_doc["series"].items()}
    seen: list[dict[str, str]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urllib.parse.urlparse(self.path)
            params = {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()}
            seen.append(params)
            ok = url.path == "/api/v1/query_range" and params.get("query") in by_query
            body = by_query[params["query"]] if ok else {"status": "error", "error": "unknown query"}
            data = json.dumps(body).encode()
            self.send_response(200 if ok else 400)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def test_prometheus_is_read_through_query_range(
    prometheus: tuple[str, list[dict[str, str]]], fixture_doc: dict[str, Any], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    url, seen = prometheus
    saved = tmp_path / "saved.json"
    argv = ["replay", STACK, "--model", replay_export.MODEL, "--prometheus", url, "--date", "2026-12-01"]
    assert main([*argv, "--save", str(saved), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {p["query"] for p in seen} == set(fixture_doc["queries"].values())
    assert len(seen) == len(replay_data.SERIES)
    start = replay_export.START - 6 * 3600  # the UTC day's midnight
    for params in seen:
        assert (params["start"], params["end"], params["step"]) == (
            str(start),
            str(start + 86_400 - 60),
            "60s",
        )
    assert out["forecast"]["cost_usd_per_day"] > 0 and out["actual"]["cost_usd_per_day"] is not None
    assert replay_data.read_export(saved).steps == 1440


def test_an_unreachable_prometheus_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["replay", STACK, "--prometheus", "http://127.0.0.1:9", "--date", "2026-12-01"]
    assert main(argv) == 2
    assert "http://127.0.0.1:9: query_range of requests_per_second failed" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda d: d.update(kind="other"), "kind: 'other'; allowed: 'llm-platform-replay'"),
        (lambda d: d.update(step="60"), "step: '60'; allowed: whole unix seconds"),
        (lambda d: d["series"].pop("replicas_available"), "series.replicas_available: missing; required:"),
        (lambda d: d["series"].update(gpu={}), "series.gpu: unknown; allowed: requests_per_second"),
        (
            lambda d: d["series"]["input_tokens_mean"]["data"]["result"][0]["values"].__setitem__(0, ["x"]),
            "series.input_tokens_mean.data.result[0].values[0]: ['x']; allowed: [unix_seconds, \"number\"]",
        ),
        (
            lambda d: d["series"]["ttft_miss_ratio"]["data"].update(resultType="vector"),
            "series.ttft_miss_ratio.data.resultType: 'vector'; allowed: 'matrix'",
        ),
    ],
)
def test_a_bad_export_names_the_file_and_field(
    fixture_doc: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: Any, expected: str
) -> None:
    doc = copy.deepcopy(fixture_doc)
    edit(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(TrafficError) as exc:
        replay_data.read_export(path)
    assert str(exc.value).startswith(f"{path} ") and expected in str(exc.value)
    assert main(["replay", STACK, "--export", str(path)]) == 2
    assert expected in capsys.readouterr().err


def test_a_missing_or_broken_export_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(TrafficError, match=r"export file .*nope.json' does not exist"):
        replay_data.read_export(tmp_path / "nope.json")
    (tmp_path / "broken.json").write_text("{\n  oops")
    with pytest.raises(TrafficError, match=r"broken.json line 2: not JSON"):
        replay_data.read_export(tmp_path / "broken.json")


def test_date_is_checked() -> None:
    with pytest.raises(ValueError, match="--date '2026-13-01'; allowed: a UTC day YYYY-MM-DD"):
        replay_cmd.day_range("2026-12-01".replace("12", "13"))


def test_the_documented_replay_is_what_the_command_prints(capsys: pytest.CaptureFixture[str]) -> None:
    """The docs show the fixture's replay as printed (regenerate: run the documented command)."""
    from tests import docs

    assert main(["replay", STACK, "--model", "mistral-7b", "--export", str(replay_export.FIXTURE)]) == 0
    printed = capsys.readouterr().out
    assert printed.strip() in docs.text(), (
        "paste the replay's output into the docs (docs/simulator/commands.md)"
    )


def test_export_only_flags_are_refused(
    fixture_doc: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["replay", STACK, "--export", str(replay_export.FIXTURE), "--date", "2026-12-01"]
    assert main(argv) == 2
    assert "--date applies to --prometheus" in capsys.readouterr().err
    assert main(["replay", STACK, "--prometheus", "http://127.0.0.1:9"]) == 2
    assert "--prometheus needs --date YYYY-MM-DD" in capsys.readouterr().err


def test_the_replay_queries_are_valid_promql(tmp_path: Path) -> None:
    """Every query the replay sends parses in promtool (rules file check), the cost one reads the cost rule."""
    from llm_platform.plan.promql import MODEL_COST_HOURLY
    from llm_platform.simulator.search.stacks import stack_model
    from tests.components import promtool

    _, _, mp = stack_model(fixture_stack(replay_export.STACK), replay_export.MODEL)
    qs = replay_data.queries(mp)
    assert list(qs) == list(replay_data.SERIES)
    assert MODEL_COST_HOURLY in qs["cost_dollars_per_hour"]
    promtool.check_expressions(list(qs.values()), tmp_path)
