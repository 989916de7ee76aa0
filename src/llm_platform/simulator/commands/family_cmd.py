"""`python -m llm_platform.simulator family`: writes the generated days of traffic/family.py as CSV files."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from llm_platform.commandline import ArgumentParser
from llm_platform.simulator.commands.args import non_negative_int, positive_float
from llm_platform.simulator.traffic.family import KINDS, RANDOM_KINDS, write


def parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="python -m llm_platform.simulator family",
        description="Write the family's days as CSVs (minute,requests_per_second) to tune and hold out on.",
    )
    p.add_argument(
        "--out", required=True, type=Path, help="folder for the <kind>.csv files (made if missing)"
    )
    p.add_argument("--scale", type=positive_float, default=1.0, help="multiply every day's rate")
    p.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated, of {', '.join(KINDS)}")
    p.add_argument(
        "--holdout-seed", type=non_negative_int,
        help="also write holdout days of the random kinds (bursty, bursts) from this seed, as <kind>-holdout.csv",
    )  # fmt: skip
    p.add_argument(
        "--more-seeds", default="",
        help="comma-separated seeds: also write more training days of the random kinds, as <kind>-<seed>.csv",
    )  # fmt: skip
    return p


def run(argv: Sequence[str]) -> int:
    """Day i of --kinds uses seed i, so a family is the same wherever it is written."""
    args = parser().parse_args(argv)
    kinds = args.kinds.split(",")
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"--kinds: unknown day kind {unknown[0]!r}; allowed: {', '.join(KINDS)}")
    if args.out.exists() and not args.out.is_dir():
        raise ValueError(f"--out {args.out}: a file, not a folder")
    args.out.mkdir(parents=True, exist_ok=True)
    for i, kind in enumerate(kinds):
        print(write(kind, args.out / f"{kind}.csv", seed=i, scale=args.scale))
    if args.holdout_seed is not None:
        for kind in (k for k in RANDOM_KINDS if k in kinds):
            print(write(kind, args.out / f"{kind}-holdout.csv", seed=args.holdout_seed, scale=args.scale))
    for seed in (int(s) for s in args.more_seeds.split(",") if s.strip()):
        for kind in (k for k in RANDOM_KINDS if k in kinds):
            print(write(kind, args.out / f"{kind}-{seed}.csv", seed=seed, scale=args.scale))
    return 0
