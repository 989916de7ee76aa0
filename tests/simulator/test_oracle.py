"""The oracle bound: never above what a real config pays at the same miss rate, and tight on flat traffic."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from llm_platform.simulator.search import oracle


def curve(mu: float = 10.0):
    lam = np.linspace(0, mu, 11)
    return lam, np.where(lam < 0.8 * mu, 0.0, (lam - 0.8 * mu) / (0.2 * mu))


def test_flat_load_needs_the_replicas_that_keep_misses_in_budget():
    lam, frac = curve()
    minutes = np.full(60, 7.5 * 60 * 4)  # 30 req/s: 4 replicas at 7.5 each miss nothing
    assert oracle.replicas_needed(minutes, lam, frac, 0).tolist() == [4] * 60
    cheaper = oracle.replicas_needed(minutes, lam, frac, 0.5 * minutes.sum())
    assert cheaper.sum() < 4 * 60


def test_whole_nodes_launch_a_cold_start_ahead_and_bridge_short_gaps():
    nodes = np.array([0] * 10 + [1] * 10 + [0] * 2 + [1] * 10 + [0] * 30)
    # one node from minute 10 to 32 (the 2-minute gap is shorter than the 300 s lead), plus the lead
    assert oracle.whole_node_seconds(nodes, 300) == pytest.approx(22 * 60 + 300)
    assert oracle.whole_node_seconds(nodes, 60) == pytest.approx(20 * 60 + 2 * 60)


def test_bound_reports_both_variants_per_day():
    lam, frac = curve()
    minutes = np.concatenate([np.full(720, 600.0), np.full(720, 6000.0)])
    b = oracle.bound(minutes, lam, frac, 0.0, 1.212, 1, 400, 1.0)
    assert 0 < b["per_second_usd_per_day"] <= b["whole_nodes_usd_per_day"]
    assert b["peak_replicas"] == 13  # 100 req/s at <= 8 req/s per replica


def test_the_oracle_holds_the_same_reservations_and_buys_only_beyond_them():
    """13 replicas at the peak (12 h), 2 off-peak: with 2 reserved nodes prepaid all day the oracle pays the
    prepaid part and buys only the 11 beyond the reservations at the peak; once the block expires it buys all."""
    lam, frac = curve()
    minutes = np.concatenate([np.full(720, 600.0), np.full(720, 6000.0)])
    plain = oracle.bound(minutes, lam, frac, 0.0, 1.212, 1, 400, 1.0)
    prepaid = 2 * 10.0 * 24
    held = oracle.bound(minutes, lam, frac, 0.0, 1.212, 1, 400, 1.0, np.full(1440, 2), prepaid)
    peak_only = 11 * (720 * 60 + 400) * 1.212 / 3600  # 11 nodes launched one lead ahead of the peak half
    assert held["whole_nodes_usd_per_day"] == pytest.approx(prepaid + peak_only)
    assert held["whole_nodes_usd_per_day"] - prepaid < plain["whole_nodes_usd_per_day"]
    expired = oracle.bound(minutes, lam, frac, 0.0, 1.212, 1, 400, 1.0, np.zeros(1440, dtype=np.int64), 0.0)
    assert expired == plain


def test_the_oracle_never_runs_fewer_replicas_than_the_stack_may_deploy():
    """A night with no requests still holds minReplicas' floor (1 anywhere, 2 in prod): a bound below what the
    stack accepts is not a config anyone could deploy, and a miss budget never cuts below it either."""
    lam, frac = curve()
    minutes = np.concatenate([np.zeros(600), np.full(840, 6000.0)])
    assert oracle.replicas_needed(minutes, lam, frac, 0).min() == 0  # no floor: the old, undeployable bound
    for floor in (1, 2):
        need = oracle.replicas_needed(minutes, lam, frac, 0, floor)
        assert need[:600].tolist() == [floor] * 600 and need[600:].min() == 13
        generous = oracle.replicas_needed(minutes, lam, frac, 0.5 * minutes.sum(), floor)
        assert generous.min() == floor
    low = oracle.bound(minutes, lam, frac, 0.0, 1.212, 1, 400, 1.0, floor=1)["whole_nodes_usd_per_day"]
    prod = oracle.bound(minutes, lam, frac, 0.0, 1.212, 1, 400, 1.0, floor=2)["whole_nodes_usd_per_day"]
    assert prod - low == pytest.approx(600 * 60 * 1.212 / 3600, rel=0.01)  # one more replica all night


def test_a_stack_run_bounds_its_oracle_by_the_environment_floor():
    from llm_platform.config.schema import PROD_MIN_REPLICAS
    from llm_platform.simulator.search.scenarios import oracle_for
    from llm_platform.simulator.search.stacks import stack_run
    from llm_platform.simulator.traffic.traffic import seed_day
    from tests.conftest import fixture_stack

    prod = stack_run(fixture_stack("prod"), None, seed_day(0))
    assert prod.setup.config.replica_floor == PROD_MIN_REPLICAS
    assert stack_run(fixture_stack("staging"), None, seed_day(0)).setup.config.replica_floor == 1
    one = dataclasses.replace(prod.setup, config=dataclasses.replace(prod.setup.config, replica_floor=1))
    assert (
        oracle_for(prod.setup, 2.0)["whole_nodes_usd_per_day"]
        > oracle_for(one, 2.0)["whole_nodes_usd_per_day"]
    )


def test_the_oracle_of_a_model_that_may_scale_to_zero_can_plan_zero(capsys):
    """The zero fixture's chat-7b may run minReplicas 0 (a staging stack behind the gateway), so the bound may
    too: on the held-out quiet day (tests/simulator/quiet_day.py) its perfect-foresight plan sleeps between the
    spans and wakes a cold start ahead of each, below the stack's own minReplicas-0 config at its miss rate,
    and even at 0 % misses far below one replica all day (before: floor 1, ~$24 whatever the miss rate). Where
    the stack refuses zero the floor stays (prod without the opt-in, a stack without the gateway)."""
    from llm_platform.config.schema import Environment, replica_floor
    from llm_platform.simulator.day.engine import simulate
    from llm_platform.simulator.search.scenarios import oracle_for
    from llm_platform.simulator.search.stacks import stack_run
    from tests.conftest import fixture_stack
    from tests.simulator.quiet_day import quiet_day

    traffic = quiet_day(1)
    run = stack_run(fixture_stack("zero"), "chat-7b", traffic)
    assert run.setup.config.replica_floor == 0
    own = next(s for s in run.strategies if s.name == "stack-config")
    day = simulate(traffic, run.setup.table, own, run.setup.config)
    one_all_day = 24 * run.setup.config.capacity.node_price_per_hour
    at_own = oracle_for(run.setup, day.slo_violation_pct)["whole_nodes_usd_per_day"]
    perfect = oracle_for(run.setup, 0.0)["whole_nodes_usd_per_day"]
    print(
        f"quiet day: minReplicas 0 config ${day.gpu_cost_usd_per_day:.2f} at {day.slo_violation_pct:.1f} % missed; "
        f"oracle ${at_own:.2f} there, ${perfect:.2f} at 0 %; one replica all day ${one_all_day:.2f}"
    )
    assert at_own <= perfect < day.gpu_cost_usd_per_day < 0.5 * one_all_day
    prod = stack_run(fixture_stack("prod"), None, traffic)
    assert prod.setup.config.replica_floor == replica_floor(Environment.PROD) == 2


@pytest.mark.parametrize("name", ["dev", "staging", "prod", "gateway", "zero"])
def test_the_oracle_floor_is_zero_exactly_where_the_stack_accepts_minreplicas_0(name: str):
    """`scale_to_zero_allowed`, which sets the oracle's floor, agrees with the stack's own rule: each model of
    each fixture set to minReplicas 0 validates if and only if it says so."""
    from pydantic import ValidationError

    from llm_platform.config.schema import StackConfig, replica_floor, scale_to_zero_allowed
    from tests.conftest import load_fixture

    config = load_fixture(name)
    for i, model in enumerate(config.models):
        data = config.model_dump(by_alias=True, exclude_unset=True)
        data["models"][i].setdefault("autoscaling", {})["minReplicas"] = 0
        refusal = ""
        try:
            StackConfig.model_validate(data)
        except ValidationError as exc:
            refusal = str(exc)
        accepted = not refusal
        assert accepted or "minReplicas" in refusal, refusal
        allowed = scale_to_zero_allowed(config, model.autoscaling)
        assert accepted == allowed, (name, model.name)
        assert (replica_floor(config.environment, allowed) == 0) == allowed


def test_the_reactive_bound_pays_for_not_knowing_and_never_beats_instant_reaction():
    """A 10-minute burst to 10x: reacting instantly costs about what the load needs; each minute of start lag
    must be covered by a lower per-replica target or a standing buffer (misses within budget), so the bound
    only grows with the lag, and stays above the perfect-foresight per-second oracle."""
    lam, frac = curve()
    bins = np.full(6 * 360, 40.0)  # 4 req/s in 10-s bins over 6 hours
    bins[720:780] = 400.0  # 40 req/s for 10 minutes
    costs = [
        oracle.reactive_bound(bins, 10, lam, frac, 1.0, lag, 1.0, 1, 0.25, floor=1)["usd_per_day"]
        for lag in (0, 120, 300)
    ]
    assert costs[0] <= costs[1] <= costs[2] and costs[2] > 1.2 * costs[0]
    minutes = bins.reshape(-1, 6).sum(axis=1)
    foresight = oracle.bound(minutes, lam, frac, 1.0, 1.0, 1, 0, 0.25, floor=1)["per_second_usd_per_day"]
    assert foresight <= costs[0] * 1.05
    late = oracle.reactive_bound(bins, 10, lam, frac, 1.0, 300, 1.0, 1, 0.25, floor=1)
    assert late["buffer"] > 0 or late["rho"] < 0.8 * lam[-1], "the burst is covered before it is seen"
    none = oracle.reactive_bound(bins, 10, lam, frac, 0.0, 300, 1.0, 1, 0.25, floor=1, buffers=0)
    assert none["usd_per_day"] > late["usd_per_day"], "no misses at all, no buffer: a low target all day"


def bursty_bins() -> np.ndarray:
    """12 hours of 10-s bins at 6 req/s with eight 10-minute bursts of +20-50 req/s."""
    rng = np.random.default_rng(5)
    bins = np.full(12 * 360, 60.0)
    for start in rng.integers(0, 12 * 360 - 90, 8):
        bins[start : start + 60] += rng.uniform(200, 500)
    return bins


def test_a_finer_grid_of_targets_only_lowers_the_reactive_bound():
    """The bound is a minimum over per-replica targets: 60 steps hold every target of 20 steps, so the
    finer grid is never dearer (a coarser one overstates what control could reach)."""
    lam, frac = curve()
    bins = bursty_bins()
    coarse, fine = (
        oracle.reactive_bound(bins, 10, lam, frac, 2.5, 210, 1.0, 1, 0.5, floor=2, targets=n)["usd_per_day"]
        for n in (20, 60)
    )
    assert fine <= coarse


def test_a_shorter_sizing_window_sees_a_burst_sooner_and_lowers_the_bound():
    """The bound searches the window its load is averaged over: on sudden bursts a window shorter than a
    minute sizes the pool for them sooner, so searching windows is cheaper than the minute alone (and never
    dearer: the minute is one of them)."""
    lam, frac = curve()
    bins = bursty_bins()
    minute, searched = (
        oracle.reactive_bound(bins, 10, lam, frac, 2.5, 210, 1.0, 1, 0.5, floor=2, windows_seconds=w)
        for w in ((60,), (10, 20, 30, 60, 120))
    )
    assert searched["usd_per_day"] < minute["usd_per_day"]
    assert searched["window"] < 60


def _window(kind: str, seed: int, hours: tuple[int, int]):
    """One generated day's hours as Poisson traffic on the seed setup (short: the property needs no full day)."""
    from llm_platform.simulator.search.scenarios import seed_setup
    from llm_platform.simulator.traffic import family
    from llm_platform.simulator.traffic.traffic import TokenMix, rate_traffic

    rate = family.day(kind, seed)[hours[0] * 60 : hours[1] * 60]
    return seed_setup(seed, rate_traffic(np.repeat(rate, 60), TokenMix(), seed, f"{kind}-{seed}"))


