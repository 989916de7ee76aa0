"""GPU headroom in the simulator: a replica preempts a warm placeholder and starts in a warm-node time, the
evicted placeholder refills through a new node within the pool's GPU limit, schedules resize the buffer,
and on a bursty day headroom cuts SLO misses for its price."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from llm_platform.config.schema import Autoscaling, Slo
from llm_platform.facts.catalog import GPU_INSTANCES
from llm_platform.facts.cold_start import PREEMPTION_SECONDS
from llm_platform.facts.model_profiles import profile
from llm_platform.plan import HeadroomPlan, HeadroomWindowPlan
from llm_platform.simulator.controllers.cron import placeholder_targets
from llm_platform.simulator.controllers.strategies import keda
from llm_platform.simulator.day.engine import SimConfig, simulate
from llm_platform.simulator.serving.capacity import Cluster
from llm_platform.simulator.serving.capacity_config import CapacityConfig
from llm_platform.simulator.serving.replica import ReplicaModel, TokenStats
from llm_platform.simulator.traffic.traffic import TokenMix, poisson_day

G5 = GPU_INSTANCES["g5.2xlarge"]
MISTRAL = "TheBloke/Mistral-7B-Instruct-v0.2-GPTQ"


def _headroom(placeholders: int, *windows: HeadroomWindowPlan) -> HeadroomPlan:
    """Placeholders of one g5.2xlarge GPU each (what the plan resolves for a 1-GPU model on a g5 pool)."""
    return HeadroomPlan(
        "headroom-g5", 1, G5, placeholders, windows, refill_seconds=0.0, warm_start_seconds=()
    )


def _cluster(placeholders: int, replicas: int = 1, **kw) -> Cluster:
    cfg = CapacityConfig(G5, "us-east-1", cache_mode="nvme", image="registry", weights_gb=4.15, **kw)
    return Cluster(
        cfg, np.random.default_rng(0), initial_replicas=replicas, initial_placeholders=placeholders
    )


def test_a_replica_preempts_a_warm_placeholder_and_skips_the_node_launch_and_image_pull() -> None:
    c = _cluster(placeholders=1)
    assert c.nodepool.live_nodes == 2 and c.warm_placeholders == 1
    c.set_replicas(0.0, 2)
    new = c.pods[-1]
    assert new.ready_at == pytest.approx(PREEMPTION_SECONDS + c.start_on_fresh_node)
    assert new.ready_at is not None
    assert new.ready_at < c.nodepool.node_boot + c.start_on_new_node - c.nodepool.image_wait, (
        "no node boot, no image pull"
    )
    assert c.preemptions == 1
    # the evicted placeholder is Pending on a node Karpenter launched for it: the buffer refills
    (placeholder,) = c.placeholders
    assert placeholder.node is not None and placeholder.node.ready_at == pytest.approx(c.nodepool.node_boot)
    assert c.warm_placeholders == 0
    c.advance(c.nodepool.node_boot)
    assert c.warm_placeholders == 1


def test_a_replica_on_a_just_refilled_node_waits_for_the_rest_of_the_image_pull() -> None:
    c = _cluster(placeholders=1)
    c.set_replicas(0.0, 2)  # preempts; the placeholder's new node is Ready at node_boot
    c.advance(c.nodepool.node_boot)
    c.set_replicas(c.nodepool.node_boot + 60, 3)  # preempts again, 60 s into that node's pre-pull
    third = c.pods[-1]
    pulled_at = c.nodepool.node_boot + c.nodepool.image_wait
    assert third.ready_at == pytest.approx(pulled_at + PREEMPTION_SECONDS + c.start_on_fresh_node)


def test_placeholders_never_take_a_replica_slot_and_stop_at_the_gpu_limit() -> None:
    c = _cluster(placeholders=0, replicas=1, gpu_limit=2)
    c.set_placeholders(0.0, 3)  # only one more GPU under the limit
    assert c.nodepool.live_nodes == 2
    assert sum(1 for p in c.placeholders if p.node is None) == 2 and c.pending
    c.set_replicas(10.0, 2)  # the replica preempts the placeholder's (launching) slot
    assert c.pods[-1].node is not None
    assert all(p.node is None for p in c.placeholders), "no room left under gpuLimit 2"


def test_a_smaller_schedule_removes_pending_placeholders_first() -> None:
    c = _cluster(placeholders=0, replicas=0, gpu_limit=1)
    c.set_placeholders(0.0, 2)
    bound = [p for p in c.placeholders if p.node is not None]
    c.set_placeholders(5.0, 1)
    assert c.placeholders == bound


def test_schedule_windows_raise_the_placeholders_per_minute() -> None:
    cfg = CapacityConfig(
        G5, "us-east-1", headroom=_headroom(1, HeadroomWindowPlan("w", "0 8 * * *", "0 10 * * *", "UTC", 3))
    )
    targets = placeholder_targets(cfg.headroom, datetime(2026, 9, 15, tzinfo=UTC), 86_400)
    assert targets[7 * 60 + 59] == 1 and targets[8 * 60] == 3 and targets[9 * 60 + 59] == 3
    assert targets[10 * 60] == 1


def _bursty_day(seconds: int = 4 * 3600, seed: int = 3):
    """A quiet 10 req/s with four 8-minute bursts of +40 req/s: shorter than a new node's cold start (~10 min)."""
    rate = np.full(seconds, 10.0)
    for start in (1800, 5400, 9000, 12600):
        rate[start : start + 480] += 40.0
    return poisson_day(rate, TokenMix(), np.random.default_rng(seed), "bursty")


