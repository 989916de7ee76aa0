"""What warm GPU headroom looks like: the Kubernetes overprovisioning pattern on each GPU pool.

- Two PriorityClasses: vLLM pods (`llm-serving`, 1000) above the placeholders (`llm-headroom`, -10, never
  preempting). Both sit above nothing else that runs on GPU nodes but the node-critical DaemonSets.
- One placeholder Deployment per pool with `headroom`: pause containers that request exactly what one vLLM
  replica of the pool requests (GPUs = the largest tensor-parallel size among the pool's models, with that
  replica's CPU and memory), with the pool's node selector and GPU toleration. Karpenter sees them Pending
  and bin-packs them onto the pool's cheapest instances like any replica, then keeps those nodes (a node with
  a placeholder is not empty, so `WhenEmpty` consolidation leaves it). Sizing a placeholder as one replica,
  rather than a whole node, is what makes preemption exact: the scheduler evicts the fewest lower-priority
  pods that let the pending pod fit, so one replica evicts one placeholder and finds the CPU, memory and
  GPUs it needs already free; the evicted placeholder goes Pending and Karpenter launches a node to refill
  the buffer (Karpenter skips the preempting pod itself: it is nominated to the warm node).
- A KEDA ScaledObject with one cron trigger per schedule window resizes the placeholders; without a
  schedule the Deployment holds `gpus / replica GPUs` placeholders itself.
"""

from __future__ import annotations

from typing import Any

from components.specs.common import (
    GPU_TOLERATION,
    HEADROOM_PRIORITY_CLASS,
    POOL_LABEL,
    SERVING_PRIORITY_CLASS,
)
from components.specs.serving import resources
from config.schema import GpuNodePool, ModelConfig, replica_gpus
from config.versions import PAUSE_IMAGE

NAMESPACE = "llm-headroom"
SERVING_PRIORITY = 1000
HEADROOM_PRIORITY = -10
PAUSE_UID = 65535  # the pause image's own non-root user
COMPONENT_LABEL = "app.kubernetes.io/component"
# listed and justified with the other suppressions in security/checkov.yaml
NO_PROBE_REASON = "a placeholder runs only the pause container, which has no endpoint or shell to probe"


def priority_class(name: str, value: int, description: str, *, preempts: bool) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "pulumi"}},
        "value": value,
        "globalDefault": False,
        "preemptionPolicy": "PreemptLowerPriority" if preempts else "Never",
        "description": description,
    }


def serving_priority_class() -> dict[str, Any]:
    return priority_class(
        SERVING_PRIORITY_CLASS,
        SERVING_PRIORITY,
        "vLLM serving pods: preempt GPU headroom placeholders to start on an already-running node",
        preempts=True,
    )


def headroom_priority_class() -> dict[str, Any]:
    return priority_class(
        HEADROOM_PRIORITY_CLASS,
        HEADROOM_PRIORITY,
        "GPU headroom placeholders: keep warm nodes up, give way to any other pod, never preempt",
        preempts=False,
    )


def placeholder_name(pool: GpuNodePool) -> str:
    return f"headroom-{pool.name}"


def placeholder_labels(pool: GpuNodePool) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "gpu-headroom",
        "app.kubernetes.io/instance": pool.name,
        COMPONENT_LABEL: "headroom",
        "app.kubernetes.io/managed-by": "pulumi",
    }


def _selector(pool: GpuNodePool) -> dict[str, str]:
    return {"app.kubernetes.io/name": "gpu-headroom", "app.kubernetes.io/instance": pool.name}


def placeholder_resources(pool: GpuNodePool, models: list[ModelConfig]) -> dict[str, Any]:
    """One replica's requests and limits: those of the pool's model with the largest tensor-parallel size."""
    served = [m for m in models if m.node_pool == pool.name]
    if not served:
        raise ValueError(f"pool {pool.name!r} serves no model: no replica to size a headroom placeholder on")
    largest = max(served, key=lambda m: m.tensor_parallel_size)
    return resources(largest, pool.instances[0])


