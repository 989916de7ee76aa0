"""What would meet an SLO that a replica misses even at low load, with the numbers.

No autoscaling config helps when a single replica, nearly idle, already misses its objective: the P95
request's own prefill is over the TTFT objective, or one decode step is over the ITL objective. Four things
change that, each computed here from the same replica model (simulator/serving/replica.py): a looser objective on
one of vLLM's histogram buckets (what the alerts can tell apart, plan/promql.py), shorter uncached prompts
(or prefix-cache hits), tensor parallelism on the same GPU, or a faster GPU from the catalog.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from llm_platform.config.schema import Slo
from llm_platform.facts.catalog import GPU_INSTANCES, GpuInstance, GpuModel
from llm_platform.plan.promql import ITL, TTFT, bucket_at_or_above
from llm_platform.simulator.serving.replica import ReplicaModel, ReplicaTable
from llm_platform.simulator.traffic.traffic import Traffic

LOW_LOAD = 1e-3  # of saturation: "even at low load"
PERCENTILE = 95  # the recommendation sizes for the P95 request (scenarios.SLO_TARGET)
ADVICE_POINTS = 64  # a coarse replica table is enough to say whether an alternative meets the SLO at low load


@dataclass(frozen=True)
class LowLoad:
    """A replica's latency at low load: the P95 request's TTFT and one decode step."""

    p95_ttft_s: float
    itl_s: float

    def meets(self, slo: Slo) -> bool:
        return self.p95_ttft_s <= slo.ttft_seconds and self.itl_s <= slo.itl_seconds


def _prompts(traffic: Traffic) -> np.ndarray:
    rng = np.random.default_rng(1)  # as scenarios._miss_share samples them
    if not len(traffic):
        return np.full(2_000, 128.0)
    return rng.choice(traffic.input_tokens, min(len(traffic), 20_000)).astype(np.float64)


def low_load(table: ReplicaTable, prompts: np.ndarray, prompt_scale: float = 1.0) -> LowLoad:
    s = table.at(table.capacity_rps * LOW_LOAD)
    state = {name: np.full(len(prompts), float(v)) for name, v in s.items()}
    ttft = table.ttft_seconds(prompts * prompt_scale, state, np.random.default_rng(2))
    return LowLoad(float(np.percentile(ttft, PERCENTILE)), float(s["itl"]))


def _on(
    model: ReplicaModel, table: ReplicaTable, gpu: GpuModel, tp: int, prompts: np.ndarray
) -> LowLoad | None:
    """Low-load latency of the same model and mix on `tp` x `gpu`; None when the weights do not fit."""
    other = replace(model, gpu=gpu, tensor_parallel=tp, calibration=None)
    try:
        return low_load(other.table(table.stats, ADVICE_POINTS), prompts)
    except ValueError:
        return None


def _cheapest(gpu: GpuModel, gpus: int) -> GpuInstance | None:
    fits = [i for i in GPU_INSTANCES.values() if i.gpu == gpu and i.gpus >= gpus and not i.reserved_only]
    return min(fits, key=lambda i: i.list_usd_per_hour, default=None)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms" if seconds >= 0.1 else f"{seconds * 1000:.1f} ms"


def _largest_prompt_scale(table: ReplicaTable, prompts: np.ndarray, slo: Slo) -> float | None:
    """The largest factor on every uncached prompt that brings the P95 TTFT within the objective."""
    if low_load(table, prompts, 1e-3).p95_ttft_s > slo.ttft_seconds:
        return None  # the fixed per-request and per-step work alone is over the objective
    lo, hi = 1e-3, 1.0
    for _ in range(30):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if low_load(table, prompts, mid).p95_ttft_s <= slo.ttft_seconds else (lo, mid)
    return lo


def what_would_meet(table: ReplicaTable, traffic: Traffic, slo: Slo) -> str:
    """Why `slo` cannot be met by one replica at low load, and each change that would meet it, with numbers."""
    model = table.model
    prompts = _prompts(traffic)
    now = low_load(table, prompts)
    options: list[str] = []
    looser = []
    if now.p95_ttft_s > slo.ttft_seconds:
        looser.append(f"ttftSeconds: {bucket_at_or_above(TTFT, now.p95_ttft_s):g}")
    if now.itl_s > slo.itl_seconds:
        looser.append(f"itlSeconds: {bucket_at_or_above(ITL, now.itl_s):g}")
    options.append(f"a looser objective, slo {{{', '.join(looser)}}} (the next of vLLM's bucket boundaries)")
    if now.p95_ttft_s > slo.ttft_seconds and now.itl_s <= slo.itl_seconds:
        scale = _largest_prompt_scale(table, prompts, slo)
        if scale is not None:
            median = float(np.median(prompts))
            options.append(
                f"shorter prompts: a median of at most {median * scale:,.0f} uncached tokens (now {median:,.0f}; "
                f"a prefix-cache hit rate of {1 - scale:.2f} does the same)"
            )
    biggest = max((i.gpus for i in GPU_INSTANCES.values() if i.gpu == model.gpu), default=1)
    tp = model.tensor_parallel * 2
    while tp <= biggest:
        found = _on(model, table, model.gpu, tp, prompts)
        instance = _cheapest(model.gpu, tp)
        if found is not None and found.meets(slo) and instance is not None:
            options.append(
                f"tensorParallelSize {tp} on {model.gpu.name} ({instance.instance_type}: P95 TTFT "
                f"{_ms(found.p95_ttft_s)}, ITL {_ms(found.itl_s)})"
            )
            break
        tp *= 2
    faster = []
    for gpu in {i.gpu for i in GPU_INSTANCES.values()}:
        instance = _cheapest(gpu, model.tensor_parallel)
        if gpu == model.gpu or gpu.fp16_tflops <= model.gpu.fp16_tflops or instance is None:
            continue
        found = _on(model, table, gpu, model.tensor_parallel, prompts)
        if found is not None and found.meets(slo):
            faster.append((instance.list_usd_per_hour, gpu.name, instance.instance_type, found))
    gpus = [
        f"{name} ({instance_type}, ${price:,.2f}/h in us-east-1: P95 TTFT {_ms(found.p95_ttft_s)}, "
        f"ITL {_ms(found.itl_s)})"
        for price, name, instance_type, found in sorted(faster, key=lambda row: row[:2])
    ]
    if gpus:
        options.append(f"a faster GPU, cheapest first: {' or '.join(gpus[:2])}")
    return (
        f"the SLO (TTFT {_ms(slo.ttft_seconds)}, ITL {_ms(slo.itl_seconds)}) cannot be met on "
        f"{model.tensor_parallel} x {model.gpu.name} even at low load (P95 TTFT {_ms(now.p95_ttft_s)}, "
        f"ITL {_ms(now.itl_s)}), and no autoscaling config fixes that; what would meet it: "
        + "; ".join(options)
    )
