"""Run every check over a stack's render."""

from __future__ import annotations

from collections.abc import Callable

from tools.preflight.alerting import alerting
from tools.preflight.capacity import ceilings, disruption_budgets
from tools.preflight.findings import Finding
from tools.preflight.iam import iam
from tools.preflight.ordering import ordering
from tools.preflight.scheduling import coverage, schedulability
from tools.preflight.view import RenderView

CHECKS: dict[str, Callable[[RenderView], list[Finding]]] = {
    "schedulability": schedulability,
    "coverage": coverage,
    "ceilings": ceilings,
    "disruption": disruption_budgets,
    "ordering": ordering,
    "iam": iam,
    "alerting": alerting,
}


def run(view: RenderView) -> list[Finding]:
    findings: list[Finding] = []
    for check in CHECKS.values():
        findings += check(view)
    return sorted(set(findings))
