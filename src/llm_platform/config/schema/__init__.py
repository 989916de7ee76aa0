"""The stack configuration: one pydantic schema, validated in full before any resource is registered.

YAML keys are camelCase under the `llm-platform:` namespace (`llm-platform:models`, ...); Python uses
snake_case. Every rule that needs more than one field (a model's pool, tensor parallelism against the
pool's largest instance, prod-only rules) lives in `StackConfig`'s validators, so a bad stack file fails
with the field path, the bad value and what is allowed.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Sequence
from enum import StrEnum
from ipaddress import IPv4Network
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from llm_platform.config.adapters import MAX_ADAPTERS
from llm_platform.config.catalog import (
    DEDICATED_FAMILIES,
    KNOWN_REGIONS,
    GpuInstance,
    GpuModel,
    families,
    instances,
)
from llm_platform.config.cpu_catalog import CpuInstance, cpu_families, cpu_instances, cpu_sizes
from llm_platform.config.cron import Cron as CronExpression
from llm_platform.config.model_profiles import PROFILES, ModelProfile
from llm_platform.config.versions import VLLM_IMAGE

DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DURATION = re.compile(r"^([0-9]+(s|m|h))+$")
CRON = re.compile(r"^(\S+\s+){4}\S+$")


class Schema(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class RuleError(ValueError):
    """A rule broken at `loc` (the field path below the object that raises it, YAML spelling) by `value`.

    config/errors.py prefixes the file, line and full path and shows the value as written, so every message
    reads `models[1] (llama-8b).tensorParallelSize: 1 <message>`; `message` says why and what is allowed.
    """

    def __init__(self, loc: tuple[str | int, ...], value: Any, message: str) -> None:
        super().__init__(f"{'.'.join(map(str, loc))}: {value!r} {message}")
        self.loc = loc
        self.value = value
        self.message = message


def plural(count: int, noun: str) -> str:
    """`1 GPU`, `4 GPUs`."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def did_you_mean(word: str, choices: Sequence[str]) -> str:
    """` (did you mean 'gateway'?)` for the closest choice, or nothing."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _dns_label(max_len: int):
    def check(value: str) -> str:
        if len(value) > max_len or not DNS_LABEL.match(value):
            raise ValueError(
                f"{value!r} is not allowed: use lowercase letters, digits and '-', starting with a letter, "
                f"at most {max_len} characters"
            )
        return value

    return AfterValidator(check)


def _duration(value: str) -> str:
    if not DURATION.match(value):
        raise ValueError(f"{value!r} is not a duration; use Go duration units such as '30s', '5m', '1h'")
    return value


def duration_seconds(value: str) -> float:
    """A validated Go-style duration ('30s', '5m', '1h30m') in seconds."""
    units = {"s": 1, "m": 60, "h": 3600}
    return float(sum(int(n) * units[u] for n, u in re.findall(r"([0-9]+)(s|m|h)", value)))


def _cron(value: str) -> str:
    problem = "" if CRON.match(value) else "it needs 5 fields"
    if not problem:
        try:
            CronExpression.parse(value)
        except ValueError as exc:
            problem = str(exc)
    if problem:
        raise ValueError(
            f"{value!r} is not a 5-field cron expression (minute hour day-of-month month day-of-week) "
            f"such as '0 7 * * 1-5': {problem}"
        )
    return value


def _timezone(value: str) -> str:
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"{value!r} is not an IANA time zone{did_you_mean(value, sorted(available_timezones()))}; "
            "use a name such as 'UTC', 'America/New_York' or 'Europe/Paris'"
        ) from None
    return value


def _version_text(value: Any) -> Any:
    """YAML reads `1.30` as the number 1.3: a version must be quoted to survive."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise RuleError(
            (),
            value,
            "is a number in YAML, which drops trailing zeros (1.30 becomes 1.3); write the version in quotes, "
            'e.g. kubernetesVersion: "1.30"',
        )
    return value


# The oldest Kubernetes the platform's pods run on: the vLLM pod's preStop `sleep` action (PodLifecycleSleepAction,
# beta and on by default in 1.30) and its compile-cache saver, a native sidecar (an init container with
# `restartPolicy: Always`, SidecarContainers on by default since 1.29; on an older API server the field is
# dropped and the never-ending saver would hold vLLM back forever).
MIN_KUBERNETES_MINOR = 30


def _supported_version(value: str) -> str:
    if int(value.split(".")[1]) < MIN_KUBERNETES_MINOR:
        raise RuleError(
            (),
            value,
            f"is older than 1.{MIN_KUBERNETES_MINOR}, which the platform's pods need (the vLLM pod's preStop "
            "sleep action, 1.30; its compile-cache native sidecar, 1.29); "
            f'use "1.{MIN_KUBERNETES_MINOR}" or later',
        )
    return value


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


Duration = Annotated[str, AfterValidator(_duration)]
Cron = Annotated[str, AfterValidator(_cron)]
Timezone = Annotated[str, AfterValidator(_timezone)]


class Environment(StrEnum):
    DEV = "dev"
    STAGING = "staging"
    PROD = "prod"


# --------------------------------------------------------------------------------------------- cluster


class SystemNodes(Schema):
    """The fixed on-demand managed node group for what must not run on Karpenter's nodes: Karpenter itself
    (two replicas on distinct nodes) and the EKS add-ons it needs to start (CoreDNS, the VPC CNI, kube-proxy).
    Nothing autoscales it; every other add-on runs on the add-on NodePool (`addonNodes`)."""

    instance_type: str = "m6i.large"
    min: int = Field(default=2, ge=1)
    max: int = Field(default=3, ge=1)
    # root volume of each system node: images and logs (EKS' default is 20 GiB)
    disk_size_gib: int = Field(default=100, ge=40, le=16384, alias="diskSizeGiB")

    @model_validator(mode="after")
    def _bounds(self) -> SystemNodes:
        if self.min > self.max:
            raise ValueError(
                f"cluster.systemNodes.min: {self.min} is larger than cluster.systemNodes.max {self.max}"
            )
        return self


