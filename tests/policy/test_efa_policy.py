"""The pack's EFA rules (policy/llm_platform_policies/efa.py): `vllm-efa-pods` on a vLLM Deployment that requests
EFA (the platform's own P/D role passes, each way a pod would silently fall back to TCP is refused) and
`pd-role-ports` on the pd fixture's render (passes; a NetworkPolicy removed closes a role port and is refused)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from llm_platform.tools.render import evaluate
from policy.llm_platform_policies import pd_role_ports, vllm_efa_pods
from policy.llm_platform_policies.objects import DEPLOYMENT
from tests.conftest import fixture_stack
from tests.policy.builders import container_of, render_violations, resource_args, violations, vllm_deployment


def _efa_deployment() -> dict[str, Any]:
    d = vllm_deployment(tp=4)
    c = container_of(d)
    c["image"] = "ghcr.io/llm-d/llm-d-aws:v0.9.0"
    c["resources"] = {"requests": {"vpc.amazonaws.com/efa": "16"}, "limits": {"vpc.amazonaws.com/efa": "16"}}
    c["securityContext"] = {"capabilities": {"drop": ["ALL"], "add": ["IPC_LOCK"]}}
    c["env"] = [
        *c.get("env", []),
        {"name": "NCCL_SOCKET_IFNAME", "value": "^lo,docker,veth,eni,pod-id-link0"},
    ]
    return d


def _violations(d: dict[str, Any]) -> list[str]:
    return violations(vllm_efa_pods, resource_args(DEPLOYMENT, d, stack="staging"))


def test_platform_efa_pod_passes() -> None:
    assert _violations(_efa_deployment()) == []


def test_stock_image_is_refused() -> None:
    d = _efa_deployment()
    container_of(d)["image"] = "vllm/vllm-openai:v0.30.0"
    (message,) = _violations(d)
    assert "vllm/vllm-openai:v0.30.0 is not known to carry libfabric, aws-ofi-nccl and NIXL" in message


def test_missing_ipc_lock_is_refused() -> None:
    d = _efa_deployment()
    container_of(d)["securityContext"] = {"capabilities": {"drop": ["ALL"]}}
    (message,) = _violations(d)
    assert "IPC_LOCK" in message


@pytest.mark.parametrize("value", ["^lo,docker,veth,eni", "pod-id-link0,eth0", None])
def test_nccl_on_the_pod_identity_link_is_refused(value: str | None) -> None:
    d = _efa_deployment()
    c = container_of(d)
    c["env"] = [e for e in c["env"] if e["name"] != "NCCL_SOCKET_IFNAME"]
    if value is not None:
        c["env"].append({"name": "NCCL_SOCKET_IFNAME", "value": value})
    (message,) = _violations(d)
    assert "pod-id-link0" in message


def test_pods_without_efa_are_not_judged() -> None:
    d = vllm_deployment(tp=4)
    container_of(d)["image"] = "vllm/vllm-openai:v0.30.0"
    assert _violations(d) == []


# ------------------------------------------------------------------------------------ P/D role ports


def _pd_render() -> list[dict[str, Any]]:
    return copy.deepcopy(evaluate(fixture_stack("pd")).resources)


def test_pd_render_passes_the_role_ports_rule() -> None:
    assert render_violations(pd_role_ports, _pd_render(), "pd") == []


@pytest.mark.parametrize(
    ("dropped", "expected"),
    [
        ("llama-70b-prefill-from-decode", "decode pods on the prefill pods' port 8000"),
        ("llama-70b-kv-side-channel", "NIXL side-channel port 5600"),
    ],
)
def test_a_closed_role_port_is_refused(dropped: str, expected: str) -> None:
    resources = [
        r
        for r in _pd_render()
        if not (
            r["type"].endswith("NetworkPolicy") and r["inputs"].get("metadata", {}).get("name") == dropped
        )
    ]
    found = render_violations(pd_role_ports, resources, "pd")
    assert found and all("model llama-70b" in v for v in found)
    assert any(expected in v for v in found)
