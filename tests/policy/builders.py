"""Hand-built policy inputs: ResourceValidationArgs / StackValidationArgs and the Kubernetes objects the
platform registers, in the engine's camelCase shape, so the policies run without the Pulumi CLI."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UNKNOWN_NUMBER_VALUE, UNKNOWN_STRING_VALUE, unknown_checking_proxy

from policy.llm_platform_policies.objects import DEPLOYMENT, HPA, SCALED_OBJECT

UNKNOWN_STRING = UNKNOWN_STRING_VALUE
UNKNOWN_NUMBER = UNKNOWN_NUMBER_VALUE
NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
POLICY = ResourceValidationPolicy | StackValidationPolicy


def _opts() -> PolicyResourceOptions:
    return PolicyResourceOptions(
        protect=False,
        ignore_changes=[],
        delete_before_replace=None,
        aliases=[],
        custom_timeouts=PolicyCustomTimeouts(0, 0, 0),
        additional_secret_outputs=[],
    )


def urn(stack: str, resource_type: str, name: str) -> str:
    return f"urn:pulumi:{stack}::llm-platform::{resource_type}::{name}"


def resource_args(
    resource_type: str,
    props: Mapping[str, Any],
    *,
    stack: str = "dev",
    name: str = "t",
    config: Mapping[str, Any] | None = None,
) -> ResourceValidationArgs:
    """As the analyzer builds them: props behind the proxy that raises on unknown values."""
    return ResourceValidationArgs(
        resource_type,
        unknown_checking_proxy(copy.deepcopy(dict(props))),
        urn=urn(stack, resource_type, name),
        name=name,
        opts=_opts(),
        provider=None,
        config=config,
    )


def policy_resource(resource_type: str, props: Mapping[str, Any], *, stack: str, name: str) -> PolicyResource:
    return PolicyResource(
        resource_type,
        unknown_checking_proxy(copy.deepcopy(dict(props))),
        urn(stack, resource_type, name),
        name,
        _opts(),
        None,
        None,
        [],
        {},
    )


def stack_args(
    resources: list[tuple[str, Mapping[str, Any]]], *, stack: str, config: Mapping[str, Any] | None = None
) -> StackValidationArgs:
    return StackValidationArgs(
        [policy_resource(t, p, stack=stack, name=f"r{i}") for i, (t, p) in enumerate(resources)],
        config=config,
    )


def violations(policy: POLICY, args: ResourceValidationArgs | StackValidationArgs) -> list[str]:
    found: list[str] = []

    def report(message: str, urn: str | None = None) -> None:
        found.append(message)

    if isinstance(policy, ResourceValidationPolicy):
        assert isinstance(args, ResourceValidationArgs)
        result = policy.validate(args, report)
    else:
        assert isinstance(args, StackValidationArgs)
        result = policy.validate(args, report)
    assert result is None, "the platform's policies are synchronous"
    return found


def render_violations(policy: POLICY, resources: list[dict[str, Any]], stack: str) -> list[str]:
    """What `policy` reports over a render's resources, as `pulumi preview --policy-pack` would check them."""
    if isinstance(policy, StackValidationPolicy):
        return violations(policy, stack_args([(r["type"], r["inputs"]) for r in resources], stack=stack))
    found: list[str] = []
    for r in resources:
        args = resource_args(r["type"], r["inputs"], stack=stack, name=r["name"])
        found += [f"{r['type']}::{r['name']}: {v}" for v in violations(policy, args)]
    return found


# ------------------------------------------------------------------------------------------ objects


