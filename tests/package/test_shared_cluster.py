"""Several teams on one cluster none of them owns: each team's GPU pools, headroom, models and autoscaling,
built from the public components with a prefix, its own Prometheus and its own providers."""

from collections import Counter
from typing import Any

import pulumi
import pulumi_aws as aws
import pytest

from llm_platform import (
    ConfigError,
    ExistingCluster,
    ExistingClusterArgs,
    Gateway,
    GatewayArgs,
    GatewayRoutes,
    GatewayRoutesArgs,
    GatewaySettings,
    GpuHeadroom,
    GpuHeadroomArgs,
    GpuNodePools,
    GpuNodePoolsArgs,
    GpuNodePoolSettings,
    InferenceService,
    InferenceServiceArgs,
    LlmPlatform,
    ModelAutoscaling,
    ModelAutoscalingArgs,
    ModelSettings,
)
from llm_platform.components.multinode import EfaNetwork, EfaNetworkArgs
from llm_platform.config.loader import parse_block
from llm_platform.testing import PlatformMocks, Registered, evaluate, example_values, test_args

TEAM_PROMETHEUS = "http://prometheus-operated.observability.svc.cluster.local:9090"
RELEASE = {"release": "team-prometheus"}  # kube-prometheus-stack's default selectors: release=<its release>
POOLS: list[GpuNodePoolSettings] = [
    {"name": "l4", "instanceFamilies": ["g6"], "gpuLimit": 4, "headroom": {"gpus": 1}},
]
MODELS: list[ModelSettings] = [
    {
        "name": name,
        "huggingFaceId": "Qwen/Qwen2.5-1.5B-Instruct",
        "nodePool": "l4",
        "maxModelLen": 8192,
        "cache": "hub",
        "autoscaling": {"minReplicas": 1, "maxReplicas": 1},
        "slo": {"ttftSeconds": 0.5, "itlSeconds": 0.05},
    }
    for name in ("chat", "embed")
]


def team(prefix: str, k8s: pulumi.ProviderResource) -> None:
    """One team's share of the cluster, every name under `prefix` (the same pool and model names as the
    other team's: the prefix alone keeps them apart)."""
    opts = pulumi.ResourceOptions(providers=[k8s])
    blocks: dict[str, Any] = {"environment": "dev", "gpu_node_pools": POOLS, "models": MODELS}
    pools = GpuNodePools(
        f"{prefix}-gpu",
        GpuNodePoolsArgs(
            cluster_name="shared",
            gpu_node_pools=POOLS,
            zones=["us-east-1a"],
            node_role_name="shared-karpenter-node",
            prefix=prefix,
        ),
        opts=opts,
    )
    headroom = GpuHeadroom(
        f"{prefix}-headroom",
        GpuHeadroomArgs(**blocks, has_model_bucket=False, prefix=prefix, monitor_labels=RELEASE),
        opts=pulumi.ResourceOptions(providers=[k8s], depends_on=[pools]),
    )
    for model in MODELS:
        service = InferenceService(
            f"{prefix}-{model['name']}",
            InferenceServiceArgs(
                **blocks,
                model=model,
                api_key=pulumi.Output.secret("k"),
                priority_class=headroom.serving_priority_class_name,
                prefix=prefix,
                prometheus_namespace="observability",
                monitor_labels=RELEASE,
            ),
            opts=opts,
        )
        ModelAutoscaling(
            f"{prefix}-{model['name']}-autoscaling",
            ModelAutoscalingArgs(
                **blocks, model=model, prefix=prefix, prometheus_url=TEAM_PROMETHEUS, monitor_labels=RELEASE
            ),
            opts=pulumi.ResourceOptions(providers=[k8s], depends_on=[service]),
        )


def two_teams() -> None:
    cluster = ExistingCluster("shared", ExistingClusterArgs(cluster_name="shared", kubeconfig="{}"))
    team("search", cluster.provider)
    team("support", cluster.provider)


def objects(recorded: Any) -> list[tuple[str, str, str]]:
    """(kind, namespace, name) of every Kubernetes object the program writes."""
    out = []
    for r in recorded.created:
        if r.typ.startswith("kubernetes:") and r.custom and "helm.sh" not in r.typ:
            metadata = r.inputs.get("metadata") or {}
            out.append((r.typ.rsplit(":", 1)[-1], metadata.get("namespace", ""), metadata["name"]))
    return out


