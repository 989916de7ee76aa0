"""The command-line tools answer like each other: a bad argument or an unknown stack is one line and exit 2,
and a render older than its stack file or the program is refused rather than scanned."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from config.loader import stack_names
from tests.conftest import fixture_stack
from tools import cli, render, security_scan


def _one_line_exit_2(capsys, main, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


@pytest.mark.parametrize("main", [render.main, security_scan.main], ids=["render", "security_scan"])
def test_an_unknown_stack_lists_the_stacks(capsys, main) -> None:
    err = _one_line_exit_2(
        capsys, main, ["nosuchstack", "--out", "x"] if main is render.main else ["nosuchstack"]
    )
    assert "no stack 'nosuchstack'" in err and f"stacks: {', '.join(stack_names())}" in err


@pytest.mark.parametrize(
    ("main", "argv"),
    [
        (render.main, ["dev"]),
        (render.main, ["dev", "--out"]),
        (security_scan.main, []),
        (security_scan.main, ["dev", "--bogus"]),
    ],
)
def test_bad_arguments_are_one_line(capsys, main, argv: list[str]) -> None:
    assert "(see --help)" in _one_line_exit_2(capsys, main, argv)


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
    assert cli.stale_render(stack_copy, manifests) is None
    os.utime(stack_copy, (later + 1, later + 1))  # the stack file edited after the render
    problem = cli.stale_render(stack_copy, manifests)
    assert (
        problem is not None and "is older than Pulumi.team.yaml" in problem and "tools.render team" in problem
    )


def test_a_render_older_than_the_program_is_stale(stack_copy: Path, tmp_path: Path) -> None:
    manifests = tmp_path / "manifests.yaml"
    manifests.write_text("")
    os.utime(stack_copy, (0, 0))
    os.utime(manifests, (1, 1))  # newer than the stack file, older than every program file
    problem = cli.stale_render(stack_copy, manifests)
    assert problem is not None and "older than the program" in problem


def test_the_security_scan_refuses_a_stale_render(stack_copy: Path, tmp_path: Path, capsys) -> None:
    build = tmp_path / "build"
    (build / "team").mkdir(parents=True)
    (build / "team" / "manifests.yaml").write_text("")
    os.utime(build / "team" / "manifests.yaml", (1, 1))
    err = _one_line_exit_2(capsys, security_scan.main, [str(stack_copy), "--build", str(build)])
    assert "team:" in err and "render it again" in err and "--render" in err
