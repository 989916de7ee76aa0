"""What a served model looks like: its namespace, secrets, vLLM Deployment, Service, PDB, PodMonitor and
NetworkPolicy, built from the model's plan and the cache mode's wiring (components.specs.model_cache).

Facts about current vLLM (shared/reference/README.md): `/health` answers once the server is up,
`--api-key` guards `/v1/*` only (so `/metrics` and `/health` stay reachable for probes and Prometheus),
`--shutdown-timeout N` drains in-flight requests on SIGTERM, `--disable-log-requests` no longer exists.
The pod's stop (preStop sleep, `--shutdown-timeout`, `terminationGracePeriodSeconds`) is the model's drain plan
(plan/drain.py), sized to its longest generation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from llm_platform.components.specs.adapters import lora_args
from llm_platform.components.specs.common import GPU_TOLERATION, POOL_LABEL
from llm_platform.components.specs.compile_cache import (
    COMPILE_CACHE_MOUNT,
    COMPILE_CACHE_VOLUME,
    SAVER_CPU_MILLICORES,
    SAVER_MEMORY_MIB,
)
from llm_platform.components.specs.gateway import proxy_peer
from llm_platform.components.specs.kv_offload import grown_resources, grown_shm_gib, offload_args, offload_env
from llm_platform.components.specs.model_cache import CacheWiring
from llm_platform.config.schema import ModelConfig
from llm_platform.facts.catalog import GpuInstance
from llm_platform.plan import ModelPlan
from llm_platform.plan.cold_start import STARTUP_PROBE_PERIOD_SECONDS
from llm_platform.plan.naming import (
    API_KEY_SECRET_KEY,
    HF_TOKEN_SECRET_KEY,
    MONITORING_NAMESPACE,
    SERVING_PRIORITY_CLASS,
    model_selector,
    non_root_pod,
    restricted_container,
)
from llm_platform.plan.node_capacity import replica_memory_gib

PORT = 8000
HOME = "/home/vllm"
CONTAINER = "vllm"
# on top of the startup probe's budget: a new GPU node and the first copy of the weights
NODE_AND_WEIGHTS_SECONDS = 1800
KV_EVENTS_PORT = 5557  # vLLM's ZMQ KV-cache event publisher (precise prefix routing)


def labels(m: ModelPlan, environment: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "vllm",
        "app.kubernetes.io/instance": m.name,
        "app.kubernetes.io/component": "inference",
        "app.kubernetes.io/managed-by": "pulumi",
        "llm-platform/environment": environment,
    }


def selector(m: ModelPlan) -> dict[str, str]:
    return model_selector(m.name)


def namespace(m: ModelPlan, environment: str) -> dict[str, Any]:
    """Pod Security: baseline, or privileged where the cache mode reads the node's NVMe through hostPath."""
    # a multi-node replica's or a P/D role's pods add IPC_LOCK (EFA memory registration), which baseline forbids
    level = "privileged" if m.cache.reads_host_path or m.model.needs_efa else "baseline"
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": m.names.namespace,
            "labels": {
                "pod-security.kubernetes.io/enforce": level,
                "pod-security.kubernetes.io/warn": "restricted",
                "pod-security.kubernetes.io/audit": "restricted",
                "llm-platform/environment": environment,
            },
        },
    }


def service_account(m: ModelPlan) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": m.names.service_account, "namespace": m.names.namespace},
        # vLLM needs no Kubernetes API access
        "automountServiceAccountToken": False,
    }


