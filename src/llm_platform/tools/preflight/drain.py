"""A serving pod's drain fits its node's: Karpenter deletes a node's pods once the NodePool's
`terminationGracePeriod` has run (karpenter.sh/v1 NodePool; kubernetes-sigs/karpenter's termination controller
starts deleting a pod early enough that its own terminationGracePeriodSeconds ends with the node's period), so
a vLLM pod whose grace period (the model's drain plan, plan/drain.py) is longer than the node's would have
its longest streams cut when the node expires or drifts."""

from __future__ import annotations

from typing import Any

from llm_platform.components.specs.common import POOL_LABEL
from llm_platform.config.schema.base import duration_seconds
from llm_platform.tools.preflight.findings import Finding
from llm_platform.tools.preflight.view import Manifest, RenderView

CHECK = "drain"


def _pods(view: RenderView) -> list[tuple[Manifest, str, dict[str, Any]]]:
    """(workload, field, pod spec) of every serving pod template on a GPU pool."""
    out = [(d, "spec.template.spec", d.body["spec"]["template"]["spec"]) for d in view.of_kind("Deployment")]
    for lws in view.of_kind("LeaderWorkerSet"):
        lwt = lws.body["spec"]["leaderWorkerTemplate"]
        for role in ("leaderTemplate", "workerTemplate"):
            out.append((lws, f"spec.leaderWorkerTemplate.{role}.spec", lwt[role]["spec"]))
    return [(w, f, s) for w, f, s in out if (s.get("nodeSelector") or {}).get(POOL_LABEL)]


def drain(view: RenderView) -> list[Finding]:
    periods = {
        p.name: p.body["spec"]["template"]["spec"].get("terminationGracePeriod")
        for p in view.of_kind("NodePool")
    }
    out: list[Finding] = []
    for workload, field, spec in _pods(view):
        pool = spec["nodeSelector"][POOL_LABEL]
        node_period = periods.get(pool)
        grace = int(spec.get("terminationGracePeriodSeconds", 30))
        if node_period is None or grace <= duration_seconds(node_period):
            continue
        out.append(
            Finding(
                "blocker",
                CHECK,
                workload.ref,
                f"{field}.terminationGracePeriodSeconds",
                f"{grace} s, longer than NodePool {pool}'s terminationGracePeriod {node_period} "
                f"({duration_seconds(node_period):.0f} s): an expiring or drifted node cuts the pod's longest "
                "streams; lower the model's maxModelLen or raise the pool's terminationGracePeriod",
            )
        )
    return out