def vllm_deployment(
    *,
    env: str = "prod",
    tp: int = 1,
    gpus: int | str | None = None,
    model: str = "/models/mistral-7b",
    extra_env: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A compliant vLLM Deployment as the serving component is meant to write it."""
    container: dict[str, Any] = {
        "name": "vllm",
        "image": "vllm/vllm-openai:v0.20.1",
        "args": [
            "--model",
            model,
            "--served-model-name",
            "mistral-7b",
            "--tensor-parallel-size",
            str(tp),
            "--shutdown-timeout",
            "60",
            "--api-key",
            "$(VLLM_API_KEY)",
        ],
        "env": [
            {"name": "HF_HUB_OFFLINE", "value": "1"},
            {
                "name": "VLLM_API_KEY",
                "valueFrom": {"secretKeyRef": {"name": "vllm-api-key", "key": "apiKey"}},
            },
            *(extra_env or []),
        ],
        "resources": {"limits": {"nvidia.com/gpu": tp if gpus is None else gpus}},
        "lifecycle": {"preStop": {"sleep": {"seconds": 10}}},
        "volumeMounts": [
            {"name": "shm", "mountPath": "/dev/shm"},
            {"name": "models", "mountPath": "/models"},
        ],
    }
    labels = {"app.kubernetes.io/name": "vllm", "app.kubernetes.io/instance": "mistral-7b"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "mistral-7b",
            "namespace": "llm",
            "labels": {**labels, "llm-platform/environment": env},
        },
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "terminationGracePeriodSeconds": 90,
                    "containers": [container],
                    "volumes": [
                        {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}},
                        {"name": "models", "persistentVolumeClaim": {"claimName": "models"}},
                    ],
                    "topologySpreadConstraints": [
                        {
                            "maxSkew": 1,
                            "topologyKey": "topology.kubernetes.io/zone",
                            "whenUnsatisfiable": "DoNotSchedule",
                            "labelSelector": {"matchLabels": labels},
                        }
                    ],
                },
            },
        },
    }


def container_of(deployment: dict[str, Any]) -> dict[str, Any]:
    return deployment["spec"]["template"]["spec"]["containers"][0]


def pod_spec_of(deployment: dict[str, Any]) -> dict[str, Any]:
    return deployment["spec"]["template"]["spec"]


QUEUE_QUERY = 'sum(vllm:num_requests_waiting{namespace="llm",model_name="mistral-7b"})'
KV_QUERY = 'sum(vllm:kv_cache_usage_perc{namespace="llm",model_name="mistral-7b"})'


def scaled_object(
    *, target: str = "mistral-7b", min_replicas: int | None = 2, triggers: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "scaleTargetRef": {"name": target},
        "maxReplicaCount": 10,
        "pollingInterval": 10,
        "cooldownPeriod": 300,
        "triggers": triggers
        if triggers is not None
        else [
            prometheus_trigger(QUEUE_QUERY, "5"),
            prometheus_trigger(KV_QUERY, "0.8"),
        ],
    }
    if min_replicas is not None:
        spec["minReplicaCount"] = min_replicas
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": target, "namespace": "llm"},
        "spec": spec,
    }


def prometheus_trigger(query: str, threshold: str = "5") -> dict[str, Any]:
    return {
        "type": "prometheus",
        "metadata": {
            "serverAddress": "http://kube-prometheus-stack-prometheus.monitoring:9090",
            "query": query,
            "threshold": threshold,
            "ignoreNullValues": "false",
        },
    }


def hpa(
    *, target: str = "mistral-7b", metrics: list[dict[str, Any]], min_replicas: int = 2
) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": target, "namespace": "llm"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "minReplicas": min_replicas,
            "maxReplicas": 8,
            "metrics": metrics,
        },
    }


def node_class(metadata_options: dict[str, Any] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "role": "llm-prod-karpenter-node",
        "amiSelectorTerms": [{"alias": "al2023@v20260827"}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "llm-prod"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "llm-prod"}}],
    }
    if metadata_options is not None:
        spec["metadataOptions"] = metadata_options
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "p4d"},
        "spec": spec,
    }


__all__ = [
    "DEPLOYMENT",
    "HPA",
    "KV_QUERY",
    "NODE_CLASS",
    "QUEUE_QUERY",
    "SCALED_OBJECT",
    "UNKNOWN_NUMBER",
    "UNKNOWN_STRING",
    "container_of",
    "hpa",
    "node_class",
    "pod_spec_of",
    "prometheus_trigger",
    "render_violations",
    "resource_args",
    "scaled_object",
    "stack_args",
    "violations",
    "vllm_deployment",
]
