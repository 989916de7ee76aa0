"""What a served model looks like: its namespace, secrets, vLLM Deployment, Service, PDB, PodMonitor and
NetworkPolicy, built from the model's config and the cache mode's wiring (components.specs.model_cache).

Facts about current vLLM (shared/reference/README.md): `/health` answers once the server is up,
`--api-key` guards `/v1/*` only (so `/metrics` and `/health` stay reachable for probes and Prometheus),
`--shutdown-timeout N` drains in-flight requests on SIGTERM, `--disable-log-requests` no longer exists.
"""

from __future__ import annotations

import math
from typing import Any

from components.specs.common import GPU_TOLERATION, POOL_LABEL, SERVING_PRIORITY_CLASS
from components.specs.model_cache import COMPILE_CACHE_MOUNT, CacheWiring, non_root_pod
from config.catalog import GpuInstance
from config.cold_start import cold_start_seconds
from config.schema import GpuNodePool, ModelConfig

PORT = 8000
HOME = "/home/vllm"
CONTAINER = "vllm"
SERVICE_ACCOUNT = "vllm"
API_KEY_SECRET = "vllm-api-key"
HF_TOKEN_SECRET = "hf-token"
# graceful shutdown: the endpoint leaves the Service during the preStop sleep, then vLLM drains
PRESTOP_SLEEP_SECONDS = 15
DRAIN_SECONDS = 45
TERMINATION_GRACE_SECONDS = PRESTOP_SLEEP_SECONDS + DRAIN_SECONDS + 15
# on top of the startup probe's budget: a new GPU node and the first copy of the weights
NODE_AND_WEIGHTS_SECONDS = 1800
KV_EVENTS_PORT = 5557  # vLLM's ZMQ KV-cache event publisher (precise prefix routing)
MONITORING_NAMESPACE = "monitoring"
GATEWAY_NAMESPACE = "llm-gateway"


def namespace_name(model: ModelConfig) -> str:
    return f"model-{model.name}"


def labels(model: ModelConfig, environment: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "vllm",
        "app.kubernetes.io/instance": model.name,
        "app.kubernetes.io/component": "inference",
        "app.kubernetes.io/managed-by": "pulumi",
        "llm-platform/environment": environment,
    }


def selector(model: ModelConfig) -> dict[str, str]:
    return {"app.kubernetes.io/name": "vllm", "app.kubernetes.io/instance": model.name}


def namespace(model: ModelConfig, environment: str, *, host_path: bool) -> dict[str, Any]:
    """Pod Security: baseline, or privileged where the cache mode reads the node's NVMe through hostPath."""
    level = "privileged" if host_path else "baseline"
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": namespace_name(model),
            "labels": {
                "pod-security.kubernetes.io/enforce": level,
                "pod-security.kubernetes.io/warn": "restricted",
                "pod-security.kubernetes.io/audit": "restricted",
                "llm-platform/environment": environment,
            },
        },
    }


def secret(name: str, namespace_: str, key: str, value: Any) -> dict[str, Any]:
    """A Secret whose value comes from a Pulumi secret (kept secret in state, masked in renders)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace_},
        "type": "Opaque",
        "stringData": {key: value},
    }


def service_account(model: ModelConfig) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": SERVICE_ACCOUNT, "namespace": namespace_name(model)},
        # vLLM needs no Kubernetes API access
        "automountServiceAccountToken": False,
    }


def vllm_args(model: ModelConfig, wiring: CacheWiring) -> list[str]:
    return [
        "--model",
        wiring.model_path,
        "--served-model-name",
        model.served_model_name,
        "--tensor-parallel-size",
        str(model.tensor_parallel_size),
        "--max-model-len",
        str(model.max_model_len),
        "--gpu-memory-utilization",
        str(model.gpu_memory_utilization),
        "--port",
        str(PORT),
        "--shutdown-timeout",
        str(DRAIN_SECONDS),
        *kv_events_args(model),
        *wiring.extra_args,
        *model.extra_args,
    ]


def kv_events_args(model: ModelConfig) -> list[str]:
    """Precise prefix routing: vLLM publishes KV-cache block events on ZMQ for the gateway's endpoint picker,
    which dials each pod (topic `kv@<pod ip>:<port>@<model>`, GATEWAY.md)."""
    if not model.precise_prefix_routing:
        return []
    config = (
        '{"enable_kv_cache_events":true,"publisher":"zmq",'
        f'"endpoint":"tcp://*:{KV_EVENTS_PORT}","topic":"kv@$(POD_IP):$(POD_PORT)@{model.served_model_name}"}}'
    )
    return ["--kv-events-config", config]


def kv_events_env(model: ModelConfig) -> list[dict[str, Any]]:
    if not model.precise_prefix_routing:
        return []
    return [
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "POD_PORT", "value": str(PORT)},
    ]


def resources(model: ModelConfig, smallest: GpuInstance) -> dict[str, Any]:
    """GPUs = tensor-parallel size; CPU and memory sized so the pod fits the pool's smallest instance
    (per-GPU share of the instance, leaving room for kubelet, system daemons and the GPU operator)."""
    share = model.tensor_parallel_size / smallest.gpus
    cpu = max(1, math.floor(smallest.vcpus * share * 0.5))
    memory_request = max(4, math.floor(smallest.memory_gib * share * 0.6))
    memory_limit = max(memory_request, math.floor(smallest.memory_gib * share * 0.85))
    gpus = str(model.tensor_parallel_size)
    return {
        "requests": {"cpu": str(cpu), "memory": f"{memory_request}Gi", "nvidia.com/gpu": gpus},
        "limits": {"memory": f"{memory_limit}Gi", "nvidia.com/gpu": gpus},
    }


def pool_headroom_gpus(pool: GpuNodePool, models: list[ModelConfig]) -> int:
    """GPUs the pool's `nvidia.com/gpu` limit leaves free with every model of the pool at maxReplicas."""
    used = sum(
        m.autoscaling.max_replicas * m.tensor_parallel_size for m in models if m.node_pool == pool.name
    )
    return pool.gpu_limit - used


