"""A pool's GPU facts have one definition (config.schema: `replica_gpus`, `gpus_at_max_replicas`), resolved in
the plan; what preflight counts from the render and what the simulator runs must be the same figures, or a
stack the schema accepts is blocked by preflight (or priced by the simulator) on numbers nobody deploys."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from llm_platform.config.schema import gpus_at_max_replicas, replica_gpus
from llm_platform.plan.naming import HEADROOM_NAMESPACE
from llm_platform.simulator.search.stacks import stack_run
from llm_platform.simulator.serving.capacity_config import start_times
from llm_platform.simulator.traffic.traffic import seed_day
from llm_platform.tools.mocks import PlatformMocks
from llm_platform.tools.preflight.capacity import node_gpus_at_max, pool_uses
from llm_platform.tools.preflight.view import from_mocks
from tests.conftest import fixture_stack, load_fixture
from tests.plans import stack_plan


@pytest.mark.parametrize("stack", ["prod", "gateway", "headroom"])
def test_preflight_ceiling_counts_the_gpus_the_plan_resolves(
    stack: str, run_program: Callable[[str], PlatformMocks]
) -> None:
    uses = pool_uses(from_mocks(fixture_stack(stack), run_program(stack)))
    plan, config = stack_plan(stack), load_fixture(stack)
    for pool in plan.pools:
        served = [
            u for u in uses[pool.name] if not u[0].owner.startswith(f"Deployment {HEADROOM_NAMESPACE}/")
        ]
        placeholders = [u for u in uses[pool.name] if u not in served]
        # the vLLM Deployments at maxReplicas: what the schema's gpuLimit rule and the plan count
        assert (
            node_gpus_at_max(served)
            == pool.gpus_at_max_replicas
            == gpus_at_max_replicas(pool.pool, config.models)
        ), pool.name
        assert pool.models[0].pool_headroom_gpus == pool.pool.gpu_limit - pool.gpus_at_max_replicas
        # the placeholders: one replica of the pool's largest model each, as many as its busiest window holds
        if pool.headroom is None:
            assert not placeholders
            continue
        assert pool.replica_gpus == pool.headroom.replica_gpus == replica_gpus(pool.pool, config.models)
        assert node_gpus_at_max(placeholders) == pool.headroom.peak_placeholders * pool.headroom.replica_gpus


def test_simulator_starts_replicas_and_refills_headroom_as_the_plan_resolves() -> None:
    stack = fixture_stack("headroom")
    plan = stack_plan("headroom")
    for model in plan.models:
        run = stack_run(stack, model.name, seed_day(0))
        times = start_times(run.setup.config.capacity)
        budget = model.cold_start
        assert budget.new_node is not None and budget.warm_node is not None
        assert (times.new_node, times.warm_node) == (budget.new_node.total, budget.warm_node.total)
        assert run.pool.headroom == plan.pool(model.pool.name).headroom
        headroom = run.pool.headroom
        assert headroom is not None
        # the buffer refills through a new node of the pool's largest replica: the node and image wait of
        # that model's plan, which is also what the simulator waits for a new node of it
        largest = max(run.pool.models, key=lambda m: (m.gpus, m.cold_start.weights_gb or 0.0))
        new = largest.cold_start.new_node
        assert new is not None
        assert headroom.refill_seconds == new.node_ready + new.image_wait
        if largest.name == model.name:
            assert times.node_ready + times.image_wait == headroom.refill_seconds
