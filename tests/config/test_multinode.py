"""Multi-node replicas in the stack schema: what a model spanning nodes needs of its pool, refused before any
resource with the field, the value and the numbers (config/schema/multinode.py)."""

from __future__ import annotations

from typing import Any

import pytest

from llm_platform.config.loader import parse
from llm_platform.facts.catalog import GPU_INSTANCES
from tests.conftest import config_error, load_fixture, stack_values


def _values() -> dict[str, Any]:
    return stack_values("multinode")


def test_fixture_is_one_replica_on_two_p5_nodes() -> None:
    cfg = load_fixture("multinode")
    (model,) = cfg.models
    assert (model.tensor_parallel_size, model.pipeline_parallel_size, model.replica_gpus) == (8, 2, 16)
    assert cfg.pool("p5-efa").placement_zone == "us-east-1a"


def test_catalog_efa_counts() -> None:
    """Karpenter v1.14.1's instance-type reference: p5/p5e 32, p5en 16, p6-b200 8, p4d/p4de 4."""
    counts = {t: i.efa_interfaces for t, i in GPU_INSTANCES.items() if i.efa_interfaces}
    assert counts["p5.48xlarge"] == 32 and counts["p5en.48xlarge"] == 16 and counts["p4d.24xlarge"] == 4
    assert GPU_INSTANCES["g5.2xlarge"].efa_interfaces == 0


@pytest.mark.parametrize("key", ["dataParallelSize", "enableExpertParallel"])
def test_data_and_expert_parallel_are_refused_by_name(key: str) -> None:
    values = _values()
    values["models"][0][key] = 2
    message = config_error(values)
    assert key in message and "pipelineParallelSize" in message


def test_too_few_nodes_names_the_memory() -> None:
    """405B in BF16 does not fit one 8 x H100 node: pipelineParallelSize 1 fails the single-node rule, and
    a long context on 2 nodes fails with the per-GPU numbers and the node count that would fit."""
    values = _values()
    values["models"][0]["maxModelLen"] = 1_000_000
    message = config_error(values)
    assert "pipelineParallelSize: 2 is too small" in message
    assert "GiB per GPU over 2 nodes x 8 GPUs" in message and "72.0 GiB" in message
    assert "pipelineParallelSize 3 or more" in message


def test_tensor_parallel_must_fill_each_node() -> None:
    values = _values()
    values["models"][0]["tensorParallelSize"] = 4
    values["models"][0]["pipelineParallelSize"] = 4
    message = config_error(values)
    assert "tensorParallelSize: 4 with pipelineParallelSize 4 must equal the GPUs" in message
    assert "p5.48xlarge: 8" in message


def test_pool_without_efa_is_refused() -> None:
    values = _values()
    values["gpuNodePools"][0] |= {"instanceFamilies": ["g5"], "instanceSizes": ["2xlarge"]}
    values["models"][0] |= {"tensorParallelSize": 1, "pipelineParallelSize": 16, "maxModelLen": 1024}
    values["models"][0]["geometry"]["parameters"] = 70e9
    message = config_error(values)
    assert "g5.2xlarge, which has no EFA interface" in message


def test_pool_needs_one_zone_of_the_cluster() -> None:
    values = _values()
    values["gpuNodePools"][0]["placementZone"] = "us-east-1c"
    message = config_error(values)
    assert "placementZone: 'us-east-1c' must name one zone of cluster.availabilityZones" in message
    del values["gpuNodePools"][0]["placementZone"]
    assert "placementZone: must name one zone" in config_error(values)


def test_placement_zone_only_for_multi_node_pools() -> None:
    values = _values()
    values["models"][0] |= {"pipelineParallelSize": 1, "maxModelLen": 1024}
    values["models"][0]["geometry"]["parameters"] = 70e9
    assert "placementZone: 'us-east-1a' is only for pools serving a multi-node model" in config_error(values)


def test_reservations_must_not_mix_with_other_capacity() -> None:
    values = _values()
    values["gpuNodePools"][0] |= {
        "capacityTypes": ["reserved", "on-demand"],
        "capacityReservations": [{"id": "cr-0123456789abcdef0"}],
    }
    assert "mixes reservations with other capacity for llama-405b" in config_error(values)


def test_capacity_block_pool_is_accepted() -> None:
    values = _values()
    values["gpuNodePools"][0] |= {
        "capacityTypes": ["reserved"],
        "capacityReservations": [{"id": "cr-0123456789abcdef0"}],
    }
    assert parse(values).pool("p5-efa").capacity_types == ["reserved"]


def test_gpu_limit_counts_every_node_of_every_replica() -> None:
    values = _values()
    values["gpuNodePools"][0]["gpuLimit"] = 31
    message = config_error(values)
    assert "gpuLimit: 31 is less than the 32 GPUs" in message and "llama-405b 2 x 2 nodes x 8 GPUs" in message


def test_headroom_is_refused_on_a_multi_node_pool() -> None:
    values = _values()
    values["gpuNodePools"][0]["headroom"] = {"gpus": 8}
    assert "whose replicas span nodes" in config_error(values)


@pytest.mark.parametrize("arg", ["--pipeline-parallel-size=2", "--headless", "--data-parallel-size"])
def test_extra_args_cannot_set_the_parallelism(arg: str) -> None:
    values = _values()
    values["models"][0]["extraArgs"] = [arg]
    message = config_error(values)
    assert f"extraArgs[0]: {arg!r} is not allowed" in message
