"""Four ways to serve one model, each as replicas of the steady-state replica model (serving/replica.py):

- aggregated: today's replica; its prefix cache is the HBM its running requests leave free;
- pd: prefill/decode disaggregation: prefill replicas run prompts only (one output token each, as vLLM's P/D
  proxy sends them), decode replicas run decodes only (no prompt chunk ever shares their steps, so their ITL
  has no chunked-prefill interference), and each prompt's KV crosses the network between them
  (serving/kv_paths.py `kv_transfer_seconds`); TTFT = prefill TTFT + transfer + one decode step (token #1
  computed again) + the handover's orchestration (`PD_HANDOVER_OVERHEAD_S`);
- cpu-tier: aggregated with a CPU tier of `cpu_gib` per replica: a larger prefix cache (HBM free + CPU), the
  hits found only in the CPU tier loaded over PCIe before the prompt's first step (`cpu_load_seconds`);
- pd+cpu-tier: P/D whose prefill replicas have the CPU tier (the prefill role is where prefix hits save work).

Each role is sized on its own: decode on ITL, prefill (and an aggregated replica) on TTFT and ITL, at the
largest per-replica rate whose steady-state misses stay within the SLO target (search/scenarios.py's rule);
P/D is built in every prefill x decode tensor parallelism of `role_tensor_parallel`, the day picks the best.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from llm_platform.config.schema import Slo
from llm_platform.facts.catalog import GpuInstance
from llm_platform.simulator.search.scenarios import SLO_TARGET
from llm_platform.simulator.serving.kv_paths import (
    PD_HANDOVER_OVERHEAD_S,
    PrefixCache,
    cpu_load_seconds,
    kv_transfer_seconds,
    replica_network_bytes_per_second,
)
from llm_platform.simulator.serving.replica import ReplicaModel, ReplicaTable, TokenStats

PATHS = ("aggregated", "pd", "cpu-tier", "pd+cpu-tier")
SAMPLE_REQUESTS = 20_000  # prompts drawn (fixed seed) to estimate a rate's miss share, as scenarios.py does
ITL_QUANTILE = 0.95  # a request's ITL is the 95th percentile of its token gaps (vllm bench serve's P95 ITL)

# (TTFT seconds, ITL seconds) of requests given each role's per-replica rate (one array per role, per request)
Latency = Callable[[dict[str, np.ndarray], np.ndarray, np.random.Generator], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Role:
    """One kind of replica of a path: its steady-state table and the rate one replica can take within the SLO."""

    name: str  # "replica", "prefill" or "decode"
    table: ReplicaTable
    lam_slo: float  # requests/s per replica at the SLO target; 0: no rate meets it

    @property
    def gpus(self) -> int:
        """GPUs one replica of the role holds (its tensor parallelism)."""
        return self.table.model.tensor_parallel


@dataclass(frozen=True)
class PathModel:
    """A serving path: its roles, how their states make each request's TTFT and ITL, and the cache it sees."""

    name: str
    roles: tuple[Role, ...]
    latency: Latency
    hbm_hit: float  # share of prompt tokens found in HBM
    cpu_hit: float  # share found only in the CPU tier
    transfer_s: float  # P/D: mean KV transfer per request
    cpu_load_s: float  # CPU tier: mean load per request

    @property
    def meets_at_some_rate(self) -> bool:
        return all(r.lam_slo > 0 for r in self.roles)

    @property
    def shape(self) -> str:
        """GPUs per replica of each role, e.g. "prefill TP 4, decode TP 8"."""
        return ", ".join(f"{r.name} TP {r.gpus}" for r in self.roles)


@dataclass(frozen=True)
class Inputs:
    """What the four paths are built from: the model as deployed, its traffic's lengths, the prefix cache."""

    model: ReplicaModel
    instance: GpuInstance
    stats: TokenStats
    prompts: np.ndarray  # the traffic's prompt lengths (the sample every miss share is estimated on)
    slo: Slo
    cache: PrefixCache
    cpu_gib: float  # CPU tier per replica


def tail_itl(state: dict[str, np.ndarray]) -> np.ndarray:
    """The ITL_QUANTILE of a decoder's token gaps: a decode step that carries a prompt chunk takes the prefill
    step's time, and a share `prefill steps/s x mean ITL` of a decoder's steps carry one; past 1 - ITL_QUANTILE
    of them the quantile is the stalled step, else the mean (vLLM's chunked-prefill interference; a decode
    replica of P/D carries no prompt chunk but its requests' one-token arrivals)."""
    stalled = state["prefill_steps"] * state["itl"]
    return np.where(stalled > 1 - ITL_QUANTILE, np.maximum(state["prefill_step"], state["itl"]), state["itl"])


