"""The price of a model's progressive rollout, from its plan (plan/rollout.py): what each step adds to the GPU
bill (the candidate's replicas on top of the stable version's, which keeps its full size) and whether each
version meets the model's SLO at its share of the load during the step.

Assumed: the load holds at `rate_rps` through the rollout, both versions serve like the replica model of the
model's GPU (the analysis measures the real candidate), and each candidate replica is billed from its start
on a warm node (`cold_start.warm_node_seconds`, paid once, by the step that adds it) to the end of each step it
runs in. TTFT is a request's own prefill at the step's load (no queueing: below saturation the queue is short).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llm_platform.plan.drain import replica_model
from llm_platform.plan.model import ModelPlan
from llm_platform.plan.rollout import rollout_plan
from llm_platform.simulator.serving.replica import ReplicaTable, TokenStats


@dataclass(frozen=True)
class VersionAtStep:
    replicas: int
    rps_per_replica: float
    ttft_seconds: float
    itl_seconds: float
    saturated: bool  # past one replica's capacity: the queue grows and the SLO is lost

    def meets(self, ttft_slo: float, itl_slo: float) -> bool:
        if self.rps_per_replica == 0:
            return True  # serves nothing new (the old version after the switch)
        return not self.saturated and self.ttft_seconds <= ttft_slo and self.itl_seconds <= itl_slo


@dataclass(frozen=True)
class StepPrice:
    weight: int  # the candidate's share of new requests, percent
    seconds: int
    stable: VersionAtStep
    canary: VersionAtStep
    extra_usd: float  # the candidate's replicas over the step, their start included
    meets_slo: bool


@dataclass(frozen=True)
class RolloutPrice:
    model: str
    usd_per_replica_hour: float
    steps: tuple[StepPrice, ...]

    @property
    def extra_usd(self) -> float:
        return sum(s.extra_usd for s in self.steps)

    @property
    def seconds(self) -> int:
        return sum(s.seconds for s in self.steps)

    def lines(self) -> list[str]:
        out = [
            f"rollout of {self.model}: {len(self.steps)} steps over {self.seconds / 60:.0f} min, "
            f"+${self.extra_usd:,.2f} for the candidate's replicas (${self.usd_per_replica_hour:.2f}/replica-hour)"
        ]
        for s in self.steps:
            out.append(
                f"  {s.weight:>3}%  {s.seconds:>5} s  stable {s.stable.replicas} x {s.stable.rps_per_replica:.2f} "
                f"rps (TTFT {s.stable.ttft_seconds * 1000:.0f} ms, ITL {s.stable.itl_seconds * 1000:.1f} ms)  "
                f"candidate {s.canary.replicas} x {s.canary.rps_per_replica:.2f} rps (TTFT "
                f"{s.canary.ttft_seconds * 1000:.0f} ms, ITL {s.canary.itl_seconds * 1000:.1f} ms)  "
                f"+${s.extra_usd:,.2f}  {'meets the SLO' if s.meets_slo else 'MISSES the SLO'}"
            )
        return out


def _version(table: ReplicaTable, stats: TokenStats, replicas: int, rate_rps: float) -> VersionAtStep:
    per = rate_rps / replicas if replicas else 0.0
    state = table.at(per)
    ttft = float(table.prefill_seconds(np.array([stats.mean_input]), state)[0])
    return VersionAtStep(replicas, per, ttft, float(state["itl"][()]), per >= table.capacity_rps)


def price_rollout(
    m: ModelPlan, *, region: str, rate_rps: float, replicas: int, stats: TokenStats
) -> RolloutPrice:
    """Each step of the model's rollout at `replicas` (the HPA's count while it runs) and `rate_rps` arrivals."""
    plan = rollout_plan(m)
    if plan is None:
        raise ValueError(f"model {m.name}: no rollout (models[].rollout) to price")
    if replicas < 1 or rate_rps < 0:
        raise ValueError(f"model {m.name}: replicas {replicas} must be >= 1 and rate_rps {rate_rps} >= 0")
    table = replica_model(m.model, m.instance.gpu, m.replica_gpus, m.lora).table(stats)
    # a replica's share of its node (replicas of one GPU share a multi-GPU node)
    per_replica_hour = m.instance.on_demand_usd_per_hour(region) * m.replica_gpus / m.instance.gpus
    start = m.cold_start.warm_node_seconds
    slo = m.model.slo
    steps, running = [], 0
    for step in plan.steps(replicas):
        stable = _version(table, stats, step.stable_replicas, rate_rps * (100 - step.weight) / 100)
        canary = _version(table, stats, step.canary_replicas, rate_rps * step.weight / 100)
        steps.append(
            StepPrice(
                weight=step.weight,
                seconds=step.seconds,
                stable=stable,
                canary=canary,
                # the step's candidate replicas for its length, and the start of those it adds
                extra_usd=per_replica_hour
                * (step.canary_replicas * step.seconds + max(0, step.canary_replicas - running) * start)
                / 3600,
                meets_slo=stable.meets(slo.ttft_seconds, slo.itl_seconds)
                and canary.meets(slo.ttft_seconds, slo.itl_seconds),
            )
        )
        running = max(running, step.canary_replicas)
    return RolloutPrice(m.name, per_replica_hour, tuple(steps))
