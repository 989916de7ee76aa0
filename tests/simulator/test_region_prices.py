"""The simulator prices nodes at the stack's aws:region price: the same stack and day in another region
costs the price ratio more, and a region without a known price (or a stack without aws:region) stops the
simulator with an error instead of a us-east-1 figure."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from llm_platform.config.loader import ROOT, ConfigError
from llm_platform.facts.catalog import GPU_INSTANCES
from llm_platform.simulator.day.engine import simulate
from llm_platform.simulator.search.scenarios import oracle_for
from llm_platform.simulator.search.stacks import StackRun, stack_run
from llm_platform.simulator.traffic.traffic import (
    SEED_DAY_KNOTS,
    TokenMix,
    Traffic,
    load,
    poisson_day,
    rate_curve,
)

PROD = ROOT / "tests" / "fixtures" / "stacks" / "Pulumi.prod.yaml"


def stack_in(tmp_path: Path, region: str) -> Path:
    """The prod fixture moved to `region` (aws:region and zones)."""
    path = tmp_path / f"Pulumi.{region}.yaml"
    path.write_text(PROD.read_text().replace("us-east-1", region))
    return path


@pytest.fixture(scope="module")
def traffic() -> Traffic:
    return load("builtin:seed-day", 0, TokenMix(), 0.25)


def day_cost(run: StackRun) -> tuple[float, float]:
    s = run.setup
    strategy = next(x for x in run.strategies if x.name == "stack-config")
    result = simulate(s.traffic, s.table, strategy, s.config)
    return result.gpu_cost_usd_per_day, result.slo_violation_pct


def seed_morning() -> Traffic:
    """08:00-11:00 of the seed day at a quarter of its rate: the morning ramp scales the pool up, in an eighth
    of the seed day's simulation."""
    rate = rate_curve(SEED_DAY_KNOTS)[8 * 3600 : 11 * 3600] * 0.25
    return poisson_day(rate, TokenMix(), np.random.default_rng(0), "seed-morning")


def test_the_same_day_costs_the_regional_price_ratio_more(tmp_path: Path) -> None:
    traffic = seed_morning()
    east = stack_run(stack_in(tmp_path, "us-east-1"), "mistral-7b", traffic)
    london = stack_run(stack_in(tmp_path, "eu-west-2"), "mistral-7b", traffic)
    assert east.instance.instance_type == london.instance.instance_type == "g5.2xlarge"
    (east_cost, east_miss), (london_cost, london_miss) = day_cost(east), day_cost(london)
    g5 = GPU_INSTANCES["g5.2xlarge"]
    ratio = g5.on_demand_usd_per_hour("eu-west-2") / g5.on_demand_usd_per_hour("us-east-1")
    assert ratio == pytest.approx(1.53849 / 1.212)
    assert london_cost == pytest.approx(east_cost * ratio)
    assert london_miss == east_miss  # the region changes the bill, not the serving
    # the reserved (ODCR) rate follows the region too
    assert london.setup.config.capacity.reserved_price_per_hour == 1.53849


def test_a_region_without_a_known_price_stops_the_simulator(tmp_path: Path, traffic: Traffic) -> None:
    with pytest.raises(ValueError, match=r"g5\.2xlarge: no on-demand price for region 'sa-east-1'"):
        stack_run(stack_in(tmp_path, "sa-east-1"), "mistral-7b", traffic)


def test_a_stack_without_aws_region_is_an_error(tmp_path: Path, traffic: Traffic) -> None:
    path = tmp_path / "Pulumi.noregion.yaml"
    path.write_text(PROD.read_text().replace("  aws:region: us-east-1\n", ""))
    with pytest.raises(ConfigError, match="sets no aws:region"):
        stack_run(path, "mistral-7b", traffic)


RESERVATIONS = ROOT / "tests" / "fixtures" / "stacks" / "Pulumi.reservations.yaml"


def p5e_stack(tmp_path: Path) -> Path:
    """The reservations fixture in us-east-2 with its Capacity Block pool on p5e (sold only as blocks)."""
    path = tmp_path / "Pulumi.p5e.yaml"
    text = RESERVATIONS.read_text().replace("us-east-1", "us-east-2")
    path.write_text(text.replace("instanceFamilies: [p4de]", "instanceFamilies: [p5e]"))
    return path


def test_p5e_is_priced_at_the_block_rate_and_never_buys_beyond_it(tmp_path: Path, traffic: Traffic) -> None:
    """Static at 2 on one block: whatever the traffic, the second replica waits for a node the pool cannot buy,
    so three hours of the seed day's morning cost the block's rate per day as the whole day does."""
    stack = p5e_stack(tmp_path)
    with pytest.raises(ValueError, match=r"p5e\.48xlarge is sold only as Capacity Blocks"):
        stack_run(stack, "llama-70b-batch", traffic, reserved_instances=1)  # no block rate given
    morning = seed_morning()
    run = stack_run(stack, "llama-70b-batch", morning, reserved_instances=1, reserved_usd_per_hour=30.0)
    assert run.instance.instance_type == "p5e.48xlarge"
    s = run.setup
    result = simulate(s.traffic, s.table, next(x for x in run.strategies if x.name == "static-2"), s.config)
    assert result.gpu_cost_usd_per_day == pytest.approx(
        30.0 * 24
    )  # one block; the second replica stays Pending
    assert (
        oracle_for(s, result.slo_violation_pct)["whole_nodes_usd_per_day"] > 0
    )  # the oracle at the block rate
