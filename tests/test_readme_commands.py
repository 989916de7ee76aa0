"""The README's and docs' commands stay in step with the command-line tools: every `uv run python -m <tool> ...`
they show (code blocks and inline; a synopsis' `[--optional]` parts included) parses with that tool's own
argparse, every script they run exists, and each benchmark script's arguments parse too. (Each also runs, on
small inputs where the doc's own run is long: tests/test_doc_commands.py.)"""

from __future__ import annotations

import argparse
import runpy
import shlex
import sys

import pytest

from llm_platform.config.loader import ROOT
from tests import docs

COMMANDS = docs.commands()


class _Parsed(Exception):
    """Raised once the tool's parser accepted the arguments, so nothing runs."""


def test_the_docs_show_the_tools() -> None:
    modules = {c.split()[1] for c in COMMANDS if c.startswith("-m ")}
    assert {
        "llm_platform.tools.render",
        "llm_platform.tools.security_scan",
        "llm_platform.simulator",
    } <= modules


@pytest.mark.filterwarnings("ignore:.*found in sys.modules:RuntimeWarning")
@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_parses(command: str, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """A module or a benchmark script is run up to its argparse (a bad flag exits 2 there); the Pulumi
    program (`__main__.py`) only has to exist."""
    words = shlex.split(docs.without_brackets(command))
    if words[0] != "-m":
        if words[0].startswith("../shared/") and not (ROOT / words[0]).is_file():
            pytest.skip(f"{words[0]} is not beside the repository (it is in .ci/run)")
        assert (ROOT / words[0]).is_file(), f"the docs run {words[0]}, which does not exist"
        if not words[0].startswith("benchmarks/"):
            return
    target, argv = (words[1], words[2:]) if words[0] == "-m" else (words[0], words[1:])
    parse = argparse.ArgumentParser.parse_args

    def parse_then_stop(self, args=None, namespace=None):
        parse(self, args, namespace)  # a bad argument exits 2 here, as on the command line
        raise _Parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_then_stop)
    monkeypatch.setattr(sys, "argv", [target, *argv])
    monkeypatch.chdir(ROOT)
    try:
        if words[0] == "-m":
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(str(ROOT / target), run_name="__main__")
    except _Parsed:
        return
    except SystemExit as exc:
        err = capsys.readouterr().err.strip()
        pytest.fail(f"`uv run python {command}` does not parse: {err} ({exc})")
    pytest.fail(f"`uv run python {command}` ran without parsing its arguments with argparse")
