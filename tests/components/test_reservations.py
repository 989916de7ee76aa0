"""Capacity reservations: a fixture stack with an ODCR pool and a Capacity Block pool, rendered under mocks and
checked against the pinned CRDs and chart values; the schema's rules; the alerts proven with promtool."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from llm_platform.components.specs import reservations
from llm_platform.config.loader import ROOT, ConfigError, parse
from llm_platform.plan.nodes import ADDON_POOL, pool_node_class_name
from llm_platform.tools import render
from tests.components import promtool
from tests.conftest import fixture_stack, stack_values
from tests.shared_check import SHARED_CHECK, check_render

FIXTURE = fixture_stack("reservations")
PINNED_CRD = ROOT.parent / "shared" / "reference" / "crds" / "karpenter.k8s.aws_ec2nodeclasses.yaml"
ODCR = "gpu-al2023-p5-odcr"
BLOCK = "gpu-al2023-p4de-block"


def fixture_values() -> dict[str, Any]:
    return stack_values("reservations")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture stack rendered exactly as `python -m llm_platform.tools.render` renders a stack file."""
    out = tmp_path_factory.mktemp("render") / "reservations"
    assert render.main([str(FIXTURE), "--out", str(out)]) == 0
    return out


def manifests(out: Path, kind: str) -> dict[str, dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all((out / "manifests.yaml").read_text()) if d and d["kind"] == kind]
    return {d["metadata"]["name"]: d for d in docs}


def resources(out: Path, typ: str) -> list[dict[str, Any]]:
    return [r for r in json.loads((out / "resources.json").read_text()) if r["type"] == typ]


# ------------------------------------------------------------------------------------------- render


@pytest.mark.skipif(not SHARED_CHECK.exists(), reason="shared/tools/check_render.py sits beside the repo")
def test_fixture_render_passes_the_pinned_crds_and_chart_values(rendered: Path) -> None:
    result = check_render(rendered)
    assert result.returncode == 0, result.stdout
    assert result.stdout.strip().endswith(": 0 problems")


def test_reservation_pools_get_their_own_node_class_selecting_their_reservations(rendered: Path) -> None:
    classes = manifests(rendered, "EC2NodeClass")
    assert set(classes) == {"gpu-al2023", ODCR, BLOCK, ADDON_POOL}  # the add-on nodes' class selects none
    assert "capacityReservationSelectorTerms" not in classes[ADDON_POOL]["spec"]
    assert "capacityReservationSelectorTerms" not in classes["gpu-al2023"]["spec"]
    assert classes[ODCR]["spec"]["capacityReservationSelectorTerms"] == [
        {"id": "cr-0123456789abcdef0"},
        {"ownerID": "444455556666", "tags": {"llm-platform/reservation": "llama-70b"}},
    ]
    assert classes[BLOCK]["spec"]["capacityReservationSelectorTerms"] == [{"id": "cr-0fedcba9876543210"}]
    # everything else about the node is the shared class's
    for name in (ODCR, BLOCK):
        own = {
            k: v
            for k, v in classes[name]["spec"].items()
            if k not in ("capacityReservationSelectorTerms", "tags")
        }
        shared = {k: v for k, v in classes["gpu-al2023"]["spec"].items() if k != "tags"}
        assert own == shared


def test_node_pools_admit_reserved_and_fall_back_to_their_other_capacity_types(rendered: Path) -> None:
    pools = manifests(rendered, "NodePool")

    def capacity(pool: str) -> list[str]:
        reqs = pools[pool]["spec"]["template"]["spec"]["requirements"]
        return next(r["values"] for r in reqs if r["key"] == "karpenter.sh/capacity-type")

    def node_class(pool: str) -> str:
        return pools[pool]["spec"]["template"]["spec"]["nodeClassRef"]["name"]

    assert capacity("p5-odcr") == ["reserved", "on-demand"]
    assert capacity("p4de-block") == ["reserved"]  # a Capacity Block pool never buys on-demand p4de
    assert capacity("g5") == ["spot", "on-demand"]
    assert (node_class("p5-odcr"), node_class("p4de-block"), node_class("g5")) == (ODCR, BLOCK, "gpu-al2023")


