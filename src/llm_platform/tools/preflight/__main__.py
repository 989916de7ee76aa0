"""`python -m llm_platform.tools.preflight <stack> [--json]`: exit 0 when nothing blocks, 1 when something does, 2 on a
bad argument, an unknown stack or a bad config.

Preflight evaluates the stack's program itself (tools.render under mocks), so it never reads a `build/`
render that could be stale."""

from __future__ import annotations

import sys

from llm_platform import commandline
from llm_platform.config.loader import ConfigError, stack_name
from llm_platform.tools.preflight.findings import blockers, to_json, to_text
from llm_platform.tools.preflight.run import CHECKS, run
from llm_platform.tools.preflight.view import from_stack


def main(argv: list[str] | None = None) -> int:
    parser = commandline.stack_parser(
        "python -m llm_platform.tools.preflight",
        "Prove from a stack's render that `pulumi up` will finish and every controller and alert works.",
    )
    parser.add_argument("--json", action="store_true", help="findings as JSON on stdout")
    args = parser.parse_args(argv)
    name = stack_name(args.stack)
    try:
        view = from_stack(args.stack)
    except ConfigError as exc:
        raise SystemExit(commandline.invalid_config(parser.prog, args.stack, exc)) from None
    findings = run(view)
    print(to_json(name, findings) if args.json else to_text(name, findings, list(CHECKS)))
    return 1 if blockers(findings) else 0


if __name__ == "__main__":
    sys.exit(main())
