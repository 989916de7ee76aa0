"""What `simulator replay` reads of a past day: one model's minute series from Prometheus `query_range`, or
the same responses saved to a file (an export, so a replay works offline).

Every query has one definition: the vLLM names and the SLO share from `plan/promql.py` (what the alerts use),
the cost from the series the cost recording rules record (`components/specs/costs.py`; its name
`MODEL_COST_HOURLY` is in plan/promql.py: the GPUs the model's pods hold at their nodes' catalog price),
replicas from kube-state-metrics' Deployment series.

An export is a JSON object:
  {"kind": "llm-platform-replay", "model": <served model name>, "start": <unix s>, "end": <unix s>,
   "step": <s>, "queries": {<name>: <PromQL>}, "series": {<name>: <an /api/v1/query_range response>}}
with the names of SERIES; `cost_dollars_per_hour` may be absent or match no series (no OpenCost yet).
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from llm_platform.plan import promql
from llm_platform.plan.model import ModelPlan
from llm_platform.plan.promql import MODEL_COST_HOURLY
from llm_platform.simulator.traffic.traffic import TrafficError

KIND = "llm-platform-replay"
WINDOW = "1m"  # rates over one step of the default 60 s
OPTIONAL = ("cost_dollars_per_hour",)


def queries(mp: ModelPlan) -> dict[str, str]:
    """name -> PromQL of every series a replay reads for one model (one value per step)."""
    if mp.multi_node:
        raise ValueError(
            f"model {mp.name}: replay reads the Deployment's kube-state-metrics series; a multi-node model "
            "(LeaderWorkerSet) has none; allowed: single-node models"
        )
    if mp.disaggregation is not None:
        raise ValueError(
            f"model {mp.name}: replay reads one Deployment's kube-state-metrics series; a disaggregated model "
            f"has one per role ({', '.join(r.deployment for r in mp.disaggregation.roles)}), whose replicas the "
            "replay's one-pool replica model cannot compare; allowed: aggregated models"
        )
    ns, name, dep = mp.names.namespace, mp.model.served_model_name, mp.names.deployment
    sel = promql.selector(ns, name)
    done = f"sum(rate({promql.SUCCESS}{sel}[{WINDOW}]))"
    bound = promql.bucket_at_or_above(promql.TTFT, mp.model.slo.ttft_seconds)
    return {
        "requests_per_second": done,
        "input_tokens_mean": f"sum(rate({promql.PROMPT_TOKENS}{sel}[{WINDOW}])) / {done}",
        "output_tokens_mean": f"sum(rate({promql.GENERATION_TOKENS}{sel}[{WINDOW}])) / {done}",
        "ttft_miss_ratio": promql.share_slower_than(promql.TTFT, bound, ns, name, WINDOW),
        "replicas_available": f"sum({promql.replicas_available(ns, dep)})",
        "replicas_desired": f'sum(kube_deployment_spec_replicas{{namespace="{ns}",deployment="{dep}"}})',
        "cost_dollars_per_hour": f'sum({MODEL_COST_HOURLY}{{model_name="{name}"}})',
    }


SERIES = (
    "requests_per_second", "input_tokens_mean", "output_tokens_mean", "ttft_miss_ratio",
    "replicas_available", "replicas_desired", "cost_dollars_per_hour",
)  # fmt: skip


@dataclass(frozen=True)
class Day:
    """One model's minute series over [start, end): values per step, NaN where Prometheus had none."""

    model: str
    start: int
    step: int
    values: dict[str, np.ndarray]
    missing: dict[str, str]  # optional series that are absent, and why

    @property
    def steps(self) -> int:
        return len(self.values["requests_per_second"])