def test_node_pools_wait_for_their_own_node_class(rendered: Path) -> None:
    pools = {r["name"]: r for r in resources(rendered, "kubernetes:karpenter.sh/v1:NodePool")}
    assert set(pools) == {
        "llm-reserve-gpu-g5",
        "llm-reserve-gpu-p5-odcr",
        "llm-reserve-gpu-p4de-block",
        "llm-reserve-addons-pool",
    }


def test_controller_may_launch_into_named_and_shared_reservations(rendered: Path) -> None:
    (policy,) = [
        json.loads(r["inputs"]["policy"])
        for r in resources(rendered, "aws:iam/rolePolicy:RolePolicy")
        if r["name"] == "llm-reserve-karpenter-controller"
    ]
    launch = next(s for s in policy["Statement"] if s["Sid"] == "AllowScopedEC2InstanceAccessActions")
    assert {
        "arn:aws:ec2:us-east-1:111122223333:capacity-reservation/*",
        "arn:aws:ec2:us-east-1:*:capacity-reservation/cr-0123456789abcdef0",
        "arn:aws:ec2:us-east-1:*:capacity-reservation/cr-0fedcba9876543210",
        "arn:aws:ec2:us-east-1:444455556666:capacity-reservation/*",
    } <= set(launch["Resource"])
    reads = next(s for s in policy["Statement"] if s["Sid"] == "AllowRegionalReadActions")
    assert "ec2:DescribeCapacityReservations" in reads["Action"]


def test_reservation_interruptions_and_feature_gate_are_wired(rendered: Path) -> None:
    rules = {r["inputs"]["name"]: r for r in resources(rendered, "aws:cloudwatch/eventRule:EventRule")}
    pattern = json.loads(
        rules["llm-reserve-karpenter-capacity-reservation-interruption"]["inputs"]["eventPattern"]
    )
    assert pattern["detail-type"] == ["EC2 Capacity Reservation Instance Interruption Warning"]
    karpenter = yaml.safe_load((rendered / "helm" / "karpenter.yaml").read_text())
    assert karpenter["values"]["settings"]["featureGates"] == {"reservedCapacity": True, "nodeRepair": True}


def test_reservation_end_times_reach_prometheus(rendered: Path) -> None:
    ksm = yaml.safe_load((rendered / "helm" / "kube-prometheus-stack.yaml").read_text())["values"][
        "kube-state-metrics"
    ]
    assert ksm["customResourceState"]["enabled"] is True
    (resource,) = ksm["customResourceState"]["config"]["spec"]["resources"]
    assert resource["groupVersionKind"]["kind"] == "EC2NodeClass"
    end = next(m for m in resource["metrics"] if m["name"] == "capacity_reservation_end_time_seconds")
    assert end["each"]["gauge"]["path"] == ["status", "capacityReservations"]
    assert end["each"]["gauge"]["valueFrom"] == ["endTime"]
    assert {
        "apiGroups": ["karpenter.k8s.aws"],
        "resources": ["ec2nodeclasses"],
        "verbs": ["list", "watch"],
    } in ksm["rbac"]["extraRules"]
    rule = manifests(rendered, "PrometheusRule")[reservations.RULE_NAME]
    absent = [
        r["expr"]
        for r in rule["spec"]["groups"][0]["rules"]
        if r["alert"] == "CapacityReservationsNotSelected"
    ]
    assert absent == [f'absent({reservations.RESERVATION_INFO}{{ec2nodeclass="{c}"}})' for c in (BLOCK, ODCR)]


