"""controllers/flap.py: scale-direction reversals within a window."""

from __future__ import annotations

import numpy as np
import pytest

from llm_platform.simulator.controllers.flap import flap_count


def test_oscillating_at_the_cap_counts_each_reversal() -> None:
    # 10 -> 9 -> 10 every 5 minutes for an hour: every step after the first reverses within the window.
    desired = np.array(([10] * 5 + [9] * 5) * 6)
    assert flap_count(desired) == int(np.count_nonzero(np.diff(desired))) - 1


def test_a_ramp_up_and_down_is_not_a_flap() -> None:
    day = np.concatenate([np.arange(1, 11).repeat(30), np.full(120, 10), np.arange(10, 0, -1).repeat(30)])
    assert flap_count(day) == 0


def test_reversal_after_the_window_is_not_counted() -> None:
    desired = np.array([5] * 10 + [6] * 20 + [5] * 10)
    assert flap_count(desired, window=15) == 0
    assert flap_count(desired, window=20) == 1


def test_the_tuner_treats_a_flapping_candidate_as_infeasible() -> None:
    from llm_platform.simulator.search.tune import DayScore, Tuner

    tuner = Tuner.__new__(Tuner)  # feasibility needs only the limits, not the training days
    tuner.max_miss, tuner.max_flaps = 1.0, None
    calm = (10.0, 0.5, [DayScore("a", 10.0, 0.5, 8.0, flaps=0)])
    flapping = (9.0, 0.5, [DayScore("a", 9.0, 0.5, 8.0, flaps=12)])
    assert tuner.better(flapping, calm)  # no limit: the cheaper wins
    tuner.max_flaps = 2
    assert not tuner.feasible(flapping) and tuner.better(calm, flapping)


def _at_the_cap(load: float = 0.75, hours: float = 2.0):
    """The dev fixture's model (maxReplicas 2, queue 5 / KV 0.8) under a flat load at `load` x what its two
    replicas serve: one replica saturates, two do not, and neither the queue (zero below saturation) nor a
    KV fill of 0.8 (a replica saturates on max_num_seqs well below it) reads the load while two serve."""
    from llm_platform.simulator.search.stacks import stack_run
    from llm_platform.simulator.traffic.traffic import TokenMix, poisson_day
    from tests.conftest import fixture_stack

    probe = poisson_day(np.full(600, 1.0), TokenMix(), np.random.default_rng(0))
    first = stack_run(fixture_stack("dev"), None, probe)
    rate = load * first.max_replicas * first.setup.table.capacity_rps
    traffic = poisson_day(np.full(int(hours * 3600), rate), TokenMix(), np.random.default_rng(1))
    return stack_run(fixture_stack("dev"), None, traffic)


def test_the_rendered_saturation_hold_stops_a_pool_at_its_cap_from_flapping() -> None:
    """Without the saturation hold (the ScaledObject before it) the pool swings 2 -> 1 -> 2: after the
    down-stabilization window the KV trigger asks for one replica, which saturates, and the queue asks for
    two again. With the trigger the plan renders, the same day holds two: no flap, fewer misses, same cost."""
    from llm_platform.plan import promql
    from llm_platform.simulator.controllers.strategies import from_plan
    from llm_platform.simulator.day.engine import simulate

    run = _at_the_cap()
    scaling = run.plan.scaling
    assert promql.SATURATION_HOLD in {t.metric for t in scaling.triggers}
    before = frozenset(t.metric for t in scaling.triggers) - {promql.SATURATION_HOLD}
    setup = run.setup
    old = simulate(setup.traffic, setup.table, from_plan("old", scaling, before), setup.config)
    new = simulate(setup.traffic, setup.table, from_plan("new", scaling), setup.config)
    print(
        f"old: {old.flaps} flaps, {old.slo_violation_pct:.1f} % missed, ${old.gpu_cost_usd_per_day:.2f}/day; "
        f"new: {new.flaps} flaps, {new.slo_violation_pct:.1f} % missed, ${new.gpu_cost_usd_per_day:.2f}/day"
    )
    assert old.flaps > 0
    assert new.flaps == 0
    assert new.slo_violation_pct <= old.slo_violation_pct  # holding the cap serves the load
    assert new.gpu_cost_usd_per_day <= old.gpu_cost_usd_per_day * 1.05  # margin: 5 %


