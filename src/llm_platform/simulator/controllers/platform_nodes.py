"""What the platform's CPU nodes cost per day beside the GPUs: the fixed system node group (on-demand, its
`systemNodes.min`) and the add-on NodePool's nodes.

The add-on pool is sized from the plan: every workload that runs all day on it, at its replica count, as the
specs size them (plan/addon_pods.py, the source the specs and preflight's pod model read too; loader Jobs
finish after the first deploy and are left out), packed the way preflight packs the pool. Its nodes are priced on-demand,
or at the spot discount when the pool allows spot (Karpenter launches spot first). Before issue #30 this was
a fixed cost per environment (the system node group only: 2 x m6i.large in dev and staging, 4 x m6i.xlarge in
prod); now it follows what the stack runs: each model's endpoint pickers add to the add-on pool.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from llm_platform.config.loader import Stack, load_stack, stack_region
from llm_platform.facts.cpu_catalog import CPU_INSTANCES
from llm_platform.plan import resolve
from llm_platform.plan.addon_pods import addon_pool_pods, pack, pool_kinds

HOURS = 24


@dataclass(frozen=True)
class PlatformNodes:
    system: tuple[str, int]  # (instance type, nodes)
    addons: tuple[tuple[str, int], ...]  # (instance type, nodes), largest count first
    spot: bool  # the add-on pool launches spot first
    region: str

    def usd_per_day(self, spot_discount: float) -> tuple[float, float]:
        """(system group, add-on pool) $/day; NaN where the region has no known price."""
        instance, count = self.system
        system = count * CPU_INSTANCES[instance].on_demand_usd_per_hour(self.region) * HOURS
        share = 1 - spot_discount if self.spot else 1.0
        addons = sum(
            n * CPU_INSTANCES[t].on_demand_usd_per_hour(self.region) * share * HOURS for t, n in self.addons
        )
        return system, addons

    def line(self, spot_discount: float) -> str:
        system, addons = self.usd_per_day(spot_discount)
        shape = ", ".join(f"{n} x {t}" for t, n in self.addons) or "none"
        if math.isnan(system) or math.isnan(addons):
            return (
                f"platform CPU nodes: system group {self.system[1]} x {self.system[0]}, add-on pool {shape}; "
                f"no known price in {self.region} (facts/cpu_catalog.py)"
            )
        priced = f"spot at {spot_discount:.0%} off" if self.spot else "on-demand"
        return (
            f"platform CPU nodes beside the GPUs: system group {self.system[1]} x {self.system[0]} "
            f"${system:,.2f}/day + add-on pool {shape} ({priced}) ${addons:,.2f}/day = "
            f"${system + addons:,.2f}/day"
        )


def platform_nodes(stack: Stack) -> PlatformNodes | None:
    """None for an existing cluster (its nodes are someone else's bill)."""
    plan = resolve(load_stack(stack), str(stack))
    pool = plan.addon_pool
    if pool is None:
        return None
    system_nodes = plan.cluster.system_nodes
    system = (system_nodes.instance_type, system_nodes.min)  # the group's desired size is its minimum
    pods = addon_pool_pods(plan)
    daemons = [p for p in pods if p.daemon]
    kinds = pool_kinds(pool.instances, pool.disk_size_gib, daemons)
    packed = Counter(n.node for n in pack([p for p in pods if not p.daemon], kinds))
    return PlatformNodes(
        system, tuple(packed.most_common()), "spot" in pool.capacity_types, stack_region(stack)
    )
