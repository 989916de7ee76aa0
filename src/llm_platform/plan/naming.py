"""The platform's naming conventions and shared security settings: each defined once, here.

Every renderer (specs), component, the simulator and the checks import these instead of re-deriving them, so
a name cannot drift between the object that defines it and the one that refers to it.
"""

from __future__ import annotations

from typing import Any

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


def model_namespace(model_name: str) -> str:
    """Each model lives in a namespace of its own."""
    return f"model-{model_name}"


def model_service_host(model_name: str) -> str:
    """The model's ClusterIP Service (named after the model, in the model's namespace)."""
    return f"{model_name}.{model_namespace(model_name)}.svc.cluster.local"


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
