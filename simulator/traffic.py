"""A day of requests: arrival times and token counts, from the built-in seed day or a CSV.

The built-in `seed-day` follows the seed article's profile (shared/reference/README.md): 00-07 ~2 req/s,
07-09 surge up to 120 req/s, 09-17 40-80 req/s, 17-24 tapering to baseline. Arrivals are a non-homogeneous
Poisson process over a piecewise-linear rate curve. The article gives no token lengths; the built-in day uses
short chat turns whose shared system prompt is served from vLLM's prefix cache (on by default), so the
prompt tokens here are the uncached ones: lognormal, median 128 (sigma 0.6); output median 96 (sigma 0.5).
These are assumptions, overridable from the CLI (docs/simulator.md discusses the 550/150 llmperf shape).

CSV formats (header required):
- `timestamp,input_tokens,output_tokens`: one row per request, timestamp in seconds from the day's start
  (or any monotonic seconds; shifted to start at 0);
- `minute,requests_per_second` (or `requests_per_minute`): a rate per minute; lengths from the built-in mix.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

DAY_SECONDS = 86_400

# (hour, requests/s) knots of the seed day; linear in between.
SEED_DAY_KNOTS: tuple[tuple[float, float], ...] = (
    (0.0, 2.0),
    (7.0, 2.0),
    (7.5, 60.0),
    (8.0, 120.0),
    (8.5, 120.0),
    (9.0, 80.0),
    (12.0, 70.0),
    (13.0, 50.0),
    (14.0, 75.0),
    (17.0, 40.0),
    (19.0, 15.0),
    (21.0, 6.0),
    (24.0, 2.0),
)


@dataclass(frozen=True)
class TokenMix:
    """Lognormal prompt (uncached) and output lengths, clipped to [1, max]."""

    input_median: float = 128
    input_sigma: float = 0.6
    output_median: float = 96
    output_sigma: float = 0.5
    max_input: int = 4096
    max_output: int = 1024

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        p = rng.lognormal(np.log(self.input_median), self.input_sigma, n)
        o = rng.lognormal(np.log(self.output_median), self.output_sigma, n)
        return (
            np.clip(np.rint(p), 1, self.max_input).astype(np.int32),
            np.clip(np.rint(o), 1, self.max_output).astype(np.int32),
        )


@dataclass(frozen=True)
class Traffic:
    arrivals: np.ndarray  # seconds from the day's start, sorted
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    duration: int = DAY_SECONDS
    name: str = "traffic"

    def __len__(self) -> int:
        return len(self.arrivals)

    def per_second(self) -> np.ndarray:
        return np.bincount(self.arrivals.astype(np.int64), minlength=self.duration)[: self.duration]


def rate_curve(knots: tuple[tuple[float, float], ...], seconds: int = DAY_SECONDS) -> np.ndarray:
    """Requests/s at the middle of every second of the day."""
    hours = np.array([h for h, _ in knots]) * 3600
    rates = np.array([r for _, r in knots])
    return np.interp(np.arange(seconds) + 0.5, hours, rates)


def poisson_day(rate: np.ndarray, mix: TokenMix, rng: np.random.Generator, name: str = "traffic") -> Traffic:
    """Non-homogeneous Poisson arrivals for a per-second rate, with sampled token counts."""
    counts = rng.poisson(rate)
    seconds = np.repeat(np.arange(len(rate), dtype=np.float64), counts)
    arrivals = np.sort(seconds + rng.random(len(seconds)))
    p, o = mix.sample(len(arrivals), rng)
    return Traffic(arrivals, p, o, len(rate), name)


def seed_day(seed: int = 0, mix: TokenMix | None = None, scale: float = 1.0) -> Traffic:
    rng = np.random.default_rng(seed)
    return poisson_day(rate_curve(SEED_DAY_KNOTS) * scale, mix or TokenMix(), rng, "builtin:seed-day")


def from_csv(path: str | Path, seed: int = 0, mix: TokenMix | None = None) -> Traffic:
    """Load a request trace or a per-minute rate (see module doc); fails naming the expected columns."""
    path = Path(path)
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        fields = [c.strip() for c in reader.fieldnames or []]
        rows = [{k.strip(): v for k, v in row.items() if k is not None} for row in reader]
    rng = np.random.default_rng(seed)
    if {"timestamp", "input_tokens", "output_tokens"} <= set(fields):
        t = np.array([float(r["timestamp"]) for r in rows])
        order = np.argsort(t, kind="stable")
        t = t[order] - (t.min() if len(t) else 0.0)
        p = np.array([int(float(r["input_tokens"])) for r in rows], dtype=np.int32)[order]
        o = np.array([int(float(r["output_tokens"])) for r in rows], dtype=np.int32)[order]
        duration = max(DAY_SECONDS, int(np.ceil(t[-1])) + 1 if len(t) else DAY_SECONDS)
        return Traffic(t, np.maximum(p, 1), np.maximum(o, 1), duration, str(path))
    if "minute" in fields and ({"requests_per_second", "requests_per_minute"} & set(fields)):
        per_min = "requests_per_minute" in fields
        minutes = np.array([float(r["minute"]) for r in rows])
        values = np.array(
            [float(r["requests_per_minute" if per_min else "requests_per_second"]) for r in rows]
        )
        rps = values / 60 if per_min else values
        duration = max(DAY_SECONDS, int((minutes.max() + 1) * 60))
        rate = np.interp(np.arange(duration) + 0.5, minutes * 60 + 30, rps)
        return poisson_day(rate, mix or TokenMix(), rng, str(path))
    raise ValueError(
        f"{path}: columns {fields} are not a known traffic format; use "
        "'timestamp,input_tokens,output_tokens' or 'minute,requests_per_second' (or requests_per_minute)"
    )


def load(spec: str, seed: int = 0, mix: TokenMix | None = None, scale: float = 1.0) -> Traffic:
    """`builtin:seed-day` (its rate multiplied by `scale`) or a CSV path."""
    if spec == "builtin:seed-day":
        return seed_day(seed, mix, scale)
    if spec.startswith("builtin:"):
        raise ValueError(f"unknown built-in traffic {spec!r}; allowed: builtin:seed-day or a CSV file")
    return from_csv(spec, seed, mix)
