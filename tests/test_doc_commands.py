"""Every command the README and docs show runs, as a user would run it from the repository, and exits as the
docs say (tests/doc_runs.py says what runs for each). The tuner's and the benchmarks' runs are in
tests/test_doc_benchmarks.py, so that the two files run side by side.

A command added to the docs without a run in tests/doc_runs.py fails `test_every_documented_command_is_run`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import docs
from tests.doc_runs import RUNS, is_long, run_documented


def test_every_documented_command_is_run() -> None:
    assert sorted(set(docs.commands()) - set(RUNS)) == [], "add the command (and a small input) to RUNS"
    assert sorted(set(RUNS) - set(docs.commands())) == [], "RUNS holds a command the docs no longer show"


@pytest.mark.slow
@pytest.mark.parametrize("command", [c for c in RUNS if not is_long(c)])
def test_the_documented_command_runs(command: str, doc_run_folder: Path) -> None:
    run_documented(command, doc_run_folder)
