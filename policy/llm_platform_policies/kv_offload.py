"""A vLLM pod with a CPU KV tier has the memory and `/dev/shm` the tier needs, on any render.

The tier is pinned host memory the kernel cannot reclaim: a pod whose memory request and limit, and whose
memory-backed `/dev/shm`, were not grown by the tier x 1.2 is OOM-killed once the tier fills (vLLM
production-stack issue #923; opendatahub-io/kserve PR #1842 grows both by tier x 1.2). The tier is read as vLLM
reads it: `--kv-offloading-size <GiB>` (the whole replica, vllm/config/cache.py), or LMCache in-process
(`--kv-transfer-config` naming LMCacheConnectorV1) with `LMCACHE_MAX_LOCAL_CPU_SIZE` GB per tensor-parallel rank
(LMCache lmcache/v1/config.py `max_local_cpu_size`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
)

from .objects import as_list, dig, env_literal, flag_values, is_unknown, tensor_parallel, tokens
from .workloads import VllmPod, _vllm_pods  # pyright: ignore[reportPrivateUsage]

TIER_FACTOR = 1.2
LMCACHE_CONNECTOR = "LMCacheConnectorV1"
GIB = 2**30
# Kubernetes quantities (binary and decimal suffixes) the platform and its users write for memory
QUANTITY = re.compile(r"^([0-9.]+)(Ki|Mi|Gi|Ti|k|M|G|T)?$")
UNIT = {None: 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def quantity_bytes(value: Any) -> float | None:
    """Bytes of a memory quantity; None when absent, unknown or not a plain quantity."""
    if not isinstance(value, str | int | float) or is_unknown(value):
        return None
    found = QUANTITY.match(str(value))
    return float(found.group(1)) * UNIT[found.group(2)] if found else None


def tier_gib(container: dict[str, Any]) -> float | None:
    """The CPU tier of one replica in GiB, as vLLM reads it; None without a tier or when it cannot be read."""
    toks = tokens(container)
    sizes = flag_values(toks, "--kv-offloading-size")
    if sizes:
        try:
            return float(sizes[-1])
        except ValueError:
            return None
    for config in flag_values(toks, "--kv-transfer-config"):
        try:
            connector = json.loads(config).get("kv_connector")
        except (ValueError, AttributeError):
            continue
        per_rank = env_literal(container, "LMCACHE_MAX_LOCAL_CPU_SIZE")
        if connector == LMCACHE_CONNECTOR and isinstance(per_rank, str) and not is_unknown(per_rank):
            tp, _ = tensor_parallel(container)
            try:
                return float(per_rank) * (tp or 1)
            except ValueError:
                return None
    return None


def _shm_limit(pod: VllmPod) -> Any:
    """The sizeLimit of the memory emptyDir mounted at /dev/shm; None when none is mounted."""
    mounted = {m.get("name") for m in as_list(pod.container.get("volumeMounts")) if isinstance(m, dict)
               and m.get("mountPath") == "/dev/shm"}  # fmt: skip
    for volume in as_list(pod.spec.get("volumes")):
        if (
            isinstance(volume, dict)
            and volume.get("name") in mounted
            and dig(volume, "emptyDir", "medium") == "Memory"
        ):
            return dig(volume, "emptyDir", "sizeLimit")
    return None


def _check(pod: VllmPod, report_violation: ReportViolation) -> None:
    gib = tier_gib(pod.container)
    if gib is None:
        return
    needed = gib * TIER_FACTOR
    resources = pod.container.get("resources") or {}
    places = {
        "memory request": dig(resources, "requests", "memory"),
        "memory limit": dig(resources, "limits", "memory"),
        "/dev/shm (memory emptyDir) sizeLimit": _shm_limit(pod),
    }
    short = []
    for place, value in places.items():
        if is_unknown(value):
            continue
        size = quantity_bytes(value)
        if size is None or size < needed * GIB:
            short.append(f"{place} {value if value is not None else 'unset'}")
    if short:
        report_violation(
            f"{pod.where}: a CPU KV tier of {gib:g} GiB needs at least {needed:g} GiB (tier x {TIER_FACTOR}) of "
            f"memory request, memory limit and memory-backed /dev/shm, but has {', '.join(short)}; the pinned "
            "tier OOM-kills a pod not grown for it. Grow each by the tier x 1.2 (llm-platform does so from "
            "kvCacheOffload).",
            None,
        )


def _validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for pod in _vllm_pods(args):
        _check(pod, report_violation)


vllm_kv_offload_memory = ResourceValidationPolicy(
    name="vllm-kv-offload-memory",
    description="A vLLM pod with a CPU KV tier has memory and /dev/shm of at least the tier x 1.2.",
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    remediation_steps="Grow the vLLM container's memory request and limit and the /dev/shm emptyDir's sizeLimit "
    "by the tier x 1.2.",
)

KV_OFFLOAD_POLICIES = [vllm_kv_offload_memory]