AddonCapacityType = Literal["spot", "on-demand"]


class AddonNodes(Schema):
    """The Karpenter CPU NodePool every platform add-on runs on (kube-prometheus-stack, KEDA, the GPU
    Operator's controllers, the gateway and endpoint pickers, loader Jobs, the LB and FSx CSI controllers).
    Karpenter sizes it to what is pending; `cpuLimit`/`memoryLimitGiB` cap the node capacity it may launch
    (preflight checks they hold every add-on at its maximum)."""

    instance_families: list[str] = Field(default_factory=lambda: ["m7i", "m6i", "m6a"], min_length=1)
    instance_sizes: list[str] = Field(default_factory=lambda: ["large", "xlarge", "2xlarge"], min_length=1)
    # unset: on-demand in prod; spot first with on-demand fallback in dev and staging
    capacity_types: list[AddonCapacityType] | None = Field(default=None, min_length=1)
    cpu_limit: int = Field(default=32, gt=0)  # vCPUs of node capacity (NodePool limits.cpu)
    memory_limit_gib: int = Field(default=128, gt=0, alias="memoryLimitGiB")
    consolidate_after: Duration = "5m"
    # share of the pool's nodes Karpenter may disrupt at once (consolidation, drift, expiry)
    disruption_budget_percent: int = Field(default=10, ge=1, le=100)
    expire_after: Duration = "720h"
    # root volume: images, logs and the model loader Job's one-shard-at-a-time copy
    disk_size_gib: int = Field(default=100, ge=40, le=16384, alias="diskSizeGiB")

    @model_validator(mode="after")
    def _catalog(self) -> AddonNodes:
        known, sizes = cpu_families(), cpu_sizes()
        for i, family in enumerate(self.instance_families):
            if family not in known:
                raise RuleError(
                    ("instanceFamilies", i),
                    family,
                    f"is not in the CPU catalog (config/cpu_catalog.py); allowed: {', '.join(known)}",
                )
        for i, size in enumerate(self.instance_sizes):
            if size not in sizes:
                raise RuleError(("instanceSizes", i), size, f"is not allowed; allowed: {', '.join(sizes)}")
        if not self.instances:
            raise RuleError(
                ("instanceSizes",),
                self.instance_sizes,
                f"admits no catalog instance of {', '.join(self.instance_families)}",
            )
        return self

    @property
    def instances(self) -> list[CpuInstance]:
        return cpu_instances(self.instance_families, self.instance_sizes)


class AmiVersions(Schema):
    """Pinned Karpenter AMI alias versions per AMI family (`@latest` is allowed in dev only)."""

    al2023: Annotated[str, Field(pattern=r"^(latest|v[0-9]{8})$")] = "latest"
    bottlerocket: Annotated[str, Field(pattern=r"^(latest|v[0-9]+\.[0-9]+\.[0-9]+)$")] = "latest"


