"""Cold-start budget of a vLLM replica: how long from "the pod needs a GPU" to "the pod is Ready".

    new node:  node ready + max(image pull, node prefetch) + pod fetch + weight load + engine init + readiness
    warm node: pod fetch + weight load + engine init + readiness (image and node-local caches already there)
    headroom:  preemption of a placeholder + warm node (the pool's pre-pull DaemonSet and weights sync ran)

Every number is from shared/research/autoscaling_sim.md (§3.1 node boot and bandwidth, §4 cold start); the
instance's own facts (network bandwidth, node Ready time) are columns of the catalog (facts/catalog.py);
"Unverified" marks defaults that no primary source measured, so they stay visible and overridable.
Used by the simulator (simulator/serving/capacity.py) and meant for the cold-start table of docs/capacity.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from llm_platform.facts.catalog import GpuInstance

CacheMode = Literal["nvme", "fsx", "s3", "hub"]
ImageMode = Literal["registry", "soci", "prebaked"]
CACHE_MODES: tuple[CacheMode, ...] = ("nvme", "fsx", "s3", "hub")

# Karpenter batches pending pods (BATCH_IDLE_DURATION 1 s, BATCH_MAX_DURATION 10 s) and launches ~1 s after
# (settings.md; #6128). Counted once per new node, before the instance's `node_ready_seconds` (catalog).
KARPENTER_LAUNCH_SECONDS = 2.0

# vLLM image (~12 GB compressed, vllm#27154) pull+extract on a node that does not have it:
# 15-20 GB in 4-6 min (AWS SOCI blog), 10 GB in 7-10 min (tensorfuse) -> 300 s. SOCI parallel pull /
# lazy loading: "minutes to seconds" (EKS ML docs) -> 30 s (Unverified). Pre-baked data volume: 0.
IMAGE_PULL_SECONDS: dict[ImageMode, float] = {"registry": 300.0, "soci": 30.0, "prebaked": 0.0}

# vLLM's safetensors loader from a local, warm disk: Llama-3.1-8B (16 GB) in 18 s on a cached volume
# (tensorfuse, L40S) -> 0.9 GB/s; it bounds every mode (the loader, not the disk, is the limit).
LOADER_GB_PER_S = 0.9
# Hugging Face Hub download: 16 GB in 61 s (tensorfuse) -> 0.26 GB/s, "limited by ... HF availability".
HUB_GB_PER_S = 0.26
# FSx for Lustre PERSISTENT_2 at 250 MB/s/TiB x 2.4 TiB (the prod stack's file system) -> 0.6 GB/s,
# shared by every reader; a single client is further bounded by its network (§4.2).
FSX_GB_PER_S = 0.6
# S3 GET throughput per node with parallel ranged reads: bounded by the node's network (§3.1) (Unverified cap).
S3_GB_PER_S = 1.25

# vLLM init besides reading weights (Llama-3.1-8B on L40S, tensorfuse): Dynamo 10 s + torch.compile 42 s +
# CUDA graphs 54 s + engine/imports 94 s = 200 s cold; with the compile cache persisted 10 + 13 + 7 + 34 = 64 s.
ENGINE_INIT_COLD_SECONDS = 200.0
ENGINE_INIT_CACHED_SECONDS = 64.0
# A persisted compile cache (written to S3 once per model, vLLM image and GPU; restored by the node's weights
# sync before the replica's weights marker for `nvme`, by the vLLM pod's init container otherwise): vLLM keys `$VLLM_CACHE_ROOT/torch_compile_cache/<hash>`
# on its configs, PyTorch's and the traced code, and "you can directly copy the whole
# ~/.cache/vllm/torch_compile_cache directory in your deployment scenario" (docs.vllm.ai, design/torch_compile,
# "Compilation Cache"). Its size (Inductor kernels and graphs of one model) is a few hundred MB: restored at
# the node's S3 rate, alongside the weights on a new nvme node, in every pod's start otherwise (Unverified
# size, so 1 GB is counted).
COMPILE_CACHE_GB = 1.0
# readinessProbe periodSeconds 10 -> on average 5 s between "serving" and "Ready".
READINESS_SECONDS = 5.0
# A replica that preempts a GPU headroom placeholder: the scheduler picks the placeholder as the victim and
# nominates the node, the placeholder (terminationGracePeriodSeconds 0, pause exits on SIGTERM) is gone and
# the device plugin frees its GPUs, the next scheduling cycle binds the replica (Kubernetes docs, "Pod
# Priority and Preemption"). No public measurement of the whole step (Unverified): a couple of seconds.
PREEMPTION_SECONDS = 2.0


@dataclass(frozen=True)
class CacheBehaviour:
    """Where a replica's weights and compile cache come from under one `models[].cache` mode, as the
    platform wires it (components/specs/model_cache.py)."""

    prefetch_on_new_node: bool  # a node-level DaemonSet copies weights before the pod can load them (nvme)
    fetch_per_pod: bool  # every pod downloads its own copy before loading (hub)
    streams_from_s3: bool  # vLLM streams the weights from S3 straight into the GPU (runai_streamer)
    # the torch.compile/CUDA-graph cache survives on the node's NVMe, where the node sync restores it (nvme);
    # otherwise it lives in the pod, which restores a persisted cache itself
    compile_cache_on_node: bool


CACHE_BEHAVIOUR: dict[CacheMode, CacheBehaviour] = {
    "nvme": CacheBehaviour(
        prefetch_on_new_node=True, fetch_per_pod=False, streams_from_s3=False, compile_cache_on_node=True
    ),
    "fsx": CacheBehaviour(
        prefetch_on_new_node=False, fetch_per_pod=False, streams_from_s3=False, compile_cache_on_node=False
    ),
    "s3": CacheBehaviour(
        prefetch_on_new_node=False, fetch_per_pod=False, streams_from_s3=True, compile_cache_on_node=False
    ),
    "hub": CacheBehaviour(
        prefetch_on_new_node=False, fetch_per_pod=True, streams_from_s3=False, compile_cache_on_node=False
    ),
}


@dataclass(frozen=True)
class ColdStart:
    """Seconds per phase; `total` is pod-needs-GPU to pod-Ready."""

    node_ready: float
    image_pull: float
    node_prefetch: float  # node-level copy of the weights, runs alongside the image pull
    pod_fetch: float  # per-pod download (init container), after the pull
    weight_load: float
    engine_init: float
    readiness: float

    @property
    def image_wait(self) -> float:
        """After the node is Ready: the image pull, or the node's weights copy where it takes longer."""
        return max(self.image_pull, self.node_prefetch)

    @property
    def total(self) -> float:
        return (
            self.node_ready
            + self.image_wait
            + self.pod_fetch
            + self.weight_load
            + self.engine_init
            + self.readiness
        )


