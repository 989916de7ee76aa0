"""Cost accounting and node lifecycle: per-second billing with a 60 s minimum, spot price, consolidation."""

from __future__ import annotations

import numpy as np
import pytest

from llm_platform.facts.catalog import GPU_INSTANCES
from llm_platform.simulator.serving.capacity import Cluster
from llm_platform.simulator.serving.capacity_config import CapacityConfig, billed_seconds, instance_cost
from llm_platform.simulator.serving.nodepool import POD_DRAIN_SECONDS

G5 = GPU_INSTANCES["g5.2xlarge"]


def test_per_second_billing_with_sixty_second_minimum():
    assert billed_seconds(0, 30) == 60
    assert billed_seconds(100, 161.5) == 61.5
    assert billed_seconds(0, 3600) == 3600
    assert billed_seconds(0, 30, preexisting=True) == 30


def test_instance_cost_on_demand_and_spot():
    assert instance_cost(G5.on_demand_usd_per_hour("us-east-1"), 0, 3600) == pytest.approx(1.212)
    assert instance_cost(G5.on_demand_usd_per_hour("us-east-1"), 0, 10) == pytest.approx(1.212 / 60)
    spot = CapacityConfig(G5, "us-east-1", spot=True, spot_discount=0.6)
    assert spot.price_per_hour == pytest.approx(1.212 * 0.4)


def test_static_day_costs_replicas_times_hours_times_price():
    cluster = Cluster(CapacityConfig(G5, "us-east-1"), np.random.default_rng(0), initial_replicas=8)
    assert cluster.nodepool.cost(86_400) == pytest.approx(8 * 24 * 1.212)


def test_the_day_starts_with_replicas_packed_onto_multi_gpu_nodes():
    g5_12 = GPU_INSTANCES["g5.12xlarge"]  # 4 GPUs: four 1-GPU replicas share one node
    cfg = CapacityConfig(g5_12, "us-east-1", gpus_per_pod=1)
    packed = Cluster(cfg, np.random.default_rng(0), initial_replicas=5)
    assert packed.nodepool.live_nodes == 2 and packed.ready == 5
    assert packed.nodepool.cost(3600) == pytest.approx(2 * g5_12.on_demand_usd_per_hour("us-east-1"))


def cluster(consolidate_after: float = 300.0, **kw) -> Cluster:
    cfg = CapacityConfig(
        G5,
        "us-east-1",
        cache_mode="nvme",
        image="prebaked",
        weights_gb=4.15,
        consolidate_after=consolidate_after,
        **kw,
    )
    return Cluster(cfg, np.random.default_rng(0), initial_replicas=1)


def test_scale_up_launches_a_node_and_becomes_ready_after_the_cold_start():
    c = cluster()
    c.set_replicas(100, 2)
    assert c.nodepool.live_nodes == 2 and c.ready == 1
    ready_at = 100 + c.nodepool.node_boot + c.start_on_new_node
    c.advance(ready_at - 1)
    assert c.ready == 1
    c.advance(ready_at)
    assert c.ready == 2


def test_empty_node_is_consolidated_after_consolidate_after_and_billed_until_then():
    c = cluster(consolidate_after=300)
    c.set_replicas(100, 2)
    c.set_replicas(150, 1)  # deleted while its node is still booting
    node = c.nodepool.nodes[-1]
    c.advance(100 + c.nodepool.node_boot)  # node comes up empty
    c.advance(100 + c.nodepool.node_boot + 299)
    assert node.terminated_at is None
    c.advance(100 + c.nodepool.node_boot + 300)
    assert node.terminated_at == pytest.approx(100 + c.nodepool.node_boot + 300)
    assert instance_cost(1.212, node.launched_at, node.terminated_at or 0.0) == pytest.approx(
        1.212 * (c.nodepool.node_boot + 300) / 3600
    )


def test_the_disruption_budget_paces_a_large_scale_down_pass_by_pass():
    """Twenty Ready nodes, fifteen emptied at once with `consolidateAfter: 0s`: at the NodePool's 10 % budget
    Karpenter's disruption controller deletes ceil(10 % x the Ready nodes) per 10 s pass, longest empty
    first, so the last goes minutes after the first and is billed until then; without a budget all go at once."""
    from llm_platform.simulator.serving.nodepool import DISRUPTION_POLL_SECONDS

    def emptied(budget: float | None) -> Cluster:
        cfg = CapacityConfig(G5, "us-east-1", consolidate_after=0.0, disruption_budget_percent=budget)
        c = Cluster(cfg, np.random.default_rng(0), initial_replicas=20)
        c.set_replicas(1000, 5)
        c.advance(1000 + POD_DRAIN_SECONDS + 600)
        return c

    c = emptied(10)
    assert c.nodepool.live_nodes == 5
    ends = sorted(n.terminated_at for n in c.nodepool.nodes if n.terminated_at is not None)
    passes = sorted(set(ends))
    assert all(t % DISRUPTION_POLL_SECONDS == 0 for t in passes)
    assert passes[0] >= 1000 + POD_DRAIN_SECONDS
    # 20 Ready -> 2 go; then 18 -> 2, 16 -> 2, 14 -> 2, 12 -> 2, 10 -> 1, 9 -> 1, 8 -> 1, 7 -> 1, 6 -> 1
    assert [ends.count(t) for t in passes] == [2, 2, 2, 2, 2, 1, 1, 1, 1, 1]
    assert passes[-1] - passes[0] == 9 * DISRUPTION_POLL_SECONDS
    unbounded = emptied(None)
    assert {n.terminated_at for n in unbounded.nodepool.nodes if n.terminated_at is not None} == {
        1000 + POD_DRAIN_SECONDS
    }
    assert c.nodepool.cost(2000) > unbounded.nodepool.cost(2000)


def test_a_warm_node_is_reused_with_the_warm_cold_start():
    c = cluster(consolidate_after=300)
    c.set_replicas(0, 0)
    c.advance(POD_DRAIN_SECONDS)  # pod drained, node empty, not yet consolidated
    c.set_replicas(60, 1)
    assert c.nodepool.live_nodes == 1
    c.advance(60 + c.start_on_warm_node)
    assert c.ready == 1
    assert c.start_on_warm_node < c.start_on_new_node


def test_scale_down_removes_unready_pods_first():
    c = cluster()
    c.set_replicas(0, 3)
    c.set_replicas(1, 1)
    assert c.ready == 1 and len(c.pods) == 1


def test_spot_interruption_evicts_and_bills_the_notice():
    c = cluster(spot=True, spot_interruptions_per_hour=1000.0)
    node = c.nodepool.nodes[0]
    c.advance(3600)
    assert node.terminated_at is not None
    assert c.ready == 0  # the pod was evicted; the Deployment will recreate it
    assert node.terminated_at - node.launched_at >= 120
