"""Each component on its own, in a user's Python program: only EksCluster + GpuNodePools + InferenceService,
with args of plain values and the stack file's blocks, no LlmPlatform and no stack file."""

from typing import Any

import pulumi
import pytest

from llm_platform import (
    ConfigError,
    EksCluster,
    EksClusterArgs,
    GpuNodePools,
    GpuNodePoolsArgs,
    GpuNodePoolSettings,
    InferenceService,
    InferenceServiceArgs,
    ModelSettings,
)
from llm_platform.testing import evaluate

POOL: GpuNodePoolSettings = {
    "name": "l4",
    "instanceFamilies": ["g6"],
    "instanceSizes": ["xlarge", "2xlarge"],
    "capacityTypes": ["on-demand"],
    "gpuLimit": 4,
}
MODEL: ModelSettings = {
    "name": "qwen",
    "huggingFaceId": "Qwen/Qwen2.5-1.5B-Instruct",
    "nodePool": "l4",
    "maxModelLen": 8192,
    "cache": "hub",
    "autoscaling": {"minReplicas": 1, "maxReplicas": 2},
    "slo": {"ttftSeconds": 0.5, "itlSeconds": 0.05},
}


def _program(model: ModelSettings = MODEL) -> None:
    cluster = EksCluster(
        "team",
        EksClusterArgs(
            cluster_name="team",
            kubernetes_version="1.34",
            vpc_id="vpc-0123456789abcdef0",
            private_subnet_ids=["subnet-a", "subnet-b"],
            public_subnet_ids=["subnet-c", "subnet-d"],
            endpoint_public_access=False,
            public_access_cidrs=[],
            admin_role_arns=[],
            system_instance_type="m6i.large",
            system_min=2,
            system_max=3,
            system_disk_gib=100,
            deletion_protection=False,
        ),
    )
    in_cluster = pulumi.ResourceOptions(providers=[cluster.provider], depends_on=[cluster])
    GpuNodePools(
        "team-gpu",
        GpuNodePoolsArgs(
            cluster_name="team",
            gpu_node_pools=[POOL],
            zones=["us-east-1a", "us-east-1b"],
            node_role_name="team-karpenter-node",  # the user's own Karpenter's node role
        ),
        opts=in_cluster,
    )
    InferenceService(
        "team-qwen",
        InferenceServiceArgs(
            environment="dev", model=model, gpu_node_pools=[POOL], api_key=pulumi.Output.secret("k")
        ),
        opts=in_cluster,
    )


def _only(recorded: Any, typ: str) -> Any:
    (resource,) = recorded.by_type(typ)
    return resource


def test_the_three_components_build_a_served_model_on_its_own_nodepool() -> None:
    recorded = evaluate(_program)

    node_pool = _only(recorded, "kubernetes:karpenter.sh/v1:NodePool")
    assert node_pool.inputs["metadata"]["name"] == "l4"
    assert node_pool.inputs["spec"]["limits"] == {"nvidia.com/gpu": "4"}
    requirements = {
        r["key"]: r["values"] for r in node_pool.inputs["spec"]["template"]["spec"]["requirements"]
    }
    assert requirements["karpenter.k8s.aws/instance-family"] == ["g6"]
    assert requirements["karpenter.sh/capacity-type"] == ["on-demand"]
    node_class = _only(recorded, "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass")
    assert node_class.inputs["spec"]["role"] == "team-karpenter-node"

    deployment = _only(recorded, "kubernetes:apps/v1:Deployment")
    pod = deployment.inputs["spec"]["template"]["spec"]
    (vllm,) = [c for c in pod["containers"] if c["name"] == "vllm"]
    assert vllm["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert vllm["args"][:3] == ["Qwen/Qwen2.5-1.5B-Instruct", "--served-model-name", "qwen"]
    # the pods land on the NodePool's nodes: its template labels hold the pods' node selector
    labels = node_pool.inputs["spec"]["template"]["metadata"]["labels"]
    assert pod["nodeSelector"] == {"llm-platform/gpu-pool": "l4"}
    assert pod["nodeSelector"].items() <= labels.items()
    assert deployment.inputs["metadata"]["namespace"] == "model-qwen"
    # every in-cluster object goes to the EKS cluster the program built, no default provider
    k8s = [r for r in recorded.created if r.typ.startswith("kubernetes:") and r.custom]
    assert {r.k8s_provider for r in k8s} == {"team-k8s"}
    # a hub-cache model on a cluster without the model bucket: no AWS role, no loader
    assert not recorded.by_type("kubernetes:batch/v1:Job")
    assert not [r for r in recorded.created if r.typ == "aws:iam/role:Role" and "qwen" in r.name]


def test_a_model_its_pool_cannot_hold_stops_with_the_stack_files_message() -> None:
    too_big: ModelSettings = {**MODEL, "autoscaling": {"minReplicas": 1, "maxReplicas": 8}}
    with pytest.raises(ConfigError, match=r"gpuNodePools\[0\] \(l4\)\.gpuLimit: 4 is less than the 8 GPUs"):
        evaluate(lambda: _program(too_big))
