"""The serving paths' replicas as the day engine runs them (`serving-paths --day-engine`): each role of a path
(search/serving_paths.py) as its own pool behind the platform's recommended ScaledObject (scenarios.recommend at
the role's SLO rate; a prefill role, whose pods hold KV only until the decode side pulls it, scales on its
served requests/s instead of KV usage, as the issue's "prefill on queue or TTFT" asks), through the whole control loop of day/engine.py (scrapes, KEDA, the HPA, Karpenter, cold
starts, spot and billing as the stack's pool buys them). Only the replicas and their cost are taken from it: the
engine knows one replica's TTFT and ITL, not a path's (no KV transfer, no CPU load, mean ITL), so the misses
stay the steady-state ones of search/serving_paths_day.py."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from llm_platform.config.schema import Autoscaling
from llm_platform.plan import ModelPlan
from llm_platform.simulator.controllers.strategies import from_plan, scaling_for
from llm_platform.simulator.day.engine import SimConfig, simulate
from llm_platform.simulator.search.scenarios import recommend
from llm_platform.simulator.search.serving_paths import Role
from llm_platform.simulator.search.serving_paths_day import PathDay
from llm_platform.simulator.serving.capacity_config import start_times
from llm_platform.simulator.traffic.traffic import Traffic


@dataclass(frozen=True)
class EngineRole:
    name: str
    peak: int
    usd_per_day: float


@dataclass(frozen=True)
class EngineDay:
    path: str
    roles: tuple[EngineRole, ...]  # empty when a role meets the SLO at no rate (nothing to scale on)

    @property
    def usd_per_day(self) -> float | None:
        return sum(r.usd_per_day for r in self.roles) if self.roles else None

    def row(self) -> dict[str, object]:
        usd = self.usd_per_day
        return {
            "path": self.path,
            "usd_per_day": None if usd is None else round(usd, 2),
            "peak_replicas": {r.name: r.peak for r in self.roles},
        }


def role_traffic(traffic: Traffic, role: str) -> Traffic:
    """What one role's pool serves: a prefill replica one output token per prompt, a decode replica no prompt."""
    if role == "prefill":
        return replace(traffic, output_tokens=np.ones_like(traffic.output_tokens))
    if role == "decode":
        return replace(traffic, input_tokens=np.ones_like(traffic.input_tokens))
    return traffic


def role_autoscaling(role: Role, recommended: Autoscaling) -> Autoscaling:
    """The recommended block for a role: a prefill role on served requests/s at its SLO rate, KV usage out of
    play (a per-pod target of 1.0 never asks for more than the pods there are)."""
    if role.name != "prefill":
        return recommended
    return recommended.model_copy(
        update={"kv_cache_usage": 1.0, "requests_per_second_per_replica": round(role.lam_slo, 4)}
    )


def engine_days(
    days: list[PathDay], traffic: Traffic, config: SimConfig, model: ModelPlan
) -> list[EngineDay]:
    """Each path's roles through the day engine (module doc), on the model's plan and pool; a role shared by two
    paths (the same table and rate) is run once."""
    cold = start_times(config.capacity).new_node
    done: dict[tuple[int, str, float], EngineRole] = {}

    def run(role: Role, steady_peak: int) -> EngineRole:
        key = (id(role.table), role.name, role.lam_slo)
        if key not in done:
            served = role_traffic(traffic, role.name)
            top = max(model.scaling.max_replicas, 2 * steady_peak)
            floor = max(1, config.replica_floor)
            recommended = recommend(role.table, served, config.slo, cold, top, floor, lam_slo=role.lam_slo)
            strategy = from_plan("recommended", scaling_for(model, role_autoscaling(role, recommended)))
            pods = replace(config, capacity=replace(config.capacity, gpus_per_pod=role.gpus))
            result = simulate(served, role.table, strategy, pods)
            done[key] = EngineRole(role.name, result.peak_replicas, result.gpu_cost_usd_per_day)
        return done[key]

    out: list[EngineDay] = []
    for day in days:
        roles = day.path.roles
        if not all(r.lam_slo > 0 for r in roles):
            out.append(EngineDay(day.name, ()))
            continue
        out.append(EngineDay(day.name, tuple(run(r, d.peak) for r, d in zip(roles, day.roles, strict=True))))
    return out
