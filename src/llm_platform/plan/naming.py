"""The platform's naming conventions and shared security settings: each defined once, here.

Every renderer (specs), component, the simulator and the checks import these instead of re-deriving them, so
a name cannot drift between the object that defines it and the one that refers to it.
"""

from __future__ import annotations

import re
from typing import Any

from llm_platform.config.errors import ConfigError
from llm_platform.facts.addons import (
    AI_GATEWAY,
    ENVOY_GATEWAY,
    GPU_OPERATOR,
    KARPENTER,
    KEDA,
    KUBE_PROMETHEUS_STACK,
)

# ----------------------------------------------------------------------------------------- namespaces

# the add-ons' namespaces are their records' (llm_platform/facts/addons.py)
MONITORING_NAMESPACE = KUBE_PROMETHEUS_STACK.namespace  # also Grafana, the platform's rules and dashboards
GATEWAY_NAMESPACE = ENVOY_GATEWAY.namespace  # also the Envoy proxies, the Gateway and its policies
AI_GATEWAY_NAMESPACE = AI_GATEWAY.namespace
KEDA_NAMESPACE = KEDA.namespace
KARPENTER_NAMESPACE = KARPENTER.namespace
GPU_OPERATOR_NAMESPACE = GPU_OPERATOR.namespace
HEADROOM_NAMESPACE = "llm-headroom"  # the warm-GPU placeholders of every pool
KUBE_SYSTEM_NAMESPACE = "kube-system"  # the AWS Load Balancer Controller and the FSx CSI driver

# kube-prometheus-stack's Helm release: its Prometheus Service is `<release>-prometheus` on port 9090
PROMETHEUS_RELEASE = KUBE_PROMETHEUS_STACK.chart.release
PROMETHEUS_URL = f"http://{PROMETHEUS_RELEASE}-prometheus.{MONITORING_NAMESPACE}.svc.cluster.local:9090"


# ------------------------------------------------------------------- a team's names on a shared cluster

# A team-level component (GPU pools, headroom, a model, its autoscaling) given a prefix writes every
# cluster-scoped object and namespace it creates as `<prefix>-<name>`, so several teams' components share one
# cluster without writing the same object; without one (LlmPlatform, the stacks) the names are the platform's own.
PREFIX_MAX = 20
_PREFIX = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


def check_prefix(prefix: str) -> str:
    """`prefix` if it can start a namespace and a label value, else a ConfigError saying what is allowed."""
    if prefix and (len(prefix) > PREFIX_MAX or not _PREFIX.fullmatch(prefix)):
        raise ConfigError(
            f"prefix: {prefix!r} is not allowed; a lowercase letter, then lowercase letters, digits and '-' "
            f"(not last), at most {PREFIX_MAX} characters (it starts namespaces and cluster-wide names)"
        )
    return prefix


def scoped(prefix: str, name: str) -> str:
    """The name of a cluster-scoped object or namespace of the team `prefix`; `name` itself without one."""
    return f"{prefix}-{name}" if prefix else name


def model_namespace(model_name: str, prefix: str = "") -> str:
    """Each model lives in a namespace of its own."""
    return scoped(prefix, f"model-{model_name}")


def model_service_host(model_name: str, prefix: str = "") -> str:
    """The model's ClusterIP Service (named after the model, in the model's namespace)."""
    return f"{model_name}.{model_namespace(model_name, prefix)}.svc.cluster.local"


def headroom_namespace(prefix: str = "") -> str:
    """The namespace of a team's warm-GPU placeholders and image pre-pulls."""
    return scoped(prefix, HEADROOM_NAMESPACE)


def node_pool_name(pool_name: str, prefix: str = "") -> str:
    """A GPU pool's Karpenter NodePool, and the `llm-platform/gpu-pool` label its nodes carry and its pods select."""
    return scoped(prefix, pool_name)


