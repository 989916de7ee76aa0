"""The workload policies judge a multi-node vLLM (a LeaderWorkerSet: leader and worker pod templates) as they
judge a Deployment, with the GPUs of one pod being TP x PP over --nnodes, and the group size matching it."""

from __future__ import annotations

import copy
from typing import Any

from policy.llm_platform_policies.objects import DEPLOYMENT, LEADER_WORKER_SET
from policy.llm_platform_policies.workloads import (
    no_plaintext_secret_env,
    prod_vllm_zone_spread,
    vllm_graceful_drain,
    vllm_no_hub_downloads_outside_dev,
    vllm_shm_for_tensor_parallel,
    vllm_tensor_parallel_within_node,
)
from tests.policy.builders import resource_args, violations, vllm_deployment

MULTI_NODE = ["--pipeline-parallel-size", "2", "--nnodes", "2", "--master-addr", "$(LWS_LEADER_ADDRESS)"]


def lws(*, tp: int = 8, size: int | None = 2, gpus: int = 8, leader: bool = True) -> dict[str, Any]:
    """Two nodes of 8 GPUs serving TP 8 x PP 2, as the multinode component writes it (leader + workers)."""
    template = copy.deepcopy(vllm_deployment(tp=tp, gpus=gpus)["spec"]["template"])
    vllm = template["spec"]["containers"][0]
    vllm["args"] += [*MULTI_NODE, "--node-rank", "0"]
    worker = copy.deepcopy(template)
    worker["spec"]["containers"][0]["args"] = [*vllm["args"][:-1], "$(LWS_WORKER_INDEX)", "--headless"]
    worker["spec"]["containers"][0].pop("lifecycle")
    spec: dict[str, Any] = {"workerTemplate": worker}
    if leader:
        spec["leaderTemplate"] = template
    if size is not None:
        spec["size"] = size
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {
            "name": "llama-405b",
            "namespace": "model-llama-405b",
            "labels": {"app.kubernetes.io/name": "vllm", "llm-platform/environment": "prod"},
        },
        "spec": {"replicas": 2, "leaderWorkerTemplate": spec},
    }


def found(policy: Any, obj: dict[str, Any], kind: str = LEADER_WORKER_SET) -> list[str]:
    return violations(policy, resource_args(kind, obj, stack="prod"))


def test_a_two_node_group_of_eight_gpus_each_passes_every_workload_rule() -> None:
    for policy in (
        vllm_tensor_parallel_within_node,
        vllm_shm_for_tensor_parallel,
        vllm_no_hub_downloads_outside_dev,
        vllm_graceful_drain,
        no_plaintext_secret_env,
        prod_vllm_zone_spread,
    ):
        assert found(policy, lws()) == [], policy.name


def test_the_gpu_limit_is_tp_times_pp_over_the_nodes() -> None:
    messages = found(vllm_tensor_parallel_within_node, lws(gpus=16))
    assert len(messages) == 2  # leader and workers
    assert "(leader)" in messages[0] and "(worker)" in messages[1]
    assert "= 8" in messages[0] and "--nnodes 2" in messages[0]


def test_a_group_size_other_than_nnodes_never_forms() -> None:
    assert any("group size is 3" in m for m in found(vllm_tensor_parallel_within_node, lws(size=3)))
    # no size: the API's default of 1 pod per group, while vLLM waits for a second node
    assert any("group size is 1" in m for m in found(vllm_tensor_parallel_within_node, lws(size=None)))


def test_without_a_leader_template_the_worker_template_serves_and_is_judged() -> None:
    obj = lws(leader=False)
    worker = obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]
    worker["volumes"] = [v for v in worker["volumes"] if v["name"] != "shm"]
    messages = found(vllm_shm_for_tensor_parallel, obj)
    assert messages and all("/dev/shm" in m for m in messages)
    assert "(leader)" in messages[0]


def test_worker_pods_are_checked_for_plaintext_secrets_and_hub_downloads() -> None:
    obj = lws()
    worker = obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    worker["env"].append({"name": "HF_TOKEN", "value": "hf_abc"})
    worker["args"][1] = "meta-llama/Llama-3.1-405B-Instruct"
    worker["env"] = [e for e in worker["env"] if e["name"] != "HF_HUB_OFFLINE"]
    assert any("worker container 'vllm'" in m for m in found(no_plaintext_secret_env, obj))
    hub = found(vllm_no_hub_downloads_outside_dev, obj)
    assert len(hub) == 1 and "(worker)" in hub[0]


def test_a_deployment_told_to_span_nodes_is_sent_to_a_leader_worker_set() -> None:
    d = vllm_deployment(tp=8)
    d["spec"]["template"]["spec"]["containers"][0]["args"] += MULTI_NODE
    messages = found(vllm_tensor_parallel_within_node, d, DEPLOYMENT)
    assert len(messages) == 1 and "LeaderWorkerSet" in messages[0]
