"""What a node of each kind offers pods: allocatable CPU, memory, ephemeral storage, GPUs and pod slots,
its labels, taints and zones. System nodes come from the managed node group (instance type, disk size);
NodePool nodes from each NodePool's requirements, expanded to the catalog instances they admit (GPU pools:
facts/catalog.py, disk the instance store; the add-on pool: facts/cpu_catalog.py, disk its EC2NodeClass'
root volume).

Allocatable follows the EKS AMIs' kubelet reservations (plan/addon_pods.py `allocatable`, what the simulator
prices the add-on pool by too).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llm_platform.facts.catalog import GPU_INSTANCES
from llm_platform.facts.cpu_catalog import CPU_INSTANCES
from llm_platform.plan.addon_pods import GI, allocatable, max_pods, reserved_cpu_millis

__all__ = [
    "GI",
    "KARPENTER_DEFAULT_ROOT_GIB",
    "SYSTEM_INSTANCES",
    "NodeType",
    "allocatable",
    "efa_capacity",
    "max_pods",
    "node_pool_nodes",
    "requirement_values",
    "reserved_cpu_millis",
    "root_volume_gib",
    "system_node",
]


# CPU instance types the system node group and the add-on NodePool may use: (vCPUs, memory GiB)
SYSTEM_INSTANCES: dict[str, tuple[int, int]] = {
    name: (i.vcpus, i.memory_gib) for name, i in CPU_INSTANCES.items()
}
# Karpenter's default root volume of an AL2023 node when the EC2NodeClass names none
KARPENTER_DEFAULT_ROOT_GIB = 20


@dataclass(frozen=True)
class NodeType:
    """One kind of node a pod may land on."""

    name: str  # e.g. "system (m6i.large)" or "NodePool g5 (g5.2xlarge)"
    group: str  # "system" or the NodePool's name
    instance_type: str
    cpu_millis: int
    memory_mib: int
    ephemeral_mib: int
    pods: int
    gpus: int
    labels: dict[str, str] = field(default_factory=dict)
    efa: int = 0  # `vpc.amazonaws.com/efa` the EFA device plugin advertises (multi-node replicas)
    taints: tuple[dict[str, str], ...] = ()
    zones: tuple[str, ...] = ()
    min_nodes: int | None = None  # a fixed-size group (the system node group does not autoscale here)
    max_nodes: int | None = None

    @property
    def allocatable(self) -> dict[str, int]:
        return {
            "cpu": self.cpu_millis,
            "memory": self.memory_mib,
            "ephemeral-storage": self.ephemeral_mib,
            "nvidia.com/gpu": self.gpus,
            "vpc.amazonaws.com/efa": self.efa,
            "pods": self.pods,
        }


def _node(name: str, group: str, instance: str, alloc: dict[str, int], **kwargs) -> NodeType:
    return NodeType(
        name=name,
        group=group,
        instance_type=instance,
        cpu_millis=alloc["cpu"],
        memory_mib=alloc["memory"],
        ephemeral_mib=alloc["ephemeral-storage"],
        pods=alloc["pods"],
        gpus=alloc["nvidia.com/gpu"],
        **kwargs,
    )


def system_node(
    instance_type: str,
    disk_gib: int,
    *,
    labels: dict[str, str],
    taints: list[dict[str, str]],
    zones: list[str],
    min_nodes: int,
    max_nodes: int,
) -> NodeType | None:
    """None when the instance type is not in SYSTEM_INSTANCES (its capacity is unknown)."""
    if instance_type not in SYSTEM_INSTANCES:
        return None
    vcpus, memory = SYSTEM_INSTANCES[instance_type]
    effect = {
        "NO_SCHEDULE": "NoSchedule",
        "NO_EXECUTE": "NoExecute",
        "PREFER_NO_SCHEDULE": "PreferNoSchedule",
    }
    return _node(
        f"system ({instance_type}, {disk_gib} GiB disk)",
        "system",
        instance_type,
        allocatable(vcpus, memory, disk_gib, 0),
        labels={**labels, "node.kubernetes.io/instance-type": instance_type, "kubernetes.io/os": "linux"},
        taints=tuple({**t, "effect": effect.get(t["effect"], t["effect"])} for t in taints),
        zones=tuple(zones),
        min_nodes=min_nodes,
        max_nodes=max_nodes,
    )


def requirement_values(requirements: list[dict], key: str) -> list[str] | None:
    for r in requirements:
        if r.get("key") == key and r.get("operator") == "In":
            return list(r.get("values") or [])
    return None


def _gib(size: str) -> float:
    number = float(size.rstrip("Gi").rstrip("G"))
    return number if size.endswith("Gi") else number * 1e9 / 2**30


def root_volume_gib(node_class: dict | None) -> float:
    """The root EBS volume an EC2NodeClass gives its nodes (what kubelet's ephemeral storage lives on when
    there is no instance store RAID)."""
    for device in ((node_class or {}).get("spec") or {}).get("blockDeviceMappings") or []:
        if device.get("rootVolume") or device.get("deviceName") == "/dev/xvda":
            return _gib(str(device["ebs"]["volumeSize"]))
    return KARPENTER_DEFAULT_ROOT_GIB


def efa_capacity(node_class: dict | None, instance_efa: int, plugin: bool) -> int:
    """EFA interfaces a node advertises: the EC2NodeClass's EFA-only interfaces when it lists them (Karpenter
    v1.14.1 instancetype/types.go efas: they override the instance's count), else none is attached; and none
    at all without the EFA device plugin, which is what advertises them."""
    interfaces = ((node_class or {}).get("spec") or {}).get("networkInterfaces")
    if not plugin or not interfaces:
        return 0
    return min(instance_efa, sum(1 for i in interfaces if i.get("interfaceType") == "efa-only"))


def node_pool_nodes(
    node_pool: dict, node_classes: dict[str, dict] | None = None, efa_plugin: bool = False
) -> list[NodeType]:
    """The catalog instances a NodePool's requirements admit, each as a node type with the pool's labels,
    taints and zones. A GPU instance's ephemeral storage is its instance store (EC2NodeClass
    `instanceStorePolicy: RAID0`); a CPU instance's the root volume of the pool's EC2NodeClass."""
    name = node_pool["metadata"]["name"]
    template = node_pool["spec"]["template"]
    requirements = template["spec"].get("requirements") or []
    allowed = requirement_values(requirements, "node.kubernetes.io/instance-type")
    families = requirement_values(requirements, "karpenter.k8s.aws/instance-family")
    zones = requirement_values(requirements, "topology.kubernetes.io/zone") or []
    class_name = (template["spec"].get("nodeClassRef") or {}).get("name", "")
    root_gib = root_volume_gib((node_classes or {}).get(class_name))
    labels = {
        **(template.get("metadata") or {}).get("labels", {}),
        "karpenter.sh/nodepool": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
    }
    taints = tuple((template["spec"].get("taints") or []) + (template["spec"].get("startupTaints") or []))

    def admitted(instance_type: str, family: str) -> bool:
        return (allowed is None or instance_type in allowed) and (families is None or family in families)

    out = []
    for instance in GPU_INSTANCES.values():
        if not admitted(instance.instance_type, instance.family):
            continue
        disk_gib = instance.nvme_total_gb * 1e9 / 2**30
        out.append(
            _node(
                f"NodePool {name} ({instance.instance_type})",
                name,
                instance.instance_type,
                allocatable(instance.vcpus, instance.memory_gib, disk_gib, instance.gpus),
                labels={
                    **labels,
                    "node.kubernetes.io/instance-type": instance.instance_type,
                    "karpenter.k8s.aws/instance-family": instance.family,
                    # NFD labels every NVIDIA node; the GPU Operator's operands select on it
                    "nvidia.com/gpu.present": "true",
                    "feature.node.kubernetes.io/pci-10de.present": "true",
                },
                taints=taints,
                zones=tuple(zones),
                efa=efa_capacity((node_classes or {}).get(class_name), instance.efa_interfaces, efa_plugin),
            )
        )
    for cpu in CPU_INSTANCES.values():
        if not admitted(cpu.instance_type, cpu.family):
            continue
        out.append(
            _node(
                f"NodePool {name} ({cpu.instance_type}, {root_gib:g} GiB root)",
                name,
                cpu.instance_type,
                allocatable(cpu.vcpus, cpu.memory_gib, root_gib, 0),
                labels={
                    **labels,
                    "node.kubernetes.io/instance-type": cpu.instance_type,
                    "karpenter.k8s.aws/instance-family": cpu.family,
                },
                taints=taints,
                zones=tuple(zones),
            )
        )
    return out
