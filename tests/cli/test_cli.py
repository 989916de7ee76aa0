"""`llm-platform`: every command named as invoked, one set of exit statuses, STACK first everywhere."""

from __future__ import annotations

import pytest

from llm_platform import commandline
from llm_platform.cli import COMMANDS
from llm_platform.cli import main as llm_platform
from tests.conftest import fixture_stack


def test_help_lists_every_command_and_the_exit_statuses(capsys) -> None:
    assert llm_platform(["--help"]) == 0
    out = capsys.readouterr().out
    for name in COMMANDS:
        assert f"\n  {name} " in out
    assert commandline.EXIT_CODES in out


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_commands_help_is_its_own_under_its_new_name_with_the_exit_statuses(name: str, capsys) -> None:
    assert llm_platform([name, "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith(f"usage: llm-platform {name} ")
    assert " ".join(commandline.EXIT_CODES.split()) in out
    assert commandline.PROG_ALIASES == {}  # the python -m names are back for the next caller


def test_an_unknown_command_or_stack_is_one_line_and_exit_2(capsys) -> None:
    assert llm_platform(["nope"]) == 2
    assert capsys.readouterr().err.startswith("llm-platform: error: unknown command 'nope'; commands: plan, ")
    for argv in (
        ["render", "nosuchstack"],
        ["simulate", "nosuchstack"],
        ["tune", "nosuchstack"],
        ["plan", "nosuchstack"],
    ):
        assert llm_platform(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"llm-platform {argv[0]}: error: argument ") and "no stack 'nosuchstack'" in err
        assert err.count("\n") == 1


def test_the_stack_is_given_once(capsys) -> None:
    dev = str(fixture_stack("dev"))
    assert llm_platform(["simulate", dev, "--stack", dev]) == 2
    assert "give the stack once: STACK or --stack" in capsys.readouterr().err
    assert llm_platform(["simulate", dev, "--scenario", "seed-benchmark"]) == 2
    assert "--scenario: not allowed with STACK" in capsys.readouterr().err
    assert llm_platform(["simulate"]) == 2
    assert "one of STACK (or --stack) and --scenario is required" in capsys.readouterr().err


def test_check_is_exit_0_valid_1_with_every_problem(tmp_path, capsys) -> None:
    assert llm_platform(["check", str(fixture_stack("dev"))]) == 0
    assert "check dev (Pulumi.dev.yaml): valid; environment dev, models qwen-1-5b" in capsys.readouterr().out
    bad = tmp_path / "Pulumi.dev.yaml"
    bad.write_text(fixture_stack("dev").read_text().replace("maxModelLen: 8192", "maxModelLen: -1"))
    assert llm_platform(["check", str(bad), "--json"]) == 1
    out = capsys.readouterr().out
    assert (
        '"valid": false' in out
        and "Pulumi.dev.yaml:35: models[0] (qwen-1-5b).maxModelLen: -1 is not allowed" in out
    )


def test_the_simulator_takes_the_stack_first_as_the_other_tools_do(capsys) -> None:
    dev = str(fixture_stack("dev"))
    assert llm_platform(["simulate", dev, "--explain", "--json"]) == 0
    first = capsys.readouterr().out
    assert llm_platform(["simulate", "--stack", dev, "--explain", "--json"]) == 0
    assert capsys.readouterr().out == first and '"model"' in first