def pod_spec(r: Registered) -> dict[str, Any]:
    return r.inputs["spec"]["template"]["spec"]


@pytest.fixture(scope="module")
def two_teams_recorded() -> PlatformMocks:
    """One evaluation of `two_teams` for the tests that only read what it registered."""
    return evaluate(two_teams)


@pytest.fixture(scope="module")
def routes_recorded() -> PlatformMocks:
    """One evaluation of `gateway_and_two_teams_routes` for the tests that only read it."""
    return evaluate(gateway_and_two_teams_routes)


def test_two_teams_on_one_cluster_write_no_object_twice(two_teams_recorded: PlatformMocks) -> None:
    recorded = two_teams_recorded
    written = objects(recorded)
    twice = [key for key, count in Counter(written).items() if count > 1]
    assert twice == []
    kinds = {kind for kind, _, _ in written}
    assert {"NodePool", "EC2NodeClass", "PriorityClass", "Namespace", "Deployment", "ScaledObject"} <= kinds
    namespaces = sorted(name for kind, _, name in written if kind == "Namespace")
    assert namespaces == [
        "search-llm-headroom",
        "search-model-chat",
        "search-model-embed",
        "support-llm-headroom",
        "support-model-chat",
        "support-model-embed",
    ]


def test_each_teams_pods_land_on_its_own_nodes_at_its_own_priority(two_teams_recorded: PlatformMocks) -> None:
    recorded = two_teams_recorded
    pools = {r.inputs["metadata"]["name"]: r for r in recorded.by_type("kubernetes:karpenter.sh/v1:NodePool")}
    assert sorted(pools) == ["search-l4", "support-l4"]
    for name, pool in pools.items():
        labels = pool.inputs["spec"]["template"]["metadata"]["labels"]
        assert labels["llm-platform/gpu-pool"] == name
        assert (
            pool.inputs["spec"]["template"]["spec"]["nodeClassRef"]["name"]
            == f"{name.split('-')[0]}-gpu-al2023"
        )
    priorities = {
        r.inputs["metadata"]["name"]
        for r in recorded.by_type("kubernetes:scheduling.k8s.io/v1:PriorityClass")
    }
    for deployment in recorded.by_type("kubernetes:apps/v1:Deployment"):
        prefix = deployment.inputs["metadata"]["namespace"].split("-")[0]
        spec = pod_spec(deployment)
        assert spec["nodeSelector"] == {"llm-platform/gpu-pool": f"{prefix}-l4"}
        if deployment.inputs["metadata"]["name"].startswith("headroom-"):
            assert spec["priorityClassName"] == f"{prefix}-llm-headroom"
        else:  # vLLM: the team's serving class, and the Deployment waits until it exists
            assert spec["priorityClassName"] == f"{prefix}-llm-serving"
            assert deployment.depends_on(
                "kubernetes:scheduling.k8s.io/v1:PriorityClass", f"{prefix}-headroom-serving-priority"
            )
        assert spec["priorityClassName"] in priorities


def test_the_teams_own_prometheus_is_queried_and_selects_the_monitors_and_rules(
    two_teams_recorded: PlatformMocks,
) -> None:
    recorded = two_teams_recorded
    scaled = [
        r
        for r in recorded.by_type("kubernetes:keda.sh/v1alpha1:ScaledObject")
        if "model" in r.inputs["metadata"]["namespace"]
    ]
    assert len(scaled) == 4
    for r in scaled:
        triggers = [t for t in r.inputs["spec"]["triggers"] if t["type"] == "prometheus"]
        assert triggers
        assert {t["metadata"]["serverAddress"] for t in triggers} == {TEAM_PROMETHEUS}
    monitors = [
        *recorded.by_type("kubernetes:monitoring.coreos.com/v1:PodMonitor"),
        *recorded.by_type("kubernetes:monitoring.coreos.com/v1:PrometheusRule"),
    ]
    assert len(monitors) == 4 + 4 + 2  # a PodMonitor and a rule per model, a headroom rule per team
    assert all(r.inputs["metadata"]["labels"]["release"] == "team-prometheus" for r in monitors)
    for policy in recorded.by_type("kubernetes:networking.k8s.io/v1:NetworkPolicy"):
        for rule in policy.inputs["spec"].get("ingress", []):
            namespaces = [
                p["namespaceSelector"]["matchLabels"]
                for p in rule["from"]
                if "podSelector" in p and "namespaceSelector" in p
            ]
            assert {"kubernetes.io/metadata.name": "observability"} in namespaces


