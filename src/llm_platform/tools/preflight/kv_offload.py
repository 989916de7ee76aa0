"""A vLLM pod with a CPU KV tier: does its memory, the tier included, fit the nodes its pool may launch, next to
the DaemonSets there and the other replicas its GPUs let share a node?

The tier is read from the render itself, as vLLM will read it: `--kv-offloading-size <GiB>` (vLLM's native
OffloadingConnector, the whole replica) or LMCache's `LMCACHE_MAX_LOCAL_CPU_SIZE` (GB per tensor-parallel rank)
with `--kv-transfer-config` naming LMCacheConnectorV1. A tier is pinned host memory: when no node holds the pod's
grown request next to what is already there, the replica stays Pending; when a node holds fewer replicas than
its GPUs, those GPUs idle while the pool's GPU limit counts them.
"""

from __future__ import annotations

import json
from typing import Any

from llm_platform.tools.preflight.findings import Finding
from llm_platform.tools.preflight.nodes import NodeType
from llm_platform.tools.preflight.pods import PodTemplate, program_pods, release_pods
from llm_platform.tools.preflight.scheduling import _overhead, admission_problem, node_types, shortfall
from llm_platform.tools.preflight.view import Manifest, RenderView

CHECK = "kv-offload"
CONTAINER = "vllm"
LMCACHE_CONNECTOR = "LMCacheConnectorV1"


def _flag(args: list[str], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(f"{name}="):
            return arg.split("=", 1)[1]
    return None


def tier_gib(container: dict[str, Any]) -> float | None:
    """The replica's CPU tier in GiB as vLLM reads it from the container, or None without one."""
    args = [str(a) for a in container.get("args") or []]
    size = _flag(args, "--kv-offloading-size")
    if size is not None:
        return float(size)
    transfer = _flag(args, "--kv-transfer-config")
    if transfer is None or json.loads(transfer).get("kv_connector") != LMCACHE_CONNECTOR:
        return None
    env = {e.get("name"): e.get("value") for e in container.get("env") or []}
    per_rank = env.get("LMCACHE_MAX_LOCAL_CPU_SIZE")
    ranks = _flag(args, "--tensor-parallel-size") or "1"
    return float(per_rank) * int(ranks) if per_rank is not None else None


def _tiered(view: RenderView) -> list[tuple[Manifest, float]]:
    out = []
    for d in view.of_kind("Deployment"):
        containers = d.body["spec"]["template"]["spec"].get("containers") or []
        vllm = next((c for c in containers if c.get("name") == CONTAINER), None)
        gib = tier_gib(vllm) if vllm is not None else None
        if gib is not None:
            out.append((d, gib))
    return out


def _room(pod: PodTemplate, node: NodeType, daemons: list[PodTemplate]) -> tuple[int, int]:
    """MiB of memory the node's DaemonSets leave free, and the replicas its GPUs would hold."""
    free = node.allocatable["memory"] - _overhead(node, daemons)["memory"]
    gpus = pod.requests["nvidia.com/gpu"]
    return free, (node.gpus // gpus if gpus else 1)


def _check(
    d: Manifest, gib: float, pod: PodTemplate, nodes: list[NodeType], daemons: list[PodTemplate]
) -> Finding:
    admitted = [
        n for n in nodes if admission_problem(pod, n) is None and n.gpus >= pod.requests["nvidia.com/gpu"]
    ]
    memory = pod.requests["memory"]
    head = f"CPU KV tier {gib:g} GiB; the pod requests {memory} MiB of memory with it"
    field = "spec.template.spec.containers[vllm].resources.requests.memory"
    if not admitted:
        return Finding("blocker", CHECK, d.ref, field, f"{head}, and no node type of its pool admits it")
    landing = [n for n in admitted if shortfall(pod, n, daemons) is None]
    if not landing:
        rooms = "; ".join(
            f"{n.instance_type}: {_room(pod, n, daemons)[0]} MiB free of {n.allocatable['memory']} allocatable "
            "after DaemonSets" for n in sorted(admitted, key=lambda n: -n.memory_mib)[:3]
        )  # fmt: skip
        return Finding("blocker", CHECK, d.ref, field,
                       f"{head}, more than any node its pool may launch holds next to its DaemonSets ({rooms}); "
                       "the replica would stay Pending; allowed: a smaller cpuGiBPerReplica, or larger instance "
                       "sizes in the pool")  # fmt: skip
    node = min(landing, key=lambda n: (n.memory_mib, n.gpus))
    free, by_gpus = _room(pod, node, daemons)
    held = min(by_gpus, free // memory)
    where = f"the smallest node that holds it is {node.instance_type} ({free} MiB free after DaemonSets)"
    if held < by_gpus:
        return Finding("warning", CHECK, d.ref, field,
                       f"{head}; {where}, room for {held} of the {by_gpus} replicas its GPUs take: "
                       f"{by_gpus - held} GPU(s) of each such node idle while the pool's GPU limit counts them")  # fmt: skip
    return Finding("info", CHECK, d.ref, field, f"{head}; {where}, {by_gpus} replica(s) per node")


def kv_offload(view: RenderView) -> list[Finding]:
    tiered = _tiered(view)
    if not tiered:
        return []
    nodes, _ = node_types(view)
    pods = program_pods(view)
    daemons = [p for p in pods + release_pods(view)[0] if p.daemon]
    by_owner = {p.owner: p for p in pods}
    return [_check(d, gib, by_owner[d.ref], nodes, daemons) for d, gib in tiered if d.ref in by_owner]