def rollout_strategy(model: ModelConfig, headroom_gpus: int) -> dict[str, Any]:
    """Add a replica before removing one when the pool's GPU limit has room for it even with every model
    at maxReplicas; otherwise Karpenter could never launch the surge node and the rollout would hang, so
    replace one replica at a time in place (the PodDisruptionBudget allows one down)."""
    if headroom_gpus >= model.tensor_parallel_size:
        return {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    return {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}


def shm_size_gib(model: ModelConfig) -> int:
    """NCCL between tensor-parallel ranks goes through /dev/shm; Docker's 64 MiB default is far too small."""
    return min(16, 2 + 2 * model.tensor_parallel_size)


def expected_start_seconds(model: ModelConfig, instance: GpuInstance) -> float:
    """Warm-node start of one replica (weights and engine init), from the shared cold-start budget."""
    return cold_start_seconds(model.cache, instance, model.profile.weights_gb, new_node=False)


def startup_failure_threshold(cold_start_seconds: float, period: int = 10) -> int:
    """Allow three times the expected warm-node start (weights, engine warm-up) before restarting."""
    return max(30, math.ceil(3 * cold_start_seconds / period))


def deployment(
    model: ModelConfig,
    *,
    environment: str,
    wiring: CacheWiring,
    smallest: GpuInstance,
    needs_hf_token: bool,
    cold_start_seconds: float,
    pool_headroom_gpus: int,
) -> dict[str, Any]:
    env: list[dict[str, Any]] = [
        # vLLM reads VLLM_API_KEY itself (as --api-key's default): the key never reaches the command line,
        # where /proc/<pid>/cmdline and `ps` would show it
        {"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": API_KEY_SECRET, "key": "api-key"}}},
        {"name": "VLLM_NO_USAGE_STATS", "value": "1"},
        # the image's user is root; as SERVING_UID, $HOME (Hugging Face, Triton, CUDA caches) is an emptyDir
        {"name": "HOME", "value": HOME},
        {"name": "VLLM_CACHE_ROOT", "value": COMPILE_CACHE_MOUNT},
        *wiring.env,
        *kv_events_env(model),
    ]
    if needs_hf_token:
        env.append(
            {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": HF_TOKEN_SECRET, "key": "token"}}}
        )
    health = {"httpGet": {"path": "/health", "port": "http"}}
    container = {
        "name": CONTAINER,
        "image": model.image,
        "command": ["vllm", "serve"],
        "args": vllm_args(model, wiring),
        "env": env,
        "ports": [
            {"name": "http", "containerPort": PORT, "protocol": "TCP"},
            *(
                [{"name": "kv-events", "containerPort": KV_EVENTS_PORT, "protocol": "TCP"}]
                if model.precise_prefix_routing
                else []
            ),
        ],
        "resources": resources(model, smallest),
        "startupProbe": {
            **health,
            "periodSeconds": 10,
            "timeoutSeconds": 5,
            "failureThreshold": startup_failure_threshold(cold_start_seconds),
        },
        "readinessProbe": {**health, "periodSeconds": 5, "timeoutSeconds": 3, "failureThreshold": 3},
        "livenessProbe": {**health, "periodSeconds": 15, "timeoutSeconds": 5, "failureThreshold": 4},
        "lifecycle": {"preStop": {"sleep": {"seconds": PRESTOP_SLEEP_SECONDS}}},
        "volumeMounts": [
            {"name": "dshm", "mountPath": "/dev/shm"},
            {"name": "home", "mountPath": HOME},
            {"name": "tmp", "mountPath": "/tmp"},
            {"name": "compile-cache", "mountPath": COMPILE_CACHE_MOUNT},
            *wiring.volume_mounts,
        ],
        # everything vLLM, torch, Triton and CUDA write goes to $HOME, /tmp, /dev/shm or the compile cache
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
            "readOnlyRootFilesystem": True,
        },
    }
    pod_labels = labels(model, environment)
    startup_budget = startup_failure_threshold(cold_start_seconds) * 10
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": model.name,
            "namespace": namespace_name(model),
            "labels": pod_labels,
            # `pulumi up` waits for the rollout: a GPU node, the weights, and the startup probe's budget
            "annotations": {"pulumi.com/timeoutSeconds": str(startup_budget + NODE_AND_WEIGHTS_SECONDS)},
        },
        "spec": {
            # no `replicas`: KEDA's HPA owns the count, and `pulumi up` must not reset it
            "selector": {"matchLabels": selector(model)},
            "strategy": rollout_strategy(model, pool_headroom_gpus),
            "revisionHistoryLimit": 5,
            "template": {
                "metadata": {
                    "labels": pod_labels,
                    # Karpenter must not consolidate or drift-replace a node while this pod loads or serves
                    "annotations": {"karpenter.sh/do-not-disrupt": "true"},
                },
                "spec": {
                    "serviceAccountName": SERVICE_ACCOUNT,
                    "automountServiceAccountToken": False,  # no Kubernetes API calls; Pod Identity has its own
                    # above the GPU headroom placeholders: a pending replica preempts one on a warm node
                    "priorityClassName": SERVING_PRIORITY_CLASS,
                    "securityContext": non_root_pod(),
                    "terminationGracePeriodSeconds": TERMINATION_GRACE_SECONDS,
                    "nodeSelector": {POOL_LABEL: model.node_pool},
                    "tolerations": [GPU_TOLERATION],
                    "topologySpreadConstraints": [
                        {
                            "maxSkew": 1,
                            "topologyKey": "topology.kubernetes.io/zone",
                            "whenUnsatisfiable": "ScheduleAnyway",
                            "labelSelector": {"matchLabels": selector(model)},
                        },
                        {
                            "maxSkew": 1,
                            "topologyKey": "kubernetes.io/hostname",
                            "whenUnsatisfiable": "ScheduleAnyway",
                            "labelSelector": {"matchLabels": selector(model)},
                        },
                    ],
                    **({"initContainers": wiring.init_containers} if wiring.init_containers else {}),
                    "containers": [container],
                    "volumes": [
                        {
                            "name": "dshm",
                            "emptyDir": {"medium": "Memory", "sizeLimit": f"{shm_size_gib(model)}Gi"},
                        },
                        {"name": "home", "emptyDir": {"sizeLimit": "20Gi"}},
                        {"name": "tmp", "emptyDir": {"sizeLimit": "10Gi"}},
                        {"name": "compile-cache", **wiring.compile_cache},
                        *wiring.volumes,
                    ],
                },
            },
        },
    }


