"""Rules for autoscaling vLLM: KEDA ScaledObjects and HPAs, on vLLM's own queue and KV-cache metrics.

Two of them need the scaler and its target Deployment together (is the target vLLM? which environment?),
so they are stack policies; the PromQL rule needs only the ScaledObject.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from .objects import (
    ENVIRONMENT_CONFIG,
    HPA,
    POD_SPEC_PATHS,
    SCALED_OBJECT,
    VLLM_NAME_LABEL,
    as_dict,
    as_int,
    as_list,
    dig,
    environment,
    is_unknown,
    is_vllm_workload,
    labels,
    name_of,
    namespace_of,
    plain,
    pod_spec,
)

# GPU "utilisation" signals: vLLM pre-allocates gpu-memory-utilization of each GPU for the KV cache at
# start-up and keeps the GPU busy at any batch size, so these read ~90-100% whether one request or a
# hundred are waiting (the seed benchmark: HPA on GPU memory, P95 TTFT 850 ms and 14% SLO violations).
GPU_UTIL_METRIC = re.compile(
    r"DCGM_FI_DEV_GPU_UTIL|DCGM_FI_DEV_FB_\w+|DCGM_FI_DEV_MEM_COPY_UTIL|DCGM_FI_PROF_\w+"
    r"|container_gpu\w*|nvidia_gpu\w*|gpu_utili[sz]ation\w*|gpu_memory_\w+"
)
# metric names that current vLLM no longer exports (or never did), with what replaces them
RETIRED_VLLM_METRICS = {
    "vllm:gpu_cache_usage_perc": "vllm:kv_cache_usage_perc (renamed in v0.9.2, removed in v0.12)",
    "vllm:gpu_cache_usage_factor": "vllm:kv_cache_usage_perc (gpu_cache_usage_factor never existed)",
    "vllm:time_per_output_token_seconds": "vllm:inter_token_latency_seconds (removed in v0.13)",
}
SINGLE_SERIES_CALL = re.compile(r"^\s*(sum|max|min|avg|count|scalar)\s*\(")
QUANTILE_OF_SUM = re.compile(r"^\s*histogram_quantile\s*\(.*\bsum\b.*\bby\s*\(\s*le\s*\)", re.DOTALL)
RESOURCE_METRICS = {"cpu", "memory"}


# ---------------------------------------------------------------------------------- PromQL rules


def _outer_call_end(query: str, start: int) -> int | None:
    """Index just past the parenthesis that closes the one opened at `start`."""
    depth = 0
    quote: str | None = None
    for i in range(start, len(query)):
        ch = query[i]
        if quote:
            if ch == quote and query[i - 1] != "\\":
                quote = None
        elif ch in "\"'`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def single_series(query: str) -> bool:
    """Does the query return one series? KEDA's Prometheus scaler errors on more than one: the outermost
    call must be an ungrouped aggregation (sum(...) in this platform), scalar(), or a histogram_quantile
    over `sum by (le)`."""
    if QUANTILE_OF_SUM.match(query):
        return True
    match = SINGLE_SERIES_CALL.match(query)
    if not match:
        return False
    end = _outer_call_end(query, match.end() - 1)
    if end is None:
        return False
    return not re.match(r"\s*(by|without)\b", query[end:])


def query_problems(query: str) -> list[str]:
    problems = []
    if not single_series(query):
        problems.append(
            f"query {query!r} is not wrapped in sum(...): KEDA's Prometheus scaler fails when a query "
            "returns more than one series (one per pod here), so the ScaledObject stops scaling"
        )
    for old, new in RETIRED_VLLM_METRICS.items():
        if re.search(re.escape(old) + r"(?:_bucket|_sum|_count|_total)?(?![\w:])", query):
            problems.append(
                f"query uses {old}, which current vLLM does not export; use {new}. A missing series reads "
                "as 0, so the trigger silently never scales"
            )
    return problems


def _triggers(props: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for t in as_list(dig(props, "spec", "triggers")) if isinstance(t, dict)]


def _prometheus_queries(props: dict[str, Any]) -> list[str]:
    queries = []
    for trigger in _triggers(props):
        if trigger.get("type") == "prometheus":
            query = dig(trigger, "metadata", "query")
            if isinstance(query, str):
                queries.append(query)
    return queries


def _validate_queries(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    if args.resource_type != SCALED_OBJECT:
        return
    props = plain(args.props)
    name = name_of(props) if isinstance(name_of(props), str) else args.name
    for query in _prometheus_queries(props):
        for problem in query_problems(query):
            report_violation(f"ScaledObject {name}: {problem}.", None)


keda_prometheus_queries = ResourceValidationPolicy(
    name="keda-prometheus-queries",
    description="KEDA Prometheus triggers use sum(...) and current vLLM metric names.",
    validate=_validate_queries,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    remediation_steps="Wrap the query in sum(...) and use vllm:kv_cache_usage_perc, vllm:num_requests_waiting, "
    "vllm:inter_token_latency_seconds.",
)


# ---------------------------------------------------------------------------------- scalers and targets


@dataclass
class Obj:
    resource_type: str
    props: dict[str, Any]
    urn: str
    name: str

    @property
    def display(self) -> str:
        kind = self.resource_type.rsplit(":", 1)[-1]
        name = name_of(self.props)
        return f"{kind} {name if isinstance(name, str) else self.name}"


@dataclass
class Scaler:
    obj: Obj
    target: Obj | None
    vllm: bool
    environment: str | None


def _same(a: Any, b: Any) -> bool:
    """Equal, or at least one side is unknown during preview (then the name alone decides)."""
    return is_unknown(a) or is_unknown(b) or a == b


def _target(scaler: dict[str, Any], workloads: list[Obj]) -> Obj | None:
    ref = as_dict(dig(scaler, "spec", "scaleTargetRef"))
    name = ref.get("name")
    if not isinstance(name, str):
        return None
    kind = ref.get("kind") or "Deployment"
    ns = namespace_of(scaler)
    for w in workloads:
        if w.resource_type.rsplit(":", 1)[-1] != kind:
            continue
        if name_of(w.props) == name and _same(namespace_of(w.props), ns):
            return w
    return None


def _is_vllm_target(target: Obj | None) -> bool:
    if target is None:
        return False
    return is_vllm_workload(target.props, pod_spec(target.resource_type, target.props))


def scalers(resources: Iterable[Any], config: Any) -> list[Scaler]:
    """Every ScaledObject and HPA, with its target workload (when the stack has it) and environment."""
    objs = [Obj(r.resource_type, plain(r.props), r.urn, r.name) for r in resources]
    workloads = [o for o in objs if o.resource_type in POD_SPEC_PATHS]
    found = []
    for o in objs:
        if o.resource_type not in (SCALED_OBJECT, HPA):
            continue
        target = _target(o.props, workloads)
        queries = " ".join(_prometheus_queries(o.props))
        metric_names = " ".join(
            str(dig(m, kind, "metric", "name") or "")
            for m in as_list(dig(o.props, "spec", "metrics"))
            for kind in ("external", "pods", "object")
        )
        vllm = (
            labels(o.props).get(VLLM_NAME_LABEL) == "vllm"
            or _is_vllm_target(target)
            or "vllm:" in queries
            or "vllm:" in metric_names
        )
        env_sources = [o.props] + ([target.props] if target else [])
        found.append(Scaler(o, target, vllm, environment(config, o.urn, *env_sources)))
    return found


# ---------------------------------------------------------------------------------- no utilisation scaling


def utilisation_problems(scaler: Obj) -> list[str]:
    problems = []
    if scaler.resource_type == SCALED_OBJECT:
        for trigger in _triggers(scaler.props):
            kind = trigger.get("type")
            if kind in RESOURCE_METRICS:
                problems.append(f"trigger type {kind!r} scales on {kind} utilisation")
            elif kind == "prometheus":
                query = dig(trigger, "metadata", "query")
                if isinstance(query, str) and (m := GPU_UTIL_METRIC.search(query)):
                    problems.append(f"prometheus trigger scales on GPU utilisation ({m.group(0)})")
    else:
        for metric in as_list(dig(scaler.props, "spec", "metrics")):
            if not isinstance(metric, dict):
                continue
            for kind in ("resource", "containerResource"):
                resource = dig(metric, kind, "name")
                if resource in RESOURCE_METRICS:
                    problems.append(f"metric {kind} {resource!r} scales on {resource} utilisation")
            for kind in ("external", "pods", "object"):
                name = dig(metric, kind, "metric", "name")
                if isinstance(name, str) and (m := GPU_UTIL_METRIC.search(name)):
                    problems.append(f"metric {kind} {name!r} scales on GPU utilisation ({m.group(0)})")
    return problems


def _validate_no_utilisation(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    for s in scalers(args.resources, args.get_config()):
        if not s.vllm:
            continue
        for problem in utilisation_problems(s.obj):
            report_violation(
                f"{s.obj.display} (vLLM): {problem}. vLLM holds its GPU memory from start-up and keeps CPU and "
                "GPU busy at any load, so utilisation does not track demand; scale on vLLM's own queue depth "
                "(vllm:num_requests_waiting) and KV-cache usage (vllm:kv_cache_usage_perc).",
                s.obj.urn,
            )


vllm_no_utilisation_autoscaling = StackValidationPolicy(
    name="vllm-no-utilisation-autoscaling",
    description="vLLM is never autoscaled on CPU, memory or GPU utilisation (HPA or KEDA).",
    validate=_validate_no_utilisation,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=PolicyConfigSchema(properties=ENVIRONMENT_CONFIG),
    remediation_steps="Use KEDA prometheus triggers on vllm:num_requests_waiting and vllm:kv_cache_usage_perc.",
)


# ---------------------------------------------------------------------------------- prod min replicas

PROD_MIN_REPLICAS = 2


def _validate_prod_replicas(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    config = args.get_config()
    found = scalers(args.resources, config)
    for s in found:
        if not s.vllm or s.environment != "prod":
            continue
        spec = as_dict(dig(s.obj.props, "spec"))
        if s.obj.resource_type == SCALED_OBJECT:
            raw, field, default = spec.get("minReplicaCount"), "minReplicaCount", 0
            idle = spec.get("idleReplicaCount")
            if idle is not None and not is_unknown(idle):
                report_violation(
                    f"{s.obj.display}: idleReplicaCount {idle} scales a prod model to zero when idle; remove it.",
                    s.obj.urn,
                )
        else:
            raw, field, default = spec.get("minReplicas"), "minReplicas", 1
        if is_unknown(raw):
            continue
        value = default if raw is None else as_int(raw)
        if value is not None and value < PROD_MIN_REPLICAS:
            report_violation(
                f"{s.obj.display}: {field} {value}"
                + (" (the default)" if raw is None else "")
                + " for a prod "
                f"vLLM model; use at least {PROD_MIN_REPLICAS} so a node loss, spot reclaim or rollout keeps it "
                "serving.",
                s.obj.urn,
            )
    # a prod vLLM workload that no autoscaler manages runs spec.replicas
    scaled = {s.target.urn for s in found if s.target is not None}
    unresolved_vllm_scaler = any(s.vllm and s.target is None for s in found)
    for r in args.resources:
        if r.resource_type not in POD_SPEC_PATHS or r.urn in scaled or unresolved_vllm_scaler:
            continue
        props = plain(r.props)
        if not is_vllm_workload(props, pod_spec(r.resource_type, props)):
            continue
        if environment(config, r.urn, props) != "prod":
            continue
        raw = dig(props, "spec", "replicas")
        if is_unknown(raw):
            continue
        value = 1 if raw is None else as_int(raw)
        if value is not None and value < PROD_MIN_REPLICAS:
            report_violation(
                f"{r.resource_type.rsplit(':', 1)[-1]} {name_of(props)}: {value} replica(s) and no autoscaler "
                f"for a prod vLLM model; run at least {PROD_MIN_REPLICAS}.",
                r.urn,
            )


prod_vllm_min_replicas = StackValidationPolicy(
    name="prod-vllm-min-replicas",
    description="Prod vLLM models keep at least 2 replicas (KEDA minReplicaCount, HPA minReplicas or replicas).",
    validate=_validate_prod_replicas,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=PolicyConfigSchema(properties=ENVIRONMENT_CONFIG),
    remediation_steps="Set the ScaledObject's minReplicaCount (autoscaling.minReplicas in the stack) to >= 2.",
)


AUTOSCALING_POLICIES = [keda_prometheus_queries, vllm_no_utilisation_autoscaling, prod_vllm_min_replicas]
