"""Streams cut by scale-down and rollouts (day/engine.py streams_cut): a stream is cut when its pod is deleted
and it would still be generating past the pods' grace period (plan/drain.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from llm_platform.plan.drain import drain_plan
from llm_platform.simulator.day.engine import simulate, streams_cut
from llm_platform.simulator.search.scenarios import seed_setup, seed_strategies


def test_a_deletion_cuts_its_share_of_the_streams_longer_than_the_grace() -> None:
    start = np.array([0.0, 5.0, 9.0, 20.0])
    end = np.array([12.0, 100.0, 300.0, 400.0])
    # at t=10, 1 of 2 Ready pods deleted: streams 1 and 2 run past 10 + 60; stream 0 ends within the grace,
    # stream 3 has not started
    assert streams_cut((start, end), [(10.0, 1, 2)], grace=60.0) == 1
    assert streams_cut((start, end), [(10.0, 2, 2)], grace=60.0) == 2
    assert streams_cut((start, end), [(10.0, 2, 2)], grace=1000.0) == 0


@pytest.fixture(scope="module")
def seed_day():
    setup = seed_setup(0)
    keda = next(s for s in seed_strategies(setup) if s.kind == "keda")
    return setup, keda


def test_the_seed_day_cuts_no_stream(seed_day) -> None:
    setup, keda = seed_day
    grace = drain_plan(setup.table.model).termination_grace_seconds
    assert setup.config.drain_grace_seconds == grace
    result = simulate(setup.traffic, setup.table, keda, setup.config)
    assert result.streams_cut == 0
    assert result.row()["streams_cut"] == 0


def test_without_a_grace_period_the_same_day_cuts_streams(seed_day) -> None:
    """The count is not vacuous: the seed day's scale-downs and a rollout at noon delete pods mid-stream."""
    setup, keda = seed_day
    no_grace = dataclasses.replace(setup.config, drain_grace_seconds=0.0)
    scale_down = simulate(setup.traffic, setup.table, keda, no_grace).streams_cut
    rollout = simulate(
        setup.traffic, setup.table, keda, dataclasses.replace(no_grace, rollouts=(43_200.0,))
    ).streams_cut
    assert scale_down is not None and scale_down > 0
    assert rollout is not None and rollout > scale_down
