"""Scale to zero (serving/zero.py, search/zero_tune.py, and the day loop's wake): property-style checks on short
generated days."""

from __future__ import annotations

import numpy as np
import pytest

from llm_platform.plan.zero import (
    HOLD_CAP_S,
    RETRY_AFTER_S,
    RETRY_ATTEMPTS,
    from_zero_hold_s,
    from_zero_wake_s,
)
from llm_platform.simulator.day.engine import simulate
from llm_platform.simulator.search.stacks import stack_model, stack_run
from llm_platform.simulator.search.zero_tune import allows_zero, tune_zero
from llm_platform.simulator.serving.zero import ZeroSpec, simulate_zero
from llm_platform.simulator.traffic.office import OFFICE_KINDS, office_day
from llm_platform.simulator.traffic.traffic import TokenMix, poisson_day
from tests.conftest import fixture_stack

DAY = 6 * 3600.0  # short days: fast


def spec(
    hold: float = 400.0,
    start: float = 300.0,
    min_replicas: int = 0,
    cooldown: float = 300.0,
    attempts: int = RETRY_ATTEMPTS,
) -> ZeroSpec:
    return ZeroSpec(min_replicas, cooldown, 30.0, 5.0, start, hold, 3.6, RETRY_AFTER_S, attempts)


