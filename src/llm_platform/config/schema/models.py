"""The `models` block: each served model (image, parallelism, cache mode, SLO, geometry, LoRA adapters) and
its autoscaling, with the fewest replicas each environment allows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from llm_platform.config.schema.adapters import MAX_ADAPTERS, RESERVED_LORA_FLAGS, LoraAdapter
from llm_platform.config.schema.base import (
    Cron,
    Environment,
    Problems,
    RuleError,
    Schema,
    Timezone,
    _dns_label,
)
from llm_platform.config.schema.disaggregation import Disaggregation
from llm_platform.config.schema.kv_offload import KvCacheOffload
from llm_platform.config.schema.rollout import ModelRollout
from llm_platform.facts.model_profiles import PROFILES, ModelProfile
from llm_platform.facts.versions import EFA_VLLM_IMAGE, VLLM_IMAGE


def _power_of_two(value: int) -> int:
    if value < 1 or value & (value - 1):
        raise ValueError(f"{value} is not allowed; must be a power of two (1, 2, 4, 8)")
    return value


def _pinned_image(value: str) -> str:
    repo, _, tag = value.rpartition(":")
    if "@sha256:" in value:
        return value
    if not repo or "/" in tag or tag in ("", "latest") or tag.startswith("latest-"):
        raise ValueError(f"{value!r} is not pinned; give an explicit version tag such as {VLLM_IMAGE!r}")
    return value


class ScalingPolicy(Schema):
    type: Literal["Pods", "Percent"]
    value: int = Field(gt=0)
    period_seconds: int = Field(gt=0, le=1800)


class ScalingRules(Schema):
    """HPA `behavior.scaleUp` / `scaleDown`; unset fields take the Kubernetes defaults."""

    stabilization_window_seconds: int | None = Field(default=None, ge=0, le=3600)
    select_policy: Literal["Max", "Min", "Disabled"] | None = None
    policies: list[ScalingPolicy] | None = None


class PrewarmWindow(Schema):
    """Capacity held ready before a known surge (a KEDA cron trigger)."""

    name: Annotated[str, _dns_label(30)]
    start: Cron
    end: Cron
    timezone: Timezone = "UTC"
    replicas: int = Field(gt=0)


# prod runs every model on at least this many replicas (one node loss or a rollout keeps it up)
PROD_MIN_REPLICAS = 2


def replica_floor(environment: Environment, scale_to_zero: bool = False) -> int:
    """Fewest replicas a model may run in an environment: 0 where the stack lets it scale to zero
    (`scale_to_zero`: schema/stack.py `scale_to_zero_allowed`), else one, PROD_MIN_REPLICAS in prod. The stack's
    rule (schema/stack.py) and the simulator's oracle (a bound the stack would accept) both read it."""
    if scale_to_zero:
        return 0
    return PROD_MIN_REPLICAS if environment is Environment.PROD else 1


class Autoscaling(Schema):
    min_replicas: int = Field(default=1, ge=0)
    max_replicas: int = Field(default=4, ge=1)
    queue_depth_per_replica: float = Field(default=5, gt=0)
    kv_cache_usage: float = Field(default=0.8, gt=0, le=1)
    # completed requests/s per replica (vLLM's request_success counter): proportional to the load below
    # saturation and bounded past it (a saturated pool asks for its throughput over this, never the KV
    # trigger's max); None: no such trigger
    requests_per_second_per_replica: float | None = Field(default=None, gt=0)
    polling_interval: int = Field(default=10, gt=0, le=300)
    # with minReplicas 0, the idle seconds before KEDA scales 1 -> 0 (KEDA 2.20.2 applies cooldownPeriod only to
    # that step: pkg/scaling/executor/scale_scaledobjects.go); above zero the HPA's scaleDown rules act instead
    cooldown_period: int = Field(default=300, ge=0)
    # a prod model may scale to zero only with this explicit opt-in (dev and staging need no opt-in)
    allow_scale_to_zero: bool = False
    # with minReplicas 0: the requests/s the model is expected to receive while at zero; the gateway holds a
    # wake's arrivals (this x the from-zero hold, with a margin: plan/gateway.py `at_zero`). Unset: the most
    # the gateway admits, its clients' requestsPerMinute together
    wake_requests_per_second: float | None = Field(default=None, gt=0)
    scale_up: ScalingRules = ScalingRules(
        stabilization_window_seconds=0,
        policies=[ScalingPolicy(type="Percent", value=100, period_seconds=15)],
    )
    scale_down: ScalingRules = ScalingRules(
        stabilization_window_seconds=600,
        policies=[ScalingPolicy(type="Percent", value=10, period_seconds=60)],
    )
    prewarm: list[PrewarmWindow] = []


class Slo(Schema):
    ttft_seconds: float = Field(gt=0)
    itl_seconds: float = Field(gt=0)