def _table(model: ReplicaModel, stats: TokenStats, hit: float) -> ReplicaTable:
    return replace(model, engine=replace(model.engine, prefix_hit_rate=min(hit, 0.999))).table(stats)


def _sample(prompts: np.ndarray) -> np.ndarray:
    rng = np.random.default_rng(1)
    take = min(len(prompts), SAMPLE_REQUESTS) or 1
    return rng.choice(prompts, take).astype(np.float64) if len(prompts) else np.full(take, 128.0)


def miss_share(latency: Latency, rates: dict[str, float], prompts: np.ndarray, slo: Slo) -> float:
    """Steady-state share of requests missing TTFT or ITL with every role at its given per-replica rate."""
    arrays = {name: np.full(len(prompts), rate) for name, rate in rates.items()}
    ttft, itl = latency(arrays, prompts, np.random.default_rng(2))
    return float(((ttft > slo.ttft_seconds) | (itl > slo.itl_seconds)).mean())


def _largest_rate(misses: Callable[[float], float], capacity: float, target: float = SLO_TARGET) -> float:
    """Largest per-replica rate up to `capacity` whose miss share stays <= target (bisection to 1e-9 of it)."""
    lo, hi = 0.0, capacity
    for _ in range(30):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if misses(mid) <= target else (lo, mid)
    return lo if lo > capacity * 1e-3 else 0.0


def hbm_prefix_gib(table: ReplicaTable, lam: float) -> float:
    """HBM the prefix cache can hold at a per-replica rate: the KV cache less what running requests take."""
    usage = float(table.at(lam)["kv_usage"])
    free_tokens = table.model.kv_capacity_tokens * (1.0 - usage)
    return free_tokens * table.model.profile.kv_bytes_per_token / 2**30


def _cached_table(
    model: ReplicaModel,
    stats: TokenStats,
    cache: PrefixCache,
    cpu_gib: float,
    sizing: Callable[[ReplicaTable], float],
) -> tuple[ReplicaTable, float, float]:
    """The table of a replica whose prefix hits depend on its own load: hits from the whole KV cache first,
    then from what is left free at the rate that table is sized at (one fixed-point pass)."""
    full = model.kv_capacity_tokens * model.profile.kv_bytes_per_token / 2**30
    first = _table(model, stats, sum(cache.hit_rates(full, cpu_gib)))
    hbm, cpu = cache.hit_rates(hbm_prefix_gib(first, sizing(first)), cpu_gib)
    return _table(model, stats, hbm + cpu), hbm, cpu


def aggregated(inputs: Inputs, cpu_tier: bool) -> PathModel:
    """Today's replica, with or without the CPU tier."""
    m, slo, prompts = inputs.model, inputs.slo, _sample(inputs.prompts)
    cpu_gib = inputs.cpu_gib if cpu_tier else 0.0
    load_per_token = cpu_load_seconds(m.profile, 1.0, m.gpu, m.tensor_parallel)
    holder: dict[str, float] = {"cpu": 0.0}

    def make_latency(table: ReplicaTable) -> Latency:
        def latency(rates: dict[str, np.ndarray], p: np.ndarray, rng: np.random.Generator):
            state = table.at(rates["replica"])
            load = p * holder["cpu"] * load_per_token
            return table.ttft_seconds(p, state, rng) + load, tail_itl(state)

        return latency

    def sizing(table: ReplicaTable) -> float:
        latency = make_latency(table)
        return _largest_rate(
            lambda lam: miss_share(latency, {"replica": lam}, prompts, slo), table.capacity_rps
        )

    table, hbm, cpu = _cached_table(m, inputs.stats, inputs.cache, cpu_gib, sizing)
    holder["cpu"] = cpu
    latency = make_latency(table)
    role = Role("replica", table, sizing(table))
    mean_load = float(inputs.stats.mean_input * cpu * load_per_token)
    return PathModel("cpu-tier" if cpu_tier else "aggregated", (role,), latency, hbm, cpu, 0.0, mean_load)