class ClusterConfig(Schema):
    mode: Literal["eks", "existing"] = "eks"
    name: Annotated[str, _dns_label(40)]
    kubernetes_version: Annotated[
        str,
        BeforeValidator(_version_text),
        Field(pattern=r"^1\.[0-9]{2}$"),
        AfterValidator(_supported_version),
    ] = "1.34"
    vpc_cidr: IPv4Network = IPv4Network("10.0.0.0/16")
    availability_zones: list[str] = Field(min_length=2, max_length=3)
    system_nodes: SystemNodes = Field(default_factory=SystemNodes)
    addon_nodes: AddonNodes = Field(default_factory=AddonNodes)
    endpoint_public_access: bool = True
    public_access_cidrs: list[IPv4Network] = Field(default_factory=lambda: [IPv4Network("0.0.0.0/0")])
    admin_role_arns: list[Annotated[str, Field(pattern=r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/.+$")]] = []
    ami_versions: AmiVersions = Field(default_factory=AmiVersions)
    # existing mode: reach a cluster someone else runs; no AWS resource is created
    kubeconfig: str | None = None
    context: str | None = None

    @model_validator(mode="after")
    def _shape(self) -> ClusterConfig:
        if len(set(self.availability_zones)) != len(self.availability_zones):
            raise ValueError(f"cluster.availabilityZones {self.availability_zones} has duplicates")
        if self.vpc_cidr.prefixlen > 20:
            raise ValueError(f"cluster.vpcCidr {self.vpc_cidr} is too small; use a /16 to /20")
        if self.mode == "existing" and not self.kubeconfig:
            raise ValueError("cluster.kubeconfig is required when cluster.mode is 'existing'")
        return self


# ----------------------------------------------------------------------------------------- GPU pools

# `reserved`: On-Demand Capacity Reservations and Capacity Blocks the pool's EC2NodeClass selects
CapacityType = Literal["reserved", "spot", "on-demand"]
CAPACITY_RESERVATION_ID = re.compile(r"^cr-[0-9a-z]+$")  # the EC2NodeClass CRD's pattern
AWS_ACCOUNT_ID = re.compile(r"^[0-9]{12}$")
MAX_RESERVATION_TERMS = 30  # EC2NodeClass capacityReservationSelectorTerms maxItems
MAX_RESERVATION_TAGS = 20  # maxProperties of one term's tags


class CapacityReservationTerm(Schema):
    """One EC2NodeClass `capacityReservationSelectorTerms` entry: a reservation by id, or every reservation
    carrying these tags (optionally only those owned by `ownerID`, e.g. shared from another account)."""

    id: str | None = None
    tags: dict[str, str] | None = None
    owner_id: str | None = Field(default=None, alias="ownerID")

    def problem(self) -> str | None:
        """What is wrong with this term, in words, or None."""
        if (self.id is None) == (self.tags is None):
            return "give exactly one of `id` (cr-...) or `tags` ({key: value})"
        if self.id is not None:
            if not CAPACITY_RESERVATION_ID.match(self.id):
                return f"id {self.id!r} is not a capacity reservation id; expected cr- then lowercase letters/digits"
            if self.owner_id is not None:
                return "ownerID cannot be combined with id (the id already names one reservation)"
            return None
        tags = self.tags or {}
        if not tags or len(tags) > MAX_RESERVATION_TAGS:
            return f"tags must have 1 to {MAX_RESERVATION_TAGS} entries, got {len(tags)}"
        if any(k == "" or v == "" for k, v in tags.items()):
            return "tags keys and values must not be empty ('*' matches any value)"
        if self.owner_id is not None and not AWS_ACCOUNT_ID.match(self.owner_id):
            return f"ownerID {self.owner_id!r} is not a 12-digit AWS account id"
        return None


class HeadroomWindow(Schema):
    """Warm GPUs held during a cron window (a KEDA cron trigger on the pool's placeholder Deployment)."""

    start: Cron
    end: Cron
    timezone: Timezone = "UTC"
    gpus: int = Field(ge=0)


class Headroom(Schema):
    """GPUs kept warm in a pool by low-priority placeholder pods, so a burst shorter than a cold start
    lands on a running node: `gpus` outside any window, `schedule` windows raise it."""

    gpus: int = Field(default=0, ge=0)
    schedule: list[HeadroomWindow] = []

    @property
    def peak_gpus(self) -> int:
        return max([self.gpus, *(w.gpus for w in self.schedule)])


class GpuNodePool(Schema):
    name: Annotated[str, _dns_label(40)]
    instance_families: list[str] = Field(min_length=1)
    instance_sizes: list[str] | None = None
    capacity_types: list[CapacityType] = Field(default_factory=lambda: ["on-demand"], min_length=1)
    ami_family: Literal["al2023", "bottlerocket"] = "al2023"
    gpu_limit: int = Field(gt=0)
    consolidate_after: Duration = "5m"
    expire_after: Duration = "720h"
    mig: bool = False
    headroom: Headroom | None = None
    capacity_reservations: list[CapacityReservationTerm] = []
    # multi-node replicas (config/multinode.py): the one zone of the pool's nodes and its cluster placement group
    placement_zone: str | None = None

    @model_validator(mode="after")
    def _families(self) -> GpuNodePool:
        known = families()
        for i, family in enumerate(self.instance_families):
            if family not in known:
                raise RuleError(
                    ("instanceFamilies", i), family,
                    f"is not a catalog instance family{did_you_mean(family, known)}; allowed: {', '.join(known)}",
                )  # fmt: skip
        dedicated = DEDICATED_FAMILIES & set(self.instance_families)
        if dedicated and len(self.instance_families) > 1:
            raise ValueError(
                f"gpuNodePools[{self.name}].instanceFamilies {self.instance_families}: "
                f"{', '.join(sorted(dedicated))} must have a single-family pool of its own"
            )
        if not self.instances:
            raise ValueError(
                f"gpuNodePools[{self.name}].instanceSizes {self.instance_sizes}: no catalog instance of "
                f"{self.instance_families} has these sizes"
            )
        if self.mig and not dedicated:
            raise ValueError(
                f"gpuNodePools[{self.name}].mig: true is allowed only on pools of "
                f"{', '.join(sorted(DEDICATED_FAMILIES))}"
            )
        if len(set(self.capacity_types)) != len(self.capacity_types):
            raise ValueError(f"gpuNodePools[{self.name}].capacityTypes {self.capacity_types} has duplicates")
        blocks_only = [i.instance_type for i in self.instances if i.reserved_only]
        if blocks_only and self.capacity_types != ["reserved"]:
            raise ValueError(
                f"gpuNodePools[{self.name}].capacityTypes {self.capacity_types}: {', '.join(blocks_only)} is "
                "sold only as Capacity Blocks (no on-demand or spot); use capacityTypes: [reserved] with "
                "capacityReservations selecting the blocks"
            )
        self._check_reservations()
        return self

    def _check_reservations(self) -> None:
        where = f"gpuNodePools[{self.name}].capacityReservations"
        terms = self.capacity_reservations
        if "reserved" in self.capacity_types and not terms:
            raise ValueError(
                f"gpuNodePools[{self.name}].capacityTypes {self.capacity_types}: 'reserved' needs "
                "capacityReservations (ids or tags of the On-Demand Capacity Reservations or Capacity Blocks "
                "to launch into)"
            )
        if terms and "reserved" not in self.capacity_types:
            raise ValueError(
                f"{where}: reservations are selected but capacityTypes {self.capacity_types} does not include "
                "'reserved', so Karpenter would never launch into them; add 'reserved'"
            )
        if len(terms) > MAX_RESERVATION_TERMS:
            raise ValueError(f"{where}: {len(terms)} terms; at most {MAX_RESERVATION_TERMS} are allowed")
        seen: set[str] = set()
        for i, term in enumerate(terms):
            problem = term.problem()
            if problem:
                shown = term.model_dump(by_alias=True, exclude_none=True)
                raise ValueError(f"{where}[{i}] {shown}: {problem}")
            if term.id in seen:
                raise ValueError(f"{where}[{i}]: reservation {term.id} is listed twice")
            if term.id is not None:
                seen.add(term.id)

    @property
    def reservation_owner_ids(self) -> list[str]:
        """Accounts other than the cluster's whose reservations this pool may launch into (RAM-shared)."""
        return sorted({t.owner_id for t in self.capacity_reservations if t.owner_id is not None})

    @property
    def instances(self) -> list[GpuInstance]:
        """The catalog instances this pool may launch, cheapest first."""
        return instances(self.instance_families, self.instance_sizes)

    @property
    def max_gpus_per_node(self) -> int:
        return max(i.gpus for i in self.instances)


# -------------------------------------------------------------------------------------------- models


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


def replica_floor(environment: Environment) -> int:
    """Fewest replicas a model may run in an environment: one (no scale to zero), PROD_MIN_REPLICAS in prod.
    The rule below and the simulator's oracle (a bound the stack would accept) both read it."""
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
    """A model the built-in table (config/model_profiles.py) does not know, described from its Hugging Face
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


class LoraAdapter(Schema):
    """A LoRA adapter of the model (config/adapters.py): served by the model's vLLM under its own name."""

    name: Annotated[str, _dns_label(40)]
    # s3://<bucket>/<prefix> (the adapter's directory) or a Hugging Face repo id <owner>/<name>
    source: str
    # a Hub source's pinned commit (40-hex sha); none for an S3 prefix
    revision: str | None = None
    rank: Annotated[int, Field(ge=1)]

    @model_validator(mode="after")
    def _source_rules(self) -> LoraAdapter:
        from llm_platform.config.adapters import check_adapter_rank, check_adapter_source

        check_adapter_source(self.source, self.revision)
        check_adapter_rank(self.rank)
        return self


class ModelConfig(Schema):
    name: Annotated[str, _dns_label(30)]
    hugging_face_id: Annotated[str, Field(pattern=r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")]
    image: Annotated[str, AfterValidator(_pinned_image)] = VLLM_IMAGE
    node_pool: str
    tensor_parallel_size: Annotated[int, AfterValidator(_power_of_two)] = 1
    # multi-node (config/multinode.py): one replica spans this many nodes, tensor parallel within each node
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
    # events (ZMQ) and a tokenizer sidecar instead of estimating it; costs are in the README's gateway section
    precise_prefix_routing: bool = False
    # for a Hugging Face id the built-in profile table does not know (or to override its entry)
    geometry: ModelGeometry | None = None
    # LoRA adapters served on this model's replicas, each routable by its own name (config/adapters.py)
    adapters: list[LoraAdapter] = Field(default=[], max_length=MAX_ADAPTERS)
    # vLLM --max-loras: GPU slots for adapters in one batch; default one per adapter
    adapter_slots: int | None = Field(default=None, ge=1)

    @model_validator(mode="before")
    @classmethod
    def _unsupported_parallelism(cls, data: object) -> object:
        from llm_platform.config.adapters import RESERVED_LORA_FLAGS
        from llm_platform.config.multinode import refuse_unsupported_parallelism

        if isinstance(data, dict):
            for arg in data.get("extraArgs") or []:
                if str(arg).split("=", 1)[0] in RESERVED_LORA_FLAGS:
                    raise ValueError(
                        f"extraArgs: {arg!r} is not allowed: the platform writes vLLM's LoRA flags itself from "
                        "the model's adapters (and adapterSlots); list the adapters under `adapters:`"
                    )
        return refuse_unsupported_parallelism(data)

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


# ---------------------------------------------------------------------------------------- model cache

# Amazon FSx for Lustre capacity rules (FSx API reference, CreateFileSystem StorageCapacity):
# SCRATCH_2, PERSISTENT_1 and PERSISTENT_2 (SSD) take 1200 GiB, 2400 GiB, then multiples of 2400 GiB.
FSX_THROUGHPUT = {"SCRATCH_2": None, "PERSISTENT_2": (125, 250, 500, 1000)}


class FsxConfig(Schema):
    storage_capacity_gib: int = Field(default=1200, alias="storageCapacityGiB")
    deployment_type: Literal["SCRATCH_2", "PERSISTENT_2"] = "PERSISTENT_2"
    per_unit_storage_throughput: int | None = 250

    @model_validator(mode="after")
    def _lustre_rules(self) -> FsxConfig:
        cap = self.storage_capacity_gib
        if cap not in (1200, 2400) and (cap <= 0 or cap % 2400):
            raise ValueError(
                f"modelCache.fsx.storageCapacityGiB {cap} is not a capacity FSx for Lustre accepts; "
                "allowed: 1200, 2400 or a multiple of 2400"
            )
        allowed = FSX_THROUGHPUT[self.deployment_type]
        if allowed is None and self.per_unit_storage_throughput is not None:
            raise ValueError(
                f"modelCache.fsx.perUnitStorageThroughput {self.per_unit_storage_throughput} is not allowed "
                f"for {self.deployment_type}; leave it unset"
            )
        if allowed is not None and self.per_unit_storage_throughput not in allowed:
            raise ValueError(
                f"modelCache.fsx.perUnitStorageThroughput {self.per_unit_storage_throughput} is not allowed "
                f"for {self.deployment_type}; allowed: {', '.join(map(str, allowed))} MB/s/TiB"
            )
        return self


class S3BucketConfig(Schema):
    force_destroy: bool = False
    noncurrent_version_days: int = Field(default=30, ge=1)


class ModelCacheConfig(Schema):
    s3_bucket: S3BucketConfig = Field(default_factory=S3BucketConfig)
    fsx: FsxConfig | None = None


# ------------------------------------------------------------------------------------------- gateway


class GatewayClient(Schema):
    """A caller of the gateway: its key is in the `gatewayClientKeys` Pulumi secret under this name."""

    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,62}$")]
    requests_per_minute: int = Field(gt=0)
    # quotas enforced across every Envoy replica by Envoy Gateway's global rate limit (needs
    # gateway.quotaStore); tokens as AI Gateway counts them from the response's usage (llmRequestCosts)
    requests_per_second: int | None = Field(default=None, gt=0)
    tokens_per_minute: int | None = Field(default=None, gt=0)
    tokens_per_day: int | None = Field(default=None, gt=0)
    token_kind: Literal["input", "output", "total"] = "total"

    @property
    def has_quota(self) -> bool:
        return any(
            v is not None for v in (self.requests_per_second, self.tokens_per_minute, self.tokens_per_day)
        )


class QuotaStoreConfig(Schema):
    """The store of the global rate limit's counters: a Valkey StatefulSet with a persistent volume, read and
    written by Envoy Gateway's rate limit service. With it every client's limits are global (one bucket per
    client across all Envoy replicas and routes), not per replica."""

    storage_gib: int = Field(default=4, ge=1, le=1000, alias="storageGiB")
    rate_limit_replicas: int = Field(default=2, ge=1, le=10)


# keys of the hand-written Envoy gateway that the inference gateway replaced: what to write instead
REMOVED_GATEWAY_KEYS = {
    "maxInflightPerReplica": (
        "the endpoint picker now decides when a vLLM replica is saturated from vLLM's own queue and KV "
        "cache (thresholds derived from each model's autoscaling targets); delete the key, and use "
        "gateway.maxPendingPerReplica to bound the gateway's queue"
    ),
}


class GatewayConfig(Schema):
    enabled: bool = False
    internal: bool = True
    certificate_arn: (
        Annotated[str, Field(pattern=r"^arn:aws[a-z-]*:acm:[a-z0-9-]+:[0-9]{12}:certificate/.+$")] | None
    ) = None
    replicas: int = Field(default=2, ge=1)
    # requests the gateway holds per vLLM replica (at autoscaling.maxReplicas) once the model's replicas are
    # saturated; past it, or after the queue timeout, it answers 429. 0 would mean "unbounded" to the EPP.
    max_pending_per_replica: int = Field(default=32, ge=1)
    clients: list[GatewayClient] = []
    quota_store: QuotaStoreConfig | None = None

    @model_validator(mode="before")
    @classmethod
    def _removed_keys(cls, data: object) -> object:
        if isinstance(data, dict):
            for key, instead in REMOVED_GATEWAY_KEYS.items():
                if key in data:
                    raise ValueError(f"gateway.{key} is no longer a setting: {instead}")
        return data

    @model_validator(mode="after")
    def _rules(self) -> GatewayConfig:
        _unique(("clients",), [c.name for c in self.clients])
        if self.enabled and not self.clients:
            raise ValueError("gateway.clients: an enabled gateway needs at least one client")
        if self.quota_store is None:
            for i, c in enumerate(self.clients):
                for key, value in (
                    ("requestsPerSecond", c.requests_per_second),
                    ("tokensPerMinute", c.tokens_per_minute),
                    ("tokensPerDay", c.tokens_per_day),
                ):
                    if value is not None:
                        raise RuleError(
                            ("clients", i, key),
                            value,
                            f"(client {c.name}) is a global quota: it needs `gateway.quotaStore: {{}}` (the "
                            "store of the counters every Envoy replica shares); without it only "
                            "requestsPerMinute applies, per replica",
                        )
        if self.enabled and not self.internal and self.certificate_arn is None:
            raise ValueError(
                "gateway.certificateArn: an internet-facing gateway (internal: false) needs an ACM certificate"
            )
        return self


# ------------------------------------------------------------------------------------------ alerting


class AlertingConfig(Schema):
    """Where Alertmanager sends the platform's alerts. The receiver's URL (Slack incoming webhook, generic
    webhook, e.g. an SNS HTTPS subscription bridge) or PagerDuty routing key is the `alertReceiver` Pulumi
    secret; it reaches Alertmanager as a mounted Secret file, never as plain Helm values."""

    receiver: Literal["none", "slack", "pagerduty", "webhook"] = "none"
    slack_channel: Annotated[str, Field(pattern=r"^[#@]?[a-z0-9][a-z0-9._-]{0,79}$")] | None = None
    send_resolved: bool = True

    @model_validator(mode="after")
    def _receiver_fields(self) -> AlertingConfig:
        if self.receiver == "slack" and self.slack_channel is None:
            raise ValueError("alerting.slackChannel: the slack receiver needs a channel, e.g. '#llm-alerts'")
        if self.receiver != "slack" and self.slack_channel is not None:
            raise ValueError(f"alerting.slackChannel: only used with receiver 'slack', not {self.receiver!r}")
        return self


# -------------------------------------------------------------------------------------------- costs


def forecast_config_hash(model: ModelConfig, pool: GpuNodePool, environment: Environment) -> str:
    """What a cost forecast was simulated for: the model's block, its pool's block and the environment
    (everything the simulator reads from the stack file for one model), as 12 hex digits. `simulator replay`
    prints it next to the forecast; a forecast whose hash is not the deployed config's is stale."""
    doc = {
        "environment": environment.value,
        "model": model.model_dump(mode="json", by_alias=True),
        "pool": pool.model_dump(mode="json", by_alias=True),
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:12]


class CostForecast(Schema):
    """One model's forecast GPU cost per day, as `simulator replay <stack> --model <model>` prints it for
    the deployed config (paste the `costs.forecasts` entry it prints): the alert's yardstick."""

    model: str
    usd_per_day: Annotated[float, Field(gt=0)]
    config_hash: Annotated[str, Field(pattern=r"^[0-9a-f]{12}$")]
    source: str = ""  # what day it was replayed on (free text, shown on the dashboard)

    @field_validator("config_hash", mode="before")
    @classmethod
    def _quoted(cls, value: Any) -> Any:
        # YAML reads an unquoted all-digit hash (or one like 12e456789012) as a number, losing its digits
        if not isinstance(value, str):
            raise ValueError('12 hex digits as a quoted string, e.g. configHash: "08c40c006c5c"')
        return value


class CostsConfig(Schema):
    """Cost allocation: OpenCost prices the nodes from the catalogs; recording rules give each model's and
    each gateway client's actual $/day and $/million tokens; an alert fires when a model's actual cost
    exceeds its forecast by more than `forecastOverrunShare`."""

    enabled: bool = False
    forecast_overrun_share: Annotated[float, Field(gt=0, le=10)] = 0.2
    forecasts: list[CostForecast] = []


# --------------------------------------------------------------------------------------------- stack


class StackConfig(Schema):
    environment: Environment
    cluster: ClusterConfig
    gpu_node_pools: list[GpuNodePool] = Field(min_length=1)
    models: list[ModelConfig] = []
    model_cache: ModelCacheConfig = Field(default_factory=ModelCacheConfig)
    gateway: GatewayConfig = Field(default_factory=GatewayConfig)
    alerting: AlertingConfig = Field(default_factory=AlertingConfig)
    costs: CostsConfig = Field(default_factory=CostsConfig)

    @model_validator(mode="after")
    def _region_rules(self, info: ValidationInfo) -> StackConfig:
        """With the stack's AWS region known (`aws:region`, passed as validation context): zones are in it and
        every pool's instances are offered there."""
        region = (info.context or {}).get("region")
        if region is None or self.cluster.mode == "existing":
            return self
        if region not in KNOWN_REGIONS:
            raise ValueError(
                f"aws:region {region!r}: the instance catalog has no offerings for this region; "
                f"known: {', '.join(sorted(KNOWN_REGIONS))}"
            )
        for zone in self.cluster.availability_zones:
            if not (zone.startswith(region) and len(zone) == len(region) + 1):
                raise ValueError(
                    f"cluster.availabilityZones: {zone!r} is not a zone of the stack's region {region} "
                    f"(aws:region); use {region}a, {region}b, ..."
                )
        for pool in self.gpu_node_pools:
            missing = [i for i in pool.instances if region not in i.regions]
            if not missing:
                continue
            names = ", ".join(i.instance_type for i in missing)
            where = f"gpuNodePools[{pool.name}].instanceFamilies {pool.instance_families}"
            if len(missing) < len(pool.instances):
                sold = [i.size for i in pool.instances if i not in missing]
                raise ValueError(
                    f"{where}: {names} is not sold in {region} (aws:region); set instanceSizes to {sold}"
                )
            offered = sorted(set.intersection(*(set(i.regions) for i in missing)))
            raise ValueError(
                f"{where}: {names} is not sold in {region} (aws:region); regions that sell it: {', '.join(offered)}"
            )
        return self

    @model_validator(mode="after")
    def _cross_field_rules(self) -> StackConfig:
        prod = self.environment is Environment.PROD
        if prod and len(self.cluster.availability_zones) < 2:
            raise ValueError("cluster.availabilityZones: prod needs at least 2 zones")
        addon_types = self.cluster.addon_nodes.capacity_types or []
        if prod and "spot" in addon_types:
            raise RuleError(
                ("cluster", "addonNodes", "capacityTypes"),
                addon_types,
                "may not include spot in prod: Prometheus, Alertmanager, KEDA and the gateway would be "
                "interrupted at two minutes' notice; use [on-demand]",
            )
        if self.environment is not Environment.DEV:
            for family, version in self.cluster.ami_versions.model_dump().items():
                if version == "latest":
                    raise ValueError(
                        f"cluster.amiVersions.{family}: 'latest' is allowed in dev only; pin a version in "
                        f"{self.environment.value}"
                    )
        _serving_rules(self, has_bucket=self.cluster.mode == "eks", zones=self.cluster.availability_zones)
        if self.environment is not Environment.DEV and self.alerting.receiver == "none":
            raise ValueError(
                f"alerting.receiver: 'none' is allowed in dev only; {self.environment.value} must notify "
                "someone: use slack, pagerduty or webhook (its URL or key in the alertReceiver secret)"
            )
        _cost_rules(self)
        return self

    def pool(self, name: str) -> GpuNodePool:
        return next(p for p in self.gpu_node_pools if p.name == name)


def _cost_rules(c: StackConfig) -> None:
    """Forecasts name a model of the stack, once each, made for its deployed config (forecast_config_hash)."""
    models = {m.name: m for m in c.models}
    seen: set[str] = set()
    for i, f in enumerate(c.costs.forecasts):
        at = ("costs", "forecasts", i)
        if f.model in seen:
            raise RuleError((*at, "model"), f.model, "has a forecast already; one per model")
        seen.add(f.model)
        m = models.get(f.model)
        if m is None:
            raise RuleError(
                (*at, "model"), f.model, f"is not a model of the stack; allowed: {', '.join(models)}"
            )
        deployed = forecast_config_hash(m, c.pool(m.node_pool), c.environment)
        if f.config_hash != deployed:
            raise RuleError(
                (*at, "configHash"),
                f.config_hash,
                f"is not the deployed config's ({deployed}): model {m.name!r} or its pool changed since the "
                f"forecast; rerun `simulator replay <stack> --model {m.name} --prometheus <url> --date <day>` "
                "(or --export <file>) and paste the costs.forecasts entry it prints",
            )
    if c.costs.forecasts and not c.costs.enabled:
        raise RuleError(
            ("costs", "enabled"), False, "forecasts are compared with OpenCost's figures: set true"
        )


class ServingConfig(Schema):
    """The stack file's blocks that say what is served, on which pools (all but `cluster` and `alerting`),
    with the stack's rules for them: what a serving component resolves its model's plan from."""

    environment: Environment
    gpu_node_pools: list[GpuNodePool] = Field(min_length=1)
    models: list[ModelConfig] = []
    model_cache: ModelCacheConfig = Field(default_factory=ModelCacheConfig)
    gateway: GatewayConfig = Field(default_factory=GatewayConfig)

    @model_validator(mode="after")
    def _rules(self, info: ValidationInfo) -> ServingConfig:
        """`has_bucket` (validation context, default true): the model bucket exists (an EKS cluster)."""
        # a sub-component given no `gateway` (Headroom, GpuNodePools) cannot tell whether one routes to a model
        # at zero; the stack, and the components that serve the model, are given it and check
        _serving_rules(
            self,
            has_bucket=(info.context or {}).get("has_bucket", True),
            gateway_known="gateway" in self.model_fields_set,
        )
        return self


def _serving_rules(
    c: StackConfig | ServingConfig,
    *,
    has_bucket: bool,
    zones: Sequence[str] | None = None,
    gateway_known: bool = True,
) -> None:
    """The rules of the models, the pools they run on, the model cache and the gateway: the one definition
    StackConfig and ServingConfig share. `has_bucket`: the stack has the model bucket (not an existing
    cluster's). `zones`: the cluster's availability zones (None on its own: a multi-node pool's
    `placementZone` is then the only zone it knows)."""
    from llm_platform.config.adapters import check_adapters
    from llm_platform.config.multinode import check_multi_node_model, check_multi_node_pools

    _unique(("gpuNodePools",), [p.name for p in c.gpu_node_pools])
    _unique(("models",), [m.name for m in c.models])
    check_adapters(c.models)
    pools = {p.name: p for p in c.gpu_node_pools}
    prod = c.environment is Environment.PROD
    for i, m in enumerate(c.models):
        at = ("models", i)
        pool = pools.get(m.node_pool)
        if pool is None:
            raise RuleError((*at, "nodePool"), m.node_pool, f"does not exist; allowed: {', '.join(pools)}")
        if m.tensor_parallel_size > pool.max_gpus_per_node:
            raise RuleError(
                (*at, "tensorParallelSize"),
                m.tensor_parallel_size,
                f"is larger than the {plural(pool.max_gpus_per_node, 'GPU')} of the largest instance "
                f"pool {pool.name!r} allows ({pool.instances[-1].instance_type}); tensor parallelism must "
                "stay within one node",
            )
        if m.geometry is None and m.hugging_face_id not in PROFILES:
            raise RuleError(
                (*at, "huggingFaceId"),
                m.hugging_face_id,
                "has no built-in geometry (config/model_profiles.py), so its GPU fit and start time "
                "cannot be sized; describe it from its config.json under the model's `geometry:` "
                "{parameters, layers, kvHeads, headDim, weightBits}; built-in: "
                + ", ".join(sorted(PROFILES)),
            )
        _check_fits_gpus(at, m, pool)
        if m.multi_node:
            known = zones if zones is not None else [z for z in [pool.placement_zone] if z]
            check_multi_node_model(at, m, pool, c.gpu_node_pools.index(pool), known)
        a = m.autoscaling
        if a.min_replicas > a.max_replicas:
            raise RuleError(
                (*at, "autoscaling", "minReplicas"),
                a.min_replicas,
                f"is larger than maxReplicas {a.max_replicas}",
            )
        for j, w in enumerate(a.prewarm):
            if not a.min_replicas <= w.replicas <= a.max_replicas:
                raise RuleError(
                    (*at, "autoscaling", "prewarm", j, "replicas"),
                    w.replicas,
                    f"must be between minReplicas {a.min_replicas} and maxReplicas {a.max_replicas}",
                )
        if a.min_replicas == 0:
            check_scale_to_zero(at, a, c, gateway_known=gateway_known)
        elif a.min_replicas < replica_floor(c.environment):
            raise RuleError(
                (*at, "autoscaling", "minReplicas"),
                a.min_replicas,
                f"is not allowed in prod; use at least {PROD_MIN_REPLICAS} so one node loss or rollout "
                "keeps the model up",
            )
        if m.cache == "hub" and c.environment is not Environment.DEV:
            raise RuleError(
                (*at, "cache"),
                m.cache,
                f"is allowed in dev only ({c.environment.value} would download weights from the "
                "Hugging Face Hub at every scale-out); use nvme, fsx or s3",
            )
        if not has_bucket and m.cache != "hub":
            raise RuleError(
                (*at, "cache"),
                m.cache,
                "needs the model bucket, which an 'existing' cluster does not get (that mode creates no "
                "AWS resources); allowed there: 'hub'",
            )
        if m.cache == "fsx" and c.model_cache.fsx is None:
            raise RuleError((*at, "cache"), m.cache, "needs modelCache.fsx settings, which are missing")
    for i, pool in enumerate(c.gpu_node_pools):
        _check_pool_limit(("gpuNodePools", i), pool, c.models)
    check_multi_node_pools(c.gpu_node_pools, c.models)
    for i, pool in enumerate(c.gpu_node_pools):
        if pool.headroom is not None:
            _check_headroom(f"gpuNodePools[{i}] ({pool.name}).headroom", pool, c.models)
    if c.gateway.enabled and not c.models:
        raise ValueError("gateway.enabled: true needs at least one model to route to")
    if prod and c.gateway.enabled and c.gateway.certificate_arn is None:
        raise ValueError(
            "gateway.certificateArn: prod serves its gateway over TLS; give an ACM certificate ARN"
        )
    fsx = c.model_cache.fsx
    if prod and fsx is not None and fsx.deployment_type != "PERSISTENT_2":
        raise ValueError(
            f"modelCache.fsx.deploymentType: {fsx.deployment_type} is not allowed in prod; use PERSISTENT_2"
        )


def served_by(pool: GpuNodePool, models: Sequence[ModelConfig]) -> list[ModelConfig]:
    """The models whose replicas run on `pool`."""
    return [m for m in models if m.node_pool == pool.name]


def replica_gpus(pool: GpuNodePool, models: Sequence[ModelConfig]) -> int:
    """GPUs of one headroom placeholder: the largest replica (tensor-parallel size) among the pool's models,
    so preempting one placeholder frees room for any one replica of the pool. The one definition: the
    schema's headroom rules, the plan's placeholders and the simulator's tuner read it."""
    return max((m.replica_gpus for m in served_by(pool, models)), default=0)


def gpus_at_max_replicas(pool: GpuNodePool, models: Sequence[ModelConfig]) -> int:
    """GPUs the pool's models request with every one at maxReplicas: what its `gpuLimit` must allow (the
    schema's rule) and what the plan's `pool_headroom_gpus` subtracts from it."""
    return sum(m.autoscaling.max_replicas * m.replica_gpus for m in served_by(pool, models))


def check_scale_to_zero(
    at: tuple[str | int, ...], a: Autoscaling, c: StackConfig | ServingConfig, *, gateway_known: bool = True
) -> None:
    """minReplicas 0: only behind the gateway (the only signal that exists while no vLLM pod does is the
    requests reaching the endpoint picker), and in prod only with `allowScaleToZero: true`."""
    if gateway_known and not c.gateway.enabled:
        raise RuleError(
            (*at, "autoscaling", "minReplicas"),
            a.min_replicas,
            "needs the gateway (gateway.enabled: true): with no vLLM pod only the endpoint picker sees the "
            "request that must wake the model; allowed without it: 1 or more",
        )
    if c.environment is Environment.PROD and not a.allow_scale_to_zero:
        raise RuleError(
            (*at, "autoscaling", "minReplicas"),
            a.min_replicas,
            f"is not allowed in prod unless the model opts in with autoscaling.allowScaleToZero: true "
            f"(its first request after idle waits a cold start); otherwise use at least {PROD_MIN_REPLICAS}",
        )


def gpus_at_min_replicas(pool: GpuNodePool, models: Sequence[ModelConfig]) -> int:
    """GPUs the pool's models hold with every one at minReplicas (what headroom must fit next to)."""
    return sum(m.autoscaling.min_replicas * m.replica_gpus for m in served_by(pool, models))


def _check_headroom(where: str, pool: GpuNodePool, models: list[ModelConfig]) -> None:
    """Headroom the placeholders can hold: whole replicas, raised (never lowered) by windows, and within
    the pool's GPU limit next to what the pool's models hold at their minimum."""
    headroom = pool.headroom
    assert headroom is not None
    served = served_by(pool, models)
    if not served:
        raise ValueError(
            f"{where}: pool {pool.name!r} serves no model, so warm GPUs there would never be used; "
            "remove headroom or point a model's nodePool at it"
        )
    if headroom.peak_gpus == 0:
        raise ValueError(f"{where}.gpus: 0 with no window above 0 keeps nothing warm; remove headroom")
    unit = replica_gpus(pool, models)
    largest = max(served, key=lambda m: m.tensor_parallel_size)
    fields = [("gpus", headroom.gpus)] + [
        (f"schedule[{j}].gpus", w.gpus) for j, w in enumerate(headroom.schedule)
    ]
    for field, gpus in fields:
        if gpus % unit:
            raise ValueError(
                f"{where}.{field}: {gpus} is not a multiple of {unit}, the GPUs of one {largest.name} replica "
                f"(tensorParallelSize {unit}); placeholders hold whole replicas"
            )
    for j, w in enumerate(headroom.schedule):
        if w.gpus < headroom.gpus:
            raise ValueError(
                f"{where}.schedule[{j}].gpus: {w.gpus} is below headroom.gpus {headroom.gpus}; a window can "
                "only raise the warm GPUs (KEDA's cron trigger adds replicas), so set gpus to the lowest level"
            )
    at_minimum = gpus_at_min_replicas(pool, models)
    if headroom.peak_gpus + at_minimum > pool.gpu_limit:
        held = ", ".join(f"{m.name} {m.autoscaling.min_replicas}x{m.tensor_parallel_size}" for m in served)
        raise ValueError(
            f"{where}: {headroom.peak_gpus} warm GPUs plus the {at_minimum} GPUs the pool's models hold at "
            f"minReplicas ({held}) exceed gpuLimit {pool.gpu_limit}; the placeholders could never all run. "
            f"Allowed: at most {max(0, pool.gpu_limit - at_minimum)} warm GPUs, or raise gpuLimit"
        )


def _unique(at: tuple[str, ...], names: list[str]) -> None:
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name in seen:
            raise RuleError((*at, i, "name"), name, "is used twice; names must be unique")
        seen.add(name)


GIB = 2**30


def _check_fits_gpus(at: tuple[str | int, ...], m: ModelConfig, pool: GpuNodePool) -> None:
    """Weights plus the KV cache of one maxModelLen sequence, split over the tensor-parallel GPUs, must fit
    in gpuMemoryUtilization of the smallest GPU the pool may give a replica (vLLM refuses to start otherwise;
    activations and CUDA graphs need a little more, so this is the floor)."""
    tp = m.tensor_parallel_size
    if m.multi_node:
        from llm_platform.config.multinode import check_fits_nodes

        return check_fits_nodes(at, m, pool)
    gpu: GpuModel = min((i.gpu for i in pool.instances if i.gpus >= tp), key=lambda g: g.memory_gib)
    prof = m.profile
    weights = prof.weight_bytes / GIB
    kv = prof.kv_bytes_per_token * m.max_model_len / GIB
    usable = gpu.memory_gib * m.gpu_memory_utilization
    if (weights + kv) / tp <= usable:
        return
    fitting_tp = next((t for t in (2, 4, 8) if t > tp and (weights + kv) / t <= usable), None)
    longest = int((usable * tp - weights) * GIB / prof.kv_bytes_per_token)
    options = (
        [f"tensorParallelSize {fitting_tp} on a pool with {fitting_tp}-GPU instances"] if fitting_tp else []
    )
    if longest >= 1:
        options.append(f"maxModelLen {longest} or less")
    options.append("a pool with larger GPUs")
    raise RuleError(
        (*at, "tensorParallelSize"),
        tp,
        f"is too small for {m.hugging_face_id} at maxModelLen {m.max_model_len}: {weights:.1f} GiB of weights "
        f"+ {kv:.1f} GiB of KV cache for one {m.max_model_len}-token sequence = {weights + kv:.1f} GiB, "
        f"{(weights + kv) / tp:.1f} GiB per GPU over {plural(tp, 'GPU')}, but one {gpu.name} of pool "
        f"{pool.name!r} gives {gpu.memory_gib} GiB x gpuMemoryUtilization {m.gpu_memory_utilization} = "
        f"{usable:.1f} GiB; allowed: {', or '.join(options)}",
    )


def _replica_shape(m: ModelConfig) -> str:
    """`8 GPUs`, or for a multi-node replica `2 nodes x 8 GPUs`."""
    gpus = plural(m.tensor_parallel_size, "GPU")
    return f"{m.pipeline_parallel_size} nodes x {gpus}" if m.multi_node else gpus


def _check_pool_limit(at: tuple[str | int, ...], pool: GpuNodePool, models: list[ModelConfig]) -> None:
    """The NodePool's GPU limit must let every model of the pool reach maxReplicas at once."""
    served = served_by(pool, models)
    needed = gpus_at_max_replicas(pool, models)
    if pool.gpu_limit >= needed:
        return
    parts = ", ".join(f"{m.name} {m.autoscaling.max_replicas} x {_replica_shape(m)}" for m in served)
    raise RuleError(
        (*at, "gpuLimit"),
        pool.gpu_limit,
        f"is less than the {plural(needed, 'GPU')} the pool's models reach at maxReplicas ({parts}); "
        f"Karpenter would stop adding nodes before them; allowed: gpuLimit {needed} or more, or lower maxReplicas",
    )
