"""Preflight of a disaggregated model (fixture stack `pd`): the render passes every check, and each edit that
reproduces a defect only a real `up` would reveal (roles in two zones, EFA requests a node cannot cover, a role
port a NetworkPolicy closes, an image without the EFA libraries) is a blocker with its numbers."""

from __future__ import annotations

import copy

import pytest

from llm_platform.tools.preflight import view as preflight_view
from llm_platform.tools.preflight.findings import Finding
from llm_platform.tools.preflight.run import run
from llm_platform.tools.preflight.view import Manifest, RenderView
from tests.conftest import fixture_stack


@pytest.fixture(scope="module")
def clean() -> RenderView:
    return preflight_view.from_stack(fixture_stack("pd"))


@pytest.fixture
def view(clean: RenderView) -> RenderView:
    return copy.deepcopy(clean)


def _role(v: RenderView, role: str) -> Manifest:
    return next(m for m in v.of_kind("Deployment") if m.name == f"llama-70b-{role}")


def _blockers(v: RenderView) -> list[Finding]:
    return [f for f in run(v) if f.severity == "blocker" and f.check == "disaggregation"]


def test_fixture_passes(clean: RenderView) -> None:
    assert [f.line() for f in run(clean) if f.severity != "info"] == []


def test_roles_in_two_zones_are_blocked(view: RenderView) -> None:
    pool = next(m for m in view.of_kind("NodePool") if m.name == "p5-efa")
    for r in pool.body["spec"]["template"]["spec"]["requirements"]:
        if r["key"] == "topology.kubernetes.io/zone":
            r["values"] = ["us-east-1a", "us-east-1b"]
    for role in ("prefill", "decode"):
        _role(view, role).body["spec"]["template"]["spec"].pop("affinity")
    (finding,) = _blockers(view)
    assert "can land in different zones" in finding.message and "us-east-1b" in finding.message


def test_efa_requests_beyond_the_node_are_blocked(view: RenderView) -> None:
    container = _role(view, "decode").body["spec"]["template"]["spec"]["containers"][0]
    for kind in ("requests", "limits"):
        container["resources"][kind]["vpc.amazonaws.com/efa"] = "24"
    (finding,) = _blockers(view)
    assert (
        "2 pods of 4 GPUs fit a p5.48xlarge" in finding.message
        and "48 > the 32 EFA interfaces" in finding.message
    )


def test_closed_prefill_port_is_blocked(view: RenderView) -> None:
    view.manifests = [m for m in view.manifests if m.name != "llama-70b-prefill-from-decode"]
    (finding,) = _blockers(view)
    assert finding.object == "Deployment model-llama-70b/llama-70b-prefill"
    assert "on port 8000" in finding.message


def test_closed_side_channel_is_blocked(view: RenderView) -> None:
    view.manifests = [m for m in view.manifests if m.name != "llama-70b-kv-side-channel"]
    findings = _blockers(view)
    assert len(findings) == 2 and all("side-channel port 5600" in f.message for f in findings)


def test_stock_image_on_efa_pods_is_blocked(view: RenderView) -> None:
    _role(view, "prefill").body["spec"]["template"]["spec"]["containers"][0]["image"] = (
        "vllm/vllm-openai:v0.30.0"
    )
    (finding,) = _blockers(view)
    assert "vllm/vllm-openai:v0.30.0 requests vpc.amazonaws.com/efa" in finding.message
    assert "libfabric, aws-ofi-nccl and NIXL" in finding.message
