"""What the platform's CPU nodes cost per day beside the GPUs: the fixed system node group (on-demand, its
`systemNodes.min`) and the add-on NodePool's nodes.

The add-on pool is sized from the stack's own render (tools.render under mocks, built from the same plan as
the deploy) with preflight's packing (tools/preflight/room.py) of every add-on that runs all day, at its
replica count (loader Jobs finish after the first deploy and are left out). Its nodes are priced on-demand,
or at the spot discount when the pool allows spot (Karpenter launches spot first). Before issue #30 this was
a fixed cost per environment (the system node group only: 2 x m6i.large in dev and staging, 4 x m6i.xlarge in
prod); now it follows what the stack runs: each model's endpoint pickers add to the add-on pool.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from llm_platform.config.loader import Stack, stack_region
from llm_platform.facts.cpu_catalog import CPU_INSTANCES
from llm_platform.tools import render
from llm_platform.tools.preflight.pods import program_pods, release_pods
from llm_platform.tools.preflight.room import pack
from llm_platform.tools.preflight.scheduling import admission_problem, node_types
from llm_platform.tools.preflight.view import from_mocks

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
    result = render.evaluate(stack)
    view = from_mocks(stack, result.mocks)
    groups = view.of_type("eks:index:ManagedNodeGroup")
    pools = [p for p in view.of_kind("NodePool") if p.name == "addons"]
    if not groups or not pools:
        return None
    group = next(iter(groups.values()))
    system = (group["instanceTypes"][0], int(group["scalingConfig"]["desiredSize"]))
    nodes, _ = node_types(view)
    pool_nodes = [n for n in nodes if n.group == pools[0].name]
    pods = program_pods(view) + release_pods(view)[0]
    daemons = [p for p in pods if p.daemon]
    all_day = [
        p
        for p in pods
        if not p.daemon and p.kind != "Job" and any(admission_problem(p, n) is None for n in pool_nodes)
    ]
    packed = Counter(n.node.instance_type for n in pack(all_day, pool_nodes, daemons))
    requirements = pools[0].body["spec"]["template"]["spec"]["requirements"]
    capacity = next(r["values"] for r in requirements if r["key"] == "karpenter.sh/capacity-type")
    return PlatformNodes(system, tuple(packed.most_common()), "spot" in capacity, stack_region(stack))
