"""Reserved capacity in the simulator: prepaid for the whole horizon, free to launch into, on-demand or spot
only beyond the reserved count; the reservations sweep finds the cheapest count on the same engine."""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from llm_platform.config import loader
from llm_platform.config.loader import ROOT
from llm_platform.facts.catalog import GPU_INSTANCES
from llm_platform.simulator.day.engine import simulate
from llm_platform.simulator.search import reservations
from llm_platform.simulator.search.stacks import StackRun, stack_run
from llm_platform.simulator.serving.capacity import Cluster
from llm_platform.simulator.serving.capacity_config import CapacityConfig
from llm_platform.simulator.traffic import family
from llm_platform.simulator.traffic.traffic import TokenMix, load

G5 = GPU_INSTANCES["g5.2xlarge"]
FIXTURE = ROOT / "tests" / "fixtures" / "stacks" / "Pulumi.reservations.yaml"
DAY = 86_400


def cluster(reserved: int, replicas: int = 0, **kw) -> Cluster:
    cfg = CapacityConfig(G5, "us-east-1", image="prebaked", weights_gb=4.15, reserved_nodes=reserved, **kw)
    return Cluster(cfg, np.random.default_rng(0), initial_replicas=replicas)


@pytest.mark.parametrize("reserved", [0, 3, 8])
def test_a_static_day_costs_the_same_whether_its_nodes_are_reserved_or_on_demand(reserved: int) -> None:
    # an ODCR bills the on-demand rate all day: reserving nodes that run all day changes nothing
    assert cluster(reserved, replicas=8).nodepool.cost(DAY) == pytest.approx(
        8 * 24 * G5.on_demand_usd_per_hour("us-east-1")
    )


def test_unused_reservations_are_still_paid() -> None:
    assert cluster(10, replicas=8).nodepool.cost(DAY) == pytest.approx(
        10 * 24 * G5.on_demand_usd_per_hour("us-east-1")
    )
    assert cluster(2, replicas=0).nodepool.cost(DAY) == pytest.approx(
        2 * 24 * G5.on_demand_usd_per_hour("us-east-1")
    )


def test_nodes_launch_into_free_reservations_first_then_on_demand() -> None:
    c = cluster(2, replicas=1)
    c.set_replicas(100, 4)
    reserved = [n.reserved for n in c.nodepool.nodes]
    assert reserved == [True, True, False, False]
    assert [n.price_per_hour for n in c.nodepool.nodes] == [
        0.0,
        0.0,
        G5.on_demand_usd_per_hour("us-east-1"),
        G5.on_demand_usd_per_hour("us-east-1"),
    ]


def test_a_freed_reservation_is_reused_by_the_next_launch() -> None:
    c = cluster(1, replicas=1, consolidate_after=60)
    c.set_replicas(10, 0)
    c.advance(10 + 10 + 60)  # drained, then consolidated: the reservation is free again
    assert c.nodepool.reserved_in_use == 0
    c.set_replicas(200, 1)
    assert c.nodepool.nodes[-1].reserved and c.nodepool.nodes[-1].price_per_hour == 0.0


def test_a_capacity_block_is_prepaid_at_its_own_price() -> None:
    c = cluster(2, replicas=2, reserved_usd_per_hour=0.7)
    assert c.nodepool.cost(DAY) == pytest.approx(2 * 24 * 0.7)


def test_reserved_nodes_are_not_spot_interrupted() -> None:
    c = cluster(1, replicas=2, spot=True, spot_interruptions_per_hour=100.0)
    c.advance(3600)
    survivors = [n for n in c.nodepool.nodes if n.terminated_at is None and not n.cordoned]
    assert [n.reserved for n in survivors] == [True]


def seed_hours(folder: Path, start: int, end: int) -> Path:
    """The seed day's hours [start, end) as a per-minute rate CSV (minute 0 is `start`:00)."""
    path = folder / f"seed-{start:02d}-{end:02d}.csv"
    rate = family.day("seed")[start * 60 : end * 60]
    path.write_text("minute,requests_per_second\n" + "".join(f"{m},{r}\n" for m, r in enumerate(rate)))
    return path


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> StackRun:
    """The reservations fixture's llama-70b (p5, 1-2 replicas, reserved then on-demand) on the seed day's
    05:00-09:00: one replica overnight, then the morning surge at maxReplicas (the sweep's properties need a
    quiet stretch and a peak, not 24 hours; the sweep reports $/day, prepaid is what the 4 hours cost)."""
    morning = seed_hours(tmp_path_factory.mktemp("traffic"), 5, 9)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(loader, "stack_file", lambda stack: FIXTURE)
        return stack_run("reservations", "llama-70b", load(str(morning)))


def with_rate(run: StackRun, usd_per_hour: float) -> StackRun:
    capacity = replace(run.setup.config.capacity, reserved_usd_per_hour=usd_per_hour)
    return replace(run, setup=replace(run.setup, config=replace(run.setup.config, capacity=capacity)))


def test_sweep_prices_each_count_as_prepaid_plus_what_runs_beyond(llama: StackRun) -> None:
    top = reservations.most_useful(llama)
    assert top == 2  # maxReplicas 2, one TP8 replica per p5.48xlarge
    days = reservations.sweep(llama, range(top + 2))
    rate = llama.instance.on_demand_usd_per_hour("us-east-1")
    hours = llama.setup.traffic.duration / 3600
    assert hours == 4 and llama.max_replicas == 2
    for d in days:
        assert d.prepaid_usd == pytest.approx(d.reserved_instances * rate * hours)
        assert d.cost_usd >= d.prepaid_usd * 24 / hours - 1e-6  # $/day against the day's prepaid share
        assert d.reserved_gpus == 8 * d.reserved_instances
    # the surge's second replica runs on-demand beyond the one reserved
    assert days[1].cost_usd > days[1].prepaid_usd * 24 / hours + 1.0
    # an ODCR bills on-demand all day: each extra reservation costs at least what it saves
    costs = [d.cost_usd for d in days]
    assert all(b >= a - 1e-6 for a, b in pairwise(costs))
    # one beyond the most the model can use is pure waste: a full day at the reserved rate
    assert costs[-1] == pytest.approx(costs[-2] + rate * 24)
    assert reservations.cheapest(days).reserved_instances == 0  # a tie goes to committing less


