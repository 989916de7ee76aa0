"""Preflight of the CPU KV tier (tools/preflight/kv_offload.py, fixture stack `kvtier`): the fixture passes
with each tier's room reported, and a tier (with the pod's other memory) that no node of the pool holds next to
its DaemonSets blocks with the numbers, as does a node whose GPUs take more grown replicas than its memory."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest

from llm_platform.tools import render, validate_render
from llm_platform.tools.preflight import view as preflight_view
from llm_platform.tools.preflight.findings import Finding, blockers
from llm_platform.tools.preflight.kv_offload import kv_offload, tier_gib
from llm_platform.tools.preflight.run import run
from llm_platform.tools.preflight.view import Manifest, RenderView
from tests.conftest import fixture_stack
from tests.shared_check import check_render


@pytest.fixture(scope="module")
def clean() -> RenderView:
    return preflight_view.from_stack(fixture_stack("kvtier"))


@pytest.fixture
def view(clean: RenderView) -> RenderView:
    return copy.deepcopy(clean)


def _deployment(v: RenderView, name: str) -> Manifest:
    return next(m for m in v.manifests if m.kind == "Deployment" and m.name == name)


def _vllm(d: Manifest) -> dict:
    return next(c for c in d.body["spec"]["template"]["spec"]["containers"] if c["name"] == "vllm")


def _tier_findings(v: RenderView) -> list[Finding]:
    return [f for f in run(v) if f.check == "kv-offload"]


def test_fixture_passes_with_each_tiers_room(clean: RenderView) -> None:
    findings = run(clean)
    assert blockers(findings) == [], "\n".join(f.line() for f in blockers(findings))
    tiers = {f.object: f for f in findings if f.check == "kv-offload"}
    assert set(tiers) == {"Deployment model-chat-tier/chat-tier", "Deployment model-docs-tier/docs-tier"}
    chat = tiers["Deployment model-chat-tier/chat-tier"]
    assert chat.severity == "info"
    assert "CPU KV tier 12 GiB; the pod requests 24576 MiB" in chat.message
    assert "the smallest node that holds it is g5.2xlarge" in chat.message


def test_tier_is_read_from_the_flags_and_lmcaches_env(clean: RenderView) -> None:
    assert tier_gib(_vllm(_deployment(clean, "chat-tier"))) == 12
    assert tier_gib(_vllm(_deployment(clean, "docs-tier"))) == 10
    assert tier_gib({"args": ["model", "--tensor-parallel-size", "2"]}) is None


def test_a_stack_without_a_tier_has_no_finding() -> None:
    assert kv_offload(preflight_view.from_stack(fixture_stack("dev"))) == []


def test_a_tier_no_node_holds_blocks_with_the_numbers(view: RenderView) -> None:
    """A 40 GiB tier: the pod asks for 9 + 48 = 57 GiB, and the pool's largest node (2xlarge) has 32 GiB."""
    container = _vllm(_deployment(view, "chat-tier"))
    args = container["args"]
    args[args.index("--kv-offloading-size") + 1] = "40"
    container["resources"]["requests"]["memory"] = "57Gi"
    container["resources"]["limits"]["memory"] = "61Gi"
    (f,) = [f for f in _tier_findings(view) if f.object.endswith("chat-tier")]
    assert f.severity == "blocker"
    assert "CPU KV tier 40 GiB; the pod requests 58368 MiB of memory with it" in f.message
    assert "free of" in f.message and "allocatable after DaemonSets" in f.message
    assert "allowed: a smaller cpuGiBPerReplica, or larger instance sizes in the pool" in f.message


def test_replicas_a_multi_gpu_node_cannot_hold_are_reported(view: RenderView) -> None:
    """On a 4-GPU g5.12xlarge (192 GiB), four one-GPU replicas of 60 GiB each do not fit: 3 do."""
    pool = next(m for m in view.manifests if m.kind == "NodePool" and m.name == "gpu-tier")
    for req in pool.body["spec"]["template"]["spec"]["requirements"]:
        if req["key"] == "node.kubernetes.io/instance-type":
            req["values"] = ["g5.12xlarge"]
    container = _vllm(_deployment(view, "chat-tier"))
    container["resources"]["requests"]["memory"] = "60Gi"
    (f,) = [f for f in _tier_findings(view) if f.object.endswith("chat-tier")]
    assert f.severity == "warning"
    assert "room for 3 of the 4 replicas its GPUs take" in f.message


def test_an_oversized_tier_in_the_stack_file_blocks(tmp_path: Path) -> None:
    """End to end from the stack file: 40 GiB passes the schema (more than the GPU cache) and blocks here."""
    path = tmp_path / "Pulumi.kvtier.yaml"
    path.write_text(
        fixture_stack("kvtier").read_text().replace("cpuGiBPerReplica: 12", "cpuGiBPerReplica: 40")
    )
    findings = blockers(run(preflight_view.from_stack(path)))
    assert {f.object for f in findings} == {"Deployment model-chat-tier/chat-tier"}
    (tier,) = [f for f in findings if f.check == "kv-offload"]
    assert "CPU KV tier 40 GiB; the pod requests 58368 MiB" in tier.message


def test_fixture_render_has_no_schema_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The kvtier render against the pinned CRDs and kubernetes-validate, and the workspace's check_render."""
    stack = tmp_path / "Pulumi.kvtier.yaml"
    shutil.copy(fixture_stack("kvtier"), stack)
    out = tmp_path / "build" / "kvtier"
    render.write(render.evaluate(stack), out)
    assert validate_render.main([str(stack), "--build", str(tmp_path / "build")]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith("0 problems")
    checked = check_render(out)
    assert checked.returncode == 0 and "0 problems" in checked.stdout, checked.stdout + checked.stderr