def _never_cheaper_than_the_oracle(kinds: tuple[str, ...], seeds: tuple[int, ...], hours: tuple[int, int]):
    from llm_platform.simulator.controllers.strategies import keda, static
    from llm_platform.simulator.day.engine import simulate
    from llm_platform.simulator.search.scenarios import miss_curve, oracle_for, recommended_for, witness_of

    checked = 0
    for kind in kinds:
        for seed in seeds:
            s = _window(kind, seed, hours)
            curve = miss_curve(s.table, s.traffic, s.config.slo)
            for strategy in (static(2), static(12), keda("recommended", recommended_for(s))):
                r = simulate(s.traffic, s.table, strategy, s.config)
                b = oracle_for(s, r.slo_violation_pct, curve, witness_of(r))
                where = f"{kind} seed {seed} {strategy.name} at {r.slo_violation_pct:.3f} % misses"
                assert b["per_second_usd_per_day"] <= b["whole_nodes_usd_per_day"] + 1e-9, where
                assert b["whole_nodes_usd_per_day"] <= r.gpu_cost_usd_per_day + 1e-9, where
                checked += 1
    return checked


def test_no_config_costs_less_than_the_oracle_at_its_own_miss_rate():
    """Over-provisioned static pools sit near the lowest achievable miss rate, where the replica model alone
    cannot reach the budget and its plan was dearer than the config (cost_vs_oracle 0.72x on a flat day)."""
    assert _never_cheaper_than_the_oracle(("flat", "bursty"), (0,), (11, 12)) == 6


