"""The stack's AWS region: instances not sold there and zones outside it are config errors, named with the
pool, the instance and where it is sold; the catalog rows the reservation pools need exist; each row's
on-demand price is per region, and a region without a known price is an error, never another region's."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from llm_platform.config.loader import ConfigError, parse
from llm_platform.facts.catalog import GPU_INSTANCES, KNOWN_REGIONS
from tests.conftest import stack_values


def p5en_pool(name: str = "p5en") -> dict[str, Any]:
    return {"name": name, "instanceFamilies": [name], "capacityTypes": ["on-demand"], "gpuLimit": 16}


def with_pool(pool: dict[str, Any], zones: list[str] | None = None) -> dict[str, Any]:
    values = copy.deepcopy(stack_values("staging"))
    values["gpuNodePools"].append(pool)
    if zones is not None:
        values["cluster"]["availabilityZones"] = zones
    return values


def test_instances_sold_in_the_region_pass() -> None:
    cfg = parse(with_pool(p5en_pool()), region="us-east-1")
    assert cfg.pool("p5en").instances[0].instance_type == "p5en.48xlarge"


def test_an_instance_not_sold_in_the_region_is_an_error_with_where_it_is_sold() -> None:
    values = with_pool(p5en_pool("p6-b200"), zones=["eu-west-1a", "eu-west-1b"])
    values["gpuNodePools"] = [values["gpuNodePools"][-1]]
    values["models"] = []
    with pytest.raises(ConfigError) as exc:
        parse(values, region="eu-west-1")
    message = str(exc.value)
    assert (
        "gpuNodePools[0] (p6-b200).instanceFamilies: [p6-b200] admits p6-b200.48xlarge, not sold in eu-west-1"
        in message
    )
    assert (
        "allowed: a region that sells it: ap-south-1, ap-south-2, eu-north-1, eu-west-3, us-east-1, us-east-2, us-west-2"
        in message
    )


def test_only_some_sizes_unsold_names_the_sizes_to_keep() -> None:
    values = with_pool(
        {"name": "g6e", "instanceFamilies": ["g6e"], "gpuLimit": 2}, zones=["ca-central-1a", "ca-central-1b"]
    )
    with pytest.raises(ConfigError) as exc:
        parse(values, region="ca-central-1")
    assert "admits g6e.xlarge, not sold in ca-central-1 (aws:region); allowed: " in str(exc.value)


def test_zones_must_belong_to_the_region() -> None:
    with pytest.raises(ConfigError) as exc:
        parse(stack_values("staging"), region="us-west-2")
    lines = str(exc.value).splitlines()
    assert lines[0].startswith(
        "cluster.availabilityZones[0]: 'us-east-1a' is not a zone of the stack's region us-west-2"
    )
    assert lines[1].startswith("cluster.availabilityZones[1]: 'us-east-1b' is not a zone"), (
        "every zone at once"
    )


def test_an_unknown_region_is_an_error_listing_the_known_ones() -> None:
    with pytest.raises(ConfigError) as exc:
        parse(stack_values("staging"), region="mars-east-1")
    assert "aws:region: 'mars-east-1' has no offerings in the instance catalog; allowed: af-south-1" in str(
        exc.value
    )


def test_without_a_region_the_region_rules_wait() -> None:
    """Tools that validate only the `llm-platform:` keys (no aws:region) still get every other rule."""
    parse(with_pool(p5en_pool()), region=None)


def test_every_catalog_instance_is_sold_somewhere_known_and_in_the_price_tables_region() -> None:
    for instance in GPU_INSTANCES.values():
        assert instance.regions and instance.regions <= KNOWN_REGIONS, instance.instance_type
        # a price is only real where EC2 sells the instance; us-east-1 orders a pool's sizes; a type sold
        # only as Capacity Blocks has no on-demand price anywhere
        assert set(instance.prices) <= instance.regions, instance.instance_type
        assert ("us-east-1" in instance.prices) != instance.reserved_only, instance.instance_type


# karpenter-provider-aws v1.14.1 zz_generated.pricing_aws.go (us-east-1): the regional source must agree
KARPENTER_US_EAST_1 = {
    "g5.xlarge": 1.006, "g5.2xlarge": 1.212, "g5.12xlarge": 5.672, "g5.48xlarge": 16.288,
    "g6.xlarge": 0.8048, "g6.2xlarge": 0.9776, "g6e.xlarge": 1.861, "p4d.24xlarge": 21.957642,
    "p4de.24xlarge": 27.44705, "p5.48xlarge": 55.04, "p5en.48xlarge": 63.296, "p6-b200.48xlarge": 113.9328,
}  # fmt: skip


def test_us_east_1_prices_are_karpenters_pinned_table() -> None:
    priced = {
        t: i.on_demand_usd_per_hour("us-east-1") for t, i in GPU_INSTANCES.items() if not i.reserved_only
    }
    assert priced == KARPENTER_US_EAST_1


def p5e_pool(capacity_types: list[str]) -> dict[str, Any]:
    return {
        "name": "p5e-block", "instanceFamilies": ["p5e"], "capacityTypes": capacity_types, "gpuLimit": 16,
        "capacityReservations": [{"id": "cr-0fedcba9876543210"}],
    }  # fmt: skip


def test_p5e_is_a_capacity_block_pool_where_ec2_sells_it() -> None:
    zones = ["us-east-2a", "us-east-2b"]
    cfg = parse(with_pool(p5e_pool(["reserved"]), zones=zones), region="us-east-2")
    p5e = cfg.pool("p5e-block").instances[0]
    assert (p5e.instance_type, p5e.gpus, p5e.gpu.name, p5e.reserved_only) == ("p5e.48xlarge", 8, "H200", True)
    with pytest.raises(ConfigError) as exc:
        parse(with_pool(p5e_pool(["reserved"])), region="us-east-1")
    assert (
        "admits p5e.48xlarge, not sold in us-east-1 (aws:region); allowed: a region that sells it: ap-southeast-2"
        in str(exc.value)
    )


@pytest.mark.parametrize("types", [["reserved", "on-demand"], ["reserved", "spot"]])
def test_p5e_has_no_on_demand_or_spot_to_fall_back_to(types: list[str]) -> None:
    with pytest.raises(ConfigError) as exc:
        parse(with_pool(p5e_pool(types), zones=["us-east-2a", "us-east-2b"]), region="us-east-2")
    assert (
        "cannot buy p5e.48xlarge: it is sold only as Capacity Blocks (no on-demand or spot); allowed: [reserved]"
        in (str(exc.value))
    )


def test_p5e_has_no_on_demand_price_to_guess() -> None:
    with pytest.raises(ValueError, match="sold only as Capacity Blocks and has no on-demand price"):
        GPU_INSTANCES["p5e.48xlarge"].on_demand_usd_per_hour("us-east-2")


def test_prices_differ_by_region() -> None:
    p5 = GPU_INSTANCES["p5.48xlarge"]
    assert p5.on_demand_usd_per_hour("ap-northeast-2") == 75.9552
    assert p5.on_demand_usd_per_hour("eu-north-1") == 58.8928
    assert GPU_INSTANCES["g5.2xlarge"].on_demand_usd_per_hour("eu-west-2") == 1.53849


def test_the_us_east_1_order_of_sizes_holds_in_every_priced_region() -> None:
    """A pool's sizes are ordered by the us-east-1 price (Karpenter's cheapest fit): that order must be the
    order of the prices in every region where all of them have one."""
    for family in {i.family for i in GPU_INSTANCES.values()}:
        rows = sorted(
            (i for i in GPU_INSTANCES.values() if i.family == family), key=lambda i: i.list_usd_per_hour
        )
        regions = set.intersection(*(set(i.prices) for i in rows))
        for region in regions:
            prices = [i.on_demand_usd_per_hour(region) for i in rows]
            assert prices == sorted(prices), (family, region)


def test_a_region_without_a_known_price_is_an_error_naming_the_priced_regions() -> None:
    g5 = GPU_INSTANCES["g5.2xlarge"]
    assert "sa-east-1" in g5.regions  # sold there, but neither source prices it
    with pytest.raises(ValueError, match="no on-demand price for region 'sa-east-1'") as exc:
        g5.on_demand_usd_per_hour("sa-east-1")
    assert "regions with a price: ap-east-1, ap-northeast-1," in str(exc.value)
    assert "does not sell" not in str(exc.value)
    with pytest.raises(ValueError, match=r"EC2 does not sell p6-b200\.48xlarge there"):
        GPU_INSTANCES["p6-b200.48xlarge"].on_demand_usd_per_hour("eu-west-1")


@pytest.mark.parametrize("family", ["p4d", "p4de", "p5", "p5e", "p5en", "p6-b200"])
def test_reservation_families_are_in_the_catalog_and_get_pools_of_their_own(family: str) -> None:
    values = with_pool(p5en_pool(family) | {"instanceFamilies": [family, "g5"]})
    with pytest.raises(ConfigError) as exc:
        parse(values, region="us-east-1")
    assert f"mixes {family} with other families; allowed: {family} in a single-family pool of its own" in str(
        exc.value
    )
