"""Do both versions of a progressively rolled model fit during the overlap (plan/rollout.py)?

Argo Rollouts keeps the stable ReplicaSet at full size through the steps (`dynamicStableScale: false`) and, at
promotion (blueGreen: at its first step), runs the candidate at full size too until `scaleDownDelaySeconds`
after the switch. At maxReplicas that is the model's replicas twice: the pool's `nvidia.com/gpu` limit must
hold every model of the pool at maxReplicas plus the candidate's replicas, else Karpenter refuses the node,
the candidate stays Pending and the step never completes (the rollout hangs at the analysis' mercy). The
overlap's pods outrank the warm-GPU placeholders (the serving PriorityClass), so a limit that holds them only
by evicting the placeholders is a warning: the pool loses its warm buffer for the rollout. A pool that launches
only into capacity reservations (`karpenter.sh/capacity-type: reserved`) must hold the overlap in them.
"""

from __future__ import annotations

import math

from llm_platform.tools.preflight.capacity import PoolUse, _parts, _placeholder, node_gpus_at_max, pool_uses
from llm_platform.tools.preflight.findings import Finding
from llm_platform.tools.preflight.view import Manifest, RenderView

ROLLOUT = "rollout"


def _capacity_types(pool: Manifest) -> list[str]:
    for req in pool.body["spec"]["template"]["spec"].get("requirements") or []:
        if req.get("key") == "karpenter.sh/capacity-type":
            return list(req.get("values") or [])
    return []


def rollout_overlap(view: RenderView) -> list[Finding]:
    uses = pool_uses(view)
    pools = {p.name: p for p in view.of_kind("NodePool")}
    out: list[Finding] = []
    for rollout in view.of_kind("Rollout"):
        ref = rollout.body["spec"].get("workloadRef") or {}
        owner = f"{ref.get('kind', 'Deployment')} {rollout.namespace}/{ref.get('name', rollout.name)}"
        found = [(name, use) for name, pool_use in uses.items() for use in pool_use if use[0].owner == owner]
        if not found:
            out.append(Finding("warning", ROLLOUT, rollout.ref, "spec.workloadRef",
                               f"{owner}'s pods run on no GPU NodePool of the stack: the overlap is not checked"))  # fmt: skip
            continue
        name, use = found[0]
        out.append(_overlap(rollout, pools[name], uses[name], use))
    return out


def _overlap(rollout: Manifest, pool: Manifest, uses: list[PoolUse], use: PoolUse) -> Finding:
    pod, cost, _ = use
    limit_value = (pool.body["spec"].get("limits") or {}).get("nvidia.com/gpu")
    extra = pod.replicas * cost
    at_max = node_gpus_at_max(uses)
    need = at_max + extra
    what = (f"both versions of {pod.owner} at maxReplicas: the models ({_parts(uses)}) {at_max:g} node GPUs + the "
            f"candidate's {pod.replicas} x {cost:g} = {need:g}")  # fmt: skip
    reserved = _capacity_types(pool) == ["reserved"]
    if limit_value is None:
        return Finding("warning", ROLLOUT, rollout.ref, "spec.strategy",
                       f"{what}; NodePool {pool.name} has no nvidia.com/gpu limit, so nothing proves it fits")  # fmt: skip
    limit = int(limit_value)
    buffer = node_gpus_at_max([u for u in uses if _placeholder(u[0])])
    where = f"NodePool {pool.name} spec.limits.nvidia.com/gpu {limit}"
    if reserved:
        where += " (reserved capacity only: the reservations must hold it too)"
    if need <= limit:
        return Finding("info", ROLLOUT, rollout.ref, "spec.strategy",
                       f"{what} <= {where}: both fit during the overlap")  # fmt: skip
    if buffer and need - buffer <= limit:
        return Finding("warning", ROLLOUT, rollout.ref, "spec.strategy",
                       f"{what} > {where}; the candidate's pods preempt the {buffer:g} GPUs of warm placeholders, "
                       f"so the pool has no warm buffer during the rollout; gpuLimit {math.ceil(need)} keeps it")  # fmt: skip
    return Finding("blocker", ROLLOUT, rollout.ref, "spec.strategy",
                   f"{what} > {where}: Karpenter refuses the candidate's nodes and the rollout never completes; "
                   f"raise gpuLimit to {math.ceil(need)} (or lower maxReplicas for the rollout)")  # fmt: skip