def test_headroom_cuts_misses_on_bursts_shorter_than_a_cold_start() -> None:
    traffic = _bursty_day()
    table = ReplicaModel(profile(MISTRAL), G5.gpu).table(
        TokenStats.from_arrays(traffic.input_tokens, traffic.output_tokens)
    )
    strategy = keda(
        "keda", Autoscaling(min_replicas=1, max_replicas=8, queue_depth_per_replica=2, kv_cache_usage=0.04)
    )

    def run(headroom: HeadroomPlan | None):
        capacity = CapacityConfig(
            G5, "us-east-1", cache_mode="nvme", weights_gb=4.15, gpu_limit=16, headroom=headroom
        )
        slo = Slo(ttft_seconds=0.2, itl_seconds=0.03)
        return simulate(traffic, table, strategy, SimConfig(capacity, slo))

    without, with_ = run(None), run(_headroom(6))
    # a first replica on a headroom node still compiles its engine (~200 s): fewer misses, not none
    assert with_.slo_violation_pct < 0.8 * without.slo_violation_pct
    assert with_.gpu_cost_usd_per_day > without.gpu_cost_usd_per_day, "warm GPUs are paid for"


def test_a_stack_run_simulates_the_headroom_the_plan_renders() -> None:
    """Placeholders, windows, warm start and refill in the simulator are the plan's (what the cluster runs)."""
    from llm_platform.components.specs import headroom as spec
    from llm_platform.simulator.search.stacks import stack_run
    from llm_platform.simulator.serving.capacity_config import start_times
    from tests.conftest import fixture_stack

    traffic = poisson_day(np.full(600, 1.0), TokenMix(), np.random.default_rng(0), "quiet")
    run = stack_run(fixture_stack("headroom"), "mistral-7b", traffic)
    headroom = run.setup.config.capacity.headroom
    assert headroom is not None and headroom == run.pool.headroom
    rendered = spec.scaled_object(run.pool)["spec"]
    assert (headroom.placeholders, headroom.peak_placeholders) == (
        rendered["minReplicaCount"],
        rendered["maxReplicaCount"],
    )
    starts = start_times(run.setup.config.capacity)
    assert starts.preempting_placeholder == pytest.approx(headroom.warm_start("mistral-7b"))
    assert starts.node_ready + starts.image_wait == pytest.approx(headroom.refill_seconds)
