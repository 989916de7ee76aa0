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
- Warm nodes are really warm: a pre-pull DaemonSet on every GPU node of a pool that serves a model pulls the
  images its vLLM pods run (vLLM and the weights wait), so a node Karpenter launched for a placeholder has
  them before a replica lands there; the `nvme` cache's sync DaemonSet already copies the weights to every
  node of the pool. A replica that preempts a placeholder then pays only weight load and engine start.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from llm_platform.components.specs.autoscaling import cooldown
from llm_platform.components.specs.common import (
    GPU_TOLERATION,
    NODE_CRITICAL_PRIORITY_CLASS,
    POOL_LABEL,
    rule_manifest,
)
from llm_platform.components.specs.kv_offload import grown_resources
from llm_platform.components.specs.model_cache import cache_wiring
from llm_platform.components.specs.serving import replica_resources
from llm_platform.config.schema import GpuNodePool
from llm_platform.facts.cold_start import KARPENTER_LAUNCH_SECONDS
from llm_platform.facts.versions import PAUSE_IMAGE
from llm_platform.plan import HeadroomPlan, PoolPlan
from llm_platform.plan.naming import (
    headroom_priority_class_name,
    restricted_container,
    serving_priority_class_name,
)
from llm_platform.plan.node_capacity import PREPULL_RESOURCES

SERVING_PRIORITY = 1000
HEADROOM_PRIORITY = -10
PAUSE_UID = 65535  # the pause image's own non-root user
COMPONENT_LABEL = "app.kubernetes.io/component"
# listed and justified with the other suppressions in src/llm_platform/tools/checkov.yaml
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


def serving_priority_class(prefix: str = "") -> dict[str, Any]:
    return priority_class(
        serving_priority_class_name(prefix),
        SERVING_PRIORITY,
        "vLLM serving pods: preempt GPU headroom placeholders to start on an already-running node",
        preempts=True,
    )


def headroom_priority_class(prefix: str = "") -> dict[str, Any]:
    return priority_class(
        headroom_priority_class_name(prefix),
        HEADROOM_PRIORITY,
        "GPU headroom placeholders: keep warm nodes up, give way to any other pod, never preempt",
        preempts=False,
    )


def placeholder_labels(pool: GpuNodePool) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "gpu-headroom",
        "app.kubernetes.io/instance": pool.name,
        COMPONENT_LABEL: "headroom",
        "app.kubernetes.io/managed-by": "pulumi",
    }


def _selector(pool: GpuNodePool) -> dict[str, str]:
    return {"app.kubernetes.io/name": "gpu-headroom", "app.kubernetes.io/instance": pool.name}


def _headroom(p: PoolPlan) -> HeadroomPlan:
    if p.headroom is None:
        raise ValueError(f"pool {p.name!r} has no headroom")
    return p.headroom


def placeholder_resources(p: PoolPlan) -> dict[str, Any]:
    """One replica's pod requests: those of the pool's model with the largest tensor-parallel size, with
    the compile-cache sidecar when one of those replicas runs it and the memory of its CPU KV tier when one
    has one (a replica then fits wherever one placeholder was)."""
    h = _headroom(p)
    sidecar = any(m.cache.compile_cache_in_pod for m in p.models if m.gpus == h.replica_gpus)
    resources = replica_resources(h.replica_gpus, h.resources_instance, sidecar)
    # a replica with a CPU KV tier needs its grown memory on the warm node too (the largest tier of those)
    tiers = [m.kv_offload for m in p.models if m.gpus == h.replica_gpus and m.kv_offload is not None]
    return grown_resources(resources, max(tiers, key=lambda t: t.growth_gib)) if tiers else resources


