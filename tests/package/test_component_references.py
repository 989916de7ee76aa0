"""Each public component alone on an existing cluster, with only its required args: every reference its
objects make resolves to an object it creates (and waits for), one its args name, or a cluster
prerequisite its docstring names."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pulumi
import pytest

from llm_platform import (
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
    GpuOperator,
    GpuOperatorArgs,
    InferenceService,
    InferenceServiceArgs,
    Karpenter,
    KarpenterArgs,
    Keda,
    KedaArgs,
    LoadBalancerController,
    LoadBalancerControllerArgs,
    ModelAutoscaling,
    ModelAutoscalingArgs,
    ModelCache,
    ModelCacheArgs,
    ModelSettings,
    Observability,
    ObservabilityArgs,
)
from llm_platform.testing import PlatformMocks, Registered, evaluate
from tests.package.test_readme_snippets import blocks

POOL: GpuNodePoolSettings = {"name": "l4", "instanceFamilies": ["g6"], "gpuLimit": 4}
MODEL: ModelSettings = {
    "name": "qwen",
    "huggingFaceId": "Qwen/Qwen2.5-1.5B-Instruct",
    "nodePool": "l4",
    "maxModelLen": 8192,
    "cache": "hub",
    "slo": {"ttftSeconds": 0.5, "itlSeconds": 0.05},
}
GATEWAY: GatewaySettings = {"enabled": True, "clients": [{"name": "web", "requestsPerMinute": 600}]}
# what the Kubernetes API has before anything is installed
BUILT_IN_NAMESPACES = {"default", "kube-system"}
BUILT_IN_PRIORITY_CLASSES = {"system-node-critical", "system-cluster-critical"}
# a custom resource's API group -> the words a docstring names its prerequisite by
CRD_PREREQUISITES = {
    "keda.sh": "KEDA",
    "monitoring.coreos.com": "Prometheus Operator",
    "karpenter.sh": "Karpenter",
    "karpenter.k8s.aws": "Karpenter",
    "leaderworkerset.x-k8s.io": "LeaderWorkerSet",
    "nvidia.com": "GPU Operator",
    "gateway.envoyproxy.io": "Envoy Gateway",
    "aigateway.envoyproxy.io": "AI Gateway",
    "inference.networking.k8s.io": "InferencePool",
    "argoproj.io": "Argo Rollouts",
}
# components that write no Kubernetes manifest of their own: AWS resources and Helm releases only
NO_MANIFESTS = {"LoadBalancerController", "ModelCache"}


def _on_existing_cluster(build: Callable[[pulumi.ResourceOptions], object]) -> Callable[[], None]:
    def program() -> None:
        cluster = ExistingCluster("team", ExistingClusterArgs(cluster_name="team", kubeconfig="{}"))
        build(pulumi.ResourceOptions(providers=[cluster.provider]))

    return program


ALONE: dict[str, tuple[type, Callable[[pulumi.ResourceOptions], object]]] = {
    "InferenceService": (
        InferenceService,
        lambda o: InferenceService(
            "qwen",
            InferenceServiceArgs(environment="dev", model=MODEL, gpu_node_pools=[POOL], api_key="k"),
            opts=o,
        ),
    ),
    "InferenceService (rollout)": (
        InferenceService,
        lambda o: InferenceService(
            "qwen",
            InferenceServiceArgs(
                environment="dev",
                model={**MODEL, "rollout": {"candidate": {"extraArgs": ["--enable-chunked-prefill"]}}},
                gpu_node_pools=[POOL],
                api_key="k",
            ),
            opts=o,
        ),
    ),
    "ModelAutoscaling": (
        ModelAutoscaling,
        lambda o: ModelAutoscaling(
            "qwen-autoscaling",
            ModelAutoscalingArgs(environment="dev", model=MODEL, gpu_node_pools=[POOL]),
            opts=o,
        ),
    ),
    "GpuHeadroom": (
        GpuHeadroom,
        lambda o: GpuHeadroom(
            "headroom",
            GpuHeadroomArgs(
                environment="dev", gpu_node_pools=[{**POOL, "headroom": {"gpus": 1}}], models=[MODEL]
            ),
            opts=o,
        ),
    ),
    "GpuNodePools": (
        GpuNodePools,
        lambda o: GpuNodePools(
            "gpu",
            GpuNodePoolsArgs(
                cluster_name="team", gpu_node_pools=[POOL], zones=["us-east-1a"], node_role_name="r"
            ),
            opts=o,
        ),
    ),
    "Keda": (Keda, lambda o: Keda("keda", KedaArgs(), opts=o)),
    "Observability": (
        Observability,
        lambda o: Observability(
            "observability",
            ObservabilityArgs(environment="dev", grafana_admin_password="p" * 16, create_storage_class=False),
            opts=o,
        ),
    ),
    "Gateway": (
        Gateway,
        lambda o: Gateway(
            "gateway",
            GatewayArgs(
                environment="dev",
                gateway=GATEWAY,
                models=[MODEL],
                gpu_node_pools=[POOL],
                client_keys={"web": "w" * 32},
                vllm_api_key="v" * 32,
                vpc_cidr="10.0.0.0/16",
            ),
            opts=o,
        ),
    ),
    "GatewayRoutes": (
        GatewayRoutes,
        lambda o: GatewayRoutes(
            "routes",
            GatewayRoutesArgs(
                environment="dev", gateway=GATEWAY, models=[MODEL], gpu_node_pools=[POOL], vllm_api_key="k"
            ),
            opts=o,
        ),
    ),
    "Karpenter": (
        Karpenter,
        lambda o: Karpenter("karpenter", KarpenterArgs(cluster_name="team", region="us-east-1"), opts=o),
    ),
    "ModelCache": (
        ModelCache,
        lambda o: ModelCache(
            "cache",
            ModelCacheArgs(cluster_name="team", vpc_id="vpc-1", subnet_id="subnet-a"),
            opts=o,
        ),
    ),
    "LoadBalancerController": (
        LoadBalancerController,
        lambda o: LoadBalancerController(
            "lbc",
            LoadBalancerControllerArgs(cluster_name="team", region="us-east-1", vpc_id="vpc-1"),
            opts=o,
        ),
    ),
    "GpuOperator": (
        GpuOperator,
        lambda o: GpuOperator("gpu-operator", GpuOperatorArgs(mig_in_use=False), opts=o),
    ),
}


# what a component alone refers to that another public component (its docstring names it) creates
ELSEWHERE = {
    "ModelAutoscaling": {"Namespace": "InferenceService"},
    "Gateway": {"Namespace": "InferenceService"},
    "GatewayRoutes": {"Namespace": "InferenceService"},
}


def k8s_objects(recorded: PlatformMocks) -> list[Registered]:
    return [
        r for r in recorded.created if r.typ.startswith("kubernetes:") and r.custom and "helm.sh" not in r.typ
    ]


def kind(r: Registered) -> str:
    return r.typ.rsplit(":", 1)[-1]


def group(r: Registered) -> str:
    version = r.typ.split(":")[1]
    return version.split("/")[0] if "/" in version and "." in version.split("/")[0] else ""


def pod_specs(r: Registered) -> Iterator[dict[str, Any]]:
    spec = r.inputs.get("spec") or {}
    if "template" in spec:
        yield spec["template"]["spec"]
    if "jobTemplate" in spec:
        yield spec["jobTemplate"]["spec"]["template"]["spec"]
    for role in ("leaderTemplate", "workerTemplate"):
        template = (spec.get("leaderWorkerTemplate") or {}).get(role)
        if template:
            yield template["spec"]


def references(pod: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(kind, name) of every namespaced object a pod names."""
    if pod.get("serviceAccountName"):
        yield "ServiceAccount", pod["serviceAccountName"]
    for container in [*pod.get("initContainers", []), *pod.get("containers", [])]:
        for env in container.get("env", []):
            source = env.get("valueFrom") or {}
            if "secretKeyRef" in source:
                yield "Secret", source["secretKeyRef"]["name"]
            if "configMapKeyRef" in source:
                yield "ConfigMap", source["configMapKeyRef"]["name"]
    for volume in pod.get("volumes", []):
        if "secret" in volume:
            yield "Secret", volume["secret"]["secretName"]
        if "configMap" in volume:
            yield "ConfigMap", volume["configMap"]["name"]
        if "persistentVolumeClaim" in volume:
            yield "PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"]


