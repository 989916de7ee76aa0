"""The add-on pool's pods from the plan (what the simulator prices) are the pods preflight reads from the render
of the same stack, and pack onto the same nodes: for every fixture stack, so the plan's model and the specs
cannot drift apart without this failing."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from llm_platform.config.loader import load_stack
from llm_platform.plan import resolve
from llm_platform.plan.addon_pods import addon_pool_pods, pack, pool_kinds
from llm_platform.tools import render
from llm_platform.tools.preflight.pods import program_pods, release_pods
from llm_platform.tools.preflight.room import pack as preflight_pack
from llm_platform.tools.preflight.scheduling import admission_problem, node_types
from llm_platform.tools.preflight.view import from_mocks
from tests.conftest import FIXTURE_STACKS

STACKS = sorted(FIXTURE_STACKS.glob("Pulumi.*.yaml"))


def _shape(pods) -> Counter[tuple[str, str, int, tuple[tuple[str, int], ...], bool]]:
    return Counter(
        (p.owner, p.kind, p.replicas, tuple(sorted(p.requests.items())), p.hostname_anti_affinity)
        for p in pods
    )


@pytest.mark.parametrize("path", STACKS, ids=lambda p: p.name)
def test_the_plans_addon_pods_are_preflights_and_pack_alike(path: Path) -> None:
    view = from_mocks(path, render.evaluate(path).mocks)
    nodes, _ = node_types(view)
    pool = [n for n in nodes if n.group == "addons"]
    rendered = [
        p
        for p in program_pods(view) + release_pods(view)[0]
        if p.kind != "Job" and any(admission_problem(p, n) is None for n in pool)
    ]
    plan = resolve(load_stack(path), str(path))
    assert plan.addon_pool is not None
    planned = addon_pool_pods(plan)
    assert _shape(planned) == _shape(rendered)

    daemons = [p for p in planned if p.daemon]
    kinds = pool_kinds(plan.addon_pool.instances, plan.addon_pool.disk_size_gib, daemons)
    ours = Counter(b.node for b in pack([p for p in planned if not p.daemon], kinds))
    all_daemons = [p for p in program_pods(view) + release_pods(view)[0] if p.daemon]
    theirs = preflight_pack([p for p in rendered if not p.daemon], pool, all_daemons)
    assert ours == Counter(b.node.instance_type for b in theirs)
    assert ours, "every stack runs Prometheus on the add-on pool"


def test_an_existing_cluster_has_no_addon_pool_pods() -> None:
    plan = resolve(load_stack(STACKS[0]), "x")
    existing = plan.__class__(**{**plan.__dict__, "addon_pool": None})
    assert addon_pool_pods(existing) == []
