"""Preflight: prove from a stack's render that `pulumi up` will finish and every controller and alert works.

    uv run python -m llm_platform.tools.preflight <stack> [--json]

Checks (each a module here): schedulability and DaemonSet coverage (`scheduling`), NodePool ceilings and
PodDisruptionBudgets (`capacity`), CRD ordering (`ordering`), controller IAM against the upstream reference
policies kept in `iam_reference/` (`iam`), alert receivers and latency-SLO thresholds (`alerting`).
"""
