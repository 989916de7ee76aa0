"""Resolved plans of fixture stacks (tests/fixtures/stacks) and of configs built in a test (the specs render
from these)."""

from __future__ import annotations

from llm_platform.config.schema import StackConfig
from llm_platform.plan import ModelPlan, Plan, resolve
from tests.conftest import load_fixture


def stack_plan(stack: str | StackConfig) -> Plan:
    return resolve(load_fixture(stack) if isinstance(stack, str) else stack)


def model_plan(stack: str | StackConfig, name: str) -> ModelPlan:
    return stack_plan(stack).model(name)
