"""`llm-platform check STACK`: the stack file against the schema (every key, value and rule, with the file,
line, field, value and what is allowed) and its resolved plan (the add-on pool's limits hold its peak), without
rendering. Exit 1 when it has problems."""

from __future__ import annotations

import json

from llm_platform import commandline
from llm_platform.config.loader import ConfigError, load_stack, stack_file, stack_name
from llm_platform.platform_checks import PlanChecks


def main(argv: list[str] | None = None) -> int:
    p = commandline.stack_parser("llm-platform check", (__doc__ or "").split("\n\n")[0].split(": ", 1)[1])
    p.add_argument("--json", action="store_true", help="validity and problems as JSON on stdout")
    args = p.parse_args(argv)
    name = stack_name(args.stack)
    try:
        cfg = load_stack(args.stack, checks=PlanChecks(name).checks)
    except ConfigError as exc:
        problems = str(exc).splitlines()
        if args.json:
            print(json.dumps({"stack": name, "valid": False, "problems": problems}, indent=2))
        else:
            print(f"check {name} ({stack_file(args.stack).name}): {len(problems)} problem(s)")
            print("\n".join(problems))
        return 1
    models = [m.name for m in cfg.models]
    pools = [pool.name for pool in cfg.gpu_node_pools]
    if args.json:
        print(
            json.dumps(
                {"stack": name, "valid": True, "models": models, "gpu_node_pools": pools, "problems": []}
            )
        )
    else:
        print(
            f"check {name} ({stack_file(args.stack).name}): valid; environment {cfg.environment.value}, "
            f"models {', '.join(models) or 'none'}, GPU pools {', '.join(pools)}"
        )
    return 0
