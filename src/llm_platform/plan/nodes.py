"""Node naming: which EC2NodeClass a GPU pool's nodes come from; the add-on NodePool resolved from the stack."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from llm_platform.config.schema import AddonNodes, GpuNodePool
from llm_platform.facts.cpu_catalog import CpuInstance
from llm_platform.plan.naming import node_pool_name

# the Karpenter NodePool and EC2NodeClass of the add-on nodes
ADDON_POOL = "addons"
# The add-on nodes (a Karpenter CPU NodePool) carry every platform add-on but Karpenter: tainted so no GPU
# workload and nothing unplaced lands there, labelled so the add-ons select them (and never a GPU node).
ADDON_TAINT = {"key": "llm-platform/addons", "value": "true", "effect": "NoSchedule"}
ADDON_TOLERATION = {"key": "llm-platform/addons", "operator": "Exists", "effect": "NoSchedule"}
ADDON_NODE_LABEL = {"llm-platform/node-role": "addons"}

# the GPU NodePools' disruption budget for every reason (empty nodes included): Karpenter lets at most this share
# of a pool's initialized nodes, rounded up, be disrupted at once (kubernetes-sigs/karpenter
# `BuildDisruptionBudgetMapping`); what the render writes and what the simulator paces consolidation by
DISRUPTION_BUDGET_PERCENT = 10


def uses_reservations(pool: GpuNodePool) -> bool:
    return bool(pool.capacity_reservations)


def efa_pool(pool: GpuNodePool) -> bool:
    """The pool serves a multi-node model (the schema requires its `placementZone` then, and only then): EFA
    interfaces, one zone, its cluster placement group (config/schema/multinode.py)."""
    return pool.placement_zone is not None


def placement_group(pool: GpuNodePool, cluster_name: str, prefix: str = "") -> str | None:
    """The cluster placement group of an EFA pool, or None: a reserved-only pool launches into its Capacity
    Blocks, which EC2 already places together (EC2 User Guide, "Use Capacity Blocks": no cluster placement group
    is needed), and a launch must not ask for a placement group the reservation is not in. `prefix`: a team's
    on a shared cluster, `<cluster>-<prefix>-<pool>` (its NodePool's name after the cluster's), so two teams'
    pools of one name never select the same group."""
    if not efa_pool(pool) or pool.capacity_types == ["reserved"]:
        return None
    return f"{cluster_name}-{node_pool_name(pool.name, prefix)}"


def node_class_name(ami_family: str) -> str:
    """The EC2NodeClass pools without reservations share, one per AMI family."""
    return f"gpu-{ami_family}"


def pool_node_class_name(pool: GpuNodePool) -> str:
    """A pool with capacity reservations gets an EC2NodeClass of its own: the selector terms are per class, and
    another pool sharing the class would otherwise see (and price as free) reservations bought for this one."""
    if uses_reservations(pool) or efa_pool(pool):
        return f"{node_class_name(pool.ami_family)}-{pool.name}"
    return node_class_name(pool.ami_family)


def reservation_node_classes(pools: Sequence[GpuNodePool]) -> list[str]:
    """The EC2NodeClasses that select capacity reservations (what the reservation alerts watch)."""
    return sorted(pool_node_class_name(p) for p in pools if uses_reservations(p))


@dataclass(frozen=True)
class AddonPoolPlan:
    """The CPU NodePool every platform add-on but Karpenter runs on (cluster.addonNodes resolved)."""

    name: str
    instances: tuple[CpuInstance, ...]  # what its requirements admit, smallest first
    capacity_types: tuple[str, ...]
    cpu_limit: int  # vCPUs of node capacity
    memory_limit_gib: int
    consolidate_after: str
    disruption_budget_percent: int
    expire_after: str
    disk_size_gib: int
    ami_version: str  # the AL2023 release the GPU nodes use (cluster.amiVersions.al2023)

    @property
    def families(self) -> list[str]:
        return list(dict.fromkeys(i.family for i in self.instances))

    @property
    def sizes(self) -> list[str]:
        return list(dict.fromkeys(i.size for i in self.instances))


def addon_pool_plan(config: AddonNodes, *, prod: bool, al2023_version: str) -> AddonPoolPlan:
    """On-demand in prod (Prometheus, Alertmanager and the gateway must not get spot's two-minute notice);
    elsewhere spot first (Karpenter prefers spot when both are allowed) with on-demand as the fallback."""
    default = ["on-demand"] if prod else ["spot", "on-demand"]
    return AddonPoolPlan(
        name=ADDON_POOL,
        instances=tuple(config.instances),
        capacity_types=tuple(config.capacity_types or default),
        cpu_limit=config.cpu_limit,
        memory_limit_gib=config.memory_limit_gib,
        consolidate_after=config.consolidate_after,
        disruption_budget_percent=config.disruption_budget_percent,
        expire_after=config.expire_after,
        disk_size_gib=config.disk_size_gib,
        ami_version=al2023_version,
    )