# Pod priorities on GPU nodes (the Kubernetes overprovisioning pattern): a pending vLLM pod preempts a
# headroom placeholder and starts on its already-running node; placeholders never preempt anything.
SERVING_PRIORITY_CLASS = "llm-serving"
HEADROOM_PRIORITY_CLASS = "llm-headroom"


def serving_priority_class_name(prefix: str = "") -> str:
    return scoped(prefix, SERVING_PRIORITY_CLASS)


def headroom_priority_class_name(prefix: str = "") -> str:
    return scoped(prefix, HEADROOM_PRIORITY_CLASS)


def model_selector(model_name: str) -> dict[str, str]:
    """The labels that select a model's vLLM pods (Deployment, Service, PDB, PodMonitor, InferencePool)."""
    return {"app.kubernetes.io/name": "vllm", "app.kubernetes.io/instance": model_name}


def keda_hpa_name(scaled_object: str) -> str:
    """The HPA KEDA creates for a ScaledObject (unless `advanced.horizontalPodAutoscalerConfig.name`)."""
    return f"keda-hpa-{scaled_object}"


# ----------------------------------------------------------------------------- secrets and accounts

API_KEY_SECRET = "vllm-api-key"
API_KEY_SECRET_KEY = "api-key"
HF_TOKEN_SECRET = "hf-token"
HF_TOKEN_SECRET_KEY = "token"
SERVING_SERVICE_ACCOUNT = "vllm"
LOADER_SERVICE_ACCOUNT = "model-loader"
SYNC_SERVICE_ACCOUNT = "model-sync"

# ---------------------------------------------------------------------------------------- weights

MODELS_PREFIX = "models"  # s3://<bucket>/models/<huggingFaceId>/, also the FSx import path
# written by the Hub -> S3 loader Job last (its content: the copied revision); every reader waits for it
READY_MARKER = ".llm-platform-complete"
# s3://<bucket>/compile-cache/<model>/<vLLM image tag>/<GPU>/: vLLM's torch.compile cache, written once
COMPILE_CACHE_PREFIX = "compile-cache"


def weights_prefix(hugging_face_id: str) -> str:
    return f"{MODELS_PREFIX}/{hugging_face_id}"


# s3://<bucket>/models/_adapters/<model>/<adapter>/: a model's LoRA adapters, under `models/` so FSx imports them
# with the weights; `_` cannot start a Hugging Face owner (schema: huggingFaceId), so no model id collides
ADAPTERS_DIR = "_adapters"


def adapters_prefix(model_name: str) -> str:
    return f"{MODELS_PREFIX}/{ADAPTERS_DIR}/{model_name}"


# ---------------------------------------------------------------------------------------- security

# vLLM, the gateway and the helper containers run as this unprivileged user (the images' own user is root)
PLATFORM_UID = 10001


def restricted_container() -> dict[str, Any]:
    """Container securityContext of Pod Security's `restricted` level with a read-only root filesystem."""
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
        "readOnlyRootFilesystem": True,
    }


def non_root_pod() -> dict[str, Any]:
    """Pod securityContext of every pod the platform writes (but the NVMe sync's root init step)."""
    return {
        "runAsNonRoot": True,
        "runAsUser": PLATFORM_UID,
        "runAsGroup": PLATFORM_UID,
        "fsGroup": PLATFORM_UID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def non_root_container() -> dict[str, Any]:
    """`restricted_container()` that also runs as the platform's user (for pods without `non_root_pod`)."""
    return {
        **restricted_container(),
        "runAsNonRoot": True,
        "runAsUser": PLATFORM_UID,
        "runAsGroup": PLATFORM_UID,
    }


# ------------------------------------------------------------------------------------------- tags

MANAGED_BY = "pulumi-llm-platform"


def tags(cluster_name: str, environment: str, **extra: str) -> dict[str, str]:
    """Tags on every AWS resource: who owns it, which stack, and Karpenter's discovery key."""
    return {
        "llm-platform/cluster": cluster_name,
        "llm-platform/environment": environment,
        "managed-by": MANAGED_BY,
        **extra,
    }
