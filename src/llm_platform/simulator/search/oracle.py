"""The oracle bound: the lowest GPU cost that serves the same traffic at the same miss rate with perfect foresight.

A config's cost means little alone; `cost_vs_oracle` says how far it is from the best any autoscaler could do.
The oracle knows every minute's request rate in advance:
- each minute it runs the fewest replicas such that the day's misses, from the replica model's steady-state
  miss share at each per-replica rate, stay within the config's own miss count (greedy on the marginal
  misses one more replica saves; no autoscaling lag, no queue carried between minutes), and never fewer than
  the stack may deploy (`floor`: minReplicas >= 1 everywhere, >= 2 in prod, 0 for a model the stack lets scale
  to zero; config.schema.replica_floor and scale_to_zero_allowed), so the bound is a config the stack would accept;
- `per_second`: GPU time billed per second, per GPU slot, no start-up delay (the floor of all floors);
- `whole_nodes`: whole nodes of the stack's instance, each launched one full cold start (node boot + pod start
  on a new node) before it serves and billed per second with EC2's 60 s minimum; a node idle for less than a
  cold start is kept rather than relaunched.
`reactive_bound` is the other end: the cheapest config any reactive autoscaler could run at the same miss
rate, given how long a new replica takes to serve (the gap between the two is what foresight is worth; the
gap between a config and the reactive bound is what better control could still win).
A lower bound at every miss rate, the lowest achievable included: the oracle also knows what the config it
is compared with did (`Witness`: the most replicas serving in each minute, the requests that missed, what it
paid), and could always do the same. So it takes the cheapest of (a) the greedy plan above, when the replica
model's misses reach the budget at all (near the lowest achievable miss rate they may not: a steady-state
model of one minute at a time is pessimistic about what a generously sized pool serves), (b) the config's
own minutes, each cut to the fewest replicas the model says miss no more in that minute, billed as above,
and (c) what the config paid. Without a witness only (a) is left, and `model_feasible` says whether it met
the budget.
With reservations the oracle holds the same ones: their prepaid cost is paid as it is by the config, and only
the nodes (or GPU slots) beyond the reserved count each minute (none left once a Capacity Block expires) are
bought, so `cost_vs_oracle` compares like with like.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from llm_platform.simulator.serving.capacity_config import MINIMUM_BILLED_SECONDS


@dataclass(frozen=True)
class Witness:
    """What a simulated config did over the day: the oracle, knowing the day, can always do the same."""

    replicas: np.ndarray  # the most replicas serving in each minute
    misses: np.ndarray  # requests arriving in each minute that missed the SLO
    usd_per_day: float  # what the config paid


def _minute_misses(
    minute_requests: np.ndarray, lam: np.ndarray, miss_fraction: np.ndarray, m: int, n: int
) -> float:
    """The replica model's missed requests in minute `m` with `n` replicas (all of them past saturation)."""
    if minute_requests[m] <= 0:
        return 0.0
    if n <= 0:
        return float(minute_requests[m])
    rate = minute_requests[m] / 60 / n
    mu = float(lam[-1])
    return float(minute_requests[m] * (1.0 if rate > mu else np.interp(rate, lam, miss_fraction)))


def model_misses(
    minute_requests: np.ndarray, lam: np.ndarray, miss_fraction: np.ndarray, need: np.ndarray
) -> float:
    """The replica model's missed requests over the day for a per-minute replica count."""
    return sum(_minute_misses(minute_requests, lam, miss_fraction, m, int(n)) for m, n in enumerate(need))


def witness_replicas(
    minute_requests: np.ndarray, lam: np.ndarray, miss_fraction: np.ndarray, witness: Witness, floor: int
) -> np.ndarray:
    """The config's own replicas per minute (never below `floor`), each minute cut to the fewest replicas the
    replica model says miss no more than the config did in it: the day's misses stay within the config's."""
    need = np.maximum(witness.replicas.astype(np.int64), floor)
    for m in range(len(need)):
        n = floor
        while n < need[m] and _minute_misses(minute_requests, lam, miss_fraction, m, n) > witness.misses[m]:
            n += 1
        need[m] = n
    return need