def vllm_args(m: ModelPlan, wiring: CacheWiring) -> list[str]:
    """`vllm serve`'s arguments, the model first: `vllm serve [model_tag] [options]` (vllm
    entrypoints/cli/serve.py). `--model` is deprecated: FlexibleArgumentParser.parse_args
    (vllm/utils/argparse_utils.py) warns "you should provide the model as a positional argument" and moves it
    to the front itself."""
    model = m.model
    return [
        wiring.model_path,
        "--served-model-name",
        model.served_model_name,
        "--tensor-parallel-size",
        str(m.gpus),
        "--max-model-len",
        str(model.max_model_len),
        "--gpu-memory-utilization",
        str(model.gpu_memory_utilization),
        "--port",
        str(PORT),
        # on SIGTERM: refuse new requests, finish the in-flight ones within the drain plan's timeout
        "--shutdown-timeout",
        str(m.drain.shutdown_timeout_seconds),
        *kv_events_args(model),
        *offload_args(m.kv_offload),
        *lora_args(m, wiring.adapter_dirs),
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


def resources(m: ModelPlan) -> dict[str, Any]:
    """The instance's share, grown for the model's CPU KV tier (components/specs/kv_offload.py)."""
    return grown_resources(pod_resources(m.gpus, m.resources_instance), m.kv_offload)


def pod_resources(gpus: int, instance: GpuInstance) -> dict[str, Any]:
    """GPUs = tensor-parallel size; CPU and memory sized so the pod fits the instance Karpenter launches for
    it (per-GPU share of the instance, leaving room for kubelet, system daemons and the GPU operator)."""
    share = gpus / instance.gpus
    cpu = max(1, math.floor(instance.vcpus * share * 0.5))
    memory_request, memory_limit = replica_memory_gib(gpus, instance.memory_gib, instance.gpus)
    return {
        "requests": {"cpu": str(cpu), "memory": f"{memory_request}Gi", "nvidia.com/gpu": str(gpus)},
        "limits": {"memory": f"{memory_limit}Gi", "nvidia.com/gpu": str(gpus)},
    }


def replica_resources(gpus: int, instance: GpuInstance, compile_cache_sidecar: bool) -> dict[str, Any]:
    """What one replica's pod reserves on its node, as the scheduler and Karpenter count it: vLLM's requests
    plus those of the native sidecar that runs beside it (the compile-cache saver, when the pod persists its
    compile cache); init containers that finish before vLLM starts request less. The headroom placeholder
    holds exactly this, so preempting one frees room for one replica."""
    vllm = pod_resources(gpus, instance)
    if not compile_cache_sidecar:
        return vllm
    requests, limits = vllm["requests"], vllm["limits"]
    cpu = int(requests["cpu"]) * 1000 + SAVER_CPU_MILLICORES
    memory = int(requests["memory"].removesuffix("Gi")) * 1024 + SAVER_MEMORY_MIB
    memory_limit = int(limits["memory"].removesuffix("Gi")) * 1024 + SAVER_MEMORY_MIB
    return {
        "requests": {**requests, "cpu": f"{cpu}m", "memory": f"{memory}Mi"},
        "limits": {**limits, "memory": f"{memory_limit}Mi"},
    }


def rollout_strategy(m: ModelPlan) -> dict[str, Any]:
    """Add a replica before removing one when the pool's GPU limit has room for it even with every model
    at maxReplicas; otherwise Karpenter could never launch the surge node and the rollout would hang, so
    replace one replica at a time in place (the PodDisruptionBudget allows one down)."""
    if m.pool_headroom_gpus >= m.gpus:
        return {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    return {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}


def startup_check(m: ModelPlan) -> dict[str, Any]:
    """`/health`; with a persisted compile cache the same check also marks the cache complete (vLLM finishes
    every compilation before it serves), which tells the node's sync it may save the cache to S3."""
    marker = m.cache.compiled_marker
    if marker is None:
        return {"httpGet": {"path": "/health", "port": "http"}}
    check = (
        "import pathlib, urllib.request; "
        f"urllib.request.urlopen('http://127.0.0.1:{PORT}/health', timeout=4); "
        f"pathlib.Path('{COMPILE_CACHE_MOUNT}/{marker}').touch()"
    )
    # python3 is /usr/bin/python3 in the vLLM image (vllm docker/Dockerfile: update-alternatives to the
    # image's Python, the interpreter vLLM itself runs on)
    return {"exec": {"command": ["python3", "-c", check]}}


def shm_size_gib(m: ModelPlan) -> int:
    """NCCL between tensor-parallel ranks goes through /dev/shm; Docker's 64 MiB default is far too small.
    A CPU KV tier grows it by the tier x 1.2 (components/specs/kv_offload.py)."""
    return grown_shm_gib(min(16, 2 + 2 * m.gpus), m.kv_offload)


def _vllm_container(m: ModelPlan, wiring: CacheWiring, *, mounts_hf_token: bool) -> dict[str, Any]:
    """The vLLM container: its environment (API key and Hub token from Secrets, never on the command line),
    args, ports, probes and mounts."""
    model, names = m.model, m.names
    env: list[dict[str, Any]] = [
        # vLLM reads VLLM_API_KEY itself (as --api-key's default): the key never reaches the command line,
        # where /proc/<pid>/cmdline and `ps` would show it
        {
            "name": "VLLM_API_KEY",
            "valueFrom": {"secretKeyRef": {"name": names.api_key_secret, "key": API_KEY_SECRET_KEY}},
        },
        {"name": "VLLM_NO_USAGE_STATS", "value": "1"},
        # the image's user is root; as PLATFORM_UID, $HOME (Hugging Face, Triton, CUDA caches) is an emptyDir
        {"name": "HOME", "value": HOME},
        {"name": "VLLM_CACHE_ROOT", "value": COMPILE_CACHE_MOUNT},
        *wiring.env,
        *kv_events_env(model),
        *offload_env(m.kv_offload),
    ]
    if mounts_hf_token:
        env.append(
            {
                "name": "HF_TOKEN",
                "valueFrom": {"secretKeyRef": {"name": names.hf_token_secret, "key": HF_TOKEN_SECRET_KEY}},
            }
        )
    health = {"httpGet": {"path": "/health", "port": "http"}}
    return {
        "name": CONTAINER,
        "image": model.image,
        "command": ["vllm", "serve"],
        "args": vllm_args(m, wiring),
        "env": env,
        "ports": [
            {"name": "http", "containerPort": PORT, "protocol": "TCP"},
            *(
                [{"name": "kv-events", "containerPort": KV_EVENTS_PORT, "protocol": "TCP"}]
                if model.precise_prefix_routing
                else []
            ),
        ],
        "resources": resources(m),
        "startupProbe": {
            **startup_check(m),
            "periodSeconds": STARTUP_PROBE_PERIOD_SECONDS,
            "timeoutSeconds": 5,
            "failureThreshold": m.cold_start.startup_failure_threshold,
        },
        "readinessProbe": {**health, "periodSeconds": 5, "timeoutSeconds": 3, "failureThreshold": 3},
        "livenessProbe": {**health, "periodSeconds": 15, "timeoutSeconds": 5, "failureThreshold": 4},
        # the endpoint picker drops the pod when it is deleted; vLLM keeps serving what was already routed
        "lifecycle": {"preStop": {"sleep": {"seconds": m.drain.prestop_sleep_seconds}}},
        "volumeMounts": [
            {"name": "dshm", "mountPath": "/dev/shm"},
            {"name": "home", "mountPath": HOME},
            {"name": "tmp", "mountPath": "/tmp"},
            {"name": COMPILE_CACHE_VOLUME, "mountPath": COMPILE_CACHE_MOUNT},
            *wiring.volume_mounts,
        ],
        # everything vLLM, torch, Triton and CUDA write goes to $HOME, /tmp, /dev/shm or the compile cache
        "securityContext": restricted_container(),
    }


def deployment(
    m: ModelPlan,
    *,
    environment: str,
    wiring: CacheWiring,
    mounts_hf_token: bool,
    priority_class: str | None = SERVING_PRIORITY_CLASS,
) -> dict[str, Any]:
    """`mounts_hf_token`: the model uses the Hub and the stack holds the token (`m.uses_hf_token` and a secret).
    `priority_class`: the PriorityClass the pods run at (GpuHeadroom's); None: the cluster's default priority."""
    names = m.names
    container = _vllm_container(m, wiring, mounts_hf_token=mounts_hf_token)
    pod_labels = labels(m, environment)
    startup_budget = m.cold_start.startup_probe_seconds
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": names.deployment,
            "namespace": names.namespace,
            "labels": pod_labels,
            # `pulumi up` waits for the rollout: a GPU node, the weights, and the startup probe's budget
            "annotations": {"pulumi.com/timeoutSeconds": str(startup_budget + NODE_AND_WEIGHTS_SECONDS)},
        },
        "spec": {
            # no `replicas`: KEDA's HPA owns the count, and `pulumi up` must not reset it
            "selector": {"matchLabels": selector(m)},
            "strategy": rollout_strategy(m),
            "revisionHistoryLimit": 5,
            "template": {
                "metadata": {
                    "labels": pod_labels,
                    # Karpenter must not consolidate or drift-replace a node while this pod loads or serves
                    "annotations": {"karpenter.sh/do-not-disrupt": "true"},
                },
                "spec": {
                    "serviceAccountName": names.service_account,
                    "automountServiceAccountToken": False,  # no Kubernetes API calls; Pod Identity has its own
                    # above the GPU headroom placeholders: a pending replica preempts one on a warm node
                    **({"priorityClassName": priority_class} if priority_class else {}),
                    "securityContext": non_root_pod(),
                    "terminationGracePeriodSeconds": m.drain.termination_grace_seconds,
                    "nodeSelector": {POOL_LABEL: names.node_pool},
                    "tolerations": [GPU_TOLERATION],
                    "topologySpreadConstraints": [
                        {
                            "maxSkew": 1,
                            "topologyKey": "topology.kubernetes.io/zone",
                            "whenUnsatisfiable": "ScheduleAnyway",
                            "labelSelector": {"matchLabels": selector(m)},
                        },
                        {
                            "maxSkew": 1,
                            "topologyKey": "kubernetes.io/hostname",
                            "whenUnsatisfiable": "ScheduleAnyway",
                            "labelSelector": {"matchLabels": selector(m)},
                        },
                    ],
                    **({"initContainers": wiring.init_containers} if wiring.init_containers else {}),
                    "containers": [container],
                    "volumes": [
                        {
                            "name": "dshm",
                            "emptyDir": {"medium": "Memory", "sizeLimit": f"{shm_size_gib(m)}Gi"},
                        },
                        {"name": "home", "emptyDir": {"sizeLimit": "20Gi"}},
                        {"name": "tmp", "emptyDir": {"sizeLimit": "10Gi"}},
                        {"name": COMPILE_CACHE_VOLUME, **wiring.compile_cache},
                        *wiring.volumes,
                    ],
                },
            },
        },
    }


