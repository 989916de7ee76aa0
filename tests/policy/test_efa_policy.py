"""The pack's `vllm-efa-pods` rule (policy/llm_platform_policies/efa.py) on a vLLM Deployment that requests EFA:
the platform's own P/D role passes, and each way a pod would silently fall back to TCP is refused."""

from __future__ import annotations

from typing import Any

import pytest

from policy.llm_platform_policies import vllm_efa_pods
from policy.llm_platform_policies.objects import DEPLOYMENT
from tests.policy.builders import container_of, resource_args, violations, vllm_deployment


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
