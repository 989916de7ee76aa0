"""What the real stack files (Pulumi.<stack>.yaml, edited by teams) are held to, and nothing more:
the stack renders, the render has 0 problems against the upstream schemas (shared/tools/check_render.py),
and every policy of the pack passes over it. Behaviour is tested on fixture stacks (tests/conftest.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from config.loader import ROOT, Stack, stack_name
from policy.llm_platform_policies import ALL_POLICIES
from tests.policy.builders import render_violations
from tools import render

SHARED_CHECK = ROOT.parent / "shared" / "tools" / "check_render.py"


def problems(stack: Stack, out: Path) -> list[str]:
    """Render `stack` into `out` and return every schema problem and policy violation (empty: all good)."""
    result = render.evaluate(stack)
    render.write(result, out)
    found = []
    for policy in ALL_POLICIES:
        found += [
            f"policy {policy.name}: {v}"
            for v in render_violations(policy, result.resources, stack_name(stack))
        ]
    if SHARED_CHECK.exists():  # beside the repository in this workspace and in CI (.ci/run)
        check = subprocess.run(
            [sys.executable, str(SHARED_CHECK), str(out)], capture_output=True, text=True, check=False
        )
        if check.returncode != 0 or not check.stdout.strip().endswith(": 0 problems"):
            found.append(f"check_render:\n{check.stdout}{check.stderr}")
    return found