def placeholder_replicas(pool: GpuNodePool, models: list[ModelConfig], gpus: int) -> int:
    """Placeholders that hold `gpus` warm GPUs (the schema keeps `gpus` a multiple of one replica's)."""
    return gpus // replica_gpus(pool, models)


def _restricted() -> dict[str, Any]:
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
        "readOnlyRootFilesystem": True,
    }


def _non_root_pod() -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": PAUSE_UID,
        "runAsGroup": PAUSE_UID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def placeholder_deployment(pool: GpuNodePool, models: list[ModelConfig]) -> dict[str, Any]:
    """Pause pods the size of one replica. With a schedule KEDA owns the count (no `replicas` here, so
    `pulumi up` never resets it); without one the Deployment holds headroom.gpus worth of placeholders."""
    headroom = pool.headroom
    if headroom is None:
        raise ValueError(f"pool {pool.name!r} has no headroom")
    spec: dict[str, Any] = {}
    if not headroom.schedule:
        spec["replicas"] = placeholder_replicas(pool, models, headroom.gpus)
    selector = _selector(pool)
    spec |= {
        "selector": {"matchLabels": selector},
        # placeholders carry no state: replace them all at once
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "100%"}},
        "revisionHistoryLimit": 2,
        "template": {
            "metadata": {"labels": placeholder_labels(pool)},
            "spec": {
                "priorityClassName": HEADROOM_PRIORITY_CLASS,
                # evicted at once when a replica needs the room: pause exits on SIGTERM
                "terminationGracePeriodSeconds": 0,
                "automountServiceAccountToken": False,
                "securityContext": _non_root_pod(),
                "nodeSelector": {POOL_LABEL: pool.name},
                "tolerations": [GPU_TOLERATION],
                # warm capacity in every zone the replicas spread over
                "topologySpreadConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": "topology.kubernetes.io/zone",
                        "whenUnsatisfiable": "ScheduleAnyway",
                        "labelSelector": {"matchLabels": selector},
                    }
                ],
                "containers": [
                    {
                        "name": "pause",
                        "image": PAUSE_IMAGE,
                        "resources": placeholder_resources(pool, models),
                        "securityContext": _restricted(),
                    }
                ],
            },
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": placeholder_name(pool),
            "namespace": NAMESPACE,
            "labels": placeholder_labels(pool),
            "annotations": {
                "checkov.io/skip1": f"CKV_K8S_8={NO_PROBE_REASON}",
                "checkov.io/skip2": f"CKV_K8S_9={NO_PROBE_REASON}",
            },
        },
        "spec": spec,
    }


def scaled_object(pool: GpuNodePool, models: list[ModelConfig]) -> dict[str, Any]:
    """One KEDA cron trigger per window (desiredReplicas = the window's placeholders); headroom.gpus
    outside every window is the minimum. Scale-down follows a window's end at once."""
    headroom = pool.headroom
    if headroom is None or not headroom.schedule:
        raise ValueError(f"pool {pool.name!r} has no headroom schedule")
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {
            "name": placeholder_name(pool),
            "namespace": NAMESPACE,
            "labels": placeholder_labels(pool),
        },
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": placeholder_name(pool)},
            "minReplicaCount": placeholder_replicas(pool, models, headroom.gpus),
            "maxReplicaCount": placeholder_replicas(pool, models, headroom.peak_gpus),
            "pollingInterval": 30,
            "cooldownPeriod": 60,
            "advanced": {
                "horizontalPodAutoscalerConfig": {
                    "behavior": {"scaleDown": {"stabilizationWindowSeconds": 0}}
                }
            },
            "triggers": [
                {
                    "type": "cron",
                    "name": f"window-{j}",
                    "metadata": {
                        "timezone": w.timezone,
                        "start": w.start,
                        "end": w.end,
                        "desiredReplicas": str(placeholder_replicas(pool, models, w.gpus)),
                    },
                }
                for j, w in enumerate(headroom.schedule)
            ],
        },
    }
