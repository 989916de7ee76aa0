"""Traffic: arrival times and token counts, from the built-in seed day, a CSV or a Prometheus export.

The built-in `seed-day` follows the seed article's profile (shared/reference/README.md): 00-07 ~2 req/s,
07-09 surge up to 120 req/s, 09-17 40-80 req/s, 17-24 tapering to baseline. Arrivals are a non-homogeneous
Poisson process. The article gives no token lengths; the built-in mix is short chat turns whose shared system
prompt is served from vLLM's prefix cache, so prompt tokens are the uncached ones: lognormal, median 128
(sigma 0.6); output median 96 (sigma 0.5). Lengths are distributions: a median and a spread (lognormal sigma),
or a histogram read from vLLM's `vllm:request_prompt_tokens` / `vllm:request_generation_tokens` buckets.

Sources (any length, several days; the span is simulated as a whole and costs are reported per day):
- CSV `minute,requests_per_second` (or `requests_per_minute`): a rate per minute from minute 0 (UTC midnight
  of the simulated date); the rate holds for the whole minute;
- CSV `timestamp,input_tokens,output_tokens`: one row per request, seconds (shifted to start at 0);
- Prometheus `query_range` JSON (`/api/v1/query_range` of a request rate such as
  `sum(rate(vllm:request_success_total[1m]))`): series are summed, each value holds for one step, and the
  first timestamp sets the simulated date and time of day (cron pre-warm windows apply at the real hours).
Every malformed input fails with one line naming the file, the line or field, the value and what is allowed.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from datetime import UTC, datetime
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
class HistogramMix:
    """Token lengths drawn from vLLM's request-length histograms (cumulative bucket counts by upper bound)."""

    prompt_buckets: tuple[tuple[float, float], ...]  # (le, cumulative count), ascending, +Inf last
    output_buckets: tuple[tuple[float, float], ...]

    @staticmethod
    def _draw(buckets: tuple[tuple[float, float], ...], n: int, rng: np.random.Generator) -> np.ndarray:
        bounds = np.array([b for b, _ in buckets])
        cum = np.array([c for _, c in buckets])
        finite = bounds[np.isfinite(bounds)]
        bounds = np.where(np.isfinite(bounds), bounds, finite[-1] * 2 if len(finite) else 1.0)
        lower = np.concatenate(([0.0], bounds[:-1]))
        probs = np.diff(np.concatenate(([0.0], cum)))
        probs = probs / probs.sum()
        k = rng.choice(len(bounds), size=n, p=probs)
        values = lower[k] + rng.random(n) * (bounds[k] - lower[k])
        return np.maximum(np.rint(values), 1).astype(np.int32)

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return self._draw(self.prompt_buckets, n, rng), self._draw(self.output_buckets, n, rng)


PROMPT_HISTOGRAM = "vllm:request_prompt_tokens_bucket"
OUTPUT_HISTOGRAM = "vllm:request_generation_tokens_bucket"


def histogram_mix(path: str | Path) -> HistogramMix:
    """Read both vLLM length histograms from a Prometheus query or query_range JSON export.

    For a range (matrix) the distribution is the increase over the range (last - first sample per series);
    for an instant vector it is the counts since the servers started. Series are summed per bucket bound.
    """
    path = Path(path)
    if not path.is_file():
        raise TrafficError(f"token histogram file {str(path)!r} does not exist")
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise TrafficError(f"{path} line {exc.lineno}: not JSON ({exc.msg})") from None
    result = (doc.get("data") or {}).get("result") if isinstance(doc, dict) else None
    if not isinstance(result, list):
        raise TrafficError(
            f"{path}: no data.result; allowed: a Prometheus /api/v1/query or query_range response"
        )
    sums: dict[str, dict[float, float]] = {PROMPT_HISTOGRAM: {}, OUTPUT_HISTOGRAM: {}}
    for i, series in enumerate(result):
        metric = series.get("metric") or {}
        name, le = metric.get("__name__"), metric.get("le")
        if name not in sums or le is None:
            continue
        where = f"{path} data.result[{i}]"
        if "values" in series:
            values = series["values"]
            count = _number(str(values[-1][1]), where) - (
                _number(str(values[0][1]), where) if len(values) > 1 else 0
            )
        else:
            count = _number(str(series["value"][1]), where)
        bound = float("inf") if le == "+Inf" else _number(le, where + " le")
        sums[name][bound] = sums[name].get(bound, 0.0) + max(count, 0.0)
    buckets = {}
    for name, by_bound in sums.items():
        ordered = tuple(sorted(by_bound.items()))
        if not ordered or ordered[-1][1] <= 0:
            raise TrafficError(
                f"{path}: no {name} series with counts (label le); export both vLLM length histograms"
            )
        buckets[name] = ordered
    return HistogramMix(buckets[PROMPT_HISTOGRAM], buckets[OUTPUT_HISTOGRAM])


