"""What moving KV-cache bytes costs on the two serving paths that move them: prefill/decode disaggregation (P/D)
ships each prompt's KV from a prefill replica to a decode replica over the network, and a CPU tier (vLLM's
OffloadingConnector or LMCache) loads a prefix-cache hit from host memory into the GPU over PCIe.

- Bytes: a prompt of T tokens holds T x the model's KV bytes per token (facts/model_profiles.py
  `kv_bytes_per_token`: layers x 2 x KV heads x head dim x element bytes).
- Network (P/D): the KV of a tensor-parallel replica is sharded over its ranks, each rank sends its shard over
  its own NICs, so a replica gets its GPUs' share of the instance's network bandwidth (facts/catalog.py
  `network_gbps`, Gbit/s from karpenter-provider-aws v1.14.1 zz_generated.bandwidth.go: EFA on p4d/p5, the ENA
  baseline without EFA); a transfer runs at the slower of the two replicas' links, times `TRANSFER_EFFICIENCY`.
- PCIe (CPU tier): each GPU loads over its own host link at `HOST_TO_DEVICE_GBPS` (its PCIe generation).
- Hit rate of a cache: a working set of W GiB of shared prefixes, requested evenly (LRU over a uniform working
  set: the fraction resident is min(1, cache / W)), over the share of prompt tokens that are a shared prefix.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_platform.facts.catalog import GpuInstance, GpuModel
from llm_platform.facts.model_profiles import ModelProfile

# One direction of cudaMemcpyAsync between pinned host memory and an H100 (PCIe Gen5 x16), 2 MB blocks (vLLM
# 0.12's contiguous KV layout): "for single-direction both can get up to about 50GB/s" (vLLM blog "Inside
# vLLM's New Offloading Connector", 2025-12-29, vllm-project/vllm-project.github.io
# _posts/2025-12-29-offloading-connector.md, figures 3-4). PCIe Gen4 x16 parts (A10G, L4, L40S, A100) are
# taken at half of it, the ratio of the two generations' link rates (32 vs 64 GB/s per direction, PCI-SIG):
# derived, not measured. H200 and B200 sit on Gen5 as the H100 does.
PCIE5_HOST_TO_DEVICE_GBPS = 50.0
PCIE4_HOST_TO_DEVICE_GBPS = PCIE5_HOST_TO_DEVICE_GBPS / 2
HOST_TO_DEVICE_GBPS: dict[str, float] = {
    "A10G": PCIE4_HOST_TO_DEVICE_GBPS,
    "L4": PCIE4_HOST_TO_DEVICE_GBPS,
    "L40S": PCIE4_HOST_TO_DEVICE_GBPS,
    "A100-40GB": PCIE4_HOST_TO_DEVICE_GBPS,
    "A100-80GB": PCIE4_HOST_TO_DEVICE_GBPS,
    "H100": PCIE5_HOST_TO_DEVICE_GBPS,
    "H200": PCIE5_HOST_TO_DEVICE_GBPS,
    "B200": PCIE5_HOST_TO_DEVICE_GBPS,
}

# Achieved / link rate of a NIXL transfer: Unverified (no published NIXL-over-EFA throughput is in the
# reference set); 1.0 is the optimistic bound. The held-out NVLink point of serving/kv_paths_points.py prints
# how far off the formula is where it has been measured.
TRANSFER_EFFICIENCY = 1.0

# The P/D handover beyond moving the bytes and computing token #1 again on the decode side: step-boundary waits
# and the router's serial dispatch of the stock NixlConnector path. vllm-project/vllm#50913 (2026-08-03; PR
# #51919 adds the fixes as opt-in kv_connector_extra_config flags `seed_first_token`, `pd_early_arm`, default off;
# not checked at the pinned vLLM) traced it on 8 x L20,
# Qwen3-32B-FP8, TP 2, 3P1D, ~4.9k-token prompts, --block-size 16 (vLLM's default), p50: handover (prefill
# emits token #1 -> client receives it) ~263 ms, of which the KV transfer window ~105 ms and the recompute of
# token #1 ~58 ms; the rest, 263 - 105 - 58 = 100 ms, is charged to every P/D request here.
PD_HANDOVER_OVERHEAD_S = 0.100

# Host memory a CPU tier may take by default: half of the replica's share of the instance's memory (the rest
# is vLLM's own process, the page cache and the node's daemons; the tier's pod grows memory and /dev/shm by
# tier x 1.2, opendatahub-io/kserve PR #1842). An assumption, overridden by --cpu-gib.
DEFAULT_HOST_SHARE_FOR_TIER = 0.5


def kv_bytes(profile: ModelProfile, tokens: float) -> float:
    """KV-cache bytes of `tokens` tokens of the model (all layers, all ranks)."""
    return tokens * profile.kv_bytes_per_token


def replica_network_bytes_per_second(instance: GpuInstance, replica_gpus: int) -> float:
    """Network bytes/s a replica's ranks send in parallel: their GPUs' share of the instance's bandwidth
    (a replica spanning several nodes has each node's whole bandwidth)."""
    share = min(replica_gpus, instance.gpus) / instance.gpus
    nodes = max(1, replica_gpus // instance.gpus)
    return instance.network_gbps * 1e9 / 8 * share * nodes


def kv_transfer_seconds(
    profile: ModelProfile, tokens: float, sender_bytes_per_s: float, receiver_bytes_per_s: float
) -> float:
    """Time to move a prompt's KV from a prefill replica to a decode replica (P/D), at the slower link."""
    link = min(sender_bytes_per_s, receiver_bytes_per_s) * TRANSFER_EFFICIENCY
    return kv_bytes(profile, tokens) / link


def host_to_device_bytes_per_second(gpu: GpuModel, replica_gpus: int) -> float:
    """Bytes/s a replica loads from host memory: each GPU on its own PCIe link (an uncatalogued part: Gen4)."""
    return HOST_TO_DEVICE_GBPS.get(gpu.name, PCIE4_HOST_TO_DEVICE_GBPS) * 1e9 * replica_gpus


def cpu_load_seconds(profile: ModelProfile, tokens: float, gpu: GpuModel, replica_gpus: int) -> float:
    """Time to load `tokens` tokens of cached KV from the CPU tier into the replica's GPUs."""
    return kv_bytes(profile, tokens) / host_to_device_bytes_per_second(gpu, replica_gpus)


@dataclass(frozen=True)
class PrefixCache:
    """The prefix cache a replica's requests see: what share of prompt tokens is a reusable shared prefix, how
    large the set of those prefixes is, and the cache that holds them (HBM left free by running requests, plus
    an optional CPU tier)."""

    reuse: float  # fraction of prompt tokens that are a shared prefix (0..1)
    working_set_gib: float  # KV of all distinct shared prefixes a replica sees

    def __post_init__(self) -> None:
        if not 0.0 <= self.reuse < 1.0:
            raise ValueError(f"--prefix-reuse {self.reuse}: allowed a fraction in [0, 1)")
        if self.working_set_gib <= 0:
            raise ValueError(f"--working-set-gib {self.working_set_gib}: allowed a size > 0 GiB")

    def resident(self, cache_gib: float) -> float:
        """Fraction of the working set a cache of `cache_gib` holds (uniform requests, LRU)."""
        return min(1.0, max(cache_gib, 0.0) / self.working_set_gib)

    def hit_rates(self, hbm_gib: float, cpu_gib: float = 0.0) -> tuple[float, float]:
        """(share of prompt tokens found in HBM, share found only in the CPU tier)."""
        in_hbm = self.reuse * self.resident(hbm_gib)
        in_both = self.reuse * self.resident(hbm_gib + cpu_gib)
        return in_hbm, in_both - in_hbm
