"""The simulator's command line: flags that do not apply are errors, bad values are one line with exit 2,
piped output is plain, latencies past a cap read "> 60 s", maxReplicas caps are called out."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from llm_platform.config.loader import ROOT
from llm_platform.simulator.commands.cli import main

LLAMA = "meta-llama/Meta-Llama-3-8B-Instruct"
RESERVATIONS = ROOT / "tests" / "fixtures" / "stacks" / "Pulumi.reservations.yaml"


@pytest.mark.parametrize(
    "argv",
    [
        ["--scenario", "seed-benchmark", "--scale", "0"],
        ["--scenario", "seed-benchmark", "--scale", "-1"],
        ["--scenario", "seed-benchmark", "--plot", "nodir/x.png"],
        ["--scenario", "seed-benchmark", "--image", "soci"],
        ["--scenario", "seed-benchmark", "--model", "x"],
        ["--scenario", "seed-benchmark", "--traffic", "no/such.csv"],
        ["--scenario", "seed-benchmark", "--traffic", "builtin:nope"],
        ["--stack", "nosuchstack"],
        [
            "capacity",
            "--model",
            LLAMA,
            "--instance",
            "g5.2xlarge",
            "--input-tokens",
            "550",
            "--output-tokens",
            "150",
            "--concurrency",
            "0",
        ],
        [
            "capacity",
            "--model",
            LLAMA,
            "--instance",
            "x9.huge",
            "--input-tokens",
            "550",
            "--output-tokens",
            "150",
            "--concurrency",
            "4",
        ],
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        raise SystemExit(main(argv))
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "error" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--reserved-until", "25:00"],
            "argument --reserved-until: 25:00 must be a time from 00:00 to 24:00",
        ),
        (["--reserved-until", "noon"], "argument --reserved-until: 'noon' is not a time of day; use HH:MM"),
        (
            ["--reserved-until", "12:00"],
            "--reserved-until: the Capacity Block's end needs --reserved-instances N",
        ),
    ],
)
def test_a_capacity_blocks_end_is_a_time_of_day_with_reservations(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        raise SystemExit(main(["--stack", str(RESERVATIONS), *argv]))
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_request_trace_rejects_rate_flags(tmp_path, capsys):
    f = tmp_path / "trace.csv"
    f.write_text("timestamp,input_tokens,output_tokens\n0,10,20\n1,30,40\n")
    assert main(["--scenario", "seed-benchmark", "--traffic", str(f), "--scale", "2"]) == 2
    assert "request trace" in capsys.readouterr().err


def test_capacity_json_from_the_day_model(capsys):
    argv = ["capacity", "--model", LLAMA, "--instance", "g5.2xlarge", "--input-tokens", "550",
            "--output-tokens", "150", "--concurrency", "64", "--json"]  # fmt: skip
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert {
        "ttft_ms",
        "itl_ms",
        "output_tokens_per_s",
        "requests_per_s",
        "kv_cache_tokens",
        "preempted",
    } <= set(out)
    assert out["limited_by"] == "kv-cache" and out["preempted"] > 0
    assert 250 < out["output_tokens_per_s"] < 700  # not the 682+ of a model without engine limits


def test_capacity_at_a_poisson_rate_says_whether_it_is_sustainable(capsys):
    base = ["capacity", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--instance", "p5.48xlarge",
            "--input-tokens", "1024", "--output-tokens", "256", "--json", "--rate"]  # fmt: skip
    results = []
    for rate in ("2", "6", "1000"):
        assert main([*base, rate]) == 0
        results.append(json.loads(capsys.readouterr().out))
    low, mid, over = results
    assert low["sustainable"] and mid["sustainable"] and not over["sustainable"]
    assert low["ttft_ms_median"] <= low["ttft_ms_mean"] and mid["ttft_ms_median"] <= mid["ttft_ms_p90"]
    assert low["tpot_ms"] < mid["tpot_ms"] < over["tpot_ms"]
    assert low["output_tokens_per_s"] == pytest.approx(2 * 256)
    assert over["requests_per_s"] == over["saturation_requests_per_s"] < 1000


def test_capacity_takes_a_rate_or_a_concurrency_not_both(capsys):
    argv = ["capacity", "--model", LLAMA, "--instance", "g5.2xlarge", "--input-tokens", "550",
            "--output-tokens", "150", "--concurrency", "4", "--rate", "1"]  # fmt: skip
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2


def test_piped_day_output_is_plain_with_caps_and_yaml(tmp_path):
    day = tmp_path / "day.csv"
    day.write_text(
        "minute,requests_per_second\n" + "".join(f"{m},{200 if 60 <= m < 90 else 2}\n" for m in range(180))
    )
    out = subprocess.run(
        [sys.executable, "-m", "llm_platform.simulator", "--scenario", "seed-benchmark", "--traffic", str(day)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "┃" not in out and "\x1b[" not in out
    assert "> 60 s" in out
    assert "maxReplicas 10 caps this traffic" in out
    assert "P95 ITL ms" in out and "vs oracle" in out
    assert "  - {name: " in out or "prewarm" not in out  # YAML flow lines are not wrapped
    yaml_lines = out[out.index("autoscaling:") :].splitlines()
    assert all(len(line) < 200 for line in yaml_lines)


BOX_DRAWING = set("─━│┃┏┓┗┛┡┩└┘┌┐├┤┬┴┼╇╈")


def test_piped_reservations_output_is_plain(tmp_path):
    """The reservations sweep's table reads as aligned columns when piped, like the day command's."""
    day = tmp_path / "day.csv"
    day.write_text("minute,requests_per_second\n" + "".join(f"{m},0.5\n" for m in range(60)))
    out = subprocess.run(
        [sys.executable, "-m", "llm_platform.simulator", "reservations", "--stack", str(RESERVATIONS),
         "--model", "llama-70b", "--traffic", str(day), "--max-reserved", "1", "--reserved-usd-per-hour", "20"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    lines = out.splitlines()
    assert not BOX_DRAWING & set(out) and "\x1b[" not in out, out
    header = next(i for i, line in enumerate(lines) if line.lstrip().startswith("reserved"))
    assert lines[header].split() == [
        "reserved",
        "GPUs",
        "GPU",
        "$/day",
        "prepaid",
        "$/day",
        "SLO",
        "miss",
        "%",
        "P95",
        "TTFT",
        "ms",
        "node-h",
    ]
    assert [line.split()[0] for line in lines[header + 1 : header + 3]] == ["0", "1"] or "*" in out
    assert lines[header + 3].startswith("cheapest: ")