@pytest.mark.skipif(not PINNED_CRD.exists(), reason="shared/reference/crds sits beside the repo")
def test_status_fields_the_metrics_read_exist_in_the_pinned_crd() -> None:
    crd = yaml.safe_load(PINNED_CRD.read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    item = schema["properties"]["status"]["properties"]["capacityReservations"]["items"]["properties"]
    assert {"id", "instanceType", "availabilityZone", "reservationType", "state", "endTime"} <= set(item)
    assert "capacity-block" in item["reservationType"]["enum"]


def test_stacks_without_reservations_render_no_reservation_objects(run_program) -> None:
    m = run_program("prod")
    classes = m.by_type("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass")
    assert sorted(c.inputs["metadata"]["name"] for c in classes) == [ADDON_POOL, "gpu-al2023"]
    assert not any("capacityReservationSelectorTerms" in c.inputs["spec"] for c in classes)
    events = [r.inputs["name"] for r in m.by_type("aws:cloudwatch/eventRule:EventRule")]
    assert not any("capacity-reservation" in e for e in events)
    assert not [
        r
        for r in m.by_type("kubernetes:monitoring.coreos.com/v1:PrometheusRule")
        if r.inputs["metadata"]["name"] == reservations.RULE_NAME
    ]


# ------------------------------------------------------------------------------------------- schema


def pool_error(**changes: Any) -> str:
    values = fixture_values()
    values["gpuNodePools"][1].update(changes)
    with pytest.raises(ConfigError) as exc:
        parse(values)
    return str(exc.value)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        (
            {"capacityReservations": []},
            "gpuNodePools[1] (p5-odcr).capacityTypes: [reserved, on-demand] includes 'reserved', which needs capacityReservations",
        ),
        ({"capacityTypes": ["on-demand"]}, "does not include 'reserved'"),
        (
            {"capacityReservations": [{"id": "cr-ABC"}]},
            "capacityReservations[0].id: 'cr-ABC' is not a capacity reservation id; allowed: cr- then",
        ),
        (
            {"capacityReservations": [{"id": "r-0123"}]},
            "capacityReservations[0].id: 'r-0123' is not a capacity reservation id",
        ),
        (
            {"capacityReservations": [{"id": "cr-1", "tags": {"a": "b"}}]},
            "capacityReservations[0].id: 'cr-1' needs exactly one of `id` (cr-...) or `tags`",
        ),
        ({"capacityReservations": [{}]}, "capacityReservations[0]: needs exactly one of"),
        (
            {"capacityReservations": [{"id": "cr-1", "ownerID": "123456789012"}]},
            "capacityReservations[0].ownerID: '123456789012' cannot be combined with id",
        ),
        (
            {"capacityReservations": [{"tags": {"a": "b"}, "ownerID": "1234"}]},
            "capacityReservations[0].ownerID: '1234' is not allowed: an AWS account id is 12 digits",
        ),
        (
            {"capacityReservations": [{"tags": {"team": ""}}]},
            "capacityReservations[0].tags.team: '' is empty; allowed: non-empty keys and values",
        ),
        (
            {"capacityReservations": [{"tags": {}}]},
            "capacityReservations[0].tags: {} has 0 tags; allowed: 1 to 20",
        ),
        (
            {"capacityReservations": [{"id": "cr-1"}, {"id": "cr-1"}]},
            "capacityReservations[1].id: 'cr-1' is listed twice",
        ),
        (
            {"capacityReservations": [{"id": f"cr-{i}"} for i in range(31)]},
            "capacityReservations: a list of 31 items has 31 terms; allowed: at most 30",
        ),
        ({"capacityTypes": ["reserved", "ondemand"]}, "capacityTypes[1]"),
    ],
)
def test_bad_reservation_config_names_the_pool_field_and_value(
    changes: dict[str, Any], expected: str
) -> None:
    assert expected in pool_error(**changes)


def test_unknown_reservation_keys_are_rejected() -> None:
    assert "capacityReservations[0].instanceMatchCriteria" in pool_error(
        capacityReservations=[{"id": "cr-1", "instanceMatchCriteria": "open"}]
    )


