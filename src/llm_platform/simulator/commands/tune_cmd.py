"""`python -m llm_platform.simulator tune`: the command line of the tuner (search/tune.py, whose text is its --help)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from llm_platform.commandline import ArgumentParser
from llm_platform.config.loader import load_stack, stack_file
from llm_platform.config.schema import Autoscaling
from llm_platform.simulator.commands.args import (
    add_stack,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
    take_stack,
)
from llm_platform.simulator.commands.progress import track
from llm_platform.simulator.search import tune
from llm_platform.simulator.search.knobs import RESERVED, number
from llm_platform.simulator.search.reservations import most_useful
from llm_platform.simulator.search.stack_rules import pool_gpu_limit, stack_accepts
from llm_platform.simulator.search.stacks import StackRun, stack_run
from llm_platform.simulator.search.tune import DayScore, Tuner
from llm_platform.simulator.search.yaml_out import autoscaling_yaml, go_duration, headroom_yaml
from llm_platform.simulator.search.zero_tune import ZeroStep, zero_step
from llm_platform.simulator.serving.capacity_config import CapacityConfig
from llm_platform.simulator.traffic.traffic import load


def parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="python -m llm_platform.simulator tune", description=tune.__doc__)
    add_stack(p)
    p.add_argument("--model", help="model name in the stack (default: the first)")
    p.add_argument("--traffic", nargs="+", required=True, help="training days (CSV or Prometheus JSON)")
    p.add_argument(
        "--holdout", nargs="*", default=[], help="days scored with the final config, never tuned on"
    )
    p.add_argument(
        "--max-miss-pct", type=non_negative_float, required=True, help="SLO misses allowed on every day"
    )
    p.add_argument(
        "--max-flaps",
        type=non_negative_int,
        help="scale-direction reversals within 15 min allowed on every day (controllers/flap.py); default: any",
    )
    p.add_argument(
        "--surge-known", action="store_true", help="let a day's own surges place its pre-warm windows"
    )
    p.add_argument(
        "--reserved-usd-per-hour", type=positive_float,
        help="prepaid $/h of one reserved instance: the tuner also picks how many to reserve (a Capacity "
        "Block's price; an ODCR bills on-demand)",
    )  # fmt: skip
    p.add_argument("--passes", type=positive_int, default=2, help="coordinate-descent passes")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    return p


def run(argv: Sequence[str]) -> int:
    p = parser()
    args = take_stack(p, p.parse_args(argv), required=True)
    if args.max_miss_pct > 100:
        raise ValueError(f"--max-miss-pct {args.max_miss_pct} is a percentage; allowed: 0-100")

    def runs_for(specs: Sequence[str]) -> list[StackRun]:
        return [
            stack_run(
                args.stack,
                args.model,
                load(spec, args.seed),
                reserved_usd_per_hour=args.reserved_usd_per_hour,
            )
            for spec in specs
        ]

    train = runs_for(args.traffic)
    holdout = runs_for(args.holdout)
    stack_cfg = train[0]
    capacity = stack_cfg.setup.config.capacity
    reserved_max = None
    if args.reserved_usd_per_hour is not None:
        reserved_max = most_useful(stack_cfg)  # the nodes the model fills at maxReplicas
    tuner = Tuner(
        train, args.max_miss_pct, args.surge_known, stack_cfg.max_replicas, stack_cfg.plan.scaling.min_replicas,
        reserved_max, stack_accepts(args.stack, stack_cfg),
    )  # fmt: skip
    tuner.max_flaps = args.max_flaps
    what = f"tune: candidates scored, {len(train)} days each"
    with track(what, tuner.most_candidates(args.passes), "candidates", args.json, bounded=True) as progress:
        tuner.on_scored = progress.advance
        knobs = tuner.search(args.passes)
    reserved = int(number(knobs.get(RESERVED, 0)))
    _, worst, days = tuner.score(knobs)
    tuned = tuner.config(knobs, None)
    zero = zero_step(
        load_stack(args.stack), train, tuned, [d.miss_pct for d in days], args.max_miss_pct,
        lambda a: tuner.accepted(knobs, a),
    )  # fmt: skip
    if holdout:
        days = days + tuner.score(knobs, holdout, holdout=True)[2]
    final = zero.autoscaling
    pool_path = f"gpuNodePools[{stack_cfg.pool_index}] ({stack_cfg.pool.name})"
    pool_limit = pool_gpu_limit(stack_cfg, final.max_replicas)
    out = {
        "stack": str(args.stack),
        "model": stack_cfg.model_name,
        "max_miss_pct": args.max_miss_pct,
        "meets_target_on_every_training_day": worst <= args.max_miss_pct,
        "knobs": knobs,
        "path": stack_cfg.model_path,
        "yaml": autoscaling_yaml(final),
        "headroom_path": pool_path,
        "headroom_yaml": headroom_yaml(tuner.headroom(knobs)),
        "consolidate_after": go_duration(tuner.pool_consolidate_after(knobs)),
        "days": [d.row() for d in days],
        "scale_to_zero": zero.row(),
    }
    if pool_limit is not None:
        out["pool_gpu_limit"] = {"pool": stack_cfg.plan.pool.name, "gpu_limit": pool_limit}
    reserved_text = None
    usd_per_hour = args.reserved_usd_per_hour  # given whenever reserved_max is
    if reserved_max is not None and usd_per_hour is not None:
        out["reserved"], reserved_text = _reserved(stack_cfg, reserved, usd_per_hour, capacity)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"tune {args.stack}/{stack_cfg.model_name}: misses <= {args.max_miss_pct:g}% on every training day")
    if worst > args.max_miss_pct:
        print(
            f"no config in the search space meets {args.max_miss_pct:g}% on every day (best worst-day: "
            f"{worst:.2f}%); maxReplicas {stack_cfg.max_replicas} or the SLO may be the limit"
        )
    _print_days(days)
    print(zero_line(zero))
    _print_paste(args.stack, stack_cfg, final, out, pool_limit)
    if reserved_text is not None:
        print(reserved_text)
    return 0


def _reserved(
    stack_cfg: StackRun, reserved: int, usd_per_hour: float, capacity: CapacityConfig
) -> tuple[dict[str, Any], str]:
    """The tuned reserved instances: their JSON row and the line to print."""
    prepaid = replace(capacity, reserved_nodes=reserved).reserved_cost(86_400)
    row = {
        "instances": reserved,
        "instance_type": stack_cfg.instance.instance_type,
        "gpus": reserved * stack_cfg.instance.gpus,
        "usd_per_hour": usd_per_hour,
        "prepaid_usd_per_day": round(prepaid, 2),
    }
    text = (
        f"and reserve {reserved} x {stack_cfg.instance.instance_type} ({reserved * stack_cfg.instance.gpus} GPUs) "
        f"at ${usd_per_hour:,.2f}/h prepaid (${prepaid:,.2f}/day, included in GPU $/day above); "
        "the pool needs capacityReservations and the 'reserved' capacity type to launch into them"
    )
    return row, text


def _print_days(days: Sequence[DayScore]) -> None:
    """The table of the scored days: cost, misses and the oracle's cost of each, training days first."""
    header = ("day", "role", "GPU $/day", "misses %", "oracle $/day", "vs oracle")
    rows = [
        (
            d.name, "holdout" if d.holdout else "train", f"{d.cost:,.2f}", f"{d.miss_pct:.2f}",
            f"{d.oracle:,.2f}", f"{d.cost / d.oracle:.2f}x" if d.oracle else "n/a",
        )
        for d in days
    ]  # fmt: skip
    widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header))]
    for r in (header, *rows):
        print(
            "  ".join(
                str(c).ljust(w) if i < 2 else str(c).rjust(w)
                for i, (c, w) in enumerate(zip(r, widths, strict=True))
            )
        )