def test_a_prefix_that_cannot_start_a_namespace_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"prefix: 'Team_A' is not allowed"):
        evaluate(
            lambda: team(
                "Team_A",
                ExistingCluster("c", ExistingClusterArgs(cluster_name="c", kubeconfig="{}")).provider,
            )
        )


def test_the_callers_assume_role_provider_creates_every_aws_resource() -> None:
    def program() -> None:
        provider = aws.Provider(
            "team-aws",
            region="us-east-1",
            assume_roles=[aws.ProviderAssumeRoleArgs(role_arn="arn:aws:iam::111122223333:role/deployer")],
        )
        LlmPlatform("llm-dev", test_args(example_values()), opts=pulumi.ResourceOptions(providers=[provider]))

    recorded = evaluate(program)
    providers = recorded.by_type("pulumi:providers:aws")
    assert [p.name for p in providers] == ["team-aws"]  # the platform built none of its own
    assert ":role/deployer" in str(providers[0].inputs["assumeRoles"])
    resources = [r for r in recorded.created if r.typ.startswith("aws:")]
    assert len(resources) > 20
    assert {r.k8s_provider for r in resources} == {"team-aws"}


def test_without_a_provider_the_platform_builds_its_own() -> None:
    recorded = evaluate(lambda: LlmPlatform("llm-dev", test_args(example_values())))
    resources = [r for r in recorded.created if r.typ.startswith("aws:")]
    assert {r.k8s_provider for r in resources} == {"llm-dev-aws"}


EFA_POOLS: list[GpuNodePoolSettings] = [
    {
        "name": "p5-efa",
        "instanceFamilies": ["p5"],
        "capacityTypes": ["on-demand"],
        "placementZone": "us-east-1a",
        "gpuLimit": 16,
    },
]


def test_two_teams_efa_pools_get_placement_groups_of_their_own() -> None:
    """A multi-node pool's cluster placement group is named after the cluster and the team's NodePool, and
    each team's EC2NodeClass selects its own group: two teams' `p5-efa` pools never share one."""

    def program() -> None:
        cluster = ExistingCluster("shared", ExistingClusterArgs(cluster_name="shared", kubeconfig="{}"))
        for prefix in ("search", "support"):
            efa = EfaNetwork(
                f"{prefix}-efa",
                EfaNetworkArgs(
                    cluster_name="shared",
                    vpc_id="vpc-1",
                    pools=parse_block("gpuNodePools", EFA_POOLS),
                    prefix=prefix,
                ),
            )
            GpuNodePools(
                f"{prefix}-gpu",
                GpuNodePoolsArgs(
                    cluster_name="shared",
                    gpu_node_pools=EFA_POOLS,
                    zones=["us-east-1a"],
                    node_role_name="shared-karpenter-node",
                    efa_security_group_id=efa.security_group_id,
                    prefix=prefix,
                ),
                opts=pulumi.ResourceOptions(providers=[cluster.provider]),
            )

    recorded = evaluate(program)
    groups = sorted(r.inputs["name"] for r in recorded.by_type("aws:ec2/placementGroup:PlacementGroup"))
    assert groups == ["shared-search-p5-efa", "shared-support-p5-efa"]
    selected = {
        r.inputs["metadata"]["name"]: r.inputs["spec"]["placementGroupSelector"]["name"]
        for r in recorded.by_type("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass")
    }
    assert selected == {
        "search-gpu-al2023-p5-efa": "shared-search-p5-efa",
        "support-gpu-al2023-p5-efa": "shared-support-p5-efa",
    }


