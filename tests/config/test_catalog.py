"""The GPU catalog is the one table of instance facts: every consumer reads its rows, nothing guesses."""

from __future__ import annotations

import pytest

from llm_platform.facts.catalog import GPU_INSTANCES, instance
from llm_platform.facts.cold_start import KARPENTER_LAUNCH_SECONDS, cold_start
from policy.llm_platform_policies.objects import MAX_GPUS_PER_NODE


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
