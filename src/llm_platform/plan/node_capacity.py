"""What a node offers pods: its allocatable CPU, memory, disk and pod slots after the EKS AMIs' kubelet
reservations. Below the plan so that the plan (a CPU KV tier's instance, plan/kv_offload.py), the add-on pool's
packing (plan/addon_pods.py) and preflight (tools/preflight/nodes.py) count a node the same way."""

from __future__ import annotations

import math

from llm_platform.plan.pod_templates import EFA, GI


def reserved_cpu_millis(vcpus: int) -> int:
    steps = [(1, 0.06), (1, 0.01), (2, 0.005)]
    millis, left = 0.0, vcpus
    for cores, share in steps:
        take = min(cores, left)
        millis += take * 1000 * share
        left -= take
    return math.ceil(millis + left * 1000 * 0.0025)


def max_pods(vcpus: int) -> int:
    return 110 if vcpus < 30 else 250


def allocatable(vcpus: int, memory_gib: float, disk_gib: float, gpus: int) -> dict[str, int]:
    pods = max_pods(vcpus)
    return {
        "cpu": vcpus * 1000 - reserved_cpu_millis(vcpus),
        "memory": math.floor(memory_gib * GI - (255 + 11 * pods) - 100),
        "ephemeral-storage": math.floor(disk_gib * GI * 0.9 - GI),
        "nvidia.com/gpu": gpus,
        EFA: 0,
        "pods": pods,
    }


# -------------------------------------------------------- the DaemonSets of a GPU node, and a vLLM pod's memory

# Memory requests of the DaemonSets that run on a GPU node, where the program or a chart sets them (the GPU
# Operator's, node-exporter's and NFD's worker request none). The specs render these same values, and
# preflight reads them back from the render: tests/plan/test_kv_tier_instance.py holds the two equal.
PREPULL_RESOURCES = {"requests": {"cpu": "1m", "memory": "8Mi"}, "limits": {"memory": "32Mi"}}
# a model on nvme's weight-sync DaemonSet (components/specs/model_cache.py): its init container's request is
# the pod's (it exceeds the container that idles beside it)
SYNC_INIT_RESOURCES = {"requests": {"cpu": "500m", "memory": "512Mi"}, "limits": {"memory": "2Gi"}}
SYNC_READY_RESOURCES = {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "512Mi"}}
# aws-efa-k8s-device-plugin v0.5.30 values.yaml `resources`
EFA_DEVICE_PLUGIN_RESOURCES = {"requests": {"cpu": "10m", "memory": "20Mi"}}
# aws-fsx-csi-driver 1.17.0 controller.resources, node.resources
FSX_CSI_CPU, FSX_CSI_MEMORY = "10m", "40Mi"


def _mib(quantity: str) -> int:
    if quantity.endswith("Gi"):
        return int(quantity[:-2]) * GI
    if quantity.endswith("Mi"):
        return int(quantity[:-2])
    raise ValueError(f"memory quantity {quantity!r}: expected <n>Gi or <n>Mi")


def gpu_node_daemon_memory_mib(*, nvme_models: int, efa: bool, fsx: bool) -> int:
    """MiB the DaemonSets of one node of a pool that serves a model request: the pool's image prepull
    (components/headroom.py renders one per serving pool), one weight sync per nvme model of the pool, the EFA
    device plugin on an EFA pool, the FSx CSI node plugin when a model of the stack mounts FSx."""
    sync = max(
        _mib(SYNC_INIT_RESOURCES["requests"]["memory"]), _mib(SYNC_READY_RESOURCES["requests"]["memory"])
    )
    return (
        _mib(PREPULL_RESOURCES["requests"]["memory"])
        + nvme_models * sync
        + (_mib(EFA_DEVICE_PLUGIN_RESOURCES["requests"]["memory"]) if efa else 0)
        + (_mib(FSX_CSI_MEMORY) if fsx else 0)
    )


def replica_memory_gib(gpus: int, instance_memory_gib: float, instance_gpus: int) -> tuple[int, int]:
    """A vLLM pod's memory request and limit (GiB): its GPU share of the instance it is sized on, leaving room
    for kubelet, system daemons and the GPU operator (components/specs/serving.py `pod_resources`)."""
    share = gpus / instance_gpus
    request = max(4, math.floor(instance_memory_gib * share * 0.6))
    return request, max(request, math.floor(instance_memory_gib * share * 0.85))