def service(model: ModelConfig, environment: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": model.name,
            "namespace": namespace_name(model),
            "labels": labels(model, environment),
        },
        "spec": {
            "type": "ClusterIP",
            "selector": selector(model),
            "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}],
        },
    }


def pod_disruption_budget(model: ModelConfig) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": model.name, "namespace": namespace_name(model)},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": selector(model)}},
    }


def pod_monitor(model: ModelConfig, interval: str = "5s") -> dict[str, Any]:
    """vLLM's /metrics every few seconds: KEDA's decisions are only as fresh as the last scrape."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {"name": model.name, "namespace": namespace_name(model), "labels": selector(model)},
        "spec": {
            "selector": {"matchLabels": selector(model)},
            "podMetricsEndpoints": [{"port": "http", "path": "/metrics", "interval": interval}],
        },
    }


def default_deny_ingress(model: ModelConfig) -> dict[str, Any]:
    """Nothing reaches the model's namespace (loader Job, NVMe sync) unless a policy below admits it."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "default-deny-ingress", "namespace": namespace_name(model)},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"]},
    }


def network_policy(model: ModelConfig) -> dict[str, Any]:
    """Only the serving entry point (the gateway namespace) and Prometheus may reach vLLM."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": f"{model.name}-ingress", "namespace": namespace_name(model)},
        "spec": {
            "podSelector": {"matchLabels": selector(model)},
            "policyTypes": ["Ingress"],
            "ingress": [
                {
                    "from": [
                        {
                            "namespaceSelector": {
                                "matchLabels": {"kubernetes.io/metadata.name": GATEWAY_NAMESPACE}
                            }
                        },
                        {
                            "namespaceSelector": {
                                "matchLabels": {"kubernetes.io/metadata.name": MONITORING_NAMESPACE}
                            },
                            "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
                        },
                    ],
                    "ports": [{"port": PORT, "protocol": "TCP"}],
                }
            ],
        },
    }