def node_selectors(values: Any) -> Iterator[dict[str, Any]]:
    """Every `nodeSelector` in a chart's values, at any depth."""
    if isinstance(values, dict):
        for key, value in values.items():
            if key == "nodeSelector" and isinstance(value, dict):
                yield value
            else:
                yield from node_selectors(value)
    elif isinstance(values, list):
        for value in values:
            yield from node_selectors(value)


def unresolved(recorded: PlatformMocks, docstring: str, elsewhere: dict[str, str] | None = None) -> list[str]:
    """Every reference that neither resolves to a created object it waits for nor names a prerequisite in
    the component's docstring; `elsewhere`: kinds another component the docstring names creates."""
    documented = " ".join(docstring.split())
    elsewhere = {k: v for k, v in (elsewhere or {}).items() if v in documented}
    objects = k8s_objects(recorded)
    made = {
        (kind(r), (r.inputs["metadata"] or {}).get("namespace", ""), r.inputs["metadata"]["name"]): r
        for r in objects
    }
    releases = {r.inputs.get("namespace") for r in recorded.by_type("kubernetes:helm.sh/v3:Release")}
    node_pools = [r for r in objects if kind(r) == "NodePool"]
    problems: list[str] = []
    for release in recorded.by_type("kubernetes:helm.sh/v3:Release"):
        namespace = release.inputs.get("namespace") or "default"
        target = made.get(("Namespace", "", namespace))
        if (
            namespace in BUILT_IN_NAMESPACES
            or release.inputs.get("createNamespace")
            or "Namespace" in elsewhere
        ):
            continue
        if target is None and f"`{namespace}`" not in documented:
            problems.append(f"Release {release.inputs['name']}: namespace {namespace} is not created")
    for release in recorded.by_type("kubernetes:helm.sh/v3:Release"):
        for selector in node_selectors(release.inputs.get("values") or {}):
            for key in selector:
                if key not in documented and key != "kubernetes.io/os":
                    problems.append(
                        f"Release {release.inputs['name']}: selects nodes by {key}, documented nowhere"
                    )

    def made_before(r: Registered, key: tuple[str, str, str], what: str) -> None:
        target = made.get(key)
        if target is None and key[0] in elsewhere:
            return
        if target is None:
            problems.append(f"{kind(r)} {r.inputs['metadata']['name']}: {what} {key} is not created")
        elif target.urn not in r.dependencies:
            problems.append(f"{kind(r)} {r.inputs['metadata']['name']}: does not wait for {what} {key}")

    for r in objects:
        namespace: str = r.inputs["metadata"].get("namespace") or ""
        prerequisite = f"`{namespace}`" in documented  # a namespace the docstring names as the cluster's
        if namespace and namespace not in BUILT_IN_NAMESPACES | releases and not prerequisite:
            made_before(r, ("Namespace", "", namespace), "namespace")
        if group(r) and group(r) not in ("apps", "batch", "policy") and not group(r).endswith("k8s.io"):
            word = CRD_PREREQUISITES.get(group(r), group(r))
            if word not in documented:
                problems.append(f"{kind(r)}: its CRD ({group(r)}) is no documented prerequisite ({word!r})")
        for pod in pod_specs(r):
            priority = pod.get("priorityClassName")
            if priority and priority not in BUILT_IN_PRIORITY_CLASSES:
                made_before(r, ("PriorityClass", "", priority), "PriorityClass")
            for ref_kind, ref_name in references(pod):
                if (ref_kind, ref_name) != ("ServiceAccount", "default"):
                    made_before(r, (ref_kind, namespace, ref_name), ref_kind)
            for key, value in (pod.get("nodeSelector") or {}).items():
                selected = [
                    p
                    for p in node_pools
                    if p.inputs["spec"]["template"]["metadata"]["labels"].get(key) == value
                ]
                if not selected and key not in documented:
                    problems.append(
                        f"{kind(r)}: selects nodes by {key}, created nowhere and documented nowhere"
                    )
                tolerated = {t.get("key") for t in pod.get("tolerations", [])}
                for p in selected:
                    for taint in p.inputs["spec"]["template"]["spec"].get("taints", []):
                        if taint["key"] not in tolerated:
                            problems.append(f"{kind(r)}: does not tolerate {taint['key']} of its NodePool")
    return problems


