"""Preflight of a multi-node replica (fixture stack `multinode`): the render passes every check, and each edit
that reproduces a defect only a real `up` would otherwise reveal is reported with its numbers."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from llm_platform.tools import render, validate_render
from llm_platform.tools.preflight import view as preflight_view
from llm_platform.tools.preflight.findings import Finding
from llm_platform.tools.preflight.run import run
from llm_platform.tools.preflight.view import Manifest, RenderView
from tests.conftest import fixture_stack


@pytest.fixture(scope="module")
def clean() -> RenderView:
    return preflight_view.from_stack(fixture_stack("multinode"))


@pytest.fixture
def view(clean: RenderView) -> RenderView:
    return copy.deepcopy(clean)


def _one(v: RenderView, kind: str) -> Manifest:
    (m,) = [m for m in v.manifests if m.kind == kind and (kind != "EC2NodeClass" or m.name != "addons")]
    return m


def _pool(v: RenderView) -> Manifest:
    return next(m for m in v.manifests if m.kind == "NodePool" and m.name == "p5-efa")


def _problems(v: RenderView) -> list[Finding]:
    return [f for f in run(v) if f.severity != "info"]


def test_fixture_passes_and_reports_the_pool_room(clean: RenderView) -> None:
    findings = run(clean)
    assert [f.line() for f in findings if f.severity != "info"] == []
    room = next(f for f in findings if f.check == "multinode")
    assert (
        "48 holds LeaderWorkerSet model-llama-405b/llama-405b at 2 groups x 2 nodes x 8 GPUs = 32 GPUs"
        in room.message
    )
    assert "plus a surge group of 16 GPUs" in room.message


def test_without_the_efa_device_plugin_no_worker_schedules(view: RenderView) -> None:
    del view.releases["aws-efa-k8s-device-plugin"]
    problems = _problems(view)
    assert any(
        f.check == "multinode" and "no aws-efa-k8s-device-plugin release" in f.message for f in problems
    )
    unschedulable = [f for f in problems if f.check == "schedulability" and "(worker)" in f.object]
    assert unschedulable and "requests 32 EFA interfaces" in unschedulable[0].message


def test_gpu_limit_without_room_for_the_surge_group_blocks(view: RenderView) -> None:
    _pool(view).body["spec"]["limits"]["nvidia.com/gpu"] = "40"
    (f,) = [f for f in _problems(view) if f.check == "multinode"]
    assert f.severity == "blocker" and "40 leaves 8 GPUs above the maximum" in f.message
    assert "group(s) of 16 GPUs" in f.message


def test_in_place_rollout_is_a_warning_with_the_limit_that_would_surge(view: RenderView) -> None:
    _pool(view).body["spec"]["limits"]["nvidia.com/gpu"] = "32"
    lws = _one(view, "LeaderWorkerSet")
    lws.body["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"] = {"maxSurge": 0, "maxUnavailable": 1}
    (f,) = [f for f in _problems(view) if f.check == "multinode"]
    assert f.severity == "warning" and "gpuLimit 48 would let it surge" in f.message


def test_gpu_limit_below_the_maximum_blocks(view: RenderView) -> None:
    _pool(view).body["spec"]["limits"]["nvidia.com/gpu"] = "24"
    assert any("24 is less than the 32 GPUs" in f.message for f in _problems(view))


def test_efa_request_must_match_what_the_class_attaches(view: RenderView) -> None:
    worker = _one(view, "LeaderWorkerSet").body["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    worker["spec"]["containers"][0]["resources"]["requests"]["vpc.amazonaws.com/efa"] = "16"
    (f,) = [f for f in _problems(view) if f.check == "multinode"]
    assert f.severity == "warning" and "requests 16 vpc.amazonaws.com/efa; each node gets 32" in f.message
    worker["spec"]["containers"][0]["resources"]["requests"]["vpc.amazonaws.com/efa"] = "33"
    assert any(
        f.severity == "blocker" and "requests 33 vpc.amazonaws.com/efa" in f.message for f in _problems(view)
    )


def test_an_instance_type_with_fewer_efa_interfaces_blocks(view: RenderView) -> None:
    requirement = _pool(view).body["spec"]["template"]["spec"]["requirements"][0]
    requirement["values"] = [*requirement["values"], "p5en.48xlarge"]
    assert any("p5en.48xlarge, which has 16 EFA interfaces" in f.message for f in _problems(view))


def test_nodes_must_be_in_one_zone(view: RenderView) -> None:
    _pool(view).body["spec"]["template"]["spec"]["requirements"][-1]["values"] = ["us-east-1a", "us-east-1b"]
    assert any("a group's nodes need one zone" in f.message for f in _problems(view))


def test_the_placement_group_must_be_created(view: RenderView) -> None:
    key = next(k for k in view.resources if k.startswith("aws:ec2/placementGroup:PlacementGroup::"))
    del view.resources[key]
    assert any("no cluster placement group of that name" in f.message for f in _problems(view))


def test_a_reserved_pool_must_not_ask_for_a_placement_group(view: RenderView) -> None:
    capacity = _pool(view).body["spec"]["template"]["spec"]["requirements"][2]
    assert capacity["key"] == "karpenter.sh/capacity-type"
    capacity["values"] = ["reserved"]
    assert any("launches into capacity reservations" in f.message for f in _problems(view))


def test_the_efa_security_group_must_allow_itself(view: RenderView) -> None:
    key = next(k for k in view.resources if k.endswith("-efa-ingress-self"))
    view.resources[key]["ipProtocol"] = "tcp"
    assert any("allows all traffic from and to itself" in f.message for f in _problems(view))


def test_karpenter_must_be_allowed_to_resolve_the_placement_group(view: RenderView) -> None:
    key = next(k for k, v in view.resources.items() if "DescribePlacementGroups" in str(v.get("policy", "")))
    policy = json.loads(view.resources[key]["policy"])
    for statement in policy["Statement"]:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        statement["Action"] = [a for a in actions if a != "ec2:DescribePlacementGroups"] or [
            "ec2:DescribeImages"
        ]
    view.resources[key]["policy"] = json.dumps(policy)
    assert any(
        f.check == "multinode" and "ec2:DescribePlacementGroups is not granted" in f.message
        for f in _problems(view)
    )


def test_a_capacity_block_pool_renders_validates_and_passes(tmp_path: Path) -> None:
    """The fixture on a reserved-only p5 pool (Capacity Blocks): no placement group is created or selected,
    the render validates against the pinned CRDs, and preflight finds no blocker."""
    stack = yaml.safe_load(fixture_stack("multinode").read_text())
    pool = stack["config"]["llm-platform:gpuNodePools"][0]
    pool |= {"capacityTypes": ["reserved"], "capacityReservations": [{"id": "cr-0123456789abcdef0"}]}
    path = tmp_path / "Pulumi.multinode-block.yaml"
    path.write_text(yaml.safe_dump(stack))
    evaluated = render.evaluate(path)
    assert validate_render.problems(evaluated.manifests, validate_render.load_crds(), "1.34") == []
    (node_class,) = [
        d for d in evaluated.manifests if d["kind"] == "EC2NodeClass" and d["metadata"]["name"] != "addons"
    ]
    assert "placementGroupSelector" not in node_class["spec"]
    assert not [r for r in evaluated.resources if r["type"] == "aws:ec2/placementGroup:PlacementGroup"]
    findings = run(preflight_view.from_mocks(path, evaluated.mocks))
    assert [f.line() for f in findings if f.severity == "blocker"] == []
