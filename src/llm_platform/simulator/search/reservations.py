"""The reserved-instance sweep: the deployed autoscaling's day once per reserved instance count, and the cheapest
count (`python -m llm_platform.simulator reservations`, commands/reservations_cmd.py, prints it; `tune` searches
the count as a knob up to `most_useful`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from llm_platform.simulator.day.engine import simulate
from llm_platform.simulator.search.stacks import StackRun

DEPLOYED = (
    "stack-config"  # controllers/strategies.for_stack: the model's autoscaling as the stack file has it
)


@dataclass(frozen=True)
class ReservedDay:
    reserved_instances: int
    reserved_gpus: int
    cost_usd: float
    prepaid_usd: float
    slo_violation_pct: float
    p95_ttft_ms: float
    node_hours: float

    def row(self) -> dict[str, float | int]:
        return {
            "reserved_instances": self.reserved_instances,
            "reserved_gpus": self.reserved_gpus,
            "gpu_cost_usd_per_day": round(self.cost_usd, 2),
            "prepaid_usd_per_day": round(self.prepaid_usd, 2),
            "slo_violation_pct": round(self.slo_violation_pct, 3),
            "p95_ttft_ms": round(self.p95_ttft_ms, 1),
            "node_hours": round(self.node_hours, 2),
        }


def most_useful(run: StackRun) -> int:
    """The most nodes the model can occupy: maxReplicas pods packed onto the pool's instance."""
    strategy = next(s for s in run.strategies if s.name == DEPLOYED)
    capacity = run.setup.config.capacity
    return math.ceil(strategy.max_replicas / capacity.slots_per_node)


def sweep(run: StackRun, counts: Sequence[int]) -> list[ReservedDay]:
    """The deployed strategy's day at each reserved instance count (same traffic, seed and engine)."""
    strategy = next(s for s in run.strategies if s.name == DEPLOYED)
    setup = run.setup
    days = []
    for n in counts:
        capacity = replace(setup.config.capacity, reserved_nodes=n)
        result = simulate(setup.traffic, setup.table, strategy, replace(setup.config, capacity=capacity))
        days.append(
            ReservedDay(
                n,
                n * capacity.instance.gpus,
                result.gpu_cost_usd_per_day,
                capacity.reserved_cost(setup.traffic.duration),
                result.slo_violation_pct,
                result.p95_ttft_ms,
                result.node_hours,
            )
        )
    return days


def cheapest(days: Sequence[ReservedDay]) -> ReservedDay:
    """The lowest cost; on a tie, fewer reservations (less committed)."""
    return min(days, key=lambda d: (round(d.cost_usd, 2), d.reserved_instances))
