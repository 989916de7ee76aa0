"""Autoscaling strategies over the seed day and a family of generated days (prints figures, asserts nothing).

For each day (simulator/traffic/family.py: seed, flat, spiky, bursty, growing, shifted) and each strategy (static at
maxReplicas, the seed article's KEDA config, the stack's own config, and the config `simulator tune` finds on
the family's training days), prints GPU $/day, SLO misses and cost vs the oracle bound in the same run.

    uv run python benchmarks/family.py [--stack prod] [--model mistral-7b] [--scale 1] [--days seed,spiky]
        [--window 13:00-16:00]  (a window of each day instead of the whole day: a quick run)
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

from llm_platform.commandline import ArgumentParser  # noqa: E402
from llm_platform.simulator.commands.args import positive_int  # noqa: E402
from llm_platform.simulator.commands.progress import track  # noqa: E402
from llm_platform.simulator.controllers.strategies import keda, static  # noqa: E402
from llm_platform.simulator.day.engine import simulate  # noqa: E402
from llm_platform.simulator.search.scenarios import SEED_C, oracle_for, witness_of  # noqa: E402
from llm_platform.simulator.search.stack_rules import pool_gpu_limit, stack_accepts  # noqa: E402
from llm_platform.simulator.search.stacks import StackRun, stack_run  # noqa: E402
from llm_platform.simulator.search.tune import DayScore, Tuner  # noqa: E402
from llm_platform.simulator.search.yaml_out import autoscaling_yaml  # noqa: E402
from llm_platform.simulator.traffic import family  # noqa: E402
from llm_platform.simulator.traffic.traffic import load  # noqa: E402


def _window(text: str) -> slice:
    """`13:00-16:00` as the day's minutes 780 to 960."""
    try:
        start, end = (int(h) * 60 + int(m) for h, m in (t.split(":") for t in text.split("-")))
    except ValueError:
        raise ValueError(f"--window: {text!r} is not HH:MM-HH:MM") from None
    if not 0 <= start < end <= family.MINUTES:
        raise ValueError(f"--window: {text!r} must run forward within the day (00:00-24:00)")
    return slice(start, end)


def main() -> None:
    p = ArgumentParser(prog="python benchmarks/family.py", description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--stack", default="prod")
    p.add_argument("--model")
    p.add_argument("--scale", type=float, default=1.0, help="multiply every day's rate")
    p.add_argument("--days", default=",".join(family.KINDS))
    p.add_argument("--max-miss-pct", type=float, default=5.0)
    p.add_argument("--passes", type=positive_int, default=2, help="the tuner's coordinate-descent passes")
    p.add_argument(
        "--window", type=_window, default=slice(None), help="HH:MM-HH:MM of each day (default: all of it)"
    )
    args = p.parse_args()
    kinds = args.days.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        files = {
            k: family.write(k, Path(tmp) / f"{k}.csv", seed=i, scale=args.scale, minutes=args.window)
            for i, k in enumerate(kinds)
        }
        runs = {k: stack_run(args.stack, args.model, load(str(f))) for k, f in files.items()}
        first = next(iter(runs.values()))
        tuner = Tuner(
            list(runs.values()), args.max_miss_pct, False, first.max_replicas, first.plan.scaling.min_replicas,
            accepts=stack_accepts(args.stack, first),
        )  # fmt: skip
        what = f"tune on the family: candidates scored, {len(runs)} days each"
        with track(what, tuner.most_candidates(args.passes), "candidates", bounded=True) as progress:
            tuner.on_scored = progress.advance
            knobs = tuner.search(args.passes)
        _, _, tuned = tuner.score(knobs)  # per day, that day's pre-warm windows from the other days only
        print(
            f"{args.stack}/{first.model_name}, days x{args.scale:g} of the family, target misses <= {args.max_miss_pct}%"
        )
        print(f"{'day':<9} {'strategy':<14} {'$/day':>9} {'misses %':>9} {'vs oracle':>10}")
        with track("days simulated", len(runs) * 3, "days") as progress:
            for i, (kind, run) in enumerate(runs.items()):
                _compare(kind, run, tuned[i], progress.advance)
        final = tuner.config(knobs, None)
        print(f"tuned on the family: {knobs}")
        print(autoscaling_yaml(final))
        limit = pool_gpu_limit(first, final.max_replicas)
        if limit is not None:
            print(f"pool {first.plan.pool.name}: gpuLimit {limit}")


def _compare(kind: str, run: StackRun, tuned: DayScore, advance: Callable[[], None]) -> None:
    """Static at maxReplicas, the seed article's KEDA config and the stack's own on one day, then the tuned."""
    s = run.setup
    stack_cfg = next(x for x in run.strategies if x.name == "stack-config")
    seed_c = SEED_C.model_copy(update={"max_replicas": run.max_replicas})
    strategies = [
        static(run.max_replicas),
        keda("seed-keda", seed_c, kv="max", queue_activation=1),
        stack_cfg,
    ]
    for st in strategies:
        r = simulate(s.traffic, s.table, st, s.config)
        bound = oracle_for(s, r.slo_violation_pct, None, witness_of(r))["whole_nodes_usd_per_day"]
        row(kind, st.name, r.gpu_cost_usd_per_day, r.slo_violation_pct, bound)
        advance()
    row(kind, "tuned", tuned.cost, tuned.miss_pct, tuned.oracle)


def row(day: str, strategy: str, cost: float, misses: float, oracle: float) -> None:
    vs = cost / oracle if oracle else float("nan")
    print(f"{day:<9} {strategy:<14} {cost:>9.2f} {misses:>9.2f} {vs:>9.2f}x")


if __name__ == "__main__":
    main()
