"""What-if: a GPU node fails at the day's busiest minute. Its replicas die at once, the ReplicaSet's
replacements start elsewhere (a cold start each, or a warm start on a node a placeholder held), and node repair
deletes the failed node 10 minutes later (serving/nodepool.py `fail`). Reported: the SLO misses the loss adds,
and the fewest warm placeholders (replicas of headroom, on top of the pool's own) that keep the day's misses at
what they are without the loss, with what they cost."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from llm_platform.simulator.controllers.strategies import Strategy
from llm_platform.simulator.day.engine import SimConfig, simulate
from llm_platform.simulator.day.result import Result
from llm_platform.simulator.serving.replica import ReplicaTable
from llm_platform.simulator.traffic.traffic import Traffic

MAX_EXTRA_PLACEHOLDERS = 8  # searched up to this many replicas of extra headroom


@dataclass(frozen=True)
class NodeLoss:
    minute: int  # the busiest minute of the day, when the node fails
    requests: int
    misses: int  # SLO misses on the day without the loss
    misses_with_loss: int
    headroom: int | None  # extra warm placeholders that bring the misses back; None: none up to the cap
    headroom_usd_per_day: float | None  # what that headroom adds to the day's GPU bill

    @property
    def added_misses(self) -> int:
        return self.misses_with_loss - self.misses

    def lines(self) -> list[str]:
        head = (
            f"{self.headroom} warm replica(s) of headroom (+${self.headroom_usd_per_day:,.2f}/day) cover it"
            if self.headroom is not None
            else f"no headroom up to {MAX_EXTRA_PLACEHOLDERS} warm replicas covers it"
        )
        return [
            f"GPU node lost at minute {self.minute} (the busiest): {self.added_misses:+d} SLO misses "
            f"({self.misses_with_loss} vs {self.misses} of {self.requests} requests); {head}"
        ]


def _misses(r: Result) -> int:
    return round(r.slo_violation_pct * r.requests / 100)


def gpu_node_loss(traffic: Traffic, table: ReplicaTable, strategy: Strategy, cfg: SimConfig) -> NodeLoss:
    base = simulate(traffic, table, strategy, cfg)
    minute = int(np.argmax(base.minute_rate))
    lost = dataclasses.replace(cfg, node_failures=(minute * 60.0,))
    hit = simulate(traffic, table, strategy, lost)
    headroom, extra_usd = None, None
    if _misses(hit) > _misses(base):
        for k in range(1, MAX_EXTRA_PLACEHOLDERS + 1):
            covered = simulate(traffic, table, strategy, dataclasses.replace(lost, extra_placeholders=k))
            if _misses(covered) <= _misses(base):
                headroom = k
                extra_usd = covered.gpu_cost_usd_per_day - hit.gpu_cost_usd_per_day
                break
    else:
        headroom, extra_usd = 0, 0.0
    return NodeLoss(minute, base.requests, _misses(base), _misses(hit), headroom, extra_usd)