@pytest.mark.parametrize("component", sorted(ALONE))
def test_a_component_alone_references_only_what_it_makes_or_documents(component: str) -> None:
    cls, build = ALONE[component]
    recorded = evaluate(_on_existing_cluster(build))
    if component in NO_MANIFESTS:
        assert not k8s_objects(recorded)
        assert [r for r in recorded.created if r.custom]
    else:
        assert k8s_objects(recorded)
    problems = unresolved(recorded, cls.__doc__ or "", ELSEWHERE.get(component))
    assert problems == [], "\n".join(problems)


def test_the_readme_snippet_on_an_existing_cluster_references_only_what_it_makes() -> None:
    program = next(b for b in blocks("python") if "InferenceServiceArgs(" in b)
    config = {"my-serving:kubeconfig": "{}", "my-serving:apiKey": "test-only-secret"}
    recorded = evaluate(lambda: exec(program, {"__name__": "__main__"}), project="my-serving", config=config)
    (deployment,) = recorded.by_type("kubernetes:apps/v1:Deployment")
    assert "priorityClassName" not in deployment.inputs["spec"]["template"]["spec"]  # the cluster's default
    assert unresolved(recorded, InferenceService.__doc__ or "") == []


def test_the_checker_sees_a_missing_priority_class() -> None:
    """The serving Deployment as it was: a PriorityClass only GpuHeadroom created."""
    recorded = evaluate(
        _on_existing_cluster(
            lambda o: InferenceService(
                "qwen",
                InferenceServiceArgs(
                    environment="dev",
                    model=MODEL,
                    gpu_node_pools=[POOL],
                    api_key="k",
                    priority_class="llm-serving",
                ),
                opts=o,
            )
        )
    )
    assert re.search(
        r"PriorityClass \('PriorityClass', '', 'llm-serving'\) is not created",
        "\n".join(unresolved(recorded, "")),
    )
