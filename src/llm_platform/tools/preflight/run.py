"""Run every check over a stack's render."""

from __future__ import annotations

from collections.abc import Callable

from llm_platform.tools.preflight.alerting import alerting
from llm_platform.tools.preflight.capacity import ceilings, disruption_budgets
from llm_platform.tools.preflight.disaggregation import disaggregation
from llm_platform.tools.preflight.drain import drain
from llm_platform.tools.preflight.findings import Finding
from llm_platform.tools.preflight.iam import iam
from llm_platform.tools.preflight.kv_offload import kv_offload
from llm_platform.tools.preflight.multinode import multinode
from llm_platform.tools.preflight.ordering import ordering
from llm_platform.tools.preflight.repair import repair
from llm_platform.tools.preflight.rollout import rollout_overlap
from llm_platform.tools.preflight.scheduling import coverage, schedulability
from llm_platform.tools.preflight.view import RenderView
from llm_platform.tools.preflight.zero import zero

CHECKS: dict[str, Callable[[RenderView], list[Finding]]] = {
    "schedulability": schedulability,
    "coverage": coverage,
    "ceilings": ceilings,
    "disruption": disruption_budgets,
    "ordering": ordering,
    "iam": iam,
    "alerting": alerting,
    "multinode": multinode,
    "kv-offload": kv_offload,
    "disaggregation": disaggregation,
    "zero": zero,
    "repair": repair,
    "drain": drain,
    "rollout": rollout_overlap,
}


def run(view: RenderView) -> list[Finding]:
    findings: list[Finding] = []
    for check in CHECKS.values():
        findings += check(view)
    return sorted(set(findings))
