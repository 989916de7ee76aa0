"""The simulator's price of a progressive rollout (simulator/serving/rollout.py) for the rollout fixture: each
step's extra dollars are the candidate's replicas over the step (their start paid once), and each version's
SLO is judged at its share of the load."""

from __future__ import annotations

import pytest

from llm_platform.plan.rollout import SCALE_DOWN_DELAY_SECONDS
from llm_platform.simulator.serving.replica import TokenStats
from llm_platform.simulator.serving.rollout import price_rollout
from tests.plans import model_plan

STATS = TokenStats.fixed(1000, 250)


def test_each_step_bills_the_candidates_replicas_and_their_start_once() -> None:
    m = model_plan("rollout", "llama-8b")
    price = price_rollout(m, region="us-east-1", rate_rps=4.0, replicas=4, stats=STATS)
    hour = m.instance.on_demand_usd_per_hour("us-east-1") * m.replica_gpus / m.instance.gpus
    start = m.cold_start.warm_node_seconds
    assert [(s.weight, s.canary.replicas, s.seconds) for s in price.steps] == [
        (5, 1, 600), (25, 1, 600), (50, 2, 600), (100, 4, SCALE_DOWN_DELAY_SECONDS),
    ]  # fmt: skip
    expected = [
        hour * (1 * 600 + 1 * start) / 3600,
        hour * (1 * 600) / 3600,  # the replica of the step before: no new start
        hour * (2 * 600 + 1 * start) / 3600,
        hour * (4 * SCALE_DOWN_DELAY_SECONDS + 2 * start) / 3600,
    ]
    assert [s.extra_usd for s in price.steps] == pytest.approx(expected)
    assert price.extra_usd == pytest.approx(sum(expected))
    # at a light load both versions meet the SLO at every step; the stable version serves nothing new at 100 %
    assert all(s.meets_slo for s in price.steps)
    assert price.steps[-1].stable.rps_per_replica == 0


def test_a_load_past_the_replicas_capacity_misses_the_slo_at_the_step() -> None:
    m = model_plan("rollout", "llama-8b")
    light = price_rollout(m, region="us-east-1", rate_rps=4.0, replicas=4, stats=STATS)
    heavy = price_rollout(m, region="us-east-1", rate_rps=40.0, replicas=4, stats=STATS)
    assert not any(s.meets_slo for s in heavy.steps)
    assert heavy.steps[1].canary.saturated and not light.steps[1].canary.saturated
    assert "MISSES the SLO" in "\n".join(heavy.lines())


def test_a_model_without_rollout_has_no_price() -> None:
    with pytest.raises(ValueError, match="no rollout"):
        price_rollout(model_plan("lora", "llama-8b"), region="us-east-1", rate_rps=1, replicas=1, stats=STATS)