def replicas_needed(
    minute_requests: np.ndarray,
    lam: np.ndarray,
    miss_fraction: np.ndarray,
    miss_budget: float,
    floor: int = 0,
) -> np.ndarray:
    """Fewest replicas per minute, never below `floor`, whose total misses stay within `miss_budget` requests
    (perfect foresight).

    `miss_fraction(lam)` is the replica model's steady-state share of requests that miss the SLO at a
    per-replica rate (1 past saturation). Start at saturation (or the floor), then add replicas greedily where
    one more replica saves the most missed requests, until the misses fit the budget; budget left over cuts
    minutes down to the floor, those where a replica-minute serves the fewest requests first.
    """
    mu = float(lam[-1])

    def misses(m: int, n: int) -> float:
        return _minute_misses(minute_requests, lam, miss_fraction, m, n)

    need = np.maximum(np.ceil(minute_requests / 60 / mu - 1e-9).astype(np.int64), floor)
    current = np.array([misses(m, int(need[m])) for m in range(len(need))])
    total = float(current.sum())
    heap = [(-(current[m] - misses(m, int(need[m]) + 1)), m) for m in range(len(need)) if current[m] > 0]
    heapq.heapify(heap)
    while total > miss_budget and heap:
        gain, m = heapq.heappop(heap)
        if -gain <= 0:
            break
        need[m] += 1
        after = misses(m, int(need[m]))
        total -= current[m] - after
        current[m] = after
        if after > 0:
            heapq.heappush(heap, (-(after - misses(m, int(need[m]) + 1)), m))
    # budget left over (a config that misses a lot): cut minutes to the floor where a replica serves the fewest
    spare = miss_budget - total
    at_floor = np.array([misses(m, floor) for m in range(len(need))])
    lost = at_floor - current
    saved = need - floor
    for m in np.argsort(np.where(saved > 0, lost / np.maximum(saved, 1), np.inf), kind="stable"):
        if saved[m] <= 0 or lost[m] > spare:
            continue
        spare -= lost[m]
        need[m] = floor
    return need


def whole_node_seconds(nodes_per_minute: np.ndarray, lead_seconds: float) -> float:
    """Billed node-seconds for a per-minute node count, each node launched `lead_seconds` ahead."""
    total = 0.0
    for j in range(1, int(nodes_per_minute.max(initial=0)) + 1):
        active = np.flatnonzero(nodes_per_minute >= j)
        start = prev_end = None
        for m in active:
            begin, end = m * 60.0, (m + 1) * 60.0
            if start is None or prev_end is None:
                start, prev_end = begin, end
            elif begin - prev_end <= lead_seconds:  # cheaper to keep it than to relaunch it
                prev_end = end
            else:
                total += max(prev_end - start + lead_seconds, MINIMUM_BILLED_SECONDS)
                start, prev_end = begin, end
        if start is not None and prev_end is not None:
            total += max(prev_end - start + lead_seconds, MINIMUM_BILLED_SECONDS)
    return total


def bound(
    minute_requests: np.ndarray,
    lam: np.ndarray,
    miss_fraction: np.ndarray,
    miss_pct: float,
    price_per_hour: float,
    slots_per_node: int,
    cold_start_seconds: float,
    days: float,
    reserved_per_minute: np.ndarray | None = None,
    prepaid_usd: float = 0.0,
    floor: int = 0,
    witness: Witness | None = None,
) -> dict[str, float]:
    """Both oracle costs per day for a per-minute request count, at a miss rate (percent); nodes up to
    `reserved_per_minute` are the reservations, paid as `prepaid_usd` for the whole horizon; never fewer than
    `floor` replicas; with a `witness` (the config compared, at its own miss rate) never above it."""
    budget = miss_pct / 100 * float(minute_requests.sum())
    reserved = (
        np.zeros(len(minute_requests), dtype=np.int64) if reserved_per_minute is None else reserved_per_minute
    )

    def costs(need: np.ndarray) -> tuple[float, float]:
        bought = np.maximum(need - reserved * slots_per_node, 0)
        per_second = prepaid_usd + bought.sum() * 60 * price_per_hour / slots_per_node / 3600
        nodes = np.ceil(need / slots_per_node).astype(np.int64)
        whole = (
            prepaid_usd
            + whole_node_seconds(np.maximum(nodes - reserved, 0), cold_start_seconds) * price_per_hour / 3600
        )
        return per_second / days, whole / days

    need = replicas_needed(minute_requests, lam, miss_fraction, budget, floor)
    feasible = model_misses(minute_requests, lam, miss_fraction, need) <= budget * (1 + 1e-9) + 1e-9
    plans = [(*costs(need), need)] if feasible or witness is None else []
    if witness is not None:
        own = witness_replicas(minute_requests, lam, miss_fraction, witness, floor)
        plans.append((*costs(own), own))
        plans.append((witness.usd_per_day, witness.usd_per_day, witness.replicas.astype(np.int64)))
    per_second = min(p[0] for p in plans)
    whole, _, chosen = min(((p[1], i, p[2]) for i, p in enumerate(plans)), key=lambda p: p[:2])
    peak = int(chosen.max(initial=0))
    return {
        "per_second_usd_per_day": per_second,
        "whole_nodes_usd_per_day": whole,
        "miss_pct": miss_pct,
        "saturation_rps": float(lam[-1]),
        "peak_replicas": float(peak),
        "peak_nodes": float(math.ceil(peak / slots_per_node)),
        "model_feasible": float(feasible),
    }


