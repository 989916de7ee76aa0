"""A traffic day on each serving path (search/serving_paths.py): the replicas each role runs minute by minute,
what they cost, and the requests that miss the SLO.

Each role's replicas follow the platform's recommended autoscaling (search/scenarios.py `recommend`): sized each
minute at the role's SLO rate per replica on the larger of the minute's rate and the day's smoothed rate
(scenarios.minute_rates; its cron pre-warm covers the surges), never below the stack's replica floor, and held for the recommended scale-down window (300 s) before they go. A minute's
requests then see each role at that minute's rate per replica; a role past its saturation rate misses them all
(its queue grows). Cost: the replicas' GPU share of the instance's on-demand price, per second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from llm_platform.config.schema import Slo
from llm_platform.simulator.search.scenarios import SLO_TARGET, minute_rates
from llm_platform.simulator.search.serving_paths import PathModel, Role
from llm_platform.simulator.traffic.traffic import Traffic

SCALE_DOWN_WINDOW_MINUTES = (
    5  # the recommended scaleDown stabilizationWindowSeconds 300 (scenarios.recommend)
)
DAY_SAMPLE = 50_000  # requests of the day whose TTFT and ITL are drawn (fixed seed)


@dataclass(frozen=True)
class RoleDay:
    name: str
    replicas: np.ndarray  # per minute
    usd_per_hour: float  # one replica
    gpus: int = 1  # one replica's GPUs

    @property
    def peak(self) -> int:
        return int(self.replicas.max()) if len(self.replicas) else 0

    @property
    def replica_hours(self) -> float:
        return float(self.replicas.sum()) / 60


@dataclass(frozen=True)
class PathDay:
    path: PathModel
    roles: tuple[RoleDay, ...]
    usd_per_day: float
    miss_pct: float
    itl_miss_pct: float
    ttft_p50_ms: float
    ttft_p95_ms: float

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def meets_slo(self) -> bool:
        """The day's misses within the SLO target (the share the replicas are sized for)."""
        return self.path.meets_at_some_rate and self.miss_pct <= SLO_TARGET * 100

    def row(self) -> dict[str, object]:
        p = self.path
        return {
            "path": p.name,
            "replicas": {
                r.name: {
                    "peak": r.peak,
                    "replica_hours": round(r.replica_hours, 2),
                    "tensor_parallel": r.gpus,
                }
                for r in self.roles
            },
            "usd_per_day": round(self.usd_per_day, 2),
            "slo_miss_pct": round(self.miss_pct, 3),
            "itl_miss_pct": round(self.itl_miss_pct, 3),
            "ttft_p50_ms": round(self.ttft_p50_ms, 1),
            "ttft_p95_ms": round(self.ttft_p95_ms, 1),
            "meets_slo": self.meets_slo,
            "slo_rate_per_replica": {r.name: round(r.lam_slo, 4) for r in p.roles},
            "prefix_hit_hbm": round(p.hbm_hit, 4),
            "prefix_hit_cpu": round(p.cpu_hit, 4),
            "kv_transfer_ms": round(p.transfer_s * 1000, 2),
            "cpu_load_ms": round(p.cpu_load_s * 1000, 2),
        }


def role_replicas(role: Role, rate: np.ndarray, floor: int) -> np.ndarray:
    """Replicas per minute: the smoothed rate at the role's SLO rate (its saturation rate when no rate meets
    the SLO), held for the scale-down window."""
    per_replica = role.lam_slo if role.lam_slo > 0 else role.table.capacity_rps
    need = np.maximum(np.ceil(rate / per_replica - 1e-9), floor).astype(np.int64)
    held = need.copy()
    for lag in range(1, SCALE_DOWN_WINDOW_MINUTES):
        held[lag:] = np.maximum(held[lag:], need[:-lag])
    return held


def simulate_day(path: PathModel, traffic: Traffic, slo: Slo, usd_per_gpu_hour: float, floor: int) -> PathDay:
    """The day on one path (module doc); a replica costs its GPUs' share of its node's price."""
    minutes = max(1, math.ceil(traffic.duration / 60))
    counts = np.bincount((traffic.arrivals // 60).astype(np.int64), minlength=minutes)[:minutes] / 60
    rate = np.maximum(minute_rates(traffic)[:minutes], counts)
    roles = tuple(
        RoleDay(r.name, role_replicas(r, rate, floor), usd_per_gpu_hour * r.gpus, r.gpus) for r in path.roles
    )
    usd = sum(r.replica_hours * r.usd_per_hour for r in roles) / traffic.days
    rng = np.random.default_rng(3)
    take = rng.choice(len(traffic), min(len(traffic), DAY_SAMPLE), replace=False) if len(traffic) else []
    if len(take) == 0:
        return PathDay(path, roles, usd, 0.0, 0.0, 0.0, 0.0)
    minute = np.minimum((traffic.arrivals[take] // 60).astype(np.int64), minutes - 1)
    rates: dict[str, np.ndarray] = {}
    over = np.zeros(len(take), dtype=bool)
    for spec, day in zip(path.roles, roles, strict=True):
        per_replica = counts[minute] / np.maximum(day.replicas[minute], 1)
        over |= (per_replica > spec.table.capacity_rps) | (day.replicas[minute] == 0)
        rates[spec.name] = per_replica
    prompts = traffic.input_tokens[take].astype(np.float64)
    ttft, itl = path.latency(rates, prompts, rng)
    itl = np.broadcast_to(np.asarray(itl, dtype=np.float64), ttft.shape)
    itl_miss = over | (itl > slo.itl_seconds)
    miss = itl_miss | (ttft > slo.ttft_seconds)
    served = ttft[~over] if (~over).any() else ttft
    return PathDay(
        path, roles, usd, float(miss.mean() * 100), float(itl_miss.mean() * 100),
        float(np.percentile(served, 50) * 1000), float(np.percentile(served, 95) * 1000),
    )  # fmt: skip


def _rank(day: PathDay) -> tuple[bool, float, float]:
    """How two shapes of one path compare: meeting the SLO first, then the cheaper; of two that miss it, the
    one that misses less."""
    cost = round(day.usd_per_day, 2)
    return (False, cost, day.miss_pct) if day.meets_slo else (True, day.miss_pct, cost)


def best_shapes(days: list[PathDay]) -> list[PathDay]:
    """One day per path, in the order the paths first appear: the best of its shapes (`_rank`)."""
    best: dict[str, PathDay] = {}
    for day in days:
        if day.name not in best or _rank(day) < _rank(best[day.name]):
            best[day.name] = day
    return list(best.values())


def recommend(days: list[PathDay]) -> PathDay | None:
    """The cheapest path whose day meets the SLO (the simpler path on a tie: PATHS order); None if none does."""
    meeting = [d for d in days if d.meets_slo]
    return min(meeting, key=lambda d: round(d.usd_per_day, 2)) if meeting else None
