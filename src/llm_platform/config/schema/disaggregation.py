"""A model served as separate prefill and decode roles (`disaggregation:`), the KV cache moved from the prefill
pod to the decode pod over EFA by vLLM's NixlConnector, each role with its own tensor parallelism, replicas and
scaling signal. Absent: the model is one aggregated Deployment, as before.

What the roles run, and why, is in components/specs/disaggregation.py; the stack's rules for them are here so
that every message names the stack file's field and the numbers:

- the model's pool is an EFA pool (every admitted instance type has EFA interfaces, one count, `placementZone`
  set): NIXL's LIBFABRIC backend needs EFA, and the pool's one zone and cluster placement group keep a model's
  roles together (plan/nodes.py `efa_pool`);
- each role's tensor parallel size divides the instance's GPUs, so its pods share a node's EFA interfaces in
  equal parts (a role pod requests its GPU share of them);
- the decode role's tensor parallel size is the model's own (the model's GPU-fit and cold-start checks size it);
- not with pipelineParallelSize > 1 (a multi-node replica per role is not rendered), LoRA adapters, precise
  prefix routing or scale to zero (each needs routing the P/D picker profile here does not configure).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from llm_platform.config.schema.base import RuleError, Schema
from llm_platform.config.schema.pools import GpuNodePool, check_efa_instances

# the signals each role may scale on: prefill work waits in vLLM's queue (or shows as TTFT), decode work
# holds KV-cache blocks (or running sequences) for the whole generation
PREFILL_SIGNALS = ("queueDepth", "ttft")
DECODE_SIGNALS = ("kvCacheUsage", "runningRequests")


def _power_of_two(value: int) -> int:
    if value < 1 or value & (value - 1):
        raise ValueError(f"{value} is not allowed; must be a power of two (1, 2, 4, 8)")
    return value


class RoleAutoscaling(Schema):
    """One role's KEDA ScaledObject: its replica bounds and the one vLLM signal it scales on, per replica
    (queueDepth: requests waiting; ttft: p90 seconds; kvCacheUsage: fill 0..1; runningRequests: sequences)."""

    min_replicas: int = Field(default=1, ge=1)
    max_replicas: int = Field(default=2, ge=1)
    signal: Literal["queueDepth", "ttft", "kvCacheUsage", "runningRequests"]
    target: float = Field(gt=0)


class DisaggregationRole(Schema):
    tensor_parallel_size: Annotated[int, AfterValidator(_power_of_two)] = 1
    autoscaling: RoleAutoscaling


class Disaggregation(Schema):
    # NIXL's backend for the KV transfer: LIBFABRIC over EFA (llm-d's AWS path). UCX is not offered: the pinned
    # llm-d-aws image builds UCX --with-efa, but llm-d's AWS guides use LIBFABRIC and UCX's EFA transport was
    # not verified at the pinned tags
    kv_transport: Literal["nixl-libfabric"] = "nixl-libfabric"
    prefill: DisaggregationRole
    decode: DisaggregationRole

    def roles(self) -> tuple[tuple[str, DisaggregationRole], ...]:
        return (("prefill", self.prefill), ("decode", self.decode))


ALLOWED_SIGNALS = {"prefill": PREFILL_SIGNALS, "decode": DECODE_SIGNALS}


def check_disaggregated_model(
    at: tuple[str | int, ...],
    d: Disaggregation,
    *,
    model_tp: int,
    pipeline_parallel_size: int,
    has_adapters: bool,
    precise_prefix_routing: bool,
    kv_cache_offload: bool,
    pool: GpuNodePool,
) -> None:
    """A P/D model against its own fields and its pool (the first broken rule is raised)."""
    here = (*at, "disaggregation")
    if pipeline_parallel_size > 1:
        raise RuleError(
            (*at, "pipelineParallelSize"),
            pipeline_parallel_size,
            "cannot be combined with disaggregation: a role replica spanning nodes is not rendered; "
            "allowed: 1, or remove disaggregation",
        )
    if (
        kv_cache_offload
    ):  # both would be vLLM's one --kv-transfer-config (NixlConnector vs the offloading one)
        raise RuleError(
            (*at, "kvCacheOffload"),
            True,
            "cannot be combined with disaggregation: vLLM takes one --kv-transfer-config, and the roles' is "
            "NixlConnector; allowed: remove kvCacheOffload, or remove disaggregation",
        )
    for flag, name in ((has_adapters, "adapters"), (precise_prefix_routing, "precisePrefixRouting")):
        if flag:
            raise RuleError(
                (*at, name),
                flag,
                "cannot be combined with disaggregation: the P/D picker profile routes by role only; "
                "allowed: remove it, or remove disaggregation",
            )
    if d.decode.tensor_parallel_size != model_tp:
        raise RuleError(
            (*here, "decode", "tensorParallelSize"),
            d.decode.tensor_parallel_size,
            f"must equal the model's tensorParallelSize {model_tp} (its GPU fit and cold start are sized "
            f"on it); allowed: {model_tp}",
        )
    for role, spec in d.roles():
        _check_role(here, role, spec)
    _check_efa_pool(at, pool)
    gpus = {i.gpus for i in pool.instances}
    for role, spec in d.roles():
        bad = sorted(g for g in gpus if g % spec.tensor_parallel_size)
        if bad:
            raise RuleError(
                (*here, role, "tensorParallelSize"),
                spec.tensor_parallel_size,
                f"does not divide the {bad[0]} GPUs of an instance pool {pool.name!r} admits: a role's pods "
                "share a node's EFA interfaces in equal parts; allowed: "
                + ", ".join(str(t) for t in (1, 2, 4, 8) if all(g % t == 0 for g in gpus)),
            )


def _check_role(here: tuple[str | int, ...], role: str, spec: DisaggregationRole) -> None:
    a = spec.autoscaling
    if a.signal not in ALLOWED_SIGNALS[role]:
        raise RuleError(
            (*here, role, "autoscaling", "signal"),
            a.signal,
            f"is not a {role} signal; allowed: {', '.join(ALLOWED_SIGNALS[role])}",
        )
    if a.min_replicas > a.max_replicas:
        raise RuleError(
            (*here, role, "autoscaling", "minReplicas"),
            a.min_replicas,
            f"is larger than maxReplicas {a.max_replicas}; allowed: 1 to {a.max_replicas}",
        )
    if a.signal == "kvCacheUsage" and a.target > 1:
        raise RuleError(
            (*here, role, "autoscaling", "target"),
            a.target,
            "is a KV-cache fill per replica; allowed: above 0, at most 1",
        )


def _check_efa_pool(at: tuple[str | int, ...], pool: GpuNodePool) -> None:
    """The pool gives every node EFA interfaces (one count) in one zone: NIXL over LIBFABRIC needs EFA, and
    the pool's placement zone keeps prefill and decode pods of the model together."""
    check_efa_instances(at, pool, "the KV transfer between prefill and decode (NIXL, LIBFABRIC backend)")
    if pool.placement_zone is None:
        raise RuleError(
            (*at, "nodePool"),
            pool.name,
            "has no placementZone: a disaggregated model's prefill and decode pods must share one zone "
            "(EFA does not cross zones) and its cluster placement group; allowed: set the pool's "
            "placementZone to one of cluster.availabilityZones",
        )