def _non_root_pod() -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": PAUSE_UID,
        "runAsGroup": PAUSE_UID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def placeholder_deployment(p: PoolPlan) -> dict[str, Any]:
    """Pause pods the size of one replica. With a schedule KEDA owns the count (no `replicas` here, so
    `pulumi up` never resets it); without one the Deployment holds headroom.gpus worth of placeholders."""
    h, pool = _headroom(p), p.pool
    spec: dict[str, Any] = {}
    if not h.windows:
        spec["replicas"] = h.placeholders
    selector = _selector(pool)
    spec |= {
        "selector": {"matchLabels": selector},
        # placeholders carry no state: replace them all at once
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "100%"}},
        "revisionHistoryLimit": 2,
        "template": {
            "metadata": {"labels": placeholder_labels(pool)},
            "spec": {
                "priorityClassName": headroom_priority_class_name(p.prefix),
                # evicted at once when a replica needs the room: pause exits on SIGTERM
                "terminationGracePeriodSeconds": 0,
                "automountServiceAccountToken": False,
                "securityContext": _non_root_pod(),
                "nodeSelector": {POOL_LABEL: p.node_pool},
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
                        "resources": placeholder_resources(p),
                        "securityContext": restricted_container(),
                    }
                ],
            },
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": h.deployment,
            "namespace": p.headroom_namespace,
            "labels": placeholder_labels(pool),
            "annotations": {
                "checkov.io/skip1": f"CKV_K8S_8={NO_PROBE_REASON}",
                "checkov.io/skip2": f"CKV_K8S_9={NO_PROBE_REASON}",
            },
        },
        "spec": spec,
    }


def scaled_object(p: PoolPlan) -> dict[str, Any]:
    """One KEDA cron trigger per window (desiredReplicas = the window's placeholders); headroom.gpus
    outside every window is the minimum. Scale-down follows a window's end at once."""
    h, pool = _headroom(p), p.pool
    if not h.windows:
        raise ValueError(f"pool {pool.name!r} has no headroom schedule")
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {
            "name": h.deployment,
            "namespace": p.headroom_namespace,
            "labels": placeholder_labels(pool),
        },
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": h.deployment},
            "minReplicaCount": h.placeholders,
            "maxReplicaCount": h.peak_placeholders,
            "pollingInterval": 30,
            **cooldown(h.placeholders, 60),
            "advanced": {
                "horizontalPodAutoscalerConfig": {
                    "behavior": {"scaleDown": {"stabilizationWindowSeconds": 0}}
                }
            },
            "triggers": [
                {
                    "type": "cron",
                    "name": w.name,
                    "metadata": {
                        "timezone": w.timezone,
                        "start": w.start,
                        "end": w.end,
                        "desiredReplicas": str(w.placeholders),
                    },
                }
                for w in h.windows
            ],
        },
    }


# ------------------------------------------------------------------------------------ image pre-pull


def prepull_name(pool: GpuNodePool) -> str:
    return f"prepull-{pool.name}"


def serving_images(p: PoolPlan) -> list[str]:
    """Every image a vLLM pod of the pool runs: the model's vLLM image and its cache mode's init containers."""
    images: set[str] = set()
    for m in p.models:
        images.add(m.model.image)
        # only the images matter here: the wiring's bucket and claim names do not change them
        images.update(c["image"] for c in cache_wiring(m, bucket="").init_containers)
    return sorted(images)


