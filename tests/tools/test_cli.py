"""The command-line tools answer like each other: a bad argument or an unknown stack is one line and exit 2,
and a render older than its stack file or the program is refused rather than scanned."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from llm_platform import commandline
from llm_platform.config.loader import stack_names
from llm_platform.simulator.commands import cli as simulator
from llm_platform.simulator.commands import routing
from llm_platform.tools import render, security_scan, validate_render
from llm_platform.tools.preflight import __main__ as preflight
from tests.conftest import fixture_stack


def _one_line_exit_2(capsys, main, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exit_:
        raise SystemExit(main(argv))  # some commands return their status, argparse raises it
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


# every command-line tool, by how it is called: `python -m <module> <argv...>`
UNKNOWN_STACK = {
    "render": (render.main, ["nosuchstack", "--out", "x"]),
    "security_scan": (security_scan.main, ["nosuchstack"]),
    "preflight": (preflight.main, ["nosuchstack"]),
    "validate_render": (validate_render.main, ["nosuchstack"]),
    "simulator": (simulator.main, ["--stack", "nosuchstack"]),
    "simulator tune": (
        simulator.main,
        ["tune", "--stack", "nosuchstack", "--traffic", "a.csv", "--max-miss-pct", "1"],
    ),
    "simulator reservations": (simulator.main, ["reservations", "--stack", "nosuchstack"]),
}


@pytest.mark.parametrize(("main", "argv"), UNKNOWN_STACK.values(), ids=UNKNOWN_STACK.keys())
def test_an_unknown_stack_lists_the_stacks(capsys, main, argv: list[str]) -> None:
    err = _one_line_exit_2(capsys, main, argv)
    assert "no stack 'nosuchstack'" in err and f"stacks: {', '.join(stack_names())}" in err


BAD_ARGUMENTS = {
    "render without a stack": (render.main, []),  # --out defaults to build/<stack>
    "render --out without a value": (render.main, ["dev", "--out"]),
    "security_scan without a stack": (security_scan.main, []),
    "security_scan --bogus": (security_scan.main, ["dev", "--bogus"]),
    "preflight without a stack": (preflight.main, []),
    "preflight --bogus": (preflight.main, ["dev", "--bogus"]),
    "validate_render without a stack": (validate_render.main, []),
    "simulator without a source": (simulator.main, []),
    "simulator --scale x": (simulator.main, ["--scenario", "seed-benchmark", "--scale", "x"]),
    "simulator tune --bogus": (simulator.main, ["tune", "--bogus"]),
    "simulator reservations --bogus": (simulator.main, ["reservations", "--bogus"]),
    "simulator capacity --bogus": (simulator.main, ["capacity", "--bogus"]),
    "simulator calibrate --bogus": (simulator.main, ["calibrate", "--bogus"]),
    "simulator.routing --seed x": (routing.main, ["--seed", "x"]),
}


@pytest.mark.parametrize(("main", "argv"), BAD_ARGUMENTS.values(), ids=BAD_ARGUMENTS.keys())
def test_bad_arguments_are_one_line(capsys, main, argv: list[str]) -> None:
    """One format for all: `<prog>: error: <what is wrong> (see --help)`."""
    err = _one_line_exit_2(capsys, main, argv)
    assert err.startswith("python -m ") and ": error: " in err and err.endswith("(see --help)\n"), err


BAD_VALUES = {  # parsed, then refused by the command itself (not argparse)
    "simulator --model": (simulator.main, ["--stack", "prod", "--model", "nope"], "has no model 'nope'"),
    "simulator --traffic": (simulator.main, ["--stack", "prod", "--traffic", "nofile.csv"], "nofile.csv"),
    "simulator reservations --model": (
        simulator.main, ["reservations", "--stack", "prod", "--model", "nope"], "has no model 'nope'",
    ),
    "simulator family --kinds": (simulator.main, ["family", "--out", "nofolder", "--kinds", "nope"], "'nope'"),
    "simulator.routing --shared-fraction": (routing.main, ["--shared-fraction", "2"], "shared fraction 2.0"),
}  # fmt: skip


@pytest.mark.parametrize(("main", "argv", "what"), BAD_VALUES.values(), ids=BAD_VALUES.keys())
def test_a_refused_value_is_the_same_one_line(capsys, main, argv: list[str], what: str) -> None:
    """The simulator's own refusals read like argparse's: the message unquoted, then `(see --help)`."""
    err = _one_line_exit_2(capsys, main, argv)
    assert not Path("nofolder").exists() and not Path("nope.csv").exists()  # refused before writing anything
    prog = "python -m llm_platform.simulator" + (".routing" if main is routing.main else "")
    assert err.startswith(f"{prog}") and ": error: " in err and err.endswith(" (see --help)\n"), err
    assert what in err and ': error: "' not in err, err


@pytest.fixture
def stack_copy(tmp_path: Path) -> Path:
    path = tmp_path / "Pulumi.team.yaml"
    shutil.copy(fixture_stack("dev"), path)
    return path


def test_a_fresh_render_is_accepted_and_an_edit_makes_it_stale(stack_copy: Path, tmp_path: Path) -> None:
    manifests = tmp_path / "build" / "team" / "manifests.yaml"
    manifests.parent.mkdir(parents=True)
    manifests.write_text("")
    later = time.time() + 60  # rendered after every source file
    os.utime(manifests, (later, later))
    assert commandline.stale_render(stack_copy, manifests) is None
    os.utime(stack_copy, (later + 1, later + 1))  # the stack file edited after the render
    problem = commandline.stale_render(stack_copy, manifests)
    assert (
        problem is not None and "is older than Pulumi.team.yaml" in problem and "tools.render team" in problem
    )


def test_a_render_older_than_the_program_is_stale(stack_copy: Path, tmp_path: Path) -> None:
    manifests = tmp_path / "manifests.yaml"
    manifests.write_text("")
    os.utime(stack_copy, (0, 0))
    os.utime(manifests, (1, 1))  # newer than the stack file, older than every program file
    problem = commandline.stale_render(stack_copy, manifests)
    assert problem is not None and "older than the program" in problem


def test_the_security_scan_refuses_a_stale_render(stack_copy: Path, tmp_path: Path, capsys) -> None:
    build = tmp_path / "build"
    (build / "team").mkdir(parents=True)
    (build / "team" / "manifests.yaml").write_text("")
    os.utime(build / "team" / "manifests.yaml", (1, 1))
    err = _one_line_exit_2(capsys, security_scan.main, [str(stack_copy), "--build", str(build)])
    assert "team:" in err and "render it again" in err and "--render" in err


BAD_STACK_FILE = {
    "render": (render.main, ["--out", "x"]),
    "preflight": (preflight.main, []),
    "simulator": (simulator.main, ["--stack"]),
    "simulator reservations": (simulator.main, ["reservations", "--stack"]),
}


@pytest.mark.parametrize(("main", "argv"), BAD_STACK_FILE.values(), ids=BAD_STACK_FILE.keys())
def test_a_bad_stack_file_reports_every_problem(stack_copy: Path, capsys, main, argv: list[str]) -> None:
    text = stack_copy.read_text()
    stack_copy.write_text(
        text.replace("kvCacheUsage: 0.8", "kvCacheUsage: 1.5").replace(
            "pollingInterval:", "pollingIntervall:"
        )
    )
    args = [str(stack_copy), *argv] if main is not simulator.main else [*argv, str(stack_copy)]
    with pytest.raises(SystemExit) as exit_:
        raise SystemExit(main(args))
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    head = err.splitlines()[0]
    assert head.startswith("python -m llm_platform.") and head.endswith(
        ": error: invalid config for stack 'team', 2 problems below (see --help)"
    ), head
    assert f"{stack_copy}:" in err and ".kvCacheUsage: 1.5 is not allowed" in err
    assert ".pollingIntervall: unknown key (did you mean 'pollingInterval'?)" in err