def reactive_bound(
    bin_requests: np.ndarray,
    bin_seconds: int,
    lam: np.ndarray,
    miss_fraction: np.ndarray,
    miss_pct: float,
    lag_seconds: float,
    price_per_hour: float,
    slots_per_node: int,
    days: float,
    floor: int = 0,
    buffers: int = 8,
    targets: int = 60,
    windows_seconds: tuple[int, ...] = (10, 20, 30, 60, 120),
) -> dict[str, float]:
    """The cheapest reactive config: what no autoscaler that learns the load only as it arrives can beat with
    replicas that serve `lag_seconds` after they are asked for.

    Each candidate sizes the pool from the mean rate over a trailing window (one of `windows_seconds`, known
    instantly: no scrape, poll or sync delay; a short window sees a burst sooner, a long one rides out
    noise) at a per-replica target rho, plus a standing buffer of B replicas, never below `floor`; a replica
    serves `lag_seconds` after it is asked for, is billed per second from when it is asked for (no 60 s
    minimum, no whole nodes), and leaves the moment it is not needed. Misses are the replica model's steady
    state at each bin's per-replica rate (no queue carried over). Among rho (`targets` steps up to
    saturation; a coarser grid overstates the bound by a few per cent) x B (0 up to `buffers`) x window, the
    cheapest whose misses stay within `miss_pct` wins; None-like (inf) when none does. Warm headroom is inside the
    family: B placeholders cost what B buffer replicas cost, and a buffer replica serves at once where a
    placeholder's replica serves a warm start later.
    """
    rate = bin_requests / bin_seconds
    shift = math.ceil(lag_seconds / bin_seconds)
    mu = float(lam[-1])
    total = float(bin_requests.sum())
    best = {
        "usd_per_day": math.inf,
        "rho": math.nan,
        "buffer": math.nan,
        "miss_pct": math.nan,
        "window": math.nan,
    }
    for window_seconds in windows_seconds:
        window = max(1, window_seconds // bin_seconds)
        known = np.convolve(rate, np.ones(window) / window)[: len(rate)]
        seen = np.concatenate((np.zeros(shift), known[: len(rate) - shift])) if shift else known
        for rho in np.linspace(mu / targets, mu, targets):
            for buffer in range(buffers + 1):
                n = np.maximum(np.ceil(seen / rho - 1e-9) + buffer, max(floor, 1))
                per = rate / n
                missed = float(
                    (np.where(per > mu, 1.0, np.interp(per, lam, miss_fraction)) * bin_requests).sum()
                )
                if total and missed / total * 100 > miss_pct:
                    continue
                ahead = np.concatenate((n[shift:], np.repeat(n[-1], shift))) if shift else n
                usd = (
                    float(np.maximum(n, ahead).sum())
                    * bin_seconds
                    * price_per_hour
                    / slots_per_node
                    / 3600
                    / days
                )
                if usd < best["usd_per_day"]:
                    best = {"usd_per_day": usd, "rho": float(rho), "buffer": float(buffer),
                            "miss_pct": missed / total * 100 if total else 0.0,
                            "window": float(window * bin_seconds)}  # fmt: skip
                break  # a larger buffer at this rho only costs more
    return best
