"""A preflight finding and how a run is reported."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Literal

# info: what a check measured when nothing is wrong (a pool's room, with the numbers)
Severity = Literal["blocker", "warning", "info"]


@dataclass(frozen=True, order=True)
class Finding:
    severity: Severity
    check: str
    object: str  # "Kind namespace/name", "NodePool p4d", "Helm release karpenter", "IAM karpenter"
    field: str
    message: str  # with the numbers that decide it

    def line(self) -> str:
        return f"{self.severity:<8} {self.check:<15} {self.object} {self.field}: {self.message}"


def blockers(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == "blocker"]


def warnings(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == "warning"]


def to_json(stack: str, findings: list[Finding]) -> str:
    return json.dumps(
        {
            "stack": stack,
            "blockers": len(blockers(findings)),
            "warnings": len(warnings(findings)),
            "findings": [asdict(f) for f in findings],
        },
        indent=2,
    )


def to_text(stack: str, findings: list[Finding], checks: list[str]) -> str:
    n_block = len(blockers(findings))
    head = (
        f"preflight {stack}: {n_block} blocker(s), {len(warnings(findings))} warning(s) "
        f"from {len(checks)} checks ({', '.join(checks)})"
    )
    return "\n".join([head, *(f.line() for f in findings)])
