from __future__ import annotations

import pytest

from llm_platform.facts.catalog import GPU_INSTANCES
from llm_platform.facts.cold_start import (
    CACHE_MODES,
    ENGINE_INIT_CACHED_SECONDS,
    ENGINE_INIT_COLD_SECONDS,
    PREEMPTION_SECONDS,
    CacheMode,
    cold_start,
    headroom_start,
)

G5 = GPU_INSTANCES["g5.2xlarge"]


@pytest.mark.parametrize("mode", CACHE_MODES)
def test_new_node_is_slower_than_warm_node(mode):
    assert cold_start(mode, G5, 16, True).total > cold_start(mode, G5, 16, False).total


def test_hub_is_the_slowest_weight_source():
    assert cold_start("hub", G5, 16, False).total > cold_start("s3", G5, 16, False).total
    assert cold_start("s3", G5, 16, False).total > cold_start("nvme", G5, 16, False).total


def test_fsx_is_bounded_by_the_instance_network():
    small = cold_start("fsx", GPU_INSTANCES["g5.xlarge"], 16, False)
    big = cold_start("fsx", GPU_INSTANCES["g5.12xlarge"], 16, False)
    assert small.weight_load == pytest.approx(16 / (2.5 / 8))
    assert big.weight_load < small.weight_load
    # without a persisted compile cache, the cache lives in the pod: every new pod compiles
    assert small.engine_init == ENGINE_INIT_COLD_SECONDS


def test_without_persistence_the_compile_cache_survives_on_a_warm_nvme_node_only():
    assert cold_start("nvme", G5, 16, False).engine_init == ENGINE_INIT_CACHED_SECONDS
    assert cold_start("nvme", G5, 16, True).engine_init == ENGINE_INIT_COLD_SECONDS
    assert cold_start("s3", G5, 16, False).engine_init == ENGINE_INIT_COLD_SECONDS


def test_s3_streams_weights_without_a_download_step():
    s3 = cold_start("s3", GPU_INSTANCES["g5.xlarge"], 16, False)
    assert s3.pod_fetch == 0
    assert s3.weight_load == pytest.approx(16 / (2.5 / 8))  # the node's network, below the S3 cap
    assert cold_start("hub", GPU_INSTANCES["g5.xlarge"], 16, False).pod_fetch > 0


def test_prebaked_image_removes_the_pull():
    assert cold_start("nvme", G5, 4, True, "prebaked").image_pull == 0
    assert cold_start("nvme", G5, 4, True, "registry").image_pull > 60


def test_unknown_cache_mode_is_rejected():
    with pytest.raises(ValueError, match="allowed: nvme, fsx, s3, hub"):
        cold_start("tape", G5, 4, True)  # pyright: ignore[reportArgumentType]


def _readme_table(header: str) -> list[list[str]]:
    """The cold-start table of the docs (docs/capacity.md), on whichever page holds it."""
    from tests import docs

    return docs.table(header)


def _seconds(cell: str) -> int:
    return int(cell.strip("*").split(" s")[0].strip("*"))


def test_the_readme_cold_start_tables_are_what_the_model_computes():
    """g5.2xlarge, 16 GB, a registry pull: each row's totals, with and without a persisted compile cache."""
    rows = _readme_table(
        "| cache | node ready | image pull | weights | engine init (new / warm node) | total new node | total warm node |"
    )
    assert len(rows) == 2 * len(CACHE_MODES)
    modes: dict[str, CacheMode] = {m: m for m in CACHE_MODES}
    for label, *_, new, warm in rows:
        mode = modes[label.split(",")[0]]
        persisted = "compile cache persisted" in label
        assert _seconds(new) == round(cold_start(mode, G5, 16, True, "registry", persisted).total), label
        assert _seconds(warm) == round(cold_start(mode, G5, 16, False, "registry", persisted).total), label
    landing = {
        r[0]: r[4:]
        for r in _readme_table("| replica lands on | node | image | weights | nvme | fsx | s3 | hub |")
    }
    for mode, cells in zip(CACHE_MODES, zip(*landing.values(), strict=True), strict=True):
        new, kept, headroom = ((_seconds(c), _seconds(c.split("(")[1])) for c in cells)
        for persisted, i in ((True, 0), (False, 1)):
            assert new[i] == round(cold_start(mode, G5, 16, True, "registry", persisted).total), mode
            assert kept[i] == round(cold_start(mode, G5, 16, False, "registry", persisted).total), mode
            start = headroom_start(mode, G5, 16, "registry", persisted).total + PREEMPTION_SECONDS
            assert headroom[i] == round(start), mode
