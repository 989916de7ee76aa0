"""Can every model reach maxReplicas and still roll out, within each NodePool's GPU limit (and if it rolls
out in place for want of room, how much serving it loses)? Does the add-on pool's CPU and memory limit hold
every add-on at its maximum (preflight/room.py)? Does any
PodDisruptionBudget forbid every voluntary eviction (node expiry, drift, consolidation, AMI upgrades)?

Karpenter counts a NodePool's `limits` against the capacity of the nodes it launches, not the pods' requests:
a replica costs the GPUs of the node it needs (the cheapest admitted instance that fits it, shared by as
many replicas as its GPUs allow).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from llm_platform.tools.preflight.findings import Finding
from llm_platform.tools.preflight.nodes import NodeType
from llm_platform.tools.preflight.pods import PodTemplate, program_pods, release_pods
from llm_platform.tools.preflight.room import cpu_pool_room
from llm_platform.tools.preflight.scheduling import admission_problem, node_types, shortfall
from llm_platform.tools.preflight.view import Manifest, RenderView

CEILINGS = "ceilings"
PDB = "disruption"


def _surge(strategy: dict[str, Any], replicas: int) -> int:
    if strategy.get("type") == "Recreate":
        return 0
    value = (strategy.get("rollingUpdate") or {}).get("maxSurge", "25%")
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(replicas * int(value[:-1]) / 100)
    return int(value)


def node_gpus_per_replica(
    pod: PodTemplate, nodes: list[NodeType], daemons: list[PodTemplate]
) -> float | None:
    """GPUs of node capacity one replica costs: the cheapest (fewest-GPU) fitting node, shared by as many
    replicas as its GPUs allow."""
    fitting = [n for n in nodes if admission_problem(pod, n) is None and shortfall(pod, n, daemons) is None]
    if not fitting or pod.requests["nvidia.com/gpu"] == 0:
        return None
    node = min(fitting, key=lambda n: n.gpus)
    return node.gpus / (node.gpus // pod.requests["nvidia.com/gpu"])


# a workload the pool runs: its pod at its largest replica count, the node GPUs one replica costs, its surge
PoolUse = tuple[PodTemplate, float, int]


def pool_uses(view: RenderView) -> dict[str, list[PoolUse]]:
    """Per NodePool (by name): each workload it may run at its largest replica count (maxReplicas), the
    node GPUs one replica costs and the replicas a rollout surges."""
    nodes, _ = node_types(view)
    daemons = [p for p in program_pods(view) + release_pods(view)[0] if p.daemon]
    deployments = {d.ref: d for d in view.of_kind("Deployment")}
    out: dict[str, list[PoolUse]] = {}
    for pool in view.of_kind("NodePool"):
        pool_nodes = [n for n in nodes if n.group == pool.name]
        uses = out.setdefault(pool.name, [])
        for pod in program_pods(view):
            cost = node_gpus_per_replica(pod, pool_nodes, daemons) if not pod.daemon else None
            if cost is None or all(admission_problem(pod, n) for n in pool_nodes):
                continue
            strategy = (
                deployments[pod.owner].body["spec"].get("strategy", {}) if pod.owner in deployments else {}
            )
            uses.append((pod, cost, _surge(strategy, pod.replicas)))
    return out


def node_gpus_at_max(uses: list[PoolUse]) -> float:
    """Node GPUs a pool's workloads cost with every one at its largest replica count."""
    return sum(cost * pod.replicas for pod, cost, _ in uses)


