"""The hold of a model at zero has one definition (plan/zero.py): the picker's TTL and the simulator read it."""

from __future__ import annotations

from llm_platform.plan.zero import from_zero_hold_s
from llm_platform.simulator.search.stacks import stack_model
from llm_platform.simulator.serving import zero as sim_zero
from llm_platform.simulator.serving.zero import ZeroSpec
from tests.conftest import fixture_stack


def test_a_model_at_zero_is_held_for_the_plans_from_zero_hold() -> None:
    _, _, plan = stack_model(fixture_stack("zero"), "chat-7b")
    assert plan.scaling.min_replicas == 0
    hold = from_zero_hold_s(plan.cold_start, plan.scaling)
    assert plan.flow_control is not None
    assert plan.flow_control.ttl_seconds == hold == plan.flow_control.from_zero_hold_s
    assert plan.flow_control.ttl == f"{int(hold)}s"
    assert sim_zero.from_zero_hold_s is from_zero_hold_s  # the simulator imports the plan's definition
    assert ZeroSpec.from_plan(plan).hold_s == hold


def test_a_model_not_at_zero_keeps_its_ttft_ttl() -> None:
    _, _, plan = stack_model(fixture_stack("zero"), "code-1b")
    assert plan.flow_control is not None
    assert plan.flow_control.from_zero_hold_s is None
    assert plan.flow_control.ttl_seconds == plan.model.slo.ttft_seconds
