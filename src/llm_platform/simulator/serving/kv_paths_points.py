"""Published measurements of KV movement (CPU offload, P/D transfer), each with its source and date, and the
model's error against each (serving/kv_paths.py run on the same setup).

Which point set a constant and which is held out:
- `offload-dma-h100` set PCIE5_HOST_TO_DEVICE_GBPS (the calibration: its error is 0 by construction);
- `offload-ttft-512` is checked from the same post (not independent of the calibration);
- `pd-handover-orchestration` set PD_HANDOVER_OVERHEAD_S (calibration, error 0);
- `pd-transfer-l20` is checked from the same trace (not independent of that calibration);
- `pd-nvlink-7500` is HELD OUT: no constant was fitted to it (TRANSFER_EFFICIENCY is an uncalibrated 1.0).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from llm_platform.facts.catalog import H100, NVLINK4
from llm_platform.facts.model_profiles import ModelProfile, profile
from llm_platform.simulator.serving.kv_paths import (
    PCIE4_HOST_TO_DEVICE_GBPS,
    PCIE5_HOST_TO_DEVICE_GBPS,
    PD_HANDOVER_OVERHEAD_S,
    cpu_load_seconds,
    host_to_device_bytes_per_second,
    kv_transfer_seconds,
)
from llm_platform.simulator.serving.replica import ReplicaModel, TokenStats
from llm_platform.simulator.serving.replica_config import EngineConfig

VLLM_OFFLOAD_BLOG = (
    "vLLM blog 'Inside vLLM's New Offloading Connector' (Or Ozeri, Danny Harnik), 2025-12-29: "
    "vllm-project/vllm-project.github.io@9059fb9:_posts/2025-12-29-offloading-connector.md"
)
LMCACHE_PD_BLOG = (
    "LMCache blog 'Bringing State-Of-The-Art PD Speed to vLLM', 2025-04-29: "
    "LMCache/lmcache.github.io@1af0eb2:_posts/2025-04-29-pdbench.md"
)
VLLM_PD_RFC = (
    "vllm-project/vllm#50913 'Cutting P/D-disaggregation TTFT' (RFC, 2026-08-03) and PR #51919 (2026-08-12): "
    "https://github.com/vllm-project/vllm/issues/50913"
)
Role = Literal["calibration", "checked", "held out"]
# Qwen/Qwen3-32B config.json: 64 layers, hidden 5120, 64 heads, 8 KV heads, head_dim 128; the trace ran an FP8
# checkpoint with an FP8 KV cache (1 byte per element)
QWEN3_32B_FP8_KV = ModelProfile("Qwen/Qwen3-32B-FP8", 32.8e9, 64, 5120, 8, 128, 151936, kv_cache_bytes=1)


@dataclass(frozen=True)
class Point:
    id: str
    role: Role
    source: str
    setup: str
    quantity: str
    published: float
    model: Callable[[], float]  # the model's figure for the same setup


@dataclass(frozen=True)
class Comparison:
    point: Point
    modelled: float

    @property
    def error(self) -> float:
        """Model / published - 1."""
        return self.modelled / self.point.published - 1

    def line(self) -> str:
        p = self.point
        return (
            f"{p.id} [{p.role}] {p.quantity}: published {p.published:g}, model {self.modelled:.3g}, "
            f"error {self.error * 100:+.0f} % ({p.setup}; {p.source})"
        )

    def row(self) -> dict[str, object]:
        p = self.point
        return {
            "id": p.id, "role": p.role, "quantity": p.quantity, "published": p.published,
            "model": round(self.modelled, 4), "error_pct": round(self.error * 100, 1), "setup": p.setup,
            "source": p.source,
        }  # fmt: skip


def _h2d_gbps() -> float:
    return host_to_device_bytes_per_second(H100, 1) / 1e9


def _ttft_ratio_512() -> float:
    """Single request, Llama-3.1-8B-Instruct on one H100, 512-token prompt: TTFT computing the prompt over TTFT
    loading its KV from the CPU tier (the blog ran with the GPU prefix cache off, so every hit is a CPU hit;
    the last prompt token is computed either way)."""
    llama = profile("meta-llama/Llama-3.1-8B-Instruct")
    tokens = 512.0
    stats = TokenStats.fixed(tokens, 1.0)
    computed = ReplicaModel(llama, H100).table(stats).mean_ttft_seconds(0.0)
    hit = (tokens - 1) / tokens
    loaded_model = ReplicaModel(llama, H100, engine=EngineConfig(prefix_hit_rate=hit))
    loaded = loaded_model.table(stats).mean_ttft_seconds(0.0) + cpu_load_seconds(llama, tokens, H100, 1)
    return computed / loaded


def _nvlink_transfer_ms() -> float:
    """The KV of a 7,500-token prompt moved over NVLink 4 between two GPUs of one node (the post's 1P1D setup).
    The post does not name its model; Llama-3.1-8B-Instruct (its series' model) is assumed."""
    llama = profile("meta-llama/Llama-3.1-8B-Instruct")
    link = NVLINK4.large_gbps * 1e9
    return kv_transfer_seconds(llama, 7500.0, link, link) * 1000


def _handover_orchestration_ms() -> float:
    return PD_HANDOVER_OVERHEAD_S * 1000


def _l20_transfer_ms() -> float:
    """The KV of a ~4.9k-token Qwen3-32B-FP8 prompt between two TP 2 replicas of one 8 x L20 node (PCIe Gen4, no
    NVLink): each rank over its own PCIe link at the Gen4 rate."""
    link = 2 * PCIE4_HOST_TO_DEVICE_GBPS * 1e9
    return kv_transfer_seconds(QWEN3_32B_FP8_KV, 4900.0, link, link) * 1000


POINTS: tuple[Point, ...] = (
    Point(
        "offload-dma-h100", "calibration", VLLM_OFFLOAD_BLOG,
        "cudaMemcpyAsync CPU->GPU, 1000 blocks of 2 MB, H100 (figure 4; 'up to about 50GB/s')",
        "host-to-device GB/s", PCIE5_HOST_TO_DEVICE_GBPS, _h2d_gbps,
    ),
    Point(
        "offload-ttft-512", "checked", VLLM_OFFLOAD_BLOG,
        "Llama-3.1-8B-Instruct, H100, one 512-token request ('TTFT for this prompt size only decreased by X2')",
        "TTFT computed / TTFT loaded from CPU", 2.0, _ttft_ratio_512,
    ),
    Point(
        "pd-handover-orchestration", "calibration", VLLM_PD_RFC,
        "Qwen3-32B-FP8, 8 x L20, TP 2, 3P1D, ~4.9k-token prompts, block 16, p50: handover 263 ms less the 105 ms "
        "transfer window and the 58 ms recompute of token #1",
        "P/D handover orchestration ms", 100.0, _handover_orchestration_ms,
    ),
    Point(
        "pd-transfer-l20", "checked", VLLM_PD_RFC,
        "the same trace at --block-size 64: 'the actual KV transfer is only ~29ms' (PR #51919)",
        "KV transfer ms", 29.0, _l20_transfer_ms,
    ),
    Point(
        "pd-nvlink-7500", "held out", LMCACHE_PD_BLOG,
        "Dynamo, KV of a 7,500-token input through NVLink, page size 128 ('8ms'); model unnamed, Llama-3.1-8B assumed",
        "KV transfer ms", 8.0, _nvlink_transfer_ms,
    ),
)  # fmt: skip


def compare_all() -> list[Comparison]:
    """The model against every published point, calibration first."""
    return [Comparison(p, p.model()) for p in POINTS]


def held_out() -> list[Comparison]:
    return [c for c in compare_all() if c.point.role == "held out"]