def ceilings(view: RenderView) -> list[Finding]:
    nodes, _ = node_types(view)
    pods = program_pods(view) + release_pods(view)[0]
    daemons = [p for p in pods if p.daemon]
    all_uses = pool_uses(view)
    out = []
    for pool in view.of_kind("NodePool"):
        pool_nodes = [n for n in nodes if n.group == pool.name]
        if pool_nodes and all(n.gpus == 0 for n in pool_nodes):
            out += cpu_pool_room(pool, pool_nodes, pods, daemons)
            continue
        limit = (pool.body["spec"].get("limits") or {}).get("nvidia.com/gpu")
        if limit is None:
            out.append(Finding("warning", CEILINGS, pool.ref, "spec.limits",
                               "no nvidia.com/gpu limit: nothing caps what this pool may launch"))  # fmt: skip
            continue
        limit = int(limit)
        uses = all_uses[pool.name]
        at_max = node_gpus_at_max(uses)
        if at_max > limit:
            parts = _parts(uses)
            out.append(Finding("blocker", CEILINGS, pool.ref, "spec.limits.nvidia.com/gpu",
                               f"models at maxReplicas need {at_max:g} node GPUs ({parts}); the limit is {limit}: "
                               "the last replicas stay Pending"))  # fmt: skip
            continue
        buffer = node_gpus_at_max([u for u in uses if _placeholder(u[0])])
        replicas = at_max - buffer
        for pod, cost, surge in uses:
            if surge and buffer and replicas + surge * cost <= limit < at_max + surge * cost:
                out.append(Finding("blocker", CEILINGS, pool.ref, "spec.limits.nvidia.com/gpu",
                                   f"a rollout of {pod.owner} at maxReplicas surges {surge} x {cost:g} GPUs: "
                                   f"{buffer:g} placeholder GPUs + {replicas:g} replica GPUs "
                                   f"({_parts(u for u in uses if not _placeholder(u[0]))}) + {surge * cost:g} > "
                                   f"limit {limit}, so the surge pod preempts a placeholder and every rollout takes "
                                   "the warm buffer's node: the placeholder stays Pending at the limit and "
                                   f"GpuHeadroomEmpty fires; gpuLimit {math.ceil(at_max + surge * cost)} keeps "
                                   "the buffer through a rollout (or lower the headroom)"))  # fmt: skip
            elif surge and at_max + surge * cost > limit:
                out.append(Finding("blocker", CEILINGS, pool.ref, "spec.limits.nvidia.com/gpu",
                                   f"a rollout of {pod.owner} at maxReplicas surges {surge} x {cost:g} GPUs: "
                                   f"{at_max:g} ({_parts(uses)}) + {surge * cost:g} > limit {limit}; Karpenter "
                                   "refuses the node and the rollout never completes (raise gpuLimit to "
                                   f"{math.ceil(at_max + surge * cost)} or roll out in place)"))  # fmt: skip
            elif not surge and _serves(pod) and at_max + cost > limit:
                out.append(Finding("warning", CEILINGS, pool.ref, "spec.limits.nvidia.com/gpu",
                                   f"{pod.owner} rolls out with maxSurge 0: the models at maxReplicas take "
                                   f"{at_max:g} of the limit's {limit} node GPUs and a surge replica needs "
                                   f"{cost:g} more, so every rollout stops a replica before its replacement starts "
                                   f"and the model serves one replica fewer ({pod.replicas - 1} of {pod.replicas} "
                                   "at maxReplicas) for the new pod's whole cold start; gpuLimit "
                                   f"{math.ceil(at_max + cost)} lets it surge"))  # fmt: skip
    return out


def _parts(uses: Iterable[PoolUse]) -> str:
    return ", ".join(f"{p.owner} {p.replicas} x {c:g}" for p, c, _ in uses)


def _placeholder(pod: PodTemplate) -> bool:
    """A pool's warm-GPU placeholder (components/specs/headroom.py labels): preemptible, so a surge replica
    takes its node instead of waiting for a new one."""
    return pod.labels.get("app.kubernetes.io/component") == "headroom"


def _serves(pod: PodTemplate) -> bool:
    """A model's vLLM replica (components/specs/serving.py `labels`), not a warm-GPU placeholder: a rollout
    in place costs it serving capacity."""
    return pod.labels.get("app.kubernetes.io/component") == "inference"


def _selected(view: RenderView, pdb: Manifest) -> list[Manifest]:
    match = (pdb.body["spec"].get("selector") or {}).get("matchLabels") or {}
    out = []
    for w in view.of_kind("Deployment", "StatefulSet"):
        labels = (w.body["spec"]["template"].get("metadata") or {}).get("labels") or {}
        if w.namespace == pdb.namespace and match and all(labels.get(k) == v for k, v in match.items()):
            out.append(w)
    return out


def _min_replicas(view: RenderView, workload: Manifest) -> int:
    for so in view.of_kind("ScaledObject"):
        if (
            so.namespace == workload.namespace
            and so.body["spec"]["scaleTargetRef"].get("name") == workload.name
        ):
            return int(so.body["spec"].get("minReplicaCount", 0))
    return int(workload.body["spec"].get("replicas", 1))


def disruption_budgets(view: RenderView) -> list[Finding]:
    out = []
    for pdb in view.of_kind("PodDisruptionBudget"):
        spec = pdb.body["spec"]
        for workload in _selected(view, pdb):
            replicas = _min_replicas(view, workload)
            allowed: int
            if "maxUnavailable" in spec:
                value = spec["maxUnavailable"]
                allowed = (
                    math.floor(replicas * int(value[:-1]) / 100) if isinstance(value, str) else int(value)
                )
            else:
                value = spec.get("minAvailable", 0)
                need = math.ceil(replicas * int(value[:-1]) / 100) if isinstance(value, str) else int(value)
                allowed = replicas - need
            if allowed < 1:
                out.append(Finding("blocker", PDB, pdb.ref, "spec",
                                   f"allows {max(allowed, 0)} of {workload.ref}'s {replicas} replicas to be evicted: "
                                   "every node drain (expiry, drift, consolidation, AMI upgrade) blocks on it"))  # fmt: skip
    return out