def _print_paste(
    stack: Path, stack_cfg: StackRun, final: Autoscaling, out: dict[str, Any], pool_limit: int | None
) -> None:
    """What to paste into the stack file: the model's autoscaling block, its pool's consolidateAfter and
    headroom (as `out` has them), and the pool's gpuLimit when maxReplicas needs more."""
    print(f"paste under {stack_cfg.model_path} in {stack_file(stack).name}:")
    print(out["yaml"])
    print(
        f"and under {out['headroom_path']}: how long an empty GPU node is kept, and the pool's warm GPUs "
        "(placeholders below the replicas' priority):"
    )
    print(f"consolidateAfter: {out['consolidate_after']}")
    print(out["headroom_yaml"])
    if pool_limit is not None:
        print(
            f"and raise gpuNodePools[{stack_cfg.plan.pool.name}].gpuLimit to {pool_limit}: maxReplicas "
            f"{final.max_replicas} x {stack_cfg.plan.replica_gpus} GPU(s) with the pool's other models at theirs"
        )


def zero_line(zero: ZeroStep) -> str:
    """What the scale-to-zero step chose on the training days (search/zero_tune.py)."""
    own = ", ".join(f"{x:,.2f}" for x in zero.usd_per_day(zero.own))
    if not zero.at_zero:
        return (
            f"scale to zero: kept minReplicas {zero.best.min_replicas}: {zero.why_not_zero()} "
            f"(floor $/day {own})"
        )
    chosen = ", ".join(f"{x:,.2f}" for x in zero.usd_per_day(zero.best))
    return (
        f"scale to zero: minReplicas 0, cooldownPeriod {zero.best.cooldown_s:.0f}: floor $/day {own} -> "
        f"{chosen} per training day (the day table above is at minReplicas {zero.own.min_replicas}); "
        f"held {sum(r.held for r in zero.best.results)} (each an SLO miss, within --max-miss-pct with the "
        f"day's misses), lost {zero.best.lost}, served on a retry {zero.best.retried}, "
        f"longest wait {zero.best.wait_max:.0f} s (the hold {zero.hold_s:.0f} s)"
    )
