"""The GPU catalog is the one table of instance facts: every consumer reads its rows, nothing guesses."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

from llm_platform.components.specs.multinode import efa_requests
from llm_platform.config.loader import parse
from llm_platform.facts.catalog import (
    GPU_FAMILIES,
    GPU_INSTANCES,
    NVLINK3,
    NVLINK4,
    NVLINK5,
    PCIE4,
    GpuFamily,
    GpuModel,
    GpuSize,
    dedicated_families,
    efa_families,
    instance,
)
from llm_platform.facts.cold_start import KARPENTER_LAUNCH_SECONDS, cold_start
from llm_platform.facts.model_profiles import PROFILES
from llm_platform.simulator.serving.physics import step_allreduce_seconds
from policy.llm_platform_policies.objects import MAX_GPUS_PER_NODE
from tests.conftest import config_error, stack_values


def test_an_unknown_instance_is_an_error_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"'g7\.xlarge' is not in the GPU catalog .*known: g5\.xlarge"):
        instance("g7.xlarge")


def test_a_known_instance_is_its_row() -> None:
    assert instance("p4d.24xlarge") is GPU_INSTANCES["p4d.24xlarge"]


@pytest.mark.parametrize("instance_type", sorted(GPU_INSTANCES))
def test_the_cold_start_reads_the_rows_boot_time_and_bandwidth(instance_type: str) -> None:
    row = GPU_INSTANCES[instance_type]
    start = cold_start("s3", row, 16.0, new_node=True)
    assert start.node_ready == KARPENTER_LAUNCH_SECONDS + row.node_ready_seconds
    assert start.weight_load == pytest.approx(16.0 / min(row.network_gbps / 8, 1.25))


def test_the_policy_packs_gpu_ceiling_is_the_catalogs_largest_instance() -> None:
    """The pack runs on its own (no repo imports under `pulumi preview --policy-pack`); this keeps it in step."""
    assert max(i.gpus for i in GPU_INSTANCES.values()) == MAX_GPUS_PER_NODE


def test_each_instance_is_its_familys_row() -> None:
    """Every fact of an instance type comes from its family's one row: GPU (and its interconnect), regions,
    node Ready time, pool of its own, Capacity Blocks only; its size gives the EFA interfaces and prices."""
    assert list(GPU_INSTANCES) == [i.instance_type for f in GPU_FAMILIES.values() for i in f.instances()]
    for row in GPU_INSTANCES.values():
        family = GPU_FAMILIES[row.family]
        (size,) = [z for z in family.sizes if z.size == row.size]
        assert (row.gpu, row.regions, row.node_ready_seconds) == (
            family.gpu,
            family.regions,
            family.node_ready_seconds,
        )
        assert (row.dedicated, row.reserved_only) == (family.dedicated, family.reserved_only)
        assert (row.efa_interfaces, row.gpus, row.prices) == (size.efa_interfaces, size.gpus, size.prices)


def test_the_sxm_parts_talk_nvlink_and_the_others_pcie() -> None:
    """p4d/p4de (A100 SXM), p5/p5e/p5en (H100/H200 SXM) and p6-b200 link their GPUs with NVLink; g5, g6 and g6e
    (PCIe cards) do not (the simulator's all-reduce cost reads it: serving/physics.py)."""
    links = {f.name: f.gpu.interconnect for f in GPU_FAMILIES.values()}
    assert {n for n, link in links.items() if link is PCIE4} == {"g5", "g6", "g6e"}
    assert links["p4d"] is links["p4de"] is NVLINK3
    assert links["p5"] is links["p5e"] is links["p5en"] is NVLINK4
    assert links["p6-b200"] is NVLINK5
    assert dedicated_families() == ["p4d", "p4de", "p5", "p5e", "p5en", "p6-b200"] == efa_families()


# a made-up family: its one row is all the code needs
X9 = GpuFamily(
    "x9",
    GpuModel("X9", 192, 8000, 2250, NVLINK5),
    frozenset({"us-east-1"}),
    300.0,
    (GpuSize("48xlarge", 8, 192, 2048, 8, 3840, 3200.0, 16, MappingProxyType({"us-east-1": 120.0})),),
    dedicated=True,
)


@pytest.fixture
def x9(monkeypatch: pytest.MonkeyPatch) -> GpuFamily:
    monkeypatch.setitem(GPU_FAMILIES, X9.name, X9)
    for row in X9.instances():
        monkeypatch.setitem(GPU_INSTANCES, row.instance_type, row)
    return X9


def _multinode_on(families: list[str]) -> dict[str, Any]:
    values = stack_values("multinode")
    values["gpuNodePools"][0]["instanceFamilies"] = families
    values["gpuNodePools"][0].pop("instanceSizes", None)
    return values


def test_a_family_added_to_the_catalog_is_served_with_no_other_edit(x9: GpuFamily) -> None:
    """A pool of the new family serves a two-node replica (its EFA count is requested and attached); it must
    have a pool of its own, the multi-node rule names it among the EFA families, and the simulator's
    all-reduce uses its GPU's interconnect."""
    config = parse(_multinode_on(["x9"]), region="us-east-1")
    pool = config.gpu_node_pools[0]
    assert [i.instance_type for i in pool.instances] == ["x9.48xlarge"]
    assert efa_requests(config.models[0], pool) == {"vpc.amazonaws.com/efa": "16"}

    assert "mixes x9 with other families; allowed: x9 in a single-family pool" in config_error(
        _multinode_on(["x9", "g5"])
    )
    on_g5 = _multinode_on(["g5"])
    on_g5["gpuNodePools"][0]["instanceSizes"] = ["xlarge"]
    on_g5["models"][0] |= {"huggingFaceId": "meta-llama/Llama-3.1-8B-Instruct", "tensorParallelSize": 1}
    on_g5["models"][0] |= {"maxModelLen": 4096}
    del on_g5["models"][0]["geometry"]
    refused = config_error(on_g5)
    assert "g5.xlarge, which has no EFA interface" in refused
    assert "allowed: a pool of p4d, p4de, p5, p5e, p5en, p6-b200 or x9" in refused

    profile = PROFILES["meta-llama/Llama-3.1-70B-Instruct"]
    b200 = GPU_FAMILIES["p6-b200"].gpu
    assert step_allreduce_seconds(profile, x9.gpu, 8, 256.0) == step_allreduce_seconds(
        profile, b200, 8, 256.0
    )