class ModelGeometry(Schema):
    """A model the built-in table (facts/model_profiles.py) does not know, described from its Hugging Face
    `config.json` and model card, so the platform (GPU fit, cold start) and the simulator can size it."""

    parameters: float = Field(gt=0)  # total parameter count, e.g. 7.62e9
    layers: int = Field(gt=0)  # num_hidden_layers
    kv_heads: int = Field(gt=0)  # num_key_value_heads
    head_dim: int = Field(gt=0)  # head_dim, else hidden_size / num_attention_heads
    weight_bits: Literal[4, 8, 16] = 16  # 16: FP16/BF16 checkpoint; 8 or 4: quantized (GPTQ, AWQ)
    # only for quantized checkpoints, whose embeddings and LM head stay FP16 (0: counted as quantized)
    hidden_size: int = Field(default=0, ge=0)
    vocab_size: int = Field(default=0, ge=0)
    tied_embeddings: bool = False


# vLLM options whose multi-node form the platform does not render, by the stack-file key one might write
UNSUPPORTED_PARALLELISM = {
    "dataParallelSize": "data parallel",
    "dataParallelSizeLocal": "data parallel",
    "expertParallelSize": "expert parallel",
    "enableExpertParallel": "expert parallel",
}


# vLLM flags the platform writes itself for a replica's parallelism and launch (or does not render): in a model's
# extraArgs they would contradict its GPU and EFA requests or the LeaderWorkerSet's ranks
RESERVED_FLAGS = {
    "--pipeline-parallel-size": "pipelineParallelSize",
    "--nnodes": "pipelineParallelSize",
    "--node-rank": "pipelineParallelSize",
    "--master-addr": "pipelineParallelSize",
    "--master-port": "pipelineParallelSize",
    "--headless": "pipelineParallelSize",
    "--distributed-executor-backend": "pipelineParallelSize",
    "--data-parallel-size": "nothing: data parallel is not rendered",
    "--enable-expert-parallel": "nothing: expert parallel is not rendered",
}


def refuse_unsupported_parallelism(data: object) -> object:
    """A model block naming data or expert parallelism: say why it is refused and what is allowed."""
    if isinstance(data, dict):
        args = data.get("extraArgs")
        for i, arg in enumerate(args if isinstance(args, list) else []):
            flag = str(arg).split("=", 1)[0]
            if flag in RESERVED_FLAGS:
                raise RuleError(
                    ("extraArgs", i),
                    arg,
                    "is not allowed: the platform writes vLLM's parallelism and multi-node launch flags itself "
                    f"from the model's fields; allowed instead: {RESERVED_FLAGS[flag]}",
                )
        for key, kind in UNSUPPORTED_PARALLELISM.items():
            if key in data:
                raise RuleError(
                    (key,),
                    data[key],
                    "is not allowed: the platform renders multi-node replicas as tensor "
                    "parallel within a node and pipeline parallel across nodes (pipelineParallelSize); vLLM's "
                    f"multi-node {kind} (one engine per data-parallel rank, MoE models only, its own "
                    "--data-parallel-address/--data-parallel-start-rank launch and load balancing) is not "
                    "rendered. Allowed: tensorParallelSize and pipelineParallelSize",
                )
    return data


