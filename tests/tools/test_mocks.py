"""The mock harness runs a program as `pulumi up` does: on a stack of its own (the SDK records each
registration's call stack, a fifth of an evaluation's time when a test runner's frames sit below it), with the
stack's settings, and with the program's errors raised to its caller."""

from __future__ import annotations

import traceback

import pulumi
import pytest

from llm_platform.tools import mocks


def test_a_program_runs_on_its_own_stack_with_the_stacks_settings_and_raises_to_its_caller() -> None:
    _, loop = mocks.install("dev", {"llm-platform:environment": "dev"}, [])
    seen: dict[str, object] = {}

    def program() -> None:
        seen["frames"] = [frame.name for frame in traceback.extract_stack()]
        seen["stack"] = pulumi.get_stack()
        seen["environment"] = pulumi.Config().get("environment")

    def failing() -> None:
        raise ValueError("models[0].name: '' is empty")

    try:
        mocks.run(program)
        with pytest.raises(ValueError, match=r"models\[0\]\.name"):
            mocks.run(failing)
    finally:
        mocks.uninstall(loop)
    frames = seen["frames"]
    assert isinstance(frames, list)
    assert (
        "test_a_program_runs_on_its_own_stack_with_the_stacks_settings_and_raises_to_its_caller" not in frames
    )
    assert len(frames) < 40, frames
    assert (seen["stack"], seen["environment"]) == ("dev", "dev")
