"""A model with a CPU KV tier: the plan's instance (cold start, costs, the simulator) is the one Karpenter
launches for the grown pod, the cheapest of the pool whose memory holds it next to the node's DaemonSets, while
the pod's requests stay sized on the pool's cheapest GPU-fitting instance. The plan's node model is the one
preflight reads back from the render."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_platform.components.specs import headroom as headroom_spec
from llm_platform.components.specs import serving
from llm_platform.config.schema import Headroom
from llm_platform.plan.kv_offload import grown_request_mib, node_free_mib, tier_instance
from llm_platform.plan.model import pod_instance
from llm_platform.tools.preflight.pods import program_pods, release_pods
from llm_platform.tools.preflight.scheduling import _overhead, node_types
from llm_platform.tools.preflight.view import from_stack
from tests.conftest import fixture_stack, load_fixture
from tests.plans import model_plan, stack_plan


@pytest.mark.parametrize("name", ["chat-tier", "docs-tier"])
def test_tier_lands_the_replica_on_the_instance_that_holds_it(name: str) -> None:
    """The kvtier pods request 24 and 21 GiB: no xlarge (16 GiB) holds them; of the 2xlarges (32 GiB) g6 is the
    cheaper, so the plan costs and starts a g6.2xlarge, and the requests stay the xlarge's share plus the tier."""
    m = model_plan("kvtier", name)
    assert m.instance.instance_type == "g6.2xlarge"
    assert m.resources_instance.instance_type == "g6.xlarge"
    fitting = [
        i
        for i in m.pool.instances
        if node_free_mib(i, m.pool, load_fixture("kvtier").models)
        >= grown_request_mib(1, m.resources_instance, m.kv_offload)  # type: ignore[arg-type]
    ]
    assert m.instance == min(fitting, key=lambda i: i.list_usd_per_hour)
    memory = {"chat-tier": "24Gi", "docs-tier": "21Gi"}[name]
    assert serving.resources(m)["requests"]["memory"] == memory
    assert m.cold_start.new_node is not None


def test_models_without_a_tier_keep_the_cheapest_gpu_fitting_instance() -> None:
    for m in stack_plan("prod").models:
        assert m.instance == pod_instance(m.pool, m.gpus) and m.sizing_instance is None


def test_a_tier_no_instance_holds_leaves_the_sizing_instance() -> None:
    """Preflight blocks that replica (it would stay Pending); the plan does not invent an instance."""
    m = model_plan("kvtier", "chat-tier")
    assert m.kv_offload is not None
    huge = type(m.kv_offload)(**{**m.kv_offload.__dict__, "growth_gib": 64})
    sizing = m.resources_instance
    assert tier_instance(m.pool, 1, sizing, huge, load_fixture("kvtier").models) == sizing


@pytest.mark.parametrize("stack", ["kvtier", "prod", "pd"])
def test_plan_counts_a_gpu_node_as_preflight_reads_the_render(stack: str) -> None:
    """Per GPU node type of every pool: the plan's free memory (allocatable minus the DaemonSets' requests) is
    preflight's, from the rendered DaemonSets and charts (every pool: the image prepull; prod: the FSx node
    plugin; pd: the nvme weight sync and the EFA device plugin, whose rendered `supportedInstanceLabels` list
    the catalog's EFA instance types, so preflight places it where the chart will)."""
    view = from_stack(Path(fixture_stack(stack)))
    nodes, _ = node_types(view)
    daemons = [p for p in program_pods(view) + release_pods(view)[0] if p.daemon]
    cfg = load_fixture(stack)
    pools = {p.name: p for p in cfg.gpu_node_pools}
    checked = 0
    for node in nodes:
        pool = pools.get(node.group)
        if pool is None or not node.gpus:
            continue
        (instance,) = [i for i in pool.instances if i.instance_type == node.instance_type]
        free = node.allocatable["memory"] - _overhead(node, daemons)["memory"]
        assert node_free_mib(instance, pool, cfg.models) == free, node.name
        checked += 1
    assert checked


def test_a_tiered_pools_placeholder_lands_and_is_priced_where_its_replica_lands() -> None:
    """Headroom on the kvtier pool: the placeholder, grown for the largest tier (chat-tier's), lands on the
    g6.2xlarge its replica does (the warm buffer's price), and requests what that replica requests."""
    cfg = load_fixture("kvtier")
    pool = cfg.gpu_node_pools[0].model_copy(update={"headroom": Headroom(gpus=1)})
    plan = stack_plan(cfg.model_copy(update={"gpu_node_pools": [pool]}))
    (p,) = plan.pools
    assert p.headroom is not None
    assert p.headroom.instance.instance_type == "g6.2xlarge"
    assert p.headroom.resources_instance.instance_type == "g6.xlarge"
    placeholder = headroom_spec.placeholder_resources(p)["requests"]
    chat = serving.resources(plan.model("chat-tier"))["requests"]
    assert placeholder["memory"] == chat["memory"] == "24Gi"


def test_the_simulator_launches_and_prices_the_tiered_replicas_instance() -> None:
    """The simulator's nodes for chat-tier are the g6.2xlarge the grown pod lands on, at its price."""
    from llm_platform.simulator.search.stacks import stack_run
    from llm_platform.simulator.traffic.traffic import seed_day

    run = stack_run(fixture_stack("kvtier"), "chat-tier", seed_day(0))
    capacity = run.setup.config.capacity
    assert run.instance.instance_type == capacity.instance.instance_type == "g6.2xlarge"