def matrix(doc: Any, where: str, start: int, step: int, n: int) -> np.ndarray | None:
    """A query_range response summed over its series on the grid start + k*step (NaN: no sample); None when
    the query matched no series."""
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, dict) or data.get("resultType") != "matrix":
        got = data.get("resultType") if isinstance(data, dict) else None
        raise TrafficError(
            f"{where}.data.resultType: {got!r}; allowed: 'matrix' (an /api/v1/query_range response)"
        )
    result = data.get("result")
    if not isinstance(result, list):
        raise TrafficError(f"{where}.data.result: {result!r}; allowed: a list of series")
    if not result:
        return None
    out = np.full(n, np.nan)
    for i, s in enumerate(result):
        for j, pair in enumerate((s or {}).get("values") or []):
            at = f"{where}.data.result[{i}].values[{j}]"
            try:
                ts, value = float(pair[0]), float(pair[1])
            except (TypeError, ValueError, IndexError):
                raise TrafficError(f'{at}: {pair!r}; allowed: [unix_seconds, "number"]') from None
            k = round((ts - start) / step)
            if not 0 <= k < n or abs(ts - start - k * step) > 1e-6:
                raise TrafficError(
                    f"{at}: timestamp {ts:g} is off the grid start {start} + k*{step}, k < {n}"
                )
            if math.isfinite(value):
                out[k] = value if np.isnan(out[k]) else out[k] + value
    return out


def parse(doc: Any, where: str) -> Day:
    """An export (module doc) checked field by field; errors name `where`, the field and what is allowed."""
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        got = doc.get("kind") if isinstance(doc, dict) else type(doc).__name__
        raise TrafficError(f"{where} kind: {got!r}; allowed: {KIND!r} (written by `simulator replay --save`)")
    fields: dict[str, int] = {}
    for key in ("start", "end", "step"):
        value = doc.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise TrafficError(f"{where} {key}: {value!r}; allowed: whole unix seconds >= 0")
        fields[key] = value
    start, end, step = fields["start"], fields["end"], fields["step"]
    if step <= 0 or end <= start or (end - start) % step:
        raise TrafficError(
            f"{where} start/end/step: {start}/{end}/{step}; allowed: step > 0 dividing end - start > 0"
        )
    series = doc.get("series")
    if not isinstance(series, dict):
        raise TrafficError(
            f"{where} series: {type(series).__name__}; allowed: an object of {', '.join(SERIES)}"
        )
    unknown = sorted(set(series) - set(SERIES))
    if unknown:
        raise TrafficError(f"{where} series.{unknown[0]}: unknown; allowed: {', '.join(SERIES)}")
    n = (end - start) // step
    values: dict[str, np.ndarray] = {}
    missing: dict[str, str] = {}
    for name in SERIES:
        if name not in series:
            if name in OPTIONAL:
                missing[name] = "not in the export"
                continue
            raise TrafficError(
                f"{where} series.{name}: missing; required: {', '.join(s for s in SERIES if s not in OPTIONAL)}"
            )
        got = matrix(series[name], f"{where} series.{name}", start, step, n)
        if got is None:
            if name in OPTIONAL:
                missing[name] = (
                    f"{MODEL_COST_HOURLY} matched no series (OpenCost not deployed: costs.enabled?)"
                )
                continue
            raise TrafficError(f"{where} series.{name}: the query matched no series; the day has no data")
        values[name] = got
    return Day(str(doc.get("model", "")), start, step, values, missing)


def read_export(path: str | Path) -> Day:
    path = Path(path)
    if not path.is_file():
        raise TrafficError(f"export file {str(path)!r} does not exist")
    try:
        doc = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        line = getattr(exc, "lineno", "?")
        raise TrafficError(f"{path} line {line}: not JSON ({exc}); allowed: an export (see --help)") from None
    return parse(doc, str(path))


def fetch(url: str, mp: ModelPlan, start: int, end: int, step: int, timeout: float = 30.0) -> dict[str, Any]:
    """The export of [start, end) read from a Prometheus at `url` (one query_range per series)."""
    doc: dict[str, Any] = {"kind": KIND, "model": mp.model.served_model_name, "start": start, "end": end}
    doc |= {"step": step, "queries": queries(mp), "series": {}}
    for name, query in doc["queries"].items():
        params = {"query": query, "start": str(start), "end": str(end - step), "step": f"{step}s"}
        target = f"{url.rstrip('/')}/api/v1/query_range?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(target, timeout=timeout) as response:
                body = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise TrafficError(
                f"{url}: query_range of {name} answered HTTP {exc.code}: {exc.read()[:200]!r}"
            ) from None
        except (urllib.error.URLError, OSError, json.JSONDecodeError) as exc:
            raise TrafficError(f"{url}: query_range of {name} failed ({exc})") from None
        if not isinstance(body, dict) or body.get("status") != "success":
            raise TrafficError(f"{url}: query_range of {name}: {str(body)[:200]}")
        doc["series"][name] = body
    return doc