@pytest.mark.slow
def test_no_config_costs_less_than_the_oracle_on_any_generated_day():
    kinds = ("seed", "flat", "spiky", "bursty", "bursts", "flash", "growing", "shifted")
    assert _never_cheaper_than_the_oracle(kinds, (1,), (10, 12)) == len(kinds) * 3


def test_the_witness_only_lowers_the_bound_and_its_minutes_keep_the_configs_misses():
    """With what the config did, the oracle may copy it (each minute cut where the model says no more misses):
    a pessimistic model's plan (here it calls every request a miss) gives way to the config's own minutes,
    billed per second, and never to a plan that misses more than the config did."""
    lam = np.linspace(0, 10.0, 11)
    pessimistic = np.ones(11)
    minutes = np.full(120, 300.0)  # 5 req/s
    config_replicas = np.full(120, 3)
    witness = oracle.Witness(config_replicas, np.full(120, 1.0), usd_per_day=100.0)
    alone = oracle.bound(minutes, lam, pessimistic, 0.33, 1.0, 1, 300, 1 / 12)
    assert alone["model_feasible"] == 0.0  # the model cannot reach 0.33 %: its plan is no bound
    held = oracle.bound(minutes, lam, pessimistic, 0.33, 1.0, 1, 300, 1 / 12, witness=witness)
    assert held["per_second_usd_per_day"] == pytest.approx(3 * 2 * 12)  # 3 replicas for 2 h, per day
    assert held["whole_nodes_usd_per_day"] <= 100.0 and held["peak_replicas"] <= 3
    paid_less = oracle.Witness(config_replicas, witness.misses, usd_per_day=50.0)
    assert oracle.bound(minutes, lam, pessimistic, 0.33, 1.0, 1, 300, 1 / 12, witness=paid_less)[
        "whole_nodes_usd_per_day"
    ] == pytest.approx(50.0)  # never above what the config paid
    cut = oracle.witness_replicas(minutes, lam, curve()[1], witness, floor=1)
    assert cut.tolist() == [1] * 120  # 5 req/s on one replica misses nothing under the lenient curve
