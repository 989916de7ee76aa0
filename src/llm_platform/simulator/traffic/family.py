"""A family of generated traffic days to tune and benchmark autoscaling on (a config fitted to one day is a fit).

Every day is a per-minute rate (req/s) built from the seed article's profile (traffic.SEED_DAY_KNOTS) or from
scratch, deterministic for a seed:
- seed: the article's profile;
- flat: the seed day's mean rate all day;
- spiky: the seed profile with a 4x lunchtime spike (12:00-12:20);
- bursty: a weekend: low base with random 5-15 minute bursts of 3-6x, ~8 a day;
- bursts: a business day with bursts shorter than a cold start: the seed profile plus 6-12 random bursts of
  5-15 minutes, +20-60 req/s each, between 07:00 and 21:00 (issue #13's bursty days);
- flash: the seed profile with one sharp spike, +100 req/s for 5 minutes at 14:00;
- growing: the seed profile growing linearly to 1.5x by midnight;
- shifted: the seed profile two hours later (a surge a fixed pre-warm window misses).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from llm_platform.simulator.traffic.traffic import SEED_DAY_KNOTS, rate_curve

KINDS = ("seed", "flat", "spiky", "bursty", "bursts", "flash", "growing", "shifted")
RANDOM_KINDS = ("bursty", "bursts")  # drawn from the seed: --holdout-seed writes new days of these
MINUTES = 1440


def seed_minutes() -> np.ndarray:
    return rate_curve(SEED_DAY_KNOTS)[30::60][:MINUTES]


def day(kind: str, seed: int = 0, scale: float = 1.0) -> np.ndarray:
    """Requests/s per minute for one generated day."""
    base = seed_minutes()
    rng = np.random.default_rng(seed)
    if kind == "seed":
        rate = base
    elif kind == "flat":
        rate = np.full(MINUTES, base.mean())
    elif kind == "spiky":
        rate = base.copy()
        rate[12 * 60 : 12 * 60 + 20] *= 4
    elif kind == "bursty":
        rate = np.full(MINUTES, 0.3 * base.mean())
        for _ in range(rng.poisson(8)):
            start, length = int(rng.integers(0, MINUTES - 15)), int(rng.integers(5, 16))
            rate[start : start + length] *= rng.uniform(3, 6)
    elif kind == "bursts":
        rate = base.copy()
        for _ in range(int(rng.integers(6, 13))):
            start = int(rng.integers(7 * 60, 21 * 60))
            rate[start : start + int(rng.integers(5, 16))] += rng.uniform(20, 60)
    elif kind == "flash":
        rate = base.copy()
        rate[14 * 60 : 14 * 60 + 5] += 100.0
    elif kind == "growing":
        rate = base * np.linspace(1.0, 1.5, MINUTES)
    elif kind == "shifted":
        rate = np.roll(base, 120)
    else:
        raise ValueError(f"unknown day kind {kind!r}; allowed: {', '.join(KINDS)}")
    return rate * scale


def write(
    kind: str, path: str | Path, seed: int = 0, scale: float = 1.0, minutes: slice = slice(None)
) -> Path:
    """The day as the simulator's CSV; `minutes` keeps a window of it (a quick run of a benchmark), minute 0
    being the window's first."""
    path, rates = Path(path), day(kind, seed, scale)[minutes]  # an unknown kind writes nothing
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["minute", "requests_per_second"])
        for m, r in enumerate(rates):
            w.writerow([m, round(float(r), 4)])
    return path