def network_gb_per_s(instance: GpuInstance) -> float:
    return instance.network_gbps / 8


def cold_start(
    cache_mode: CacheMode,
    instance: GpuInstance,
    weights_gb: float,
    new_node: bool,
    image: ImageMode = "registry",
    compile_cache_persisted: bool = False,
    nodes: int = 1,
) -> ColdStart:
    """Phase-by-phase cold start of one replica (weights_gb: all shards the node must read).
    `nodes`: a multi-node replica's nodes, launched together and each up after the same phases (the replica
    is Ready when its last rank is): each node's cache holds the whole checkpoint (prefetch and fetch as one
    node's), each rank loads only its pipeline stage, 1/nodes of the weights.
    `compile_cache_persisted`: the model's compile cache is restored from S3 (by the node sync with the
    weights for nvme, by each pod before vLLM starts otherwise), so every start loads the compiled engine."""
    if cache_mode not in CACHE_BEHAVIOUR:
        raise ValueError(f"cache mode {cache_mode!r} is not allowed; allowed: {', '.join(CACHE_MODES)}")
    mode = CACHE_BEHAVIOUR[cache_mode]
    net = network_gb_per_s(instance)
    node_ready = KARPENTER_LAUNCH_SECONDS + instance.node_ready_seconds if new_node else 0.0
    image_pull = IMAGE_PULL_SECONDS[image] if new_node else 0.0
    restored = COMPILE_CACHE_GB if compile_cache_persisted else 0.0
    prefetch = (
        (weights_gb + restored) / min(net, S3_GB_PER_S) if mode.prefetch_on_new_node and new_node else 0.0
    )
    fetch = weights_gb / min(net, HUB_GB_PER_S) if mode.fetch_per_pod else 0.0
    if compile_cache_persisted and not mode.compile_cache_on_node:  # the pod's own restore, every start
        fetch += COMPILE_CACHE_GB / min(net, S3_GB_PER_S)
    if cache_mode == "fsx":
        load = weights_gb / min(net, FSX_GB_PER_S, LOADER_GB_PER_S)
    elif mode.streams_from_s3:
        load = weights_gb / min(net, S3_GB_PER_S)
    else:
        load = weights_gb / LOADER_GB_PER_S
    load /= nodes
    cached = compile_cache_persisted or (mode.compile_cache_on_node and not new_node)
    init = ENGINE_INIT_CACHED_SECONDS if cached else ENGINE_INIT_COLD_SECONDS
    return ColdStart(node_ready, image_pull, prefetch, fetch, load, init, READINESS_SECONDS)


def headroom_start(
    cache_mode: CacheMode,
    instance: GpuInstance,
    weights_gb: float,
    image: ImageMode = "registry",
    compile_cache_persisted: bool = False,
) -> ColdStart:
    """A replica on a node launched for a headroom placeholder: the pre-pull and weights-sync DaemonSets
    already put the image and node-local weights there, but no replica has run there yet: the engine starts
    cold unless the persisted compile cache is restored (node sync or the pod's own restore)."""
    warm = cold_start(cache_mode, instance, weights_gb, False, image, compile_cache_persisted)
    init = ENGINE_INIT_CACHED_SECONDS if compile_cache_persisted else ENGINE_INIT_COLD_SECONDS
    return ColdStart(
        warm.node_ready, warm.image_pull, warm.node_prefetch, warm.pod_fetch, warm.weight_load, init,
        warm.readiness,
    )  # fmt: skip
