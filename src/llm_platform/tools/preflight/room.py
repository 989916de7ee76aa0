"""Does a CPU NodePool's `limits` hold everything that lands on it at its maximum? The add-on pool carries
Prometheus, Grafana, KEDA, the gateway, every model's endpoint pickers (whose CPU grows with the model's
maxReplicas) and loader Jobs: past `limits` Karpenter launches no more nodes and the rest stays Pending.

Karpenter counts `limits` against the capacity of the nodes it launches, not the pods' requests. The estimate
packs every replica at its maximum (Jobs at their parallelism, all at once as on a first `pulumi up`) first-fit
decreasing by CPU onto nodes of the smallest admitted instance each pod fits (the DaemonSets there counted on
every node), never two replicas of a pod with required hostname anti-affinity on one node: a packing
Karpenter can always find (it may find a tighter one on larger nodes), so capacity at or under the limit is
enough.
"""

from __future__ import annotations

from llm_platform.facts.cpu_catalog import CPU_INSTANCES
from llm_platform.plan.addon_pods import Bin
from llm_platform.plan.addon_pods import pack as plan_pack
from llm_platform.tools.preflight.findings import Finding
from llm_platform.tools.preflight.nodes import GI, NodeType
from llm_platform.tools.preflight.pods import RESOURCES, PodTemplate
from llm_platform.tools.preflight.scheduling import _overhead, admission_problem
from llm_platform.tools.preflight.view import Manifest

CHECK = "ceilings"
WARN_SHARE = 0.85


def _quantity_gib(value: str) -> float:
    text = str(value)
    if text.endswith("Gi"):
        return float(text[:-2])
    if text.endswith("Mi"):
        return float(text[:-2]) / GI
    return float(text) / 2**30


def pack(pods: list[PodTemplate], nodes: list[NodeType], daemons: list[PodTemplate]) -> list[Bin[NodeType]]:
    """First-fit decreasing of every replica (plan/addon_pods.py `pack`, what the simulator prices the add-on
    pool by) onto the node types, smallest first, each with what its DaemonSets leave free."""
    by_size = sorted(nodes, key=lambda n: (n.cpu_millis, n.memory_mib))
    kinds = []
    for kind in by_size:
        overhead = _overhead(kind, daemons)
        kinds.append((kind, {r: kind.allocatable[r] - overhead[r] for r in (*RESOURCES, "pods")}))
    return plan_pack(pods, kinds)


def cpu_pool_room(
    pool: Manifest, pool_nodes: list[NodeType], pods: list[PodTemplate], daemons: list[PodTemplate]
) -> list[Finding]:
    limits = pool.body["spec"].get("limits") or {}
    if "cpu" not in limits and "memory" not in limits:
        return [Finding("warning", CHECK, pool.ref, "spec.limits",
                        "no cpu or memory limit: nothing caps what this pool may launch")]  # fmt: skip
    landing = [p for p in pods if not p.daemon and any(admission_problem(p, n) is None for n in pool_nodes)]
    admitted = [n for n in pool_nodes if n.gpus == 0]
    packed = pack(landing, admitted, daemons)
    vcpus = sum(CPU_INSTANCES[p.node.instance_type].vcpus for p in packed)
    memory_gib = sum(CPU_INSTANCES[p.node.instance_type].memory_gib for p in packed)
    shape = ", ".join(
        f"{sum(1 for p in packed if p.node.instance_type == t)} x {t}"
        for t in dict.fromkeys(p.node.instance_type for p in packed)
    )
    requested = {r: sum(p.requests[r] * p.replicas for p in landing) for r in ("cpu", "memory")}
    biggest = sorted(landing, key=lambda p: -p.requests["cpu"] * p.replicas)[:3]
    top = "; ".join(f"{p.owner} {p.replicas} x {p.requests['cpu']}m" for p in biggest)
    summary = (
        f"{sum(p.replicas for p in landing)} pods of {len(landing)} workloads at their maximum request "
        f"{requested['cpu']}m CPU and {requested['memory']} MiB (most: {top}); packed onto {len(packed)} nodes "
        f"({shape or 'none'}), {vcpus} vCPUs and {memory_gib:g} GiB of node capacity"
    )
    out = []
    for resource, used, unit in (("cpu", vcpus, " vCPUs"), ("memory", memory_gib, " GiB")):
        if resource not in limits:
            continue
        limit = float(limits[resource]) if resource == "cpu" else _quantity_gib(limits[resource])
        if used > limit:
            out.append(Finding("blocker", CHECK, pool.ref, f"spec.limits.{resource}",
                               f"{summary}: over the limit of {limit:g}{unit}; Karpenter launches no node past it "
                               "and the rest stays Pending (raise cluster.addonNodes.cpuLimit/memoryLimitGiB)"))  # fmt: skip
        elif used > WARN_SHARE * limit:
            out.append(Finding("warning", CHECK, pool.ref, f"spec.limits.{resource}",
                               f"{summary}: {used / limit:.0%} of the limit of {limit:g}{unit}"))  # fmt: skip
    if not out:
        out.append(Finding("info", CHECK, pool.ref, "spec.limits",
                           f"{summary}; limits {limits.get('cpu', '-')} vCPUs, {limits.get('memory', '-')}"))  # fmt: skip
    return out
