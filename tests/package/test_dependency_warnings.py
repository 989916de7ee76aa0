"""A user's own test run: the cloud SDKs' DeprecationWarnings about resources the package never uses
(pulumi-aws's s3 `*V2` and ec2 `EncryptionControl`, pulumi-eks's `NodeGroup`, 26 in all) do not reach it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from llm_platform.components import AWS_MODULES

SOURCE = Path(__file__).resolve().parents[2] / "src" / "llm_platform"

USER_TEST = """
from llm_platform import LlmPlatform
from llm_platform.testing import evaluate, example_values, test_args


def test_my_platform_serves_one_model():
    recorded = evaluate(lambda: LlmPlatform("llm-dev", test_args(example_values())))
    assert len(recorded.by_type("kubernetes:apps/v1:Deployment")) == 1
"""


def test_a_users_pytest_run_shows_no_warning_from_the_dependencies(tmp_path: Path) -> None:
    """pytest as a user runs it: outside this repository (none of its filterwarnings), DeprecationWarnings
    shown; the run imports the package, builds a platform under the mocks and reports no warning."""
    (tmp_path / "test_mine.py").write_text(USER_TEST)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONWARNINGS"))}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "test_mine.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    summary = run.stdout.strip().splitlines()[-1]
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Warning" not in run.stdout and "warning" not in summary, run.stdout


def test_every_aws_module_the_components_use_is_loaded_with_its_warnings_ignored() -> None:
    """A module left out would be loaded on first use, in the user's test, and warn there."""
    used = {
        m
        for path in SOURCE.rglob("*.py")
        for m in re.findall(r"\baws\.([a-z0-9_]+)\.[A-Z]", path.read_text())
    }
    assert used <= set(AWS_MODULES), sorted(used - set(AWS_MODULES))