@dataclass(frozen=True)
class Traffic:
    arrivals: np.ndarray  # seconds from the day's start, sorted
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    duration: int = DAY_SECONDS
    name: str = "traffic"
    start_utc: datetime | None = None  # real start (Prometheus); None: midnight of the simulated date
    is_trace: bool = False  # recorded requests (token counts given) rather than a rate

    @property
    def days(self) -> float:
        return self.duration / DAY_SECONDS

    def __len__(self) -> int:
        return len(self.arrivals)

    def per_second(self) -> np.ndarray:
        return np.bincount(self.arrivals.astype(np.int64), minlength=self.duration)[: self.duration]


def rate_curve(knots: tuple[tuple[float, float], ...], seconds: int = DAY_SECONDS) -> np.ndarray:
    """Requests/s at the middle of every second of the day."""
    hours = np.array([h for h, _ in knots]) * 3600
    rates = np.array([r for _, r in knots])
    return np.interp(np.arange(seconds) + 0.5, hours, rates)


def poisson_day(
    rate: np.ndarray, mix: TokenMix | HistogramMix, rng: np.random.Generator, name: str = "traffic"
) -> Traffic:
    """Non-homogeneous Poisson arrivals for a per-second rate, with sampled token counts."""
    counts = rng.poisson(rate)
    seconds = np.repeat(np.arange(len(rate), dtype=np.float64), counts)
    arrivals = np.sort(seconds + rng.random(len(seconds)))
    p, o = mix.sample(len(arrivals), rng)
    return Traffic(arrivals, p, o, len(rate), name)


def seed_day(seed: int = 0, mix: TokenMix | HistogramMix | None = None, scale: float = 1.0) -> Traffic:
    rng = np.random.default_rng(seed)
    return poisson_day(rate_curve(SEED_DAY_KNOTS) * scale, mix or TokenMix(), rng, "builtin:seed-day")


class TrafficError(ValueError):
    """Bad traffic input: the message names the file, where, the value and what is allowed."""


def _number(text: str | None, where: str, allowed: str = "a number >= 0") -> float:
    try:
        value = float(text if text is not None else "")
    except ValueError:
        raise TrafficError(f"{where}: {text!r} is not a number; allowed: {allowed}") from None
    if not np.isfinite(value) or value < 0:
        raise TrafficError(f"{where}: {text} is not allowed; allowed: {allowed}")
    return value


def rate_traffic(
    rate_per_second: np.ndarray,
    mix: TokenMix | HistogramMix,
    seed: int,
    name: str,
    start_utc: datetime | None = None,
) -> Traffic:
    rng = np.random.default_rng(seed)
    t = poisson_day(rate_per_second, mix, rng, name)
    return Traffic(t.arrivals, t.input_tokens, t.output_tokens, t.duration, name, start_utc, is_trace=False)


