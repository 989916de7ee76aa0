"""The documented tuner and benchmark commands run (on the small inputs tests/doc_runs.py gives them) and exit
as the docs say; the other documented commands are in tests/test_doc_commands.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doc_runs import RUNS, is_long, run_documented


@pytest.mark.slow
@pytest.mark.parametrize("command", [c for c in RUNS if is_long(c)])
def test_the_documented_long_command_runs(command: str, doc_run_folder: Path) -> None:
    run_documented(command, doc_run_folder)
