"""What the real stack files (Pulumi.<stack>.yaml, edited by teams) are held to, and nothing more:
the stack renders, the render has 0 problems against the upstream schemas (shared/tools/check_render.py),
every policy of the pack passes over it, and preflight finds no blocker. Behaviour is tested on fixture
stacks (tests/conftest.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from llm_platform.config.loader import Stack, stack_name
from llm_platform.tools import render
from llm_platform.tools.preflight.findings import Finding, blockers
from llm_platform.tools.preflight.run import run as preflight
from llm_platform.tools.preflight.view import from_mocks
from policy.llm_platform_policies import ALL_POLICIES
from tests.policy.builders import render_violations
from tests.shared_check import SHARED_CHECK, check_render


@dataclass(frozen=True)
class Checked:
    """A stack's render checked: schema problems and policy violations, and preflight's blockers."""

    problems: list[str]
    blockers: list[Finding]

    def all(self) -> list[str]:
        return self.problems + [f"preflight: {f.line()}" for f in self.blockers]


def check(stack: Stack, out: Path) -> Checked:
    """Render `stack` into `out`, validate it, run the policies and preflight over the same evaluation."""
    result = render.evaluate(stack)
    render.write(result, out)
    found = []
    for policy in ALL_POLICIES:
        found += [
            f"policy {policy.name}: {v}"
            for v in render_violations(policy, result.resources, stack_name(stack))
        ]
    if SHARED_CHECK.exists():  # beside the repository in this workspace and in CI (.ci/run)
        schema = check_render(out)
        if schema.returncode != 0 or not schema.stdout.strip().endswith(": 0 problems"):
            found.append(f"check_render:\n{schema.stdout}{schema.stderr}")
    return Checked(found, blockers(preflight(from_mocks(stack, result.mocks))))


def problems(stack: Stack, out: Path) -> list[str]:
    """Every schema problem, policy violation and preflight blocker of `stack` (empty: all good)."""
    return check(stack, out).all()
