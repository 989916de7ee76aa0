"""A team's share of a shared EKS cluster it does not own: its GPU pool, warm headroom, two models and their
autoscaling, every cluster-wide name under the team's prefix.

The cluster's owners run Karpenter, KEDA, the GPU Operator and a kube-prometheus-stack (release
`prometheus_release`, in `prometheus_namespace`, selecting monitors and rules by `release: <release>`, the
chart's default) and give the team a kubeconfig, Karpenter's node role and an assume-role AWS role. The
team brings its own providers and its own weights bucket; the platform's components build nothing
cluster-wide that another team's could overwrite.
"""

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from llm_platform import (
    GpuHeadroom,
    GpuHeadroomArgs,
    GpuNodePools,
    GpuNodePoolsArgs,
    GpuNodePoolSettings,
    InferenceService,
    InferenceServiceArgs,
    ModelAutoscaling,
    ModelAutoscalingArgs,
    ModelSettings,
)

POOLS: list[GpuNodePoolSettings] = [
    {
        "name": "l4",
        "instanceFamilies": ["g6"],
        "capacityTypes": ["on-demand"],
        "gpuLimit": 6,
        "headroom": {"gpus": 1},
    }
]
MODELS: list[ModelSettings] = [
    {
        "name": "chat",
        "huggingFaceId": "Qwen/Qwen2.5-1.5B-Instruct",
        "nodePool": "l4",
        "maxModelLen": 8192,
        "cache": "s3",  # streamed from the team's own bucket
        "autoscaling": {"minReplicas": 2, "maxReplicas": 3},
        "slo": {"ttftSeconds": 0.5, "itlSeconds": 0.05},
    },
    {
        "name": "rerank",
        "huggingFaceId": "Qwen/Qwen2.5-0.5B-Instruct",
        "nodePool": "l4",
        "maxModelLen": 4096,
        "cache": "nvme",  # synced from the bucket to every node of the pool
        "autoscaling": {"minReplicas": 2, "maxReplicas": 2},
        "slo": {"ttftSeconds": 0.5, "itlSeconds": 0.05},
    },
]


@dataclass(frozen=True)
class Team:
    prefix: str
    cluster_name: str
    kubeconfig: pulumi.Input[str]
    node_role_name: str
    prometheus_url: str
    prometheus_namespace: str
    prometheus_release: str
    deployer_role_arn: str
    weights_bucket: str = ""  # default: <prefix>-llm-weights, the team's existing bucket
    region: str = "us-east-1"


def deploy(team: Team, *, api_key: pulumi.Input[str]) -> dict[str, str]:
    """Every component of the team, through its own providers; returns each model's in-cluster host."""
    aws_provider = aws.Provider(
        f"{team.prefix}-aws",
        region=team.region,
        assume_roles=[aws.ProviderAssumeRoleArgs(role_arn=team.deployer_role_arn)],
    )
    k8s_provider = k8s.Provider(f"{team.prefix}-k8s", kubeconfig=team.kubeconfig)
    opts = pulumi.ResourceOptions(providers=[aws_provider, k8s_provider])
    bucket = team.weights_bucket or f"{team.prefix}-llm-weights"
    monitor_labels = {"release": team.prometheus_release}
    blocks = {"environment": "prod", "gpu_node_pools": POOLS, "models": MODELS}

    pools = GpuNodePools(
        f"{team.prefix}-gpu",
        GpuNodePoolsArgs(
            cluster_name=team.cluster_name,
            gpu_node_pools=POOLS,
            zones=[f"{team.region}a", f"{team.region}b"],
            node_role_name=team.node_role_name,
            prod=True,
            prefix=team.prefix,
        ),
        opts=opts,
    )
    headroom = GpuHeadroom(
        f"{team.prefix}-headroom",
        GpuHeadroomArgs(**blocks, prefix=team.prefix, monitor_labels=monitor_labels),
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[pools])),
    )
    hosts: dict[str, str] = {}
    for model in MODELS:
        service = InferenceService(
            f"{team.prefix}-{model['name']}",
            InferenceServiceArgs(
                **blocks,
                model=model,
                api_key=api_key,
                cluster_name=team.cluster_name,
                weights={"bucket_name": bucket, "bucket_arn": f"arn:aws:s3:::{bucket}"},
                priority_class=headroom.serving_priority_class_name,
                prefix=team.prefix,
                prometheus_namespace=team.prometheus_namespace,
                monitor_labels=monitor_labels,
            ),
            opts=opts,
        )
        ModelAutoscaling(
            f"{team.prefix}-{model['name']}-autoscaling",
            ModelAutoscalingArgs(
                **blocks,
                model=model,
                prefix=team.prefix,
                prometheus_url=team.prometheus_url,
                monitor_labels=monitor_labels,
            ),
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[service])),
        )
        hosts[model["name"]] = service.service_host
    return hosts
