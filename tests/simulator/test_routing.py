"""The simulator's routing model: prefix hits per router, and their effect on a traffic window's TTFT and cost."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from llm_platform.simulator.commands import routing
from llm_platform.simulator.commands.routing import (
    PrefixSharing,
    compare,
    prefix_hit_rate,
    with_shared_prefixes,
)
from llm_platform.simulator.search.scenarios import seed_setup
from llm_platform.simulator.traffic.traffic import Traffic

SHARED = PrefixSharing(shared_fraction=0.9, prefix_tokens=6000, distinct_prefixes=150)


@pytest.mark.parametrize("replicas", [2, 7, 16])
def test_prefix_affinity_never_hits_less_than_spreading(replicas: int) -> None:
    free = 200_000.0
    hits = {r: prefix_hit_rate(r, SHARED, replicas, free) for r in routing.ROUTERS}
    assert hits["round-robin"] == hits["load-aware"]  # no prefix affinity: the same spread of prefixes
    assert hits["round-robin"] <= hits["prefix-aware"] <= hits["prefix-aware-precise"] <= 1.0
    assert hits["prefix-aware-precise"] > hits["round-robin"]  # 900k-token working set >> one replica's cache


def test_hits_follow_the_working_set() -> None:
    assert prefix_hit_rate("round-robin", PrefixSharing(), 4, 1e6) == 0.0  # nothing shared
    small = PrefixSharing(0.5, 1000, 10)
    assert prefix_hit_rate("round-robin", small, 4, 50_000) == 1.0  # 10k tokens fit everywhere
    fewer = prefix_hit_rate("round-robin", replace(SHARED, distinct_prefixes=50), 4, 100_000)
    more = prefix_hit_rate("round-robin", SHARED, 4, 100_000)
    assert more < fewer
    with pytest.raises(ValueError, match="router"):
        prefix_hit_rate("random-walk", SHARED, 4, 1.0)
    with pytest.raises(ValueError, match="shared fraction"):
        PrefixSharing(shared_fraction=1.5)


def test_shared_requests_carry_the_prefix() -> None:
    traffic = Traffic(
        np.arange(10_000, dtype=float) / 10,
        np.full(10_000, 100, np.int32),
        np.full(10_000, 50, np.int32),
        1000,
    )
    shared, share = with_shared_prefixes(traffic, PrefixSharing(0.3, 900, 5), seed=1)
    carrying = float(np.mean(shared.input_tokens == 1000))
    assert abs(carrying - 0.3) < 0.02
    assert share == pytest.approx(carrying * 900 / float(np.mean(shared.input_tokens)), rel=1e-6)


def test_prefix_aware_routing_lowers_ttft_and_cost_in_a_busy_hour() -> None:
    setup = seed_setup(0)
    t = setup.traffic
    keep = (t.arrivals >= 9 * 3600) & (t.arrivals < 10 * 3600)
    hour = Traffic(t.arrivals[keep] - 9 * 3600, t.input_tokens[keep], t.output_tokens[keep], 3600, "09-10")
    rows = {
        r.router: r
        for r in compare(replace(setup, traffic=hour), SHARED, ("round-robin", "prefix-aware-precise"))
    }
    rr, pa = rows["round-robin"], rows["prefix-aware-precise"]
    assert pa.hit_rate > rr.hit_rate
    assert pa.mean_prompt_tokens < rr.mean_prompt_tokens
    assert pa.result.p95_ttft_ms < rr.result.p95_ttft_ms
    assert pa.result.gpu_cost_usd_per_day <= rr.result.gpu_cost_usd_per_day