def prepull_daemonset(p: PoolPlan) -> dict[str, Any]:
    """On every node of the pool: one init container per serving image that exits at once (the pull is
    the point), then a pause container that keeps the pod, so kubelet's image GC keeps the images in use."""
    pool = p.pool
    images = serving_images(p)
    if not images:
        raise ValueError(f"pool {pool.name!r} serves no model: nothing to pre-pull")
    labels = {
        "app.kubernetes.io/name": "image-prepull",
        "app.kubernetes.io/instance": pool.name,
        COMPONENT_LABEL: "headroom",
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": prepull_name(pool),
            "namespace": p.headroom_namespace,
            "labels": {**labels, "app.kubernetes.io/managed-by": "pulumi"},
            "annotations": {
                "checkov.io/skip1": f"CKV_K8S_8={NO_PROBE_REASON}",
                "checkov.io/skip2": f"CKV_K8S_9={NO_PROBE_REASON}",
            },
        },
        "spec": {
            "selector": {"matchLabels": labels},
            # a new vLLM tag is pulled on every node at once, ahead of the model's own rollout
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "100%"}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    # like the weights sync: runs on every node of the pool, whatever fills it
                    "priorityClassName": NODE_CRITICAL_PRIORITY_CLASS,
                    "terminationGracePeriodSeconds": 0,
                    "automountServiceAccountToken": False,
                    "securityContext": _non_root_pod(),
                    "nodeSelector": {POOL_LABEL: p.node_pool},
                    "tolerations": [GPU_TOLERATION],
                    "initContainers": [
                        {
                            "name": f"pull-{i}",
                            "image": image,
                            "imagePullPolicy": "IfNotPresent",
                            # coreutils' /usr/bin/true, on PATH in every pinned serving image:
                            # vllm/vllm-openai (Ubuntu, nvidia/cuda:*-ubuntu base, vllm docker/Dockerfile),
                            # the AWS CLI (amazonlinux:2 base, aws-cli docker/Dockerfile at 2.27.50);
                            # a model's own image without it fails its pre-pull, not its serving
                            "command": ["true"],
                            "resources": PREPULL_RESOURCES,
                            "securityContext": restricted_container(),
                        }
                        for i, image in enumerate(images)
                    ],
                    "containers": [
                        {
                            "name": "pause",
                            "image": PAUSE_IMAGE,
                            "resources": PREPULL_RESOURCES,
                            "securityContext": restricted_container(),
                        }
                    ],
                },
            },
        },
    }


# ------------------------------------------------------------------------------------------- alerting

RULE_NAME = "gpu-headroom"
RUNBOOK = "docs/capacity.md#warm-gpu-headroom-bursts-shorter-than-a-cold-start"
# beyond the node launch itself: pulling the pause image and the placeholder's scheduling
EMPTY_SLACK_SECONDS = 60


def node_launch_seconds(pool: GpuNodePool) -> float:
    """Pending placeholder to Ready node of the pool's slowest instance (facts/catalog.py)."""
    return KARPENTER_LAUNCH_SECONDS + max(i.node_ready_seconds for i in pool.instances)


def empty_for(pool: GpuNodePool) -> str:
    return f"{math.ceil((node_launch_seconds(pool) + EMPTY_SLACK_SECONDS) / 60)}m"


def alert_rules(plans: Sequence[PoolPlan]) -> list[dict[str, Any]]:
    """GpuHeadroomEmpty: placeholders are wanted but none runs for longer than the pool needs to launch a
    node, so Karpenter is not refilling the buffer (the pool's gpuLimit is held by replicas, or EC2 has no
    capacity): the next burst waits a whole cold start."""
    rules = []
    for p in plans:
        pool, h = p.pool, _headroom(p)
        sel = f'namespace="{p.headroom_namespace}", deployment="{h.deployment}"'
        available = f"sum by (namespace, deployment) (kube_deployment_status_replicas_available{{{sel}}})"
        wanted = f"sum by (namespace, deployment) (kube_deployment_spec_replicas{{{sel}}})"
        rules.append(
            {
                "alert": "GpuHeadroomEmpty",
                "expr": f"({available} == 0) and on (namespace, deployment) ({wanted} > 0)",
                "for": empty_for(pool),
                "labels": {"severity": "warning", "pool": pool.name},
                "annotations": {
                    "summary": f"GPU headroom of pool {pool.name} is empty",
                    "description": (
                        f"No headroom placeholder of pool {pool.name} has run for {empty_for(pool)}, longer than "
                        "a node launch: replicas hold the pool's gpuLimit or EC2 has no capacity of its "
                        "instances, so the next burst waits a full cold start."
                    ),
                    "runbook": RUNBOOK,
                },
            }
        )
    return rules


def prometheus_rule(
    plans: Sequence[PoolPlan], monitor_labels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """`monitor_labels`: what the cluster's Prometheus selects rules by (none: the platform's, which selects
    every rule)."""
    (namespace,) = {p.headroom_namespace for p in plans}
    labels = {"app.kubernetes.io/name": "gpu-headroom", COMPONENT_LABEL: "alerting", **(monitor_labels or {})}
    return rule_manifest(
        RULE_NAME, namespace, [{"name": "gpu-headroom", "rules": alert_rules(plans)}], labels
    )
