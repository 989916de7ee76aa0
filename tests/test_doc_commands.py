"""Every command the README and docs show runs, as a user would run it from the repository, and exits as the
docs say. Where the doc's own run is long (tune over eleven days, the benchmarks) the test runs the same
command on small inputs; outputs go to a temporary folder instead of build/, fam/ and day.png. The tuner's and
the benchmarks' runs are a test of their own, whose cases tests/conftest.py spreads over the workers
(SPREAD_OVER_WORKERS); the other commands stay together on one worker, in order (the renders before the checks
that read them).

A command added to the docs without a run here fails `test_every_documented_command_is_run`."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import numpy as np
import pytest

from llm_platform.config.loader import ROOT
from tests import docs
from tests.conftest import run_once

SHARED_CHECK = ROOT.parent / "shared" / "tools" / "check_render.py"

# a doc's command -> what the test runs instead (None: the command itself); {tmp}: the run's folder, {short}: three
# 3-hour days at a prod-sized rate with a surge, the tuner's small input. Order matters: the renders come
# before the checks that read them.
RUNS: dict[str, str | None] = {
    "-m llm_platform.tools.render prod --out build/prod": "-m llm_platform.tools.render prod --out {tmp}/build/prod",
    "-m llm_platform.tools.validate_render prod": "-m llm_platform.tools.validate_render prod --build {tmp}/build",
    "../shared/tools/check_render.py build/prod": "../shared/tools/check_render.py {tmp}/build/prod",
    "-m llm_platform.tools.security_scan prod": "-m llm_platform.tools.security_scan prod --build {tmp}/build",
    "-m llm_platform.tools.security_scan dev staging prod": (
        "-m llm_platform.tools.security_scan dev staging prod --build {tmp}/build --render"
    ),
    "-m llm_platform.tools.render tests/fixtures/stacks/Pulumi.multinode.yaml --out build/multinode": (
        "-m llm_platform.tools.render tests/fixtures/stacks/Pulumi.multinode.yaml --out {tmp}/build/multinode"
    ),
    "-m llm_platform.tools.validate_render tests/fixtures/stacks/Pulumi.multinode.yaml": (
        "-m llm_platform.tools.validate_render tests/fixtures/stacks/Pulumi.multinode.yaml --build {tmp}/build"
    ),
    "-m llm_platform.tools.preflight tests/fixtures/stacks/Pulumi.multinode.yaml": None,
    "-m llm_platform.simulator --stack tests/fixtures/stacks/Pulumi.multinode.yaml --scale 0.2": None,
    "-m llm_platform.tools.preflight prod": None,
    "-m llm_platform.tools.preflight prod --json": None,
    "__main__.py": None,  # the Pulumi program, run by mistake: prints how to run it, exit 2
    "-m llm_platform.simulator --stack prod --model mistral-7b --plot day.png": (
        "-m llm_platform.simulator --stack prod --model mistral-7b --plot {tmp}/day.png"
    ),
    "-m llm_platform.simulator --stack prod --model mistral-7b --explain": None,
    "-m llm_platform.simulator --stack prod --model mistral-7b --explain --json": None,
    "-m llm_platform.simulator --scenario seed-benchmark": None,
    "-m llm_platform.simulator --scenario seed-benchmark --json": None,
    "-m llm_platform.simulator --stack dev --traffic my-day.csv --json": (
        "-m llm_platform.simulator --stack dev --traffic {short}/a.csv --json"
    ),
    "-m llm_platform.simulator --stack staging --scale 0.2 --input-tokens 550 --output-tokens 150": None,
    "-m llm_platform.simulator reservations --stack prod --model llama-70b": None,
    "-m llm_platform.simulator serving-paths prod --model mistral-7b --day-engine": (
        "-m llm_platform.simulator serving-paths prod --model mistral-7b --day-engine --traffic {short}/a.csv"
    ),
    "-m llm_platform.simulator serving-paths prod --model mistral-7b --input-tokens 800 --output-tokens 150 --scale 0.2 --prefix-reuse 0.8 --working-set-gib 40": None,
    "-m llm_platform.simulator serving-paths tests/fixtures/stacks/Pulumi.reservations.yaml --model llama-70b --input-tokens 8000 --output-tokens 1000 --ttft-seconds 2 --itl-seconds 0.05 [--json]": None,
    "-m llm_platform.simulator replay tests/fixtures/stacks/Pulumi.prod.yaml --model mistral-7b --export tests/fixtures/replay/simulated-day.json": None,
    "-m llm_platform.simulator reservations --stack prod --model llama-70b --reserved-usd-per-hour 14.75": None,
    "-m llm_platform.simulator.commands.routing --shared-fraction 0.8 --prefix-tokens 1500 --distinct-prefixes 100": None,
    "-m llm_platform.simulator.commands.routing --shared-fraction 0.9 --prefix-tokens 6000 --distinct-prefixes 150 --json": None,
    "-m llm_platform.simulator calibrate": None,
    "-m llm_platform.simulator capacity --model meta-llama/Meta-Llama-3-8B-Instruct --instance g5.2xlarge "
    "--input-tokens 550 --output-tokens 150 --concurrency 64 [--tp 1] [--prefix-hit-rate 0.5] --json": None,
    "-m llm_platform.simulator capacity --model meta-llama/Llama-3.1-8B-Instruct --instance p5.48xlarge "
    "--input-tokens 1024 --output-tokens 256 --rate 6 --json": None,
    "-m llm_platform.simulator capacity --hidden-size 4096 --num-layers 32 --num-attention-heads 32 "
    "--num-kv-heads 8 --intermediate-size 14336 --vocab-size 128256 --instance p5.48xlarge "
    "--input-tokens uniform:512:1536 --output-tokens lognormal:256:0.5 --rate 6 --arrivals constant --json": None,
    "-m llm_platform.simulator capacity --model meta-llama/Meta-Llama-3-8B-Instruct --instance g5.2xlarge "
    "--input-tokens 466 --output-tokens 150 --no-chunked-prefill --concurrency 8 --llmperf 100 "
    "[--llmperf-spacing 0.12] --json": None,
    "-m llm_platform.simulator capacity --model meta-llama/Llama-3.1-70B-Instruct --instance p5.48xlarge --tp 4 "
    "--input-tokens 1024 --output-tokens 512 --rate 20 --num-prompts 300 [--client openai] [--timeout 120] "
    "[--max-attempts 3] [--rate-limit 10] [--max-in-flight 2048] --json": None,
    # the whole suite inside the suite would recurse: the benchmark times one small test file instead
    "benchmarks/test_suite_time.py": "benchmarks/test_suite_time.py --slowest 3 -- tests/config/test_catalog.py -n 0",
    "-m llm_platform.simulator family --out fam --holdout-seed 17": (
        "-m llm_platform.simulator family --out {tmp}/fam --holdout-seed 17"
    ),
    "-m llm_platform.simulator family --out fam --holdout-seed 100 --more-seeds 1,2": (
        "-m llm_platform.simulator family --out {tmp}/fam --holdout-seed 100 --more-seeds 1,2"
    ),
    "-m llm_platform.simulator family --out fam-q --scale 0.25 --holdout-seed 17": (
        "-m llm_platform.simulator family --out {tmp}/fam-q --scale 0.25 --holdout-seed 17"
    ),
    "-m llm_platform.simulator family --out fam-t --scale 0.1 --holdout-seed 17": (
        "-m llm_platform.simulator family --out {tmp}/fam-t --scale 0.1 --holdout-seed 17"
    ),
    "-m llm_platform.simulator tune --stack prod --model mistral-7b --max-miss-pct 2.5 "
    "--traffic fam/{bursts,bursts-1,bursts-2,flash,seed}.csv "
    "--holdout fam/{bursts-holdout,spiky,shifted,growing,flat,bursty}.csv": (
        "-m llm_platform.simulator tune --stack prod --model mistral-7b --max-miss-pct 2.5 "
        "--traffic {short}/a.csv {short}/b.csv --holdout {short}/c.csv --passes 1"
    ),
    "-m llm_platform.simulator tune --stack prod --model mistral-7b --traffic mon.csv tue.csv wed.csv "
    "--max-miss-pct 5 [--holdout thu.csv] [--surge-known] [--reserved-usd-per-hour 20] [--json]": (
        "-m llm_platform.simulator tune --stack prod --model mistral-7b --traffic {short}/a.csv {short}/b.csv "
        "--max-miss-pct 5 --holdout {short}/c.csv --surge-known --reserved-usd-per-hour 20 --json --passes 1"
    ),
    "-m llm_platform.simulator tune --stack staging --model mistral-7b --max-miss-pct 5 "
    "--traffic fam-q/{seed,flat,spiky,bursty,growing,shifted}.csv --holdout fam-q/bursty-holdout.csv": (
        "-m llm_platform.simulator tune --stack staging --model mistral-7b --max-miss-pct 5 "
        "--traffic {short}/a.csv {short}/b.csv --holdout {short}/c.csv --passes 1"
    ),
    "benchmarks/simulate_day.py": "benchmarks/simulate_day.py --repeat 1",
    "benchmarks/scale_to_zero.py": None,
    "benchmarks/scale_to_zero.py --buffer-gpus 1": None,
    "benchmarks/family.py --stack prod": "benchmarks/family.py --stack prod --days flash --scale 0.1 --passes 1",
    "benchmarks/headroom_bursty.py": "benchmarks/headroom_bursty.py --seeds 100 --levels 0",
    "benchmarks/headroom_bursty.py --levels 0,2": "benchmarks/headroom_bursty.py --seeds 100 --levels 0,2",
}  # fmt: skip
# rich's width for anything it draws as on a terminal; tests/test_doc_figures.py runs with the same, so a
# command both files run is run once (tests/conftest.py run_once)
COMMAND_ENV = {"COLUMNS": "200"}
EXIT = {"__main__.py": 2}  # the documented exit status where it is not 0


def _is_long(command: str) -> bool:
    """The tuner's and the benchmarks' runs (minutes each, independent): spread over the workers."""
    return command.startswith("benchmarks/") or " tune " in command


def _short_days(folder: Path) -> Path:
    """Three 3-hour days at a prod-sized rate with a surge: the tuner's small input ({short})."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, surge in (("a", 60), ("b", 90), ("c", 75)):
        rate = np.full(180, 4.0)
        rate[surge : surge + 30] = 40.0
        lines = "".join(f"{m},{r}\n" for m, r in enumerate(rate))
        (folder / f"{name}.csv").write_text("minute,requests_per_second\n" + lines)
    return folder


