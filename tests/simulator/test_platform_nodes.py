"""The platform's CPU nodes in the cost figures: the fixed system group plus the add-on pool, which grows with
what the stack runs (each model's endpoint pickers), priced from the CPU catalog, spot where the pool allows."""

from __future__ import annotations

import math
from pathlib import Path

from llm_platform.facts.cpu_catalog import CPU_INSTANCES
from llm_platform.simulator.controllers.platform_nodes import PlatformNodes, platform_nodes
from tests.conftest import fixture_stack
from tests.stacks.test_add_a_model import with_more_models


def _vcpus(nodes: PlatformNodes) -> int:
    return sum(CPU_INSTANCES[t].vcpus * n for t, n in nodes.addons)


def test_addon_pool_grows_with_the_models_behind_the_gateway(tmp_path: Path) -> None:
    before = platform_nodes(fixture_stack("gateway"))
    assert before is not None and before.addons
    edited, _ = with_more_models(fixture_stack("gateway"), tmp_path, count=3)
    after = platform_nodes(edited)
    assert after is not None
    assert after.system == before.system, "the fixed group does not grow with models"
    assert _vcpus(after) > _vcpus(before), (before.addons, after.addons)
    assert after.usd_per_day(0.6)[1] > before.usd_per_day(0.6)[1]


def test_prices_follow_the_catalog_the_capacity_type_and_the_region() -> None:
    nodes = PlatformNodes(("m6i.large", 2), (("m6i.xlarge", 1),), spot=True, region="us-east-1")
    system, addons = nodes.usd_per_day(0.6)
    assert system == 2 * 0.096 * 24
    assert math.isclose(addons, 0.192 * 0.4 * 24)
    on_demand = PlatformNodes(("m6i.large", 2), (("m6i.xlarge", 1),), spot=False, region="us-east-1")
    assert math.isclose(on_demand.usd_per_day(0.6)[1], 0.192 * 24)
    elsewhere = PlatformNodes(("m6i.large", 2), (), spot=False, region="eu-west-1")
    assert "no known price in eu-west-1" in elsewhere.line(0.6)