GATEWAY: GatewaySettings = {
    "enabled": True,
    "replicas": 2,
    "clients": [{"name": "web", "requestsPerMinute": 600}],
}
TEAMS = ("search", "support")


def gateway_and_two_teams_routes() -> None:
    """The platform's Gateway with its own `chat`, and two teams' routes to their own `chat` and `embed`."""
    cluster = ExistingCluster("shared", ExistingClusterArgs(cluster_name="shared", kubeconfig="{}"))
    opts = pulumi.ResourceOptions(providers=[cluster.provider])
    Gateway(
        "gateway",
        GatewayArgs(
            environment="dev",
            gateway=GATEWAY,
            models=MODELS[:1],
            gpu_node_pools=POOLS,
            client_keys={"web": "w" * 32},
            vllm_api_key="v" * 32,
            vpc_cidr="10.0.0.0/16",
            route_namespaces=[f"{t}-model-{m['name']}" for t in TEAMS for m in MODELS],
        ),
        opts=opts,
    )
    for prefix in TEAMS:
        GatewayRoutes(
            f"{prefix}-routes",
            GatewayRoutesArgs(
                environment="dev",
                gateway=GATEWAY,
                models=MODELS,
                gpu_node_pools=POOLS,
                vllm_api_key=f"{prefix}-" + "k" * 32,
                prefix=prefix,
                monitor_labels=RELEASE,
            ),
            opts=opts,
        )


def test_two_teams_routes_on_one_gateway_write_no_object_twice(routes_recorded: PlatformMocks) -> None:
    recorded = routes_recorded
    written = objects(recorded)
    assert [key for key, count in Counter(written).items() if count > 1] == []
    releases = [
        (r.inputs["namespace"], r.inputs["name"]) for r in recorded.by_type("kubernetes:helm.sh/v3:Release")
    ]
    assert [key for key, count in Counter(releases).items() if count > 1] == []
    pickers = sorted(ns for ns, name in releases if name in ("chat", "embed"))
    assert pickers == [
        "model-chat",
        "search-model-chat",
        "search-model-embed",
        "support-model-chat",
        "support-model-embed",
    ]


def test_each_teams_routes_attach_to_the_shared_gateway_on_paths_of_their_own(
    routes_recorded: PlatformMocks,
) -> None:
    recorded = routes_recorded
    (gateway,) = recorded.by_type("kubernetes:gateway.networking.k8s.io/v1:Gateway")
    (listener,) = gateway.inputs["spec"]["listeners"]
    admitted = listener["allowedRoutes"]["namespaces"]["selector"]["matchExpressions"][0]["values"]
    paths: dict[str, str] = {}
    for route in recorded.by_type("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"):
        namespace = route.inputs["metadata"]["namespace"]
        assert namespace in admitted
        assert route.inputs["spec"]["parentRefs"][0]["name"] == gateway.inputs["metadata"]["name"]
        (rule,) = route.inputs["spec"]["rules"]
        paths[rule["matches"][0]["path"]["value"]] = namespace
    assert paths == {
        "/chat/v1": "model-chat",
        "/search-chat/v1": "search-model-chat",
        "/search-embed/v1": "search-model-embed",
        "/support-chat/v1": "support-model-chat",
        "/support-embed/v1": "support-model-embed",
    }
    rules = recorded.by_type("kubernetes:monitoring.coreos.com/v1:PrometheusRule")
    team_rules = [r for r in rules if r.inputs["metadata"]["namespace"] != "model-chat"]
    assert len(team_rules) == 4
    assert all(r.inputs["metadata"]["labels"]["release"] == "team-prometheus" for r in team_rules)


def test_a_teams_model_at_zero_behind_the_shared_gateway_is_refused() -> None:
    at_zero: list[ModelSettings] = [{**MODELS[0], "autoscaling": {"minReplicas": 0, "maxReplicas": 1}}]
    with pytest.raises(ConfigError, match=r"models \(chat\)\.autoscaling\.minReplicas: 0 behind a shared"):
        evaluate(
            lambda: GatewayRoutes(
                "t",
                GatewayRoutesArgs(
                    environment="dev", gateway=GATEWAY, models=at_zero, gpu_node_pools=POOLS, vllm_api_key="k"
                ),
            )
        )