def service(m: ModelPlan, environment: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": m.names.service,
            "namespace": m.names.namespace,
            "labels": labels(m, environment),
        },
        "spec": {
            "type": "ClusterIP",
            "selector": selector(m),
            "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}],
        },
    }


def pod_disruption_budget(m: ModelPlan) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": m.names.pod_disruption_budget, "namespace": m.names.namespace},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": selector(m)}},
    }


def pod_monitor(m: ModelPlan, monitor_labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """vLLM's /metrics every few seconds: KEDA's decisions are only as fresh as the last scrape.
    `monitor_labels`: what the cluster's Prometheus selects PodMonitors by (none: the platform's own
    Prometheus selects every PodMonitor)."""
    endpoint = {"port": "http", "path": "/metrics", "interval": f"{m.scaling.scrape_interval_s}s"}
    labels = {**selector(m), **(monitor_labels or {})}
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {"name": m.names.pod_monitor, "namespace": m.names.namespace, "labels": labels},
        "spec": {"selector": {"matchLabels": selector(m)}, "podMetricsEndpoints": [endpoint]},
    }


def default_deny_ingress(m: ModelPlan) -> dict[str, Any]:
    """Nothing reaches the model's namespace (loader Job, NVMe sync) unless a policy below admits it."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "default-deny-ingress", "namespace": m.names.namespace},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"]},
    }


def network_policy(m: ModelPlan, prometheus_namespace: str = MONITORING_NAMESPACE) -> dict[str, Any]:
    """Only the serving entry point (the gateway's Envoy proxies, not the rest of its namespace) and
    Prometheus (its pods in `prometheus_namespace`) may reach vLLM."""
    prometheus = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": prometheus_namespace}},
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}},
    }
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": m.names.network_policy, "namespace": m.names.namespace},
        "spec": {
            "podSelector": {"matchLabels": selector(m)},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [proxy_peer(), prometheus], "ports": [{"port": PORT, "protocol": "TCP"}]}],
        },
    }