# ------------------------------------------------------------------------------------------- alerts

DAY = 86400
HOUR = 3600


def end_time(node_class: str, reservation: str, kind: str, seconds: int) -> dict[str, str]:
    labels = (
        f'ec2nodeclass="{node_class}",capacity_reservation_id="{reservation}",instance_type="p5.48xlarge",'
        f'zone="us-east-1a",reservation_type="{kind}"'
    )
    return {"series": f"{reservations.END_TIME}{{{labels}}}", "values": f"{seconds}x1300"}


def info(node_class: str) -> dict[str, str]:
    labels = f'ec2nodeclass="{node_class}",capacity_reservation_id="cr-1",state="active"'
    return {"series": f"{reservations.RESERVATION_INFO}{{{labels}}}", "values": "1x1300"}


def firing(alert: str, at: str, labels: list[dict[str, str]]) -> dict[str, Any]:
    return {"eval_time": at, "alertname": alert, "exp_alerts": [{"exp_labels": label} for label in labels]}


def block_labels(severity: str, reservation: str = "cr-block") -> dict[str, str]:
    return {
        "severity": severity,
        "ec2nodeclass": BLOCK,
        "capacity_reservation_id": reservation,
        "instance_type": "p5.48xlarge",
        "zone": "us-east-1a",
        "reservation_type": "capacity-block",
    }


def test_capacity_block_end_alerts_fire_by_time_left_and_never_for_plain_odcrs(tmp_path: Path) -> None:
    rule = reservations.prometheus_rule([ODCR, BLOCK], "monitoring")
    promtool.check_rule_file(rule["spec"], tmp_path)
    # time() is the evaluation time; a block ending at 20 h, one at 90 min + 2 days, an ODCR ending at 1 h
    series = [
        end_time(BLOCK, "cr-block", "capacity-block", 20 * HOUR),
        end_time(BLOCK, "cr-later", "capacity-block", 2 * DAY + 90 * 60),
        end_time(ODCR, "cr-odcr", "default", HOUR),
        info(ODCR),
        info(BLOCK),
    ]
    tests = [
        {
            "interval": "1m",
            "input_series": series,
            "alert_rule_test": [
                # 20 h left: a warning; nothing critical; the ODCR's end is not a Capacity Block's
                firing("CapacityBlockEndingSoon", "10m", [block_labels("warning")]),
                firing("CapacityBlockEnding", "10m", []),
                # 2 h 40 min left (ends at 20 h, evaluated at 17 h 20 min): critical, no longer the warning
                firing("CapacityBlockEnding", "17h20m", [block_labels("critical")]),
                firing("CapacityBlockEndingSoon", "17h20m", []),
                # after the end: nothing (the reservation leaves the EC2NodeClass status)
                firing("CapacityBlockEnding", "20h30m", []),
                firing("CapacityReservationsNotSelected", "30m", []),
            ],
        },
        {
            "interval": "1m",
            "input_series": [info(ODCR)],
            "alert_rule_test": [
                firing(
                    "CapacityReservationsNotSelected",
                    "30m",
                    [{"severity": "warning", "ec2nodeclass": BLOCK}],
                ),
            ],
        },
    ]
    # annotations are templates promtool has checked above; the unit tests compare labels
    bare = copy.deepcopy(rule["spec"])
    for r in bare["groups"][0]["rules"]:
        r.pop("annotations")
    promtool.unit_test_rules(bare, tests, tmp_path)


def test_selector_terms_pass_the_crd_rules() -> None:
    """The CRD's CEL rules in Python: every term has a selector, an id term stands alone."""
    pool = parse(fixture_values()).pool("p5-odcr")
    terms = reservations.selector_terms(pool)
    assert all("tags" in t or "id" in t for t in terms)
    assert all(set(t) == {"id"} for t in terms if "id" in t)
    assert pool_node_class_name(pool) == ODCR