def test_the_hold_remembers_the_last_saturation_for_its_window() -> None:
    from llm_platform.plan.scaling import SaturationMemory
    from llm_platform.simulator.controllers.saturation import SaturationHold

    hold = SaturationHold(SaturationMemory(queue_per_replica=5, kv_per_replica=0.5, window_s=600, step_s=30))
    hold.observe(0.0, waiting=4.0, kv=0.0, served_rate=20.0, available=1, serving=1.0)  # 4 < 5 per replica
    assert hold.value(0.0, 20.0) == 0.0
    hold.observe(
        30.0, waiting=10.0, kv=0.0, served_rate=30.0, available=2, serving=2.0
    )  # saturated: 15 req/s each
    hold.observe(
        40.0, waiting=0.0, kv=0.0, served_rate=99.0, available=2, serving=2.0
    )  # between steps: not sampled
    assert hold.last == (30.0, 15.0)
    assert hold.value(300.0, 27.0) == 27.0 / 15.0  # 1.8 replicas' worth
    hold.observe(60.0, waiting=0.0, kv=0.0, served_rate=27.0, available=2, serving=2.0)  # unsaturated: kept
    assert hold.value(629.0, 27.0) == 27.0 / 15.0
    assert hold.value(630.0, 27.0) == 0.0  # older than the window


def test_the_hold_also_linearises_a_kv_target_near_the_knee() -> None:
    """The prod fixture's model (queue 2 / KV 0.04, the KV fill at 0.8x a replica's saturation rate) on the
    seed day's two busiest hours: one replica fewer fills the rest far more than the HPA's linear estimate, so
    the KV trigger walks the pool down and jumps it up again. The hold learns the per-replica rate at which the
    KV trigger asked to grow: fewer than half the flaps, no more misses, cost within 5 %."""
    from llm_platform.plan import promql
    from llm_platform.simulator.controllers.strategies import from_plan
    from llm_platform.simulator.day.engine import simulate
    from llm_platform.simulator.search.stacks import stack_run
    from llm_platform.simulator.traffic.traffic import TokenMix, poisson_day, seed_day
    from tests.conftest import fixture_stack

    rate = seed_day(0).per_second()[12 * 3600 : 14 * 3600].reshape(-1, 60).mean(axis=1).repeat(60)
    run = stack_run(
        fixture_stack("prod"), "mistral-7b", poisson_day(rate, TokenMix(), np.random.default_rng(1))
    )
    scaling, setup = run.plan.scaling, run.setup
    before = frozenset(t.metric for t in scaling.triggers) - {promql.SATURATION_HOLD}
    old = simulate(setup.traffic, setup.table, from_plan("old", scaling, before), setup.config)
    new = simulate(setup.traffic, setup.table, from_plan("new", scaling), setup.config)
    print(
        f"old: {old.flaps} flaps, {old.slo_violation_pct:.2f} % missed, ${old.gpu_cost_usd_per_day:.2f}/day; "
        f"new: {new.flaps} flaps, {new.slo_violation_pct:.2f} % missed, ${new.gpu_cost_usd_per_day:.2f}/day"
    )
    assert new.flaps * 2 < old.flaps
    assert new.slo_violation_pct <= old.slo_violation_pct
    assert new.gpu_cost_usd_per_day <= old.gpu_cost_usd_per_day * 1.05


@pytest.mark.slow  # two simulated days, about 20 s
def test_smoothed_gauges_stop_a_pool_below_its_cap_from_flapping_on_bursts() -> None:
    """The prod fixture's model (cap 10, queue 2 / KV 0.04 per replica) on the seed day. Read at one scrape,
    a few seconds' queue asks for the cap at once (scale-up has no stabilization window) and the
    down-stabilization window brings the pool back minutes later: 7 -> 10 -> 9, 3 -> 6 -> 5. Averaged over a
    minute (the rendered queries, controllers/gauges.py) a passing burst counts for its share of the minute:
    fewer than half the flaps, misses within half a point, cost within 5 %."""
    from dataclasses import replace

    from llm_platform.simulator.controllers.keda import PrometheusTrigger
    from llm_platform.simulator.controllers.strategies import from_plan
    from llm_platform.simulator.day.engine import simulate
    from llm_platform.simulator.search.stacks import stack_run
    from llm_platform.simulator.traffic.traffic import seed_day
    from tests.conftest import fixture_stack

    run = stack_run(fixture_stack("prod"), "mistral-7b", seed_day(0))
    setup, new = run.setup, from_plan("smoothed", run.plan.scaling)
    assert new.scaled_object is not None
    so = new.scaled_object
    instant = [replace(t, smoothing=None) if isinstance(t, PrometheusTrigger) else t for t in so.triggers]
    assert instant != list(so.triggers)  # the plan smooths some of them
    old = replace(new, scaled_object=replace(so, triggers=tuple(instant)))
    before = simulate(setup.traffic, setup.table, old, setup.config)
    after = simulate(setup.traffic, setup.table, new, setup.config)
    print(
        f"at one scrape: {before.flaps} flaps, {before.slo_violation_pct:.2f} % missed, "
        f"${before.gpu_cost_usd_per_day:.2f}/day; averaged: {after.flaps} flaps, "
        f"{after.slo_violation_pct:.2f} % missed, ${after.gpu_cost_usd_per_day:.2f}/day"
    )
    assert before.flaps >= 10
    assert after.flaps * 2 < before.flaps
    assert after.slo_violation_pct <= before.slo_violation_pct + 0.5
    assert after.gpu_cost_usd_per_day <= before.gpu_cost_usd_per_day * 1.05