class ModelConfig(Schema):
    name: Annotated[str, _dns_label(30)]
    hugging_face_id: Annotated[str, Field(pattern=r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")]
    image: Annotated[str, AfterValidator(_pinned_image)] = VLLM_IMAGE
    node_pool: str
    tensor_parallel_size: Annotated[int, AfterValidator(_power_of_two)] = 1
    # multi-node (config/schema/multinode.py): one replica spans this many nodes, tensor parallel within each node
    # and pipeline parallel across them, as a LeaderWorkerSet group
    pipeline_parallel_size: int = Field(default=1, ge=1, le=16)
    max_model_len: int = Field(ge=1)
    gpu_memory_utilization: float = Field(default=0.9, gt=0, lt=1)
    cache: Literal["nvme", "fsx", "s3", "hub"]
    needs_hf_token: bool = False
    extra_args: list[str] = []
    autoscaling: Autoscaling = Field(default_factory=Autoscaling)
    slo: Slo
    # the gateway's endpoint picker learns which replica holds a prompt prefix from vLLM's own KV-cache
    # events (ZMQ) and a tokenizer sidecar instead of estimating it; costs are in docs/gateway.md
    precise_prefix_routing: bool = False
    # for a Hugging Face id the built-in profile table does not know (or to override its entry)
    geometry: ModelGeometry | None = None
    # LoRA adapters served on this model's replicas, each routable by its own name (config/schema/adapters.py)
    adapters: list[LoraAdapter] = Field(default=[], max_length=MAX_ADAPTERS)
    # vLLM --max-loras: GPU slots for adapters in one batch; default one per adapter
    adapter_slots: int | None = Field(default=None, ge=1)
    # a CPU tier under the GPU prefix cache (config/schema/kv_offload.py); None: the KV cache stays in GPU memory
    kv_cache_offload: KvCacheOffload | None = None
    # separate prefill and decode roles, the KV cache moved over EFA (config/schema/disaggregation.py)
    disaggregation: Disaggregation | None = None
    # a new version (image, engine args) rolled out in steps with analysis (config/schema/rollout.py)
    rollout: ModelRollout | None = None

    @model_validator(mode="before")
    @classmethod
    def _unsupported_parallelism(cls, data: object) -> object:
        args = data.get("extraArgs") if isinstance(data, dict) else None
        for i, arg in enumerate(args if isinstance(args, list) else []):
            if str(arg).split("=", 1)[0] in RESERVED_LORA_FLAGS:
                raise RuleError(
                    ("extraArgs", i),
                    arg,
                    "is not allowed: the platform writes vLLM's LoRA flags itself from the model's adapters "
                    "(and adapterSlots); allowed: list the adapters under `adapters:`",
                )
        return refuse_unsupported_parallelism(data)

    @model_validator(mode="before")
    @classmethod
    def _efa_image_default(cls, data: object) -> object:
        """A model whose pods use EFA (multi-node, or disaggregated) runs the EFA image unless it names one:
        the stock vLLM image is not known to carry libfabric, aws-ofi-nccl or NIXL (facts/versions.py)."""
        if not isinstance(data, dict) or "image" in data:
            return data
        pp = data.get("pipelineParallelSize", data.get("pipeline_parallel_size", 1))
        if data.get("disaggregation") is not None or (isinstance(pp, int) and pp > 1):
            return {**data, "image": EFA_VLLM_IMAGE}
        return data

    @property
    def needs_efa(self) -> bool:
        """Its pods talk over EFA: NCCL between nodes, or NIXL between prefill and decode."""
        return self.multi_node or self.disaggregation is not None

    @property
    def served_model_name(self) -> str:
        return self.name

    @property
    def replica_gpus(self) -> int:
        """GPUs of one replica: tensor parallel x pipeline parallel (nodes)."""
        return self.tensor_parallel_size * self.pipeline_parallel_size

    @property
    def multi_node(self) -> bool:
        return self.pipeline_parallel_size > 1

    def gpus_at_replicas(self, bound: Literal["min", "max"]) -> int:
        """GPUs the model holds with every replica (of each role, when disaggregated) at its min or max."""
        d = self.disaggregation
        if d is None:
            a = self.autoscaling
            return (a.max_replicas if bound == "max" else a.min_replicas) * self.replica_gpus
        return sum(
            (r.autoscaling.max_replicas if bound == "max" else r.autoscaling.min_replicas)
            * r.tensor_parallel_size
            for _, r in d.roles()
        )

    @property
    def profile(self) -> ModelProfile:
        """The model's geometry: the stack file's `geometry`, else the built-in table (checked at load)."""
        g = self.geometry
        if g is None:
            return PROFILES[self.hugging_face_id]
        return ModelProfile(
            self.hugging_face_id,
            parameters=g.parameters,
            layers=g.layers,
            hidden_size=g.hidden_size,
            kv_heads=g.kv_heads,
            head_dim=g.head_dim,
            vocab_size=g.vocab_size,
            tied_embeddings=g.tied_embeddings,
            weight_bits=g.weight_bits,
        )


def check_adapters(models: Sequence[ModelConfig]) -> None:
    """Across models: adapter names are model names at the gateway and vLLM, so unique and distinct from every
    model's name; slots within the list; adapters need the model bucket (not `cache: hub`). Every broken rule
    is raised (RuleErrors)."""
    problems = Problems()
    model_names = {m.name: i for i, m in enumerate(models)}
    seen: dict[str, str] = {}
    for i, m in enumerate(models):
        at = ("models", i)
        for j, a in enumerate(m.adapters):
            where = (*at, "adapters", j, "name")
            if a.name in model_names:
                problems.errors.append(
                    RuleError(
                        where,
                        a.name,
                        f"is the name of models[{model_names[a.name]}]; a client selects an adapter by its name "
                        "as the request's model, so adapter names must differ from every model's name",
                    )
                )
            elif a.name in seen:
                problems.errors.append(
                    RuleError(
                        where,
                        a.name,
                        f"is already an adapter of model {seen[a.name]!r}; adapter names must be unique",
                    )
                )
            seen.setdefault(a.name, m.name)
        with problems.check():
            _check_slots_and_cache(at, m)
    problems.raise_all()


def _check_slots_and_cache(at: tuple[str | int, ...], m: ModelConfig) -> None:
    if m.adapter_slots is not None and not m.adapters:
        raise RuleError(
            (*at, "adapterSlots"), m.adapter_slots, "needs adapters; allowed: remove it, or list adapters"
        )
    if m.adapters and m.adapter_slots is not None and m.adapter_slots > len(m.adapters):
        raise RuleError(
            (*at, "adapterSlots"),
            m.adapter_slots,
            f"is more than the model's {len(m.adapters)} adapters; vLLM would reserve GPU memory for slots "
            f"no adapter fills; allowed: 1 to {len(m.adapters)}",
        )
    if m.adapters and m.cache == "hub":
        raise RuleError(
            (*at, "cache"),
            m.cache,
            "cannot serve adapters: they are synced like weights through the model bucket (at their pinned "
            "revision) and 'hub' has no bucket copy; use nvme, fsx or s3, or remove adapters",
        )
