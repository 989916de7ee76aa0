"""Every real stack file renders, with 0 upstream-schema problems, passes the policy pack and preflight."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_platform.config.loader import stack_names
from tests.stacks.real import problems


@pytest.mark.parametrize("stack", stack_names())
def test_real_stack_renders_validates_passes_policies_and_preflight(stack: str, tmp_path: Path) -> None:
    assert problems(stack, tmp_path / stack) == []
