"""GPU node naming: which EC2NodeClass a pool's nodes come from."""

from __future__ import annotations

from collections.abc import Sequence

from llm_platform.config.schema import GpuNodePool

# the GPU NodePools' disruption budget for every reason (empty nodes included): Karpenter lets at most this share
# of a pool's initialized nodes, rounded up, be disrupted at once (kubernetes-sigs/karpenter
# `BuildDisruptionBudgetMapping`); what the render writes and what the simulator paces consolidation by
DISRUPTION_BUDGET_PERCENT = 10


def uses_reservations(pool: GpuNodePool) -> bool:
    return bool(pool.capacity_reservations)


def node_class_name(ami_family: str) -> str:
    """The EC2NodeClass pools without reservations share, one per AMI family."""
    return f"gpu-{ami_family}"


def pool_node_class_name(pool: GpuNodePool) -> str:
    """A pool with capacity reservations gets an EC2NodeClass of its own: the selector terms are per class, and
    another pool sharing the class would otherwise see (and price as free) reservations bought for this one."""
    if uses_reservations(pool):
        return f"{node_class_name(pool.ami_family)}-{pool.name}"
    return node_class_name(pool.ami_family)


def reservation_node_classes(pools: Sequence[GpuNodePool]) -> list[str]:
    """The EC2NodeClasses that select capacity reservations (what the reservation alerts watch)."""
    return sorted(pool_node_class_name(p) for p in pools if uses_reservations(p))
