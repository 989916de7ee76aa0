"""How long `llm-platform plan` takes against the render alone (figures, no assertion).

Prints the wall and CPU seconds of the offline render of a stack and of its whole plan (render, schema,
preflight, each model's simulated day), the plan's steps, and the ratio plan / render.

    uv run python benchmarks/plan.py [STACK] [--repeat 1]
"""

from __future__ import annotations

import os
import time

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

from llm_platform.cli.snapshot import snapshot  # noqa: E402
from llm_platform.commandline import ArgumentParser, known_stack  # noqa: E402
from llm_platform.config.loader import stack_name  # noqa: E402
from llm_platform.simulator.commands.args import positive_int  # noqa: E402
from llm_platform.tools import render  # noqa: E402


def timed(fn, repeat: int) -> tuple[float, float, object]:
    """Best wall and CPU seconds of `repeat` calls, and the last result."""
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus), out


def main() -> None:
    p = ArgumentParser(prog="python benchmarks/plan.py", description=__doc__)
    p.add_argument("stack", nargs="?", default="prod", type=known_stack, metavar="STACK")
    p.add_argument("--repeat", type=positive_int, default=1)
    args = p.parse_args()
    render.evaluate(args.stack)  # imports and first-use caches out of the figures
    r_wall, r_cpu, _ = timed(lambda: render.evaluate(args.stack), args.repeat)
    p_wall, p_cpu, plan = timed(lambda: snapshot(args.stack), args.repeat)
    steps = plan["seconds"]  # type: ignore[index]
    print(f"stack {stack_name(args.stack)}: {len(plan['models'])} models")  # type: ignore[index]
    print(f"  render alone   {r_wall:7.2f} s wall  {r_cpu:7.2f} s CPU")
    print(f"  plan           {p_wall:7.2f} s wall  {p_cpu:7.2f} s CPU")
    print("  plan's steps   " + ", ".join(f"{k} {v:.2f} s" for k, v in steps.items()))
    print(f"  plan / render  {p_wall / r_wall:7.1f}x wall  {p_cpu / r_cpu:7.1f}x CPU")


if __name__ == "__main__":
    main()
