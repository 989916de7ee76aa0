"""A model's resolved plan: every name and fact the renderers, the simulator and the checks need, derived once.

`resolve_model` turns one validated `ModelConfig` (with its pool) into a frozen `ModelPlan`: the names of
its objects, the instance Karpenter launches for it, its GPUs, cold-start budget, cache wiring facts and
scaling intent exactly as the ScaledObject and PodMonitor will carry them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from llm_platform.config.schema import (
    Autoscaling,
    GatewayConfig,
    GpuNodePool,
    ModelConfig,
    duration_seconds,
    gpus_at_max_replicas,
)
from llm_platform.facts.catalog import GpuInstance
from llm_platform.facts.cold_start import (
    CACHE_BEHAVIOUR,
    CacheBehaviour,
    CacheMode,
    ImageMode,
    cold_start,
)
from llm_platform.plan import naming
from llm_platform.plan.cold_start import ColdStartBudget
from llm_platform.plan.disaggregation import DisaggregationPlan, resolve_disaggregation
from llm_platform.plan.drain import DrainPlan, drain_plan, replica_model
from llm_platform.plan.gateway import FlowControlPlan, at_zero, flow_control, wake_rate
from llm_platform.plan.kv_offload import KvOffloadPlan, kv_offload_plan, tier_instance
from llm_platform.plan.lora import LoraPlan, lora_plan
from llm_platform.plan.model_scaling import FALLBACK_FAILURE_THRESHOLD as FALLBACK_FAILURE_THRESHOLD
from llm_platform.plan.model_scaling import SATURATION_HOLD_PER_REPLICA as SATURATION_HOLD_PER_REPLICA
from llm_platform.plan.model_scaling import SCRAPE_INTERVAL_SECONDS as SCRAPE_INTERVAL_SECONDS
from llm_platform.plan.model_scaling import WAKE_ACTIVATION as WAKE_ACTIVATION
from llm_platform.plan.model_scaling import WAKE_REQUESTS_PER_REPLICA as WAKE_REQUESTS_PER_REPLICA
from llm_platform.plan.model_scaling import fallback_replicas as fallback_replicas
from llm_platform.plan.model_scaling import scaling_plan as scaling_plan
from llm_platform.plan.scaling import ScalingPlan
from llm_platform.plan.zero import from_zero_hold_s

# Where Karpenter's `instanceStorePolicy: RAID0` mounts the NVMe array: AL2023's nodeadm mounts it at
# /mnt/k8s-disks/0 (and bind-mounts containerd and kubelet there); Bottlerocket's ephemeral-storage
# support mounts it at /mnt/.ephemeral.
NVME_ROOT = {"al2023": "/mnt/k8s-disks/0", "bottlerocket": "/mnt/.ephemeral"}
NVME_DIR = "llm-platform"  # holds models/<huggingFaceId>/ and vllm-cache/<model>/
# AMI families whose EC2NodeClass turns on nodeadm's FastImagePull (SOCI parallel pull and unpack)
FAST_IMAGE_PULL_AMI_FAMILIES = frozenset({"al2023"})


def image_pull_mode(ami_family: str) -> ImageMode:
    """How a new GPU node of this AMI family pulls the vLLM image (facts/cold_start.py's modes)."""
    return "soci" if ami_family in FAST_IMAGE_PULL_AMI_FAMILIES else "registry"


def nvme_root(ami_family: str) -> str:
    return f"{NVME_ROOT[ami_family]}/{NVME_DIR}"


@dataclass(frozen=True)
class ModelNames:
    """The name of every object a model gets, and of the objects its objects refer to."""

    namespace: str
    deployment: str
    service: str
    service_host: str
    pod_monitor: str
    pod_disruption_budget: str
    network_policy: str
    scaled_object: str
    hpa: str  # the HPA KEDA creates for the ScaledObject
    prometheus_rule: str
    service_account: str
    api_key_secret: str
    hf_token_secret: str
    loader_job: str
    loader_service_account: str
    sync_daemonset: str
    sync_service_account: str
    fsx_volume: str
    fsx_claim: str
    # the NodePool of the model's pool: the `llm-platform/gpu-pool` label value its pods select
    node_pool: str
    # the first segment of its gateway path route, `/<path_name>/v1/...`: a team's models are
    # `<prefix>-<name>` there too, as two teams' routes share the one Gateway
    path_name: str


def model_names(model_name: str, pool_name: str, prefix: str = "") -> ModelNames:
    """`prefix`: the team's on a shared cluster (plan.naming.scoped); none for the platform's own names."""
    namespace = naming.model_namespace(model_name, prefix)
    return ModelNames(
        namespace=namespace,
        deployment=model_name,
        service=model_name,
        service_host=naming.model_service_host(model_name, prefix),
        pod_monitor=model_name,
        pod_disruption_budget=model_name,
        network_policy=f"{model_name}-ingress",
        scaled_object=model_name,
        hpa=naming.keda_hpa_name(model_name),
        prometheus_rule=f"{model_name}-vllm",
        service_account=naming.SERVING_SERVICE_ACCOUNT,
        api_key_secret=naming.API_KEY_SECRET,
        hf_token_secret=naming.HF_TOKEN_SECRET,
        loader_job=f"{model_name}-load-weights",
        loader_service_account=naming.LOADER_SERVICE_ACCOUNT,
        sync_daemonset=f"{model_name}-weights",
        sync_service_account=naming.SYNC_SERVICE_ACCOUNT,
        fsx_volume=f"{namespace}-fsx",
        fsx_claim=f"{model_name}-fsx",
        node_pool=naming.node_pool_name(pool_name, prefix),
        path_name=naming.scoped(prefix, model_name),
    )


@dataclass(frozen=True)
class CachePlan:
    """Where the model's weights and compile cache live under its `cache` mode (the bucket name comes later)."""

    mode: CacheMode
    behaviour: CacheBehaviour
    weights_prefix: str  # s3://<bucket>/<weights_prefix>/
    marker_key: str  # the loader's completion marker, under the prefix
    nvme_root: str | None  # nvme: the node directory the sync DaemonSet fills
    compile_cache_host_path: str | None  # nvme: torch.compile / CUDA-graph cache kept on the node
    # s3://<bucket>/<prefix>/ holds the compile cache the first replica wrote for this model, vLLM image and
    # GPU; every start restores it (None: not persisted, see `compile_cache_prefix`)
    compile_cache_prefix: str | None
    # the vLLM pod itself restores (init container) and saves (native sidecar) the persisted compile cache:
    # every mode but nvme, whose node sync DaemonSet does both for the node
    compile_cache_in_pod: bool
    # written into the compile cache by the vLLM pod once it serves (its compile is then complete): the
    # saver uploads the cache only after it, so a half-written cache never reaches S3
    compiled_marker: str | None
    reads_host_path: bool  # the vLLM pod mounts node directories (namespace needs `privileged`)
    loads_from_s3: bool  # a Hub -> S3 loader Job runs (every mode but hub)
    # the vLLM pod's own S3 access, on a role of this model alone: its weights prefix (s3 streams them) and
    # its compile-cache prefix (read and write); None for either: the pod needs no such access
    serving_reads_weights: bool
    serving_compile_prefix: str | None

    @property
    def serving_needs_role(self) -> bool:
        """The vLLM pod's service account gets this model's own Pod Identity role."""
        return self.serving_reads_weights or self.serving_compile_prefix is not None


def image_tag(image: str) -> str:
    """The tag (or digest) of an image reference, as one S3 key segment."""
    ref = image.split("@", 1)[1] if "@" in image else image.rsplit(":", 1)[-1]
    return re.sub(r"[^A-Za-z0-9._-]", "-", ref)


def compile_cache_prefix(model: ModelConfig, pool: GpuNodePool, gpus: int, has_bucket: bool) -> str | None:
    """Where the model's compile cache is persisted, keyed by vLLM image and GPU (Inductor's kernels are
    built for one GPU architecture). Only when every pool instance that fits a replica has the same GPU (the
    key is known before the node is) and the stack has the model bucket (an existing cluster has none)."""
    if not has_bucket:
        return None
    kinds = {i.gpu.name for i in pool.instances if i.gpus >= gpus}
    if len(kinds) != 1:
        return None
    (gpu,) = kinds
    return f"{naming.COMPILE_CACHE_PREFIX}/{model.name}/{image_tag(model.image)}/{gpu}"


def cache_plan(model: ModelConfig, pool: GpuNodePool, gpus: int, has_bucket: bool = True) -> CachePlan:
    prefix = naming.weights_prefix(model.hugging_face_id)
    nvme = model.cache == "nvme"
    root = nvme_root(pool.ami_family) if nvme else None
    persisted = compile_cache_prefix(model, pool, gpus, has_bucket)
    in_pod = persisted is not None and not nvme
    return CachePlan(
        mode=model.cache,
        behaviour=CACHE_BEHAVIOUR[model.cache],
        weights_prefix=prefix,
        marker_key=f"{prefix}/{naming.READY_MARKER}",
        nvme_root=root,
        compile_cache_host_path=f"{root}/vllm-cache/{model.name}" if root else None,
        compile_cache_prefix=persisted,
        compile_cache_in_pod=in_pod,
        compiled_marker=f".llm-platform-compiled-{image_tag(model.image)}" if persisted else None,
        reads_host_path=nvme,
        loads_from_s3=model.cache != "hub",
        serving_reads_weights=model.cache == "s3",
        serving_compile_prefix=persisted if in_pod else None,
    )


def cold_start_budget(
    model: ModelConfig, instance: GpuInstance, image_pull: ImageMode, cache: CachePlan
) -> ColdStartBudget:
    weights_gb = (
        model.profile.weights_gb
    )  # the stack file's geometry, else the built-in table (checked at load)
    persisted = cache.compile_cache_prefix is not None
    nodes = model.pipeline_parallel_size  # a multi-node replica: every node up, each rank its stage
    return ColdStartBudget(
        new_node=cold_start(model.cache, instance, weights_gb, True, image_pull, persisted, nodes),
        warm_node=cold_start(model.cache, instance, weights_gb, False, image_pull, persisted, nodes),
        weights_gb=weights_gb,
    )


@dataclass(frozen=True)
class ModelPlan:
    model: ModelConfig
    names: ModelNames
    pool: GpuNodePool
    instance: GpuInstance  # what Karpenter launches for one replica: the cold start, costs, the simulator
    gpus: int
    image_pull: ImageMode
    cache: CachePlan
    cold_start: ColdStartBudget
    scaling: ScalingPlan
    # the gateway's bounded queue in front of the model (plan/gateway.py); None without the gateway
    flow_control: FlowControlPlan | None
    # GPUs the pool's `nvidia.com/gpu` limit leaves free with every model of the pool at maxReplicas
    pool_headroom_gpus: int
    consolidate_after_s: float  # the pool's `consolidateAfter`: an empty GPU node lives this long
    # the loader Job reads a gated model from the Hub with the token (every cache mode but hub)
    loader_uses_hf_token: bool
    # the vLLM container itself downloads from the Hub (cache `hub`); offline caches never get the token
    serving_uses_hf_token: bool
    # how the pod stops without cutting a stream: preStop, vLLM's drain, the grace period (plan/drain.py)
    drain: DrainPlan
    # multi-node (config/schema/multinode.py): the nodes one replica spans (pipelineParallelSize), `gpus` on each
    nodes: int = 1
    # LoRA adapters (plan/lora.py); None without adapters
    lora: LoraPlan | None = None
    # a CPU tier under the GPU prefix cache (plan/kv_offload.py); None: the KV cache stays in GPU memory
    kv_offload: KvOffloadPlan | None = None
    # separate prefill and decode roles (plan/disaggregation.py); None: one aggregated Deployment
    disaggregation: DisaggregationPlan | None = None
    # the instance the pod's CPU and memory are a share of, where it differs from `instance`: a CPU KV tier's
    # grown request lands the pod on a larger one (plan/kv_offload.py `tier_instance`)
    sizing_instance: GpuInstance | None = None

    @property
    def resources_instance(self) -> GpuInstance:
        """The instance the pod's CPU and memory requests are sized on (components/specs/serving.py)."""
        return self.sizing_instance or self.instance

    @property
    def replica_gpus(self) -> int:
        """GPUs one replica holds: `gpus` on each of its `nodes`."""
        return self.gpus * self.nodes

    @property
    def multi_node(self) -> bool:
        return self.nodes > 1

    @property
    def name(self) -> str:
        return self.model.name


def pod_instance(pool: GpuNodePool, gpus: int) -> GpuInstance:
    """Karpenter's pick for a pod needing `gpus` GPUs: the cheapest pool instance with enough of them."""
    fitting = [i for i in pool.instances if i.gpus >= gpus]
    if not fitting:
        raise ValueError(f"gpuNodePools[{pool.name}]: no instance has {gpus} GPUs")
    return min(fitting, key=lambda i: i.list_usd_per_hour)


def gateway_sizing(model: ModelConfig) -> Autoscaling:
    """The replicas and queue target the gateway's queue in front of the model is sized on: the model's own,
    or for a disaggregated model (whose model-level autoscaling no object reads) its decode role's bounds,
    since every request holds a decode replica for its whole generation while prefill is one hop the decode
    pod's sidecar makes, and its prefill role's target when prefill scales on queue depth (vLLM's waiting
    requests then gather on the prefill pods, which the saturation threshold must let grow past it)."""
    d = model.disaggregation
    if d is None:
        return model.autoscaling
    update: dict[str, float] = {
        "min_replicas": d.decode.autoscaling.min_replicas,
        "max_replicas": d.decode.autoscaling.max_replicas,
    }
    if d.prefill.autoscaling.signal == "queueDepth":
        update["queue_depth_per_replica"] = d.prefill.autoscaling.target
    return model.autoscaling.model_copy(update=update)


def pool_headroom_gpus(pool: GpuNodePool, models: Sequence[ModelConfig]) -> int:
    """GPUs the pool's `nvidia.com/gpu` limit leaves free with every model of the pool at maxReplicas."""
    return pool.gpu_limit - gpus_at_max_replicas(pool, models)


def resolve_model(
    model: ModelConfig,
    pool: GpuNodePool,
    stack_models: Sequence[ModelConfig] | None = None,
    has_bucket: bool = True,
    gateway: GatewayConfig | None = None,
    *,
    prefix: str = "",
    prometheus_url: str = naming.PROMETHEUS_URL,
) -> ModelPlan:
    """`stack_models`: every model of the stack (they share pool limits); by default the model alone.
    `has_bucket`: the stack creates the model bucket (an EKS stack; an existing cluster has none).
    `gateway`: the stack's; an enabled one puts its bounded queue in front of the model.
    `prefix`: the team's on a shared cluster (its namespace and NodePool names); `prometheus_url`: the
    Prometheus the scaling triggers query (default: the platform's kube-prometheus-stack)."""
    names = model_names(model.name, pool.name, prefix)
    gpus = model.tensor_parallel_size
    sizing = pod_instance(pool, gpus)
    kv_offload = kv_offload_plan(model, pool)
    instance = tier_instance(pool, gpus, sizing, kv_offload, stack_models or [model])
    image_pull = image_pull_mode(pool.ami_family)
    cache = cache_plan(model, pool, gpus, has_bucket)
    queue = (
        flow_control(gateway_sizing(model), model.slo, gateway.max_pending_per_replica)
        if gateway is not None and gateway.enabled
        else None
    )
    budget = cold_start_budget(model, instance, image_pull, cache)
    lora = lora_plan(model)
    scaling = scaling_plan(
        names,
        model.served_model_name,
        model.autoscaling,
        queue is not None,
        model.multi_node,
        prometheus_url=prometheus_url,
        # a progressive rollout's pods are an Argo Rollout's (plan/rollout.py)
        rolled=model.rollout is not None,
    )
    if queue is not None and gateway is not None and model.autoscaling.min_replicas == 0:
        queue = at_zero(queue, from_zero_hold_s(budget, scaling), wake_rate(model.autoscaling, gateway))
    return ModelPlan(
        model=model,
        names=names,
        pool=pool,
        instance=instance,
        gpus=gpus,
        image_pull=image_pull,
        cache=cache,
        cold_start=budget,
        scaling=scaling,
        flow_control=queue,
        pool_headroom_gpus=pool_headroom_gpus(pool, stack_models if stack_models is not None else [model]),
        consolidate_after_s=duration_seconds(pool.consolidate_after),
        loader_uses_hf_token=model.needs_hf_token and model.cache != "hub",
        serving_uses_hf_token=model.cache == "hub",
        nodes=model.pipeline_parallel_size,
        lora=lora,
        kv_offload=kv_offload,
        sizing_instance=sizing if sizing != instance else None,
        disaggregation=resolve_disaggregation(model, pool, names.namespace, names.deployment),
        drain=drain_plan(replica_model(model, instance.gpu, gpus * model.pipeline_parallel_size, lora)),
    )
