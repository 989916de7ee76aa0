"""`python -m tools.preflight <stack> [--json]`: exit 0 when nothing blocks, 1 when something does, 2 on a
bad stack name or config."""

from __future__ import annotations

import argparse
import sys

from config.loader import ROOT, ConfigError
from tools.preflight.findings import blockers, to_json, to_text
from tools.preflight.run import CHECKS, run
from tools.preflight.view import from_stack


def _stacks() -> list[str]:
    return sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in ROOT.glob("Pulumi.*.yaml"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.preflight",
        description="Prove from a stack's render that `pulumi up` will finish and every controller and alert works.",
    )
    parser.add_argument("stack", help=f"stack name (Pulumi.<stack>.yaml): {', '.join(_stacks())}")
    parser.add_argument("--json", action="store_true", help="findings as JSON on stdout")
    args = parser.parse_args(argv)
    if args.stack not in _stacks():
        print(f"preflight: unknown stack {args.stack!r}; stacks: {', '.join(_stacks())}", file=sys.stderr)
        return 2
    try:
        view = from_stack(args.stack)
    except ConfigError as exc:
        print(f"preflight: invalid config for stack {args.stack!r}:\n{exc}", file=sys.stderr)
        return 2
    findings = run(view)
    print(to_json(args.stack, findings) if args.json else to_text(args.stack, findings, list(CHECKS)))
    return 1 if blockers(findings) else 0


if __name__ == "__main__":
    sys.exit(main())
