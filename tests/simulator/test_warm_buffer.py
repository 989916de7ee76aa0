"""A warm buffer for a model at zero (serving/warm_buffer.py): the pool's headroom placeholders in business hours,
which a waking replica preempts instead of waiting a new node."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from llm_platform.config.schema import Headroom, HeadroomWindow
from llm_platform.plan.headroom import headroom_plan
from llm_platform.simulator.search.stacks import stack_model
from llm_platform.simulator.serving.warm_buffer import WarmBuffer
from llm_platform.simulator.serving.zero import ZeroSpec, simulate_zero
from tests.conftest import fixture_stack

DAY = 86_400.0
MONDAY, SATURDAY = datetime(2026, 11, 30, tzinfo=UTC), datetime(2026, 12, 5, tzinfo=UTC)
SPEC = ZeroSpec(0, 300.0, 30.0, 5.0, 300.0, 360.0, 1.0)  # from-zero start 300 s, $1/h


def buffer(open_h: float, close_h: float, start_s: float = 90.0, refill_s: float = 120.0) -> WarmBuffer:
    minutes = [1 if open_h * 60 <= m < close_h * 60 else 0 for m in range(1441)]
    return WarmBuffer(tuple(minutes), start_s, refill_s, 2.0, 60.0)


def test_a_wake_in_the_window_starts_on_the_warm_node_and_outside_it_on_a_new_one():
    warm = buffer(8.5, 18)
    r = simulate_zero([3 * 3600.0, 10 * 3600.0], SPEC, DAY, warm)
    assert r.wakes == 2 and r.warm_wakes == 1
    cold = simulate_zero([3 * 3600.0, 10 * 3600.0], SPEC, DAY)
    assert max(r.held_waits) == max(cold.held_waits)  # 03:00 waits the from-zero start either way
    assert min(r.held_waits) == pytest.approx(min(cold.held_waits) - (SPEC.start_s - warm.start_s))


def test_a_placeholder_is_warm_only_its_refill_after_the_window_opens():
    warm = buffer(8.5, 18, refill_s=600)
    assert not warm.warm_at(8.5 * 3600 + 300)  # its node is still coming up
    assert warm.warm_at(8.5 * 3600 + 660)
    assert not warm.warm_at(18 * 3600 + 1)


def test_a_second_wake_before_the_refill_waits_a_new_node():
    warm = buffer(8.5, 18, refill_s=3000)
    cooldown = ZeroSpec(0, 60.0, 30.0, 5.0, 300.0, 360.0, 1.0)
    r = simulate_zero([10 * 3600.0, 10 * 3600.0 + 1200], cooldown, DAY, warm)
    assert r.wakes == 2 and r.warm_wakes == 1


def test_the_buffer_bills_its_nodes_while_held_and_consolidate_after_past_the_close():
    warm = buffer(8.5, 18)
    assert warm.cost_usd(DAY) == pytest.approx((9.5 * 3600 + warm.linger_s) / 3600 * warm.node_usd_per_hour)
    arrivals = np.sort(np.random.default_rng(0).uniform(9 * 3600, 17 * 3600, 500))
    with_buffer, without = simulate_zero(arrivals, SPEC, DAY, warm), simulate_zero(arrivals, SPEC, DAY)
    assert with_buffer.buffer_usd == pytest.approx(warm.cost_usd(DAY))
    # the same replica-seconds or fewer (it is Ready sooner), plus the buffer
    assert with_buffer.cost_usd <= without.cost_usd + with_buffer.buffer_usd + 1e-9
    assert with_buffer.wait_max < without.wait_max and with_buffer.lost == without.lost == 0


@pytest.mark.parametrize(("day", "held"), [(MONDAY, 570), (SATURDAY, 0)])
def test_from_the_plan_a_business_hours_window_is_the_pools_headroom_schedule(day, held):
    """The zero fixture's chat-7b with one warm GPU Mon-Fri 08:30-18:00: the plan's warm start and refill."""
    _, _, plan = stack_model(fixture_stack("zero"), "chat-7b")
    window = HeadroomWindow(start="30 8 * * 1-5", end="0 18 * * 1-5", timezone="UTC", gpus=1)
    pool = plan.pool.model_copy(update={"headroom": Headroom(gpus=0, schedule=[window])})
    headroom = headroom_plan(pool, [plan])
    assert headroom is not None
    warm = WarmBuffer.from_plan(headroom, plan.name, day, int(DAY), plan.consolidate_after_s)
    assert sum(warm.placeholders) == held
    assert warm.start_s == headroom.warm_start("chat-7b") < ZeroSpec.from_plan(plan).start_s
    assert warm.refill_s == headroom.refill_seconds