def test_a_cheap_enough_reservation_is_worth_buying(llama: StackRun) -> None:
    cheap = with_rate(llama, llama.instance.on_demand_usd_per_hour("us-east-1") * 0.05)
    days = reservations.sweep(cheap, range(4))
    best = reservations.cheapest(days)
    assert 0 < best.reserved_instances <= reservations.most_useful(cheap)
    assert best.cost_usd < days[0].cost_usd
    assert days[3].cost_usd > best.cost_usd  # beyond what the model can fill only adds prepaid cost


def test_the_pool_note_asks_for_the_reserved_count(llama: StackRun) -> None:
    assert "pass --reserved-instances N" in llama.note


# --- a Capacity Block that ends inside the day ---------------------------------------------------------

NOON = 12 * 3600.0
EXPIRING = NOON - 40 * 60  # Karpenter drains the block's nodes 40 minutes before its end


def test_a_block_ending_at_noon_is_paid_to_noon_and_its_replicas_move_to_on_demand() -> None:
    c = cluster(2, replicas=2, reserved_usd_per_hour=10.0, reserved_until=NOON)
    c.advance(EXPIRING - 1)
    assert c.ready == 2 and c.nodepool.reserved_in_use == 2
    c.advance(EXPIRING)
    assert c.ready == 0 and not c.pods  # evicted; EC2 would reclaim them 10 minutes later anyway
    c.set_replicas(EXPIRING, 2)  # the ReplicaSet replaces them: the block takes no launch, so on-demand nodes
    assert sum(1 for n in c.nodepool.nodes if n.terminated_at is None and not n.reserved) == 2
    c.advance(EXPIRING + 10)  # the drained reserved nodes are deleted
    assert c.nodepool.reserved_in_use == 0 and c.nodepool.live_nodes == 2
    back = EXPIRING + c.nodepool.node_boot + c.start_on_new_node  # a full cold start
    c.advance(back - 1)
    assert c.ready == 0
    c.advance(back)
    assert c.ready == 2
    prepaid = 2 * 10.0 * 12
    on_demand = 2 * 1.212 * (DAY - EXPIRING) / 3600
    assert c.nodepool.cost(DAY) == pytest.approx(prepaid + on_demand)
    assert c.nodepool.cost_curve(np.array([DAY]))[0] == pytest.approx(c.nodepool.cost(DAY))


def test_a_reserved_only_pool_launches_nothing_after_its_block_ends() -> None:
    c = cluster(2, replicas=2, reserved_usd_per_hour=10.0, reserved_until=NOON, fallback=False)
    c.advance(EXPIRING)
    c.set_replicas(EXPIRING, 2)
    c.advance(EXPIRING + 600)
    assert c.nodepool.live_nodes == 0 and c.ready == 0 and c.pending
    assert c.nodepool.cost(DAY) == pytest.approx(2 * 10.0 * 12)


def test_a_reserved_only_pool_launches_nothing_beyond_its_reservations() -> None:
    c = cluster(1, replicas=0, fallback=False)
    c.set_replicas(0, 2)
    assert c.nodepool.live_nodes == 1 and c.pending


def test_the_day_with_a_block_ending_at_noon_costs_on_demand_after_it_and_misses_more(tmp_path: Path) -> None:
    """The reservations fixture's llama-70b (p5, reserved then on-demand) with 2 blocks at $20/h on the seed
    day's 10:00-14:00 at a tenth of its rate: ending at noon, the block is paid to noon, then on-demand p5s
    after a cold start with SLO misses in the gap. The hours around noon hold the drain (11:20), the cold start
    and the afternoon on-demand; the night and morning before add nothing to the property."""
    start = 10 * 3600.0  # the traffic's minute 0 is 10:00: the block's end and drain are offsets from it
    traffic = load(str(seed_hours(tmp_path, 10, 14)), 0, TokenMix(), 0.1)
    horizon = traffic.duration

    def day(until: float | None) -> tuple[float, float, float]:
        run = stack_run(
            FIXTURE,
            "llama-70b",
            traffic,
            reserved_instances=2,
            reserved_usd_per_hour=20.0,
            reserved_until=until,
        )
        s = run.setup
        result = simulate(
            s.traffic, s.table, next(x for x in run.strategies if x.name == "stack-config"), s.config
        )
        cost = result.gpu_cost_usd_per_day * result.days  # what the 4 hours cost
        return cost, s.config.capacity.reserved_cost(horizon), result.slo_violation_pct

    all_day, ends_at_noon = day(None), day(NOON - start)
    assert horizon == 4 * 3600
    assert all_day == pytest.approx((2 * 20.0 * 4, 2 * 20.0 * 4, 0.0))
    cost, prepaid, misses = ends_at_noon
    assert prepaid == pytest.approx(2 * 20.0 * 2)  # 10:00 to noon
    p5 = GPU_INSTANCES["p5.48xlarge"].on_demand_usd_per_hour("us-east-1")
    on_demand = p5 * (start + horizon - EXPIRING) / 3600  # one on-demand p5 from the drain (11:20) to 14:00
    assert cost - prepaid >= on_demand  # at least that
    assert misses > 0.0  # the replacements' cold start