def _run_documented(command: str, folder: Path) -> None:
    """Run the command (or its small-input stand-in) from the repository as a user would; it must exit as the
    docs say, with no traceback."""
    if "../shared/" in command and not SHARED_CHECK.is_file():
        pytest.skip("../shared/tools/check_render.py is not beside the repository (it is in .ci/run)")
    run = RUNS[command] or docs.without_brackets(command)
    line = run.format(tmp=folder, short=folder / "short")
    proc = run_once([sys.executable, *shlex.split(line)], env=COMMAND_ENV, timeout=1200)
    expected = EXIT.get(command, 0)
    assert proc.returncode == expected, (
        f"`{line}` exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    )
    assert "Traceback" not in proc.stderr, proc.stderr


def test_every_documented_command_is_run() -> None:
    assert sorted(set(docs.commands()) - set(RUNS)) == [], "add the command (and a small input) to RUNS"
    assert sorted(set(RUNS) - set(docs.commands())) == [], "RUNS holds a command the docs no longer show"


@pytest.fixture(scope="module")
def doc_run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The worker's folder for the commands' outputs, with the tuner's short days in `short/`."""
    tmp = tmp_path_factory.mktemp("doc-runs")
    _short_days(tmp / "short")
    return tmp


@pytest.mark.slow
@pytest.mark.parametrize("command", [c for c in RUNS if not _is_long(c)])
def test_the_documented_command_runs(command: str, doc_run_folder: Path) -> None:
    _run_documented(command, doc_run_folder)


@pytest.mark.slow
@pytest.mark.parametrize("command", [c for c in RUNS if _is_long(c)])
def test_the_documented_long_command_runs(command: str, doc_run_folder: Path) -> None:
    _run_documented(command, doc_run_folder)
