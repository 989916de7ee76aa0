"""LoRA on a replica: the per-step cost of serving adapters and the load of an adapter at first use.

Per step (every engine step carries adapter requests once LoRA is on): vLLM runs the Punica kernels (SGMV/BGMV
shrink and expand, vllm/lora/punica_wrapper) beside every LoRA-targeted linear layer. Punica (Chen et al., MLSys
2024, arXiv:2310.18547, abstract: "12x higher throughput ... while only adding 2ms latency per token", 7B-70B
on A100) measures the whole overhead; here it is `LORA_STEP_SECONDS` per step plus the memory-bound read of
the adapters a step holds (`max_loras` slots: a decode step is bandwidth bound, so their bytes add to the
weights' read). Requests are spread over the adapters evenly (the plan says which adapters exist, not who
calls them).

Load: vLLM loads an adapter when a request first names it (vllm/lora/worker_manager.py LRUCacheWorkerLoRAManager:
from disk into the CPU cache, `--max-cpu-loras`, then into a GPU slot). The platform keeps every adapter in CPU
memory (max-cpu-loras = the adapters), so a replica reads each adapter from disk once, at its first use, and
afterwards a request whose adapter holds no GPU slot waits for a host-to-device copy. With slots for every
adapter that never happens; with fewer, LRU over evenly spread requests keeps a request's adapter resident with
probability slots / adapters (the independent-reference model), which the picker's lora-affinity-scorer only
improves: an upper bound on swaps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llm_platform.facts.model_profiles import ModelProfile

LORA_STEP_SECONDS = 0.002  # Punica (arXiv:2310.18547): ~2 ms per token over the backbone
DISK_GB_PER_S = 1.0  # adapter files from the local copy (NVMe, FSx, emptyDir) into CPU memory (Unverified)
HOST_TO_GPU_GB_PER_S = 20.0  # pinned host-to-device copy, PCIe Gen4 x16 (~25 GB/s peak) (Unverified)
LOAD_FIXED_SECONDS = 0.05  # safetensors open, PEFT config parse, LoRA model build per load (Unverified)
LORA_DTYPE_BYTES = 2  # lora_dtype auto = the base model's dtype (BF16/FP16)


def adapter_params_per_rank(profile: ModelProfile) -> float:
    """LoRA parameters per unit of rank across vLLM's default targets (every linear layer of each decoder block):
    a d_in x d_out matrix adds r x (d_in + d_out). Attention q/k/v/o from the geometry; the MLP's gate/up/down
    intermediate size from the block's remaining parameters (3 x hidden x intermediate)."""
    h = profile.hidden_size or profile.kv_heads * profile.head_dim * 4
    kv = profile.kv_heads * profile.head_dim
    embeddings = profile.vocab_size * h * (1 if profile.tied_embeddings else 2)
    per_layer = max(0.0, (profile.parameters - embeddings) / profile.layers)
    attention = 2 * h * h + 2 * h * kv
    intermediate = max(0.0, (per_layer - attention) / (3 * h))
    return profile.layers * ((6 * h + 2 * kv) + 3 * (h + intermediate))


@dataclass(frozen=True)
class LoraCost:
    adapters: int
    slots: int  # --max-loras
    adapter_bytes: float  # one adapter at --max-lora-rank (vLLM's slots are allocated at the max rank)

    @classmethod
    def of(cls, profile: ModelProfile, *, adapters: int, slots: int, max_rank: int) -> LoraCost:
        """From a plan's LoRA settings (plan/lora.py LoraPlan: its adapters, --max-loras, --max-lora-rank),
        passed as numbers so this floor of the simulator imports nothing of the plan, which sizes its drain
        with this replica model (plan/drain.py)."""
        per_rank = adapter_params_per_rank(profile) * LORA_DTYPE_BYTES
        return cls(adapters, slots, per_rank * max_rank)

    def step_seconds(self, bandwidth: float) -> float:
        """Added to every engine step: the kernels' overhead and the read of the adapters in the slots."""
        return LORA_STEP_SECONDS + self.slots * self.adapter_bytes / bandwidth

    @property
    def disk_load_seconds(self) -> float:
        """First use of an adapter on a replica: disk to CPU, then into a GPU slot."""
        return LOAD_FIXED_SECONDS + self.adapter_bytes / 1e9 * (1 / DISK_GB_PER_S + 1 / HOST_TO_GPU_GB_PER_S)

    @property
    def swap_seconds(self) -> float:
        return self.adapter_bytes / 1e9 / HOST_TO_GPU_GB_PER_S

    @property
    def swap_probability(self) -> float:
        return max(0.0, 1.0 - self.slots / self.adapters)

    def request_delays(
        self, arrivals: np.ndarray, ready_s: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """Extra TTFT of each request (arrival seconds, sorted): a swap when its adapter holds no GPU slot, and
        the disk load for the first request of each adapter on every replica that became Ready (the first
        `adapters` requests after each start, one replica's worth per replica started)."""
        delay = np.where(rng.random(len(arrivals)) < self.swap_probability, self.swap_seconds, 0.0)
        started = np.diff(ready_s.astype(np.int64), prepend=0)
        for t in np.flatnonzero(started > 0):
            first = int(np.searchsorted(arrivals, t))
            delay[first : first + int(started[t]) * self.adapters] += self.disk_load_seconds
        return delay
