"""A model's CPU KV tier in its vLLM pod (plan/kv_offload.py): vLLM's flags, LMCache's environment, the pod's
memory and `/dev/shm` grown for the tier, and the endpoint picker's weights for a hit on each tier.

Upstream, read at the newest stored copies (the vllm-project/vllm v0.30.0 tag itself is over the fetch limit):
- native: `--kv-offloading-backend native --kv-offloading-size <GiB>` (vllm/config/cache.py CacheConfig
  `kv_offloading_size`, "the total buffer size summed across all TP ranks", and `kv_offloading_backend`;
  vllm/engine/arg_utils.py adds both to the CLI). vllm/config/kv_offloading.py NativeOffloadingParser turns
  them into KVTransferConfig(kv_connector="OffloadingConnector", kv_role="kv_both") with
  `kv_bytes_per_rank` = size / (TP x PP): vLLM's own form of the `--kv-transfer-config` one would write.
- lmcache: LMCache in vLLM's process, `--kv-transfer-config '{"kv_connector":"LMCacheConnectorV1",
  "kv_role":"kv_both"}'`, configured by environment (docs.vllm.ai v0.25.0 examples/disaggregated/lmcache:
  "In-process mode (LMCacheConnectorV1) ... configured through environment variables"; LMCache
  lmcache/v1/config.py `local_cpu`, `max_local_cpu_size` in GB per LMCache engine, one per rank, read from
  `LMCACHE_<FIELD>`). vLLM's `--kv-offloading-backend lmcache` shortcut is not used: from v0.25 its docs put
  it under the multi-process mode (LMCacheMPConnector), which needs a separate `lmcache server`.
- prefix caching: `--enable-prefix-caching` (CacheConfig `enable_prefix_caching`, on by default in V1; said
  explicitly so the tier never runs without it).
"""

from __future__ import annotations

import json
from typing import Any

from llm_platform.plan.kv_offload import KvOffloadPlan

LMCACHE_CONNECTOR = {"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}
# llm-d-router v0.10.0 pkg/kvcache/backend.go DefaultKVCacheBackendConfig: a block held in GPU memory scores
# 1.0, one in the CPU tier 0.8 (loading it back costs a copy over PCIe, far less than a prefill); the device
# tier is vLLM's KV event `medium`, lower-cased (pkg/kvevents/pool.go); vLLM's OffloadingConnector publishes
# its CPU blocks' stores and evictions with their medium (distributed/kv_transfer/kv_connector/v1/
# offloading_connector.py `take_events`, stored copy)
TIER_WEIGHTS = ({"name": "gpu", "weight": 1.0}, {"name": "cpu", "weight": 0.8})


def _gib(value: float) -> str:
    return f"{value:g}"


def offload_args(tier: KvOffloadPlan | None) -> list[str]:
    """vLLM's flags for the tier, prefix caching first."""
    if tier is None:
        return []
    if tier.backend == "native":
        return [
            "--enable-prefix-caching",
            "--kv-offloading-backend",
            "native",
            "--kv-offloading-size",
            _gib(tier.cpu_gib),
        ]
    return [
        "--enable-prefix-caching",
        "--kv-transfer-config",
        json.dumps(LMCACHE_CONNECTOR, separators=(",", ":")),
    ]


def offload_env(tier: KvOffloadPlan | None) -> list[dict[str, Any]]:
    """LMCache's CPU tier, each rank's share (native takes its size from the flags)."""
    if tier is None or tier.backend != "lmcache":
        return []
    return [
        {"name": "LMCACHE_LOCAL_CPU", "value": "True"},
        {"name": "LMCACHE_MAX_LOCAL_CPU_SIZE", "value": _gib(tier.gib_per_rank)},
    ]


def _grow(quantity: str, gib: int) -> str:
    """`quantity` (the serving spec's `<n>Gi` or `<n>Mi`) plus `gib` GiB, in the same unit."""
    if quantity.endswith("Gi"):
        return f"{int(quantity[:-2]) + gib}Gi"
    if quantity.endswith("Mi"):
        return f"{int(quantity[:-2]) + gib * 1024}Mi"
    raise ValueError(f"memory quantity {quantity!r}: expected <n>Gi or <n>Mi")


def grown_resources(resources: dict[str, Any], tier: KvOffloadPlan | None) -> dict[str, Any]:
    """The pod's resources with its memory request and limit grown by the tier x 1.2 (the tier is pinned host
    memory, counted by the scheduler and the memory cgroup like any other)."""
    if tier is None:
        return resources
    requests, limits = resources["requests"], resources["limits"]
    return {
        "requests": {**requests, "memory": _grow(requests["memory"], tier.growth_gib)},
        "limits": {**limits, "memory": _grow(limits["memory"], tier.growth_gib)},
    }


def grown_shm_gib(base_gib: int, tier: KvOffloadPlan | None) -> int:
    """`/dev/shm`'s sizeLimit: NCCL's share plus the tier x 1.2 (opendatahub-io/kserve PR #1842)."""
    return base_gib + (tier.growth_gib if tier is not None else 0)


def tier_scoring(tier: KvOffloadPlan | None) -> dict[str, Any]:
    """The precise-prefix-cache producer's `indexerConfig` addition scoring a CPU-tier hit below a GPU one
    (llm-d-router v0.10.0 pkg/kvcache/indexer.go Config `kvCacheBackendConfigs`; the producer hands them to
    its KVBlockScorer, preciseprefixcache/producer.go)."""
    if tier is None:
        return {}
    return {"kvCacheBackendConfigs": [dict(w) for w in TIER_WEIGHTS]}
