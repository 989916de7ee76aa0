"""Token-count distributions for `simulator capacity --input-tokens/--output-tokens`.

Grammar (one of):
  N                     every request N tokens (N > 0)
  uniform:A:B           uniform on [A, B], 0 < A <= B
  normal:MEAN:SD        normal, MEAN > 0, SD >= 0
  lognormal:MEDIAN:SIGMA  log-normal with that median and log-space sigma >= 0
Samples are rounded to whole tokens and clipped to >= 1 (seeded: the same spec gives the same figures).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np

ALLOWED = "N, uniform:A:B, normal:MEAN:SD or lognormal:MEDIAN:SIGMA"


@dataclass(frozen=True)
class TokenDist:
    spec: str
    kind: str
    a: float
    b: float = 0.0

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        if self.kind == "fixed":
            values = np.full(n, self.a)
        elif self.kind == "uniform":
            values = rng.uniform(self.a, self.b, n)
        elif self.kind == "normal":
            values = rng.normal(self.a, self.b, n)
        else:
            values = self.a * np.exp(rng.normal(0.0, self.b, n))
        return np.maximum(np.round(values), 1.0)


def _float(spec: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{spec!r}: {text!r} is not a number; allowed: {ALLOWED}") from None


def token_dist(spec: str) -> TokenDist:
    """Parse a distribution spec (argparse type: the error names the value and the grammar)."""
    parts = spec.split(":")
    kind = parts[0]
    if len(parts) == 1:
        n = _float(spec, kind)
        if n <= 0:
            raise argparse.ArgumentTypeError(f"{spec!r}: N must be > 0; allowed: {ALLOWED}")
        return TokenDist(spec, "fixed", n)
    if kind not in ("uniform", "normal", "lognormal") or len(parts) != 3:
        raise argparse.ArgumentTypeError(f"{spec!r} is not a distribution; allowed: {ALLOWED}")
    a, b = _float(spec, parts[1]), _float(spec, parts[2])
    if kind == "uniform" and not 0 < a <= b:
        raise argparse.ArgumentTypeError(f"{spec!r}: needs 0 < A <= B; allowed: {ALLOWED}")
    if kind != "uniform" and (a <= 0 or b < 0):
        raise argparse.ArgumentTypeError(
            f"{spec!r}: needs {kind} centre > 0 and spread >= 0; allowed: {ALLOWED}"
        )
    return TokenDist(spec, kind, a, b)