def from_csv(
    path: str | Path, seed: int = 0, mix: TokenMix | HistogramMix | None = None, scale: float = 1.0
) -> Traffic:
    """Load a per-minute rate or a request trace (see module doc)."""
    path = Path(path)
    try:
        with path.open(newline="") as f:
            reader = csv.DictReader(f)
            fields = [c.strip() for c in reader.fieldnames or []]
            rows = [{(k or "").strip(): v for k, v in row.items()} for row in reader]
    except (UnicodeDecodeError, csv.Error) as exc:
        raise TrafficError(f"{path}: not a readable CSV ({exc})") from None
    if not rows:
        raise TrafficError(f"{path}: no rows after the header {fields}")
    if {"timestamp", "input_tokens", "output_tokens"} <= set(fields):
        if scale != 1.0 or mix is not None:
            raise TrafficError(
                f"{path} is a request trace (timestamp,input_tokens,output_tokens): it is replayed as recorded; "
                "--scale and token-length flags apply to rate traffic only"
            )
        t = np.array([_number(r["timestamp"], f"{path} line {n + 2} timestamp") for n, r in enumerate(rows)])
        p = np.array(
            [_number(r["input_tokens"], f"{path} line {n + 2} input_tokens") for n, r in enumerate(rows)]
        )
        o = np.array(
            [_number(r["output_tokens"], f"{path} line {n + 2} output_tokens") for n, r in enumerate(rows)]
        )
        order = np.argsort(t, kind="stable")
        t = t[order] - t.min()
        duration = int(np.ceil((t[-1] + 1) / 60) * 60)
        ints = lambda a: np.maximum(a[order], 1).astype(np.int32)  # noqa: E731
        return Traffic(t, ints(p), ints(o), duration, str(path), None, is_trace=True)
    column = next((c for c in ("requests_per_second", "requests_per_minute") if c in fields), None)
    if "minute" not in fields or column is None:
        raise TrafficError(
            f"{path}: columns {fields} are not a traffic format; allowed: 'minute,requests_per_second' "
            "(or requests_per_minute), 'timestamp,input_tokens,output_tokens'"
        )
    minutes = [
        _number(r["minute"], f"{path} line {n + 2} minute", "a whole minute >= 0") for n, r in enumerate(rows)
    ]
    values = [_number(r[column], f"{path} line {n + 2} {column}") for n, r in enumerate(rows)]
    for n, (m, prev) in enumerate(zip(minutes[1:], minutes, strict=False)):
        if m != int(m) or m <= prev:
            raise TrafficError(
                f"{path} line {n + 3} minute: {m:g} after {prev:g}; allowed: increasing whole minutes"
            )
    per_minute = np.zeros(int(minutes[-1]) + 1)
    per_minute[np.array(minutes, dtype=np.int64)] = values
    if column == "requests_per_minute":
        per_minute /= 60
    return rate_traffic(np.repeat(per_minute * scale, 60), mix or TokenMix(), seed, str(path))


def from_prometheus(
    path: str | Path, seed: int = 0, mix: TokenMix | HistogramMix | None = None, scale: float = 1.0
) -> Traffic:
    """A Prometheus `query_range` response of a request rate (req/s), summed over its series."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise TrafficError(f"{path} line {exc.lineno}: not JSON ({exc.msg})") from None
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, dict) or data.get("resultType") != "matrix":
        raise TrafficError(
            f"{path}: data.resultType is {data.get('resultType') if isinstance(data, dict) else None!r}; "
            "allowed: 'matrix' (an /api/v1/query_range response)"
        )
    series = data.get("result") or []
    if not series:
        raise TrafficError(f"{path}: data.result is empty; the query matched no series")
    points: dict[float, float] = {}
    for i, s in enumerate(series):
        for j, pair in enumerate(s.get("values") or []):
            where = f"{path} data.result[{i}].values[{j}]"
            if not isinstance(pair, list) or len(pair) != 2:
                raise TrafficError(f'{where}: {pair!r}; allowed: [unix_seconds, "value"]')
            ts = _number(str(pair[0]), where + "[0]", "unix seconds")
            value = 0.0 if pair[1] in ("NaN", "+Inf", "-Inf") else _number(str(pair[1]), where + "[1]")
            points[ts] = points.get(ts, 0.0) + value
    stamps = np.array(sorted(points))
    if len(stamps) < 2:
        raise TrafficError(f"{path}: {len(stamps)} sample(s); a query_range export needs at least 2")
    step = float(np.min(np.diff(stamps)))
    seconds = int(stamps[-1] - stamps[0] + step)
    index = ((stamps - stamps[0]) // 1).astype(np.int64)
    rate = np.zeros(seconds)
    values = np.array([points[t] for t in stamps])
    for k, start in enumerate(index):  # each sample holds until the next one (at most one step)
        end = index[k + 1] if k + 1 < len(index) else seconds
        rate[start : min(end, start + int(step))] = values[k]
    start_utc = datetime.fromtimestamp(float(stamps[0]), tz=UTC)
    return rate_traffic(rate * scale, mix or TokenMix(), seed, str(path), start_utc)


def load(spec: str, seed: int = 0, mix: TokenMix | HistogramMix | None = None, scale: float = 1.0) -> Traffic:
    """`builtin:seed-day` (rate x scale), a CSV, or a Prometheus query_range JSON export (.json)."""
    if spec == "builtin:seed-day":
        return seed_day(seed, mix, scale)
    if spec.startswith("builtin:"):
        raise TrafficError(
            f"unknown built-in traffic {spec!r}; allowed: builtin:seed-day, a CSV or a .json file"
        )
    path = Path(spec)
    if not path.is_file():
        raise TrafficError(f"traffic file {spec!r} does not exist")
    if path.suffix.lower() == ".json":
        return from_prometheus(path, seed, mix, scale)
    return from_csv(path, seed, mix, scale)
