"""A disaggregated model rendered as prefill and decode Deployments (components/specs/disaggregation.py): the
fixture stack `pd` (Llama-3.1-70B, prefill and decode pods of 4 GPUs on p5.48xlarge)."""

from __future__ import annotations

import json
from typing import Any

import yaml

from llm_platform.components.specs import disaggregation as pd
from llm_platform.components.specs import inference_pool, model_cache
from llm_platform.facts.versions import EFA_VLLM_IMAGE, LLM_D_SIDECAR_IMAGE
from llm_platform.plan import ModelPlan
from tests.plans import model_plan, stack_plan


def _plan() -> ModelPlan:
    return model_plan("pd", "llama-70b")


def _deployment(role: str) -> dict[str, Any]:
    m = _plan()
    assert m.disaggregation is not None
    wiring = model_cache.cache_wiring(m, bucket="bucket")
    return pd.role_deployment(
        m, m.disaggregation.role(role), environment="staging", wiring=wiring, mounts_hf_token=False
    )


def _vllm(deployment: dict[str, Any]) -> dict[str, Any]:
    return deployment["spec"]["template"]["spec"]["containers"][0]


def _arg(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_both_roles_run_nixl_over_libfabric_with_their_own_tp() -> None:
    for role in ("prefill", "decode"):
        d = _deployment(role)
        assert d["metadata"]["name"] == f"llama-70b-{role}"
        c = _vllm(d)
        assert c["image"] == EFA_VLLM_IMAGE
        assert _arg(c["args"], "--tensor-parallel-size") == "4"
        kv = json.loads(_arg(c["args"], "--kv-transfer-config"))
        assert kv == {
            "kv_connector": "NixlConnector",
            "kv_role": "kv_both",
            "kv_connector_extra_config": {"backends": ["LIBFABRIC"]},
        }
        env = _env(c)
        assert env["VLLM_NIXL_SIDE_CHANNEL_HOST"] == {"fieldRef": {"fieldPath": "status.podIP"}}
        assert env["VLLM_NIXL_SIDE_CHANNEL_PORT"] == "5600"
        assert env["NCCL_SOCKET_IFNAME"] == "^lo,docker,veth,eni,pod-id-link0"
        assert env["FI_PROVIDER"] == "efa"
        assert "IPC_LOCK" in c["securityContext"]["capabilities"]["add"]
        # half of a p5.48xlarge's 32 EFA interfaces for half its 8 GPUs
        assert c["resources"]["requests"]["vpc.amazonaws.com/efa"] == "16"
        assert c["resources"]["requests"]["nvidia.com/gpu"] == "4"
        labels = d["spec"]["template"]["metadata"]["labels"]
        assert labels["llm-d.ai/role"] == role
        assert d["spec"]["selector"]["matchLabels"]["llm-d.ai/role"] == role


def test_decode_vllm_sits_behind_the_routing_sidecar() -> None:
    d = _deployment("decode")
    c = _vllm(d)
    assert _arg(c["args"], "--port") == "8200"
    assert {p["name"]: p["containerPort"] for p in c["ports"]} == {"http": 8200, "nixl": 5600}
    (sidecar,) = [
        i for i in d["spec"]["template"]["spec"]["initContainers"] if i["name"] == "routing-sidecar"
    ]
    assert sidecar["image"] == LLM_D_SIDECAR_IMAGE and sidecar["restartPolicy"] == "Always"
    assert sidecar["args"] == [
        "--port=8000",
        "--model-server-port=8200",
        "--kv-connector=nixlv2",
        "--secure-proxy=false",
    ]
    prefill = _deployment("prefill")
    assert _arg(_vllm(prefill)["args"], "--port") == "8000"
    assert all(
        i["name"] != "routing-sidecar" for i in prefill["spec"]["template"]["spec"].get("initContainers", [])
    )


def test_roles_share_a_zone() -> None:
    for role in ("prefill", "decode"):
        (term,) = _deployment(role)["spec"]["template"]["spec"]["affinity"]["podAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]
        assert term["topologyKey"] == "topology.kubernetes.io/zone"
        assert term["labelSelector"]["matchLabels"]["app.kubernetes.io/instance"] == "llama-70b"


def test_one_scaled_object_per_role_on_its_signal() -> None:
    m = _plan()
    assert m.disaggregation is not None
    objects = {r.role: pd.role_scaled_object(m, r, "staging") for r in m.disaggregation.roles}
    prefill, decode = objects["prefill"]["spec"], objects["decode"]["spec"]
    assert prefill["scaleTargetRef"]["name"] == "llama-70b-prefill"
    assert (prefill["minReplicaCount"], prefill["maxReplicaCount"]) == (1, 2)
    assert (decode["minReplicaCount"], decode["maxReplicaCount"]) == (1, 4)
    (pt,), (dt,) = prefill["triggers"], decode["triggers"]
    assert "vllm:num_requests_waiting" in pt["metadata"]["query"] and pt["metadata"]["threshold"] == "4"
    assert 'pod=~"llama-70b-prefill-' in pt["metadata"]["query"]
    assert "vllm:kv_cache_usage_perc" in dt["metadata"]["query"] and dt["metadata"]["threshold"] == "0.7"
    assert 'pod=~"llama-70b-decode-' in dt["metadata"]["query"]
    # 0 until one of the role's replicas is available (first rollout), as the aggregated triggers read
    assert 'deployment="llama-70b-prefill"} ) > 0' not in pt["metadata"]["query"]
    assert 'deployment="llama-70b-prefill"}) > 0))' in pt["metadata"]["query"]


def test_network_policies_open_exactly_the_role_ports() -> None:
    policies = {p["metadata"]["name"]: p["spec"] for p in pd.network_policies(_plan())}
    side = policies["llama-70b-kv-side-channel"]
    assert side["ingress"][0]["ports"] == [{"port": 5600, "protocol": "TCP"}]
    to_prefill = policies["llama-70b-prefill-from-decode"]
    assert to_prefill["podSelector"]["matchLabels"]["llm-d.ai/role"] == "prefill"
    assert to_prefill["ingress"][0]["from"][0]["podSelector"]["matchLabels"]["llm-d.ai/role"] == "decode"
    assert to_prefill["ingress"][0]["ports"] == [{"port": 8000, "protocol": "TCP"}]
    assert policies["llama-70b-decode-metrics"]["ingress"][0]["ports"] == [{"port": 8200, "protocol": "TCP"}]


def test_picker_runs_the_pd_profile() -> None:
    config = yaml.safe_load(
        inference_pool.helm_values(_plan())["router"]["epp"]["pluginsCustomConfig"][
            inference_pool.PLUGINS_FILE
        ]
    )
    types = [p["type"] for p in config["plugins"]]
    for plugin in ("prefill-filter", "decode-filter", "disagg-profile-handler", "prefix-based-pd-decider"):
        assert plugin in types
    handler = next(p for p in config["plugins"] if p["type"] == "disagg-profile-handler")
    assert handler["parameters"] == {"deciders": {"prefill": "prefix-based-pd-decider"}}
    profiles = {p["name"]: [r["pluginRef"] for r in p["plugins"]] for p in config["schedulingProfiles"]}
    assert set(profiles) == {"prefill", "decode"}
    assert profiles["prefill"][0] == "prefill-filter" and profiles["decode"][0] == "decode-filter"
    # an aggregated model keeps its single default profile
    plain = inference_pool.endpoint_picker_config(stack_plan("gateway").models[0])
    assert [p["name"] for p in plain["schedulingProfiles"]] == ["default"]