def days(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(5):
        bursts = [rng.uniform(a, a + 1800, rng.integers(1, 40)) for a in rng.uniform(0, DAY - 1800, 3)]
        out.append(np.sort(np.concatenate([*bursts, [rng.uniform(0, DAY)]])))
    return out


@pytest.mark.parametrize("seed", range(5))
def test_no_request_lost_when_the_hold_covers_the_wake(seed: int) -> None:
    # the wake: one scrape + at most one polling pass + the start
    s = spec(hold=5 + 30 + 300, start=300)
    for d in days(seed):
        r = simulate_zero(d, s, DAY)
        assert r.lost == 0
        assert r.held >= 1  # the day starts at zero: its first request is held
        assert r.wait_max <= s.hold_s
        assert r.wakes >= 1


@pytest.mark.parametrize("seed", range(5))
def test_a_hold_shorter_than_the_start_gives_503s_to_a_client_that_does_not_retry(seed: int) -> None:
    s = spec(hold=200, start=300, attempts=1)
    for d in days(seed):
        r = simulate_zero(d, s, DAY)
        assert r.lost >= r.wakes  # every wake's first request waits > start > hold
        assert r.lost + len(r.held_waits) == r.held
        assert r.retried == 0


@pytest.mark.parametrize("seed", range(5))
def test_a_retrying_client_is_served_on_a_retry_when_the_wake_outlasts_the_hold(seed: int) -> None:
    """Attempt k is sent at k x (hold + Retry-After) and held again: a wake within the client's patience
    loses nothing; the requests 503'd first are `retried`, their wait counted from the first send."""
    s = spec(hold=270, start=335)  # the wake (scrape 5 + polling <= 30 + 335) outlasts the hold
    assert s.patience_s == 3 * 270 + 2 * RETRY_AFTER_S
    for d in days(seed):
        r = simulate_zero(d, s, DAY)
        once = simulate_zero(d, spec(hold=270, start=335, attempts=1), DAY)
        assert r.lost == 0 and once.lost >= r.wakes  # without retries each wake's first request is lost
        assert r.retried >= 1 and r.retried <= once.lost
        assert len(r.held_waits) == r.held and set(r.retried_waits) <= set(r.held_waits)
        assert all(270 < w <= 270 + RETRY_AFTER_S + 270 for w in r.retried_waits)
        assert r.wait_max == r.retried_wait_max > s.hold_s


def test_a_retry_is_served_at_its_send_when_ready_falls_in_the_back_off() -> None:
    s = spec(hold=100, start=0, attempts=3)  # hold 100, back-off 30: attempts at 0, 130, 260
    assert s.served_after(50) == (50, 0)
    assert s.served_after(100) == (100, 0)
    assert s.served_after(110) == (130, 1)  # Ready during the back-off: served when the retry arrives
    assert s.served_after(230) == (230, 1)
    assert s.served_after(250) == (260, 2)
    assert s.served_after(360) == (360, 2)
    assert s.served_after(361) is None  # 503 on the last attempt: lost
    r = simulate_zero([0.0], spec(hold=100, start=400, attempts=3), DAY)  # Ready at 30 + 400 = 430 s
    assert (r.held, r.lost, r.retried) == (1, 1, 0)
    r = simulate_zero([0.0], spec(hold=200, start=300, attempts=3), DAY)  # Ready at 330: attempt 1 (230-430)
    assert (r.held, r.lost, r.retried, r.retried_waits) == (1, 0, 1, (330.0,))


def test_the_idle_timer_is_kept_by_arrivals_and_runs_out_after_cooldown() -> None:
    s = spec(cooldown=600)
    arrivals = [100.0, 1000.0, 1500.0]  # gaps under 600 s after Ready: one wake
    assert simulate_zero(arrivals, s, DAY).wakes == 1
    arrivals = [100.0, 5000.0]  # a gap over cooldown + start: two wakes
    r = simulate_zero(arrivals, s, DAY)
    assert r.wakes == 2
    # up from activation to the first pass strictly after last + scrape + cooldown
    assert 2 * (300 + 600) <= r.up_seconds <= 2 * (300 + 600 + 30 + 30 + 5)


def test_cost_drops_with_idle_nights_and_a_floor_never_holds() -> None:
    busy = np.linspace(0, 86_400, 2000)  # never idle for a cooldown: zero saves nothing
    night = office_day("weekday-0300", 0.05, 0)
    s = spec()
    assert (
        simulate_zero(busy, s, 86_400).cost_usd
        > 0.95 * simulate_zero(busy, spec(min_replicas=1), 86_400).cost_usd
    )
    own = simulate_zero(night, spec(min_replicas=1), 86_400)
    zero = simulate_zero(night, s, 86_400)
    assert zero.cost_usd <= 0.6 * own.cost_usd
    assert own.held == own.lost == 0
    assert simulate_zero([], s, DAY).cost_usd == 0.0


def test_office_days() -> None:
    assert len(office_day("weekend", 0.05, 0)) == 0
    assert list(office_day("weekend-0300", 0.05, 0)) == [3 * 3600.0]
    d = office_day("weekday", 0.05, 1)
    assert d.min() >= 9 * 3600 and d.max() <= 18 * 3600
    with pytest.raises(ValueError, match="allowed"):
        office_day("holiday")
    assert set(OFFICE_KINDS) >= {"weekday", "weekend-0300"}


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_the_tuner_searches_zero_only_where_the_stack_allows_it(stack: str) -> None:
    cfg, _, plan = stack_model(fixture_stack(stack), None)
    hold = from_zero_hold_s(plan.cold_start, plan.scaling)
    wake = from_zero_wake_s(plan.cold_start, plan.scaling)
    assert hold >= wake or hold == HOLD_CAP_S  # the hold covers the wake, up to the cap
    assert ZeroSpec.from_plan(plan).patience_s >= wake  # a retrying client is served either way
    office = [office_day(k, 0.05, i) for i, k in enumerate(OFFICE_KINDS)]
    best, candidates = tune_zero(cfg, plan, office, 86_400)
    assert best.lost == 0
    if allows_zero(cfg, plan):
        assert best.min_replicas == 0
        assert best.cost_usd <= 0.6 * candidates[0].cost_usd  # >= 40% cheaper than the stack's own floor
        assert best.wait_max <= ZeroSpec.from_plan(plan).patience_s
        assert best.wait_max <= hold or hold == HOLD_CAP_S  # over the hold only on a retry past the cap
    else:
        assert [c.min_replicas for c in candidates] == [plan.scaling.min_replicas]


@pytest.mark.parametrize("seed", [5, 6])
def test_a_model_at_zero_wakes_in_the_day_simulation_and_misses_only_its_cold_starts(seed: int) -> None:
    """The zero fixture's chat-7b (minReplicas 0, cooldownPeriod 1800 s) on two bursts an idle hour apart. Its
    deployed ScaledObject wakes on the wake trigger, which reads the endpoint pickers' series while no vLLM pod
    exists (day/engine.py scrapes them at zero replicas too): it serves, returns to zero in the idle hour and
    wakes again. Its misses are the requests that arrive before the woken replica is Ready, as many as the
    0 <-> 1 model (serving/zero.py) holds on the same arrivals, and it costs less than one replica all day."""
    rate = np.zeros(3 * 3600)
    rate[600:3000] = 2.0  # 40 min at a fraction of one replica's capacity
    rate[6600:7800] = 2.0  # 60 idle minutes later: more than the cooldown
    traffic = poisson_day(rate, TokenMix(), np.random.default_rng(seed), "two-bursts")
    run = stack_run(fixture_stack("zero"), "chat-7b", traffic)
    assert run.plan.scaling.min_replicas == 0
    rows = {s.name: simulate(traffic, run.setup.table, s, run.setup.config) for s in run.strategies}
    assert all(r.peak_replicas >= 1 for r in rows.values()), {n: r.peak_replicas for n, r in rows.items()}
    day = rows["stack-config"]
    ready = day.minute_ready
    zero = simulate_zero(traffic.arrivals, ZeroSpec.from_plan(run.plan), traffic.duration)
    missed = round(day.slo_violation_pct * day.requests / 100)
    cost = day.gpu_cost_usd_per_day * day.days
    floor = rows["hpa-gpu-memory"].gpu_cost_usd_per_day * day.days  # one replica all day
    print(
        f"seed {seed}: {day.requests} requests, {missed} missed ({day.slo_violation_pct:.2f} %), "
        f"{zero.held} held by serving/zero.py over {zero.wakes} wakes, ${cost:.2f} "
        f"(one replica all day ${floor:.2f}, zero's up time ${zero.cost_usd:.2f})"
    )
    woke = [int(np.argmax(ready[a:] > 0)) + a for a in (10, 110)]  # first minute Ready in each burst
    wake_minutes = int(np.ceil(zero.wait_max / 60)) + 1
    assert all(a < w <= a + wake_minutes for a, w in zip((10, 110), woke, strict=True)), woke
    assert (ready[woke[0] + 1 : 50] == 1).all() and (ready[woke[1] + 1 : 130] == 1).all()
    assert (ready[90:110] == 0).all(), "back to zero in the idle hour"
    assert zero.wakes == 2 and zero.lost == 0
    assert abs(missed - zero.held) <= 0.02 * zero.held, (missed, zero.held)
    served = np.r_[woke[0] + 1 : 50, woke[1] + 1 : 130]
    assert day.minute_violation_pct[served].mean() < 1, "once Ready, one replica meets the SLO"
    assert zero.cost_usd <= cost < floor