def role_tensor_parallel(inputs: Inputs) -> list[int]:
    """Tensor parallelism a P/D role may take: the deployed one, and every smaller power of two dividing it whose
    replica still holds the weights and one request's KV (a multi-node replica keeps its shape)."""
    m = inputs.model
    if m.tensor_parallel > inputs.instance.gpus:
        return [m.tensor_parallel]
    need = inputs.stats.mean_input + inputs.stats.mean_output
    fits = [m.tensor_parallel]
    tp = m.tensor_parallel // 2
    while tp >= 1 and m.tensor_parallel % tp == 0:
        try:
            if replace(m, tensor_parallel=tp).kv_capacity_tokens >= need:
                fits.append(tp)
        except ValueError:  # the weights do not fit: no smaller TP will
            break
        tp //= 2
    return fits


def disaggregated(
    inputs: Inputs, cpu_tier: bool, prefill_tp: int | None = None, decode_tp: int | None = None
) -> PathModel:
    """Prefill and decode replicas, each of its own tensor parallelism (default: the deployed one), KV over the
    network at the slower role's link."""
    m, slo, stats, prompts = inputs.model, inputs.slo, inputs.stats, _sample(inputs.prompts)
    pm = replace(m, tensor_parallel=prefill_tp or m.tensor_parallel)
    dm = replace(m, tensor_parallel=decode_tp or m.tensor_parallel)
    decode = dm.table(TokenStats(1.0, stats.mean_output, stats.mean_decode_context))
    send = replica_network_bytes_per_second(inputs.instance, pm.tensor_parallel)
    receive = replica_network_bytes_per_second(inputs.instance, dm.tensor_parallel)
    transfer_per_token = kv_transfer_seconds(m.profile, 1.0, send, receive)
    load_per_token = cpu_load_seconds(m.profile, 1.0, m.gpu, pm.tensor_parallel)
    lam_d = _largest_rate(lambda lam: float(tail_itl(decode.at(lam)) > slo.itl_seconds), decode.capacity_rps)
    holder: dict[str, float] = {"cpu": 0.0}

    def make_latency(prefill: ReplicaTable) -> Latency:
        def latency(rates: dict[str, np.ndarray], p: np.ndarray, rng: np.random.Generator):
            d = decode.at(rates["decode"])
            own = prefill.ttft_seconds(p, prefill.at(rates["prefill"]), rng)
            moved = p * (transfer_per_token + holder["cpu"] * load_per_token)
            return own + moved + d["step"] + PD_HANDOVER_OVERHEAD_S, tail_itl(d)

        return latency

    def sizing(prefill: ReplicaTable) -> float:
        latency = make_latency(prefill)
        return _largest_rate(
            lambda lam: miss_share(latency, {"prefill": lam, "decode": lam_d}, prompts, slo),
            prefill.capacity_rps,
        )

    prefill_stats = TokenStats(stats.mean_input, 1.0, stats.mean_input + 0.5)
    cpu_gib = inputs.cpu_gib if cpu_tier else 0.0
    prefill, hbm, cpu = _cached_table(pm, prefill_stats, inputs.cache, cpu_gib, sizing)
    holder["cpu"] = cpu
    roles = (Role("prefill", prefill, sizing(prefill)), Role("decode", decode, lam_d))
    mean_transfer = float(stats.mean_input * transfer_per_token)
    mean_load = float(stats.mean_input * cpu * load_per_token)
    name = "pd+cpu-tier" if cpu_tier else "pd"
    return PathModel(name, roles, make_latency(prefill), hbm, cpu, mean_transfer, mean_load)


def build(inputs: Inputs) -> list[PathModel]:
    """The four paths in PATHS order, P/D in every shape of `role_tensor_parallel` (prefill x decode): the day
    picks each path's best shape (search/serving_paths_day.py `best_shapes`)."""
    shapes = [(p, d) for p in role_tensor_parallel(inputs) for d in role_tensor_parallel(inputs)]
    plain = [aggregated(inputs, False), *(disaggregated(inputs, False, p, d) for p, d in shapes)]
    if inputs.cache.reuse == 0:  # no prefix to cache: a CPU tier changes nothing (the same paths, renamed)
        tiered = [replace(path, name=f"{path.name}+cpu-tier" if path.roles[0].name == "prefill" else "cpu-tier")
                  for path in plain]  # fmt: skip
    else:
        tiered = [aggregated(inputs, True), *(disaggregated(inputs, True, p, d) for p, d in shapes)]
    return [plain[0], *plain[1:], tiered[0], *tiered[1:]]
