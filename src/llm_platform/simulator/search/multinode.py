"""A multi-node replica in the simulator (config/schema/multinode.py): its N nodes as one unit of capacity.

The group launches together and serves only when all its nodes are up, so the simulator schedules it as one
"node" of N x the instance: N x the GPUs (the replica model's tensor x pipeline parallel GPUs), N x the
price, vCPUs and memory, and one node's network bandwidth and boot time (each node downloads the whole
checkpoint to its own cache at its own bandwidth, all at once). Reserved instances count in groups of N.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from llm_platform.facts.catalog import GpuInstance
from llm_platform.plan import ModelPlan


def replica_instance(mp: ModelPlan) -> GpuInstance:
    """The unit the simulator launches for one replica: the pool's instance, or N of them as one."""
    if not mp.multi_node:
        return mp.instance
    i, n = mp.instance, mp.nodes
    return replace(
        i,
        instance_type=f"{n}x{i.instance_type}",
        gpus=i.gpus * n,
        vcpus=i.vcpus * n,
        memory_gib=i.memory_gib * n,
        nvme_disks=i.nvme_disks * n,
        prices=MappingProxyType({region: price * n for region, price in i.prices.items()}),
    )


def reserved_groups(mp: ModelPlan, instances: int, usd_per_hour: float | None) -> tuple[int, float | None]:
    """`--reserved-instances` / `--reserved-usd-per-hour` (per instance) in the replica's units."""
    if not mp.multi_node:
        return instances, usd_per_hour
    return instances // mp.nodes, None if usd_per_hour is None else usd_per_hour * mp.nodes
