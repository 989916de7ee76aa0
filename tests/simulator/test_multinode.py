"""The simulator and the cold-start budget know a multi-node replica (fixture stack `multinode`): its nodes are
one unit of N x GPUs and N x the price, each node fetches the whole checkpoint and loads its stage."""

from __future__ import annotations

from llm_platform.facts.cold_start import cold_start
from llm_platform.simulator.search.multinode import replica_instance, reserved_groups
from tests.plans import model_plan


def test_a_replica_is_two_nodes_of_gpus_and_price() -> None:
    m = model_plan("multinode", "llama-405b")
    unit = replica_instance(m)
    assert (unit.gpus, unit.instance_type) == (16, "2xp5.48xlarge")
    assert unit.on_demand_usd_per_hour("us-east-1") == 2 * m.instance.on_demand_usd_per_hour("us-east-1")
    assert (
        unit.network_gbps == m.instance.network_gbps
        and unit.node_ready_seconds == m.instance.node_ready_seconds
    )
    assert reserved_groups(m, 5, 30.0) == (2, 60.0)  # 5 reserved instances hold 2 whole replicas


def test_each_rank_loads_only_its_pipeline_stage() -> None:
    m = model_plan("multinode", "llama-405b")
    weights = m.model.profile.weights_gb
    persisted = m.cache.compile_cache_prefix is not None
    one = cold_start("nvme", m.instance, weights, True, m.image_pull, persisted)
    two = cold_start("nvme", m.instance, weights, True, m.image_pull, persisted, nodes=2)
    assert two.weight_load == one.weight_load / 2
    assert two.node_ready == one.node_ready and two.node_prefetch == one.node_prefetch
    assert m.cold_start.new_node == two
