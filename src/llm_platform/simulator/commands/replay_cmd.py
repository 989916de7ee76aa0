"""`python -m llm_platform.simulator replay STACK --model M (--prometheus URL --date D | --export FILE)`: the
forecast for the deployed config next to what a past day actually cost and missed.

The day's arrivals (completed requests per step, mean prompt and output tokens: traffic/replay_data.py) are
simulated as `simulator day` does with the stack's plan, under the deployed ScaledObject (`stack-config`);
prompt and output lengths are lognormal (the built-in spreads) with the day's means. Actual: the cost
recording rule's $/h summed over the day, the TTFT miss share weighted by requests, and the replicas
kube-state-metrics saw (available = serving; desired - available = starting).

The replica-hours difference splits by phase, minute by minute: capacity (serving replicas above the
forecast's while requests arrive), cold start (replicas starting above the forecast's), idle (serving
replicas above the forecast's in minutes with no request). Dollars per phase are at the forecast's
$ per replica-hour.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from llm_platform.commandline import ArgumentParser, known_stack
from llm_platform.config.schema import StackConfig, forecast_config_hash
from llm_platform.simulator.day.engine import simulate
from llm_platform.simulator.day.result import Result
from llm_platform.simulator.search.stacks import StackRun, stack_model, stack_run
from llm_platform.simulator.traffic import replay_data
from llm_platform.simulator.traffic.traffic import TokenMix, rate_traffic

PROG = "python -m llm_platform.simulator replay"
DEPLOYED = "stack-config"
MIX = TokenMix()


def parser() -> ArgumentParser:
    p = ArgumentParser(prog=PROG, description=(__doc__ or "").split("\n\n")[0])
    p.add_argument(
        "stack", type=known_stack, help="stack name (reads Pulumi.<stack>.yaml) or a stack file's path"
    )
    p.add_argument("--model", help="model name in the stack (default: the first)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--prometheus", metavar="URL", help="read the day from this Prometheus (query_range)")
    src.add_argument("--export", metavar="FILE", help="read the day from an export (see --save)")
    p.add_argument("--date", help="with --prometheus: the UTC day, YYYY-MM-DD")
    p.add_argument("--step", type=int, default=60, help="with --prometheus: query_range step, seconds (60)")
    p.add_argument("--save", metavar="FILE", help="with --prometheus: also write the export to FILE")
    p.add_argument("--seed", type=int, default=0, help="arrival seed of the forecast (0)")
    p.add_argument("--json", action="store_true", help="print JSON")
    return p


def day_range(date: str) -> tuple[int, int]:
    try:
        day = datetime.strptime(date, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(f"--date {date!r}; allowed: a UTC day YYYY-MM-DD") from None
    start = int(day.timestamp())
    return start, start + 86_400


def per_minute(values: np.ndarray, step: int) -> np.ndarray:
    """Step values (NaN: no sample, read as 0) as one mean per whole minute."""
    per_s = np.repeat(np.nan_to_num(values), step)
    minutes = len(per_s) // 60
    return per_s[: minutes * 60].reshape(minutes, 60).mean(axis=1)


def rnd(value: float, digits: int) -> float:
    return round(value, digits) or 0.0  # never -0.0


def weighted_mean(values: np.ndarray, weights: np.ndarray, default: float) -> float:
    ok = np.isfinite(values) & np.isfinite(weights) & (weights > 0)
    return float(np.average(values[ok], weights=weights[ok])) if ok.any() else default


def forecast(stack: Any, model: str | None, day: replay_data.Day, seed: int) -> tuple[StackRun, Result]:
    """The deployed config simulated on the day's arrivals."""
    rate = np.nan_to_num(day.values["requests_per_second"])
    spread_in, spread_out = math.exp(MIX.input_sigma**2 / 2), math.exp(MIX.output_sigma**2 / 2)
    mix = TokenMix(
        input_median=weighted_mean(day.values["input_tokens_mean"], rate, MIX.input_median * spread_in)
        / spread_in,
        output_median=weighted_mean(day.values["output_tokens_mean"], rate, MIX.output_median * spread_out)
        / spread_out,
    )
    start = datetime.fromtimestamp(day.start, tz=UTC)
    traffic = rate_traffic(np.repeat(rate, day.step), mix, seed, f"replay {start:%Y-%m-%d}", start)
    run = stack_run(stack, model, traffic, seed)
    strategy = next(s for s in run.strategies if s.name == DEPLOYED)
    return run, simulate(traffic, run.setup.table, strategy, run.setup.config)


def compare(day: replay_data.Day, result: Result) -> dict[str, Any]:
    """Forecast vs actual per day, and the replica-hours difference by phase (module doc)."""
    days = day.steps * day.step / 86_400
    rate = per_minute(day.values["requests_per_second"], day.step)
    a_serving = per_minute(day.values["replicas_available"], day.step)
    a_starting = np.maximum(per_minute(day.values["replicas_desired"], day.step) - a_serving, 0)
    n = min(len(rate), len(result.minute_ready))
    rate, a_serving, a_starting = rate[:n], a_serving[:n], a_starting[:n]
    f_serving = result.minute_ready[:n]
    f_starting = np.maximum(result.minute_desired[:n] - f_serving, 0)
    loaded = rate > 0
    phases_h = {
        "capacity": float(np.sum((a_serving - f_serving)[loaded])) / 60 / days,
        "cold_start": float(np.sum(a_starting - f_starting)) / 60 / days,
        "idle": float(np.sum((a_serving - f_serving)[~loaded])) / 60 / days,
    }
    f_hours = float(np.sum(f_serving + f_starting)) / 60 / days
    a_hours = float(np.sum(a_serving + a_starting)) / 60 / days
    per_hour = result.gpu_cost_usd_per_day / f_hours if f_hours else 0.0
    requests = np.nan_to_num(day.values["requests_per_second"])
    miss = day.values["ttft_miss_ratio"]
    ok = np.isfinite(miss)
    a_miss = (
        float(np.sum(miss[ok] * requests[ok]) / np.sum(requests[ok]) * 100) if requests[ok].sum() else 0.0
    )
    cost = day.values.get("cost_dollars_per_hour")
    a_cost = float(np.nansum(cost) * day.step / 3600 / days) if cost is not None else None
    return {
        "forecast": {
            "cost_usd_per_day": rnd(result.gpu_cost_usd_per_day, 2),
            "slo_miss_pct": rnd(result.slo_violation_pct, 3),
            "replica_hours_per_day": rnd(f_hours, 2),
        },
        "actual": {
            "cost_usd_per_day": None if a_cost is None else rnd(a_cost, 2),
            "slo_miss_pct": rnd(a_miss, 3),
            "replica_hours_per_day": rnd(a_hours, 2),
        },
        "actual_cost_missing": day.missing.get("cost_dollars_per_hour"),
        "difference_by_phase": {
            k: {"replica_hours_per_day": rnd(h, 2), "usd_per_day": rnd(h * per_hour, 2)}
            for k, h in phases_h.items()
        },
        "usd_per_replica_hour": rnd(per_hour, 4),
    }


def forecast_entry(cfg: StackConfig, model: str, usd_per_day: float, day: datetime) -> dict[str, Any]:
    """The stack file's `costs.forecasts` entry for this forecast: the alert compares the model's actual
    $/day with it, and its configHash (schema.forecast_config_hash) makes it stale once the model changes."""
    m = next(m for m in cfg.models if m.name == model)
    return {
        "model": model,
        "usdPerDay": usd_per_day,
        "configHash": forecast_config_hash(m, cfg.pool(m.node_pool), cfg.environment),
        "source": f"replay {day:%Y-%m-%d}",
    }


def render(title: str, cmp: dict[str, Any]) -> str:
    f, a = cmp["forecast"], cmp["actual"]
    rows = [("cost $/day", "cost_usd_per_day", 2), ("SLO misses %", "slo_miss_pct", 3)]
    rows.append(("replica-hours/day", "replica_hours_per_day", 2))
    lines = [title, f"{'':20}{'forecast':>12}{'actual':>12}{'difference':>12}"]
    for label, key, digits in rows:
        fv, av = f[key], a[key]
        diff = f"{rnd(av - fv, digits):+.{digits}f}" if av is not None else "-"
        actual = f"{av:.{digits}f}" if av is not None else "-"
        lines.append(f"{label:20}{fv:>12.{digits}f}{actual:>12}{diff:>12}")
    if cmp["actual_cost_missing"]:
        lines.append(f"actual cost unknown: {cmp['actual_cost_missing']}; the forecast is shown alone")
    lines.append(
        f"difference by phase (replica-hours/day; $ at the forecast's ${cmp['usd_per_replica_hour']:.2f}/replica-hour):"
    )
    what = {
        "capacity": "serving above forecast while loaded",
        "cold_start": "starting above forecast",
        "idle": "serving with no load",
    }
    for key, label in what.items():
        d = cmp["difference_by_phase"][key]
        lines.append(
            f"  {key:11} {d['replica_hours_per_day']:+8.2f} h  {d['usd_per_day']:+9.2f} $  ({label})"
        )
    entry = ", ".join(f"{k}: {json.dumps(v)}" for k, v in cmp["forecast_entry"].items())
    lines.append(f"costs.forecasts entry of this forecast (the stack file's cost alert): {{{entry}}}")
    return "\n".join(lines)


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    cfg, _, mp = stack_model(args.stack, args.model)
    if args.prometheus is not None:
        if args.date is None:
            raise ValueError("--prometheus needs --date YYYY-MM-DD (the UTC day to replay)")
        if args.step <= 0 or 86_400 % args.step:
            raise ValueError(f"--step {args.step}; allowed: seconds > 0 dividing 86400 (e.g. 60)")
        start, end = day_range(args.date)
        doc = replay_data.fetch(args.prometheus, mp, start, end, args.step)
        if args.save:
            Path(args.save).write_text(json.dumps(doc))
        day = replay_data.parse(doc, args.prometheus)
    else:
        for flag in ("date", "save"):
            if getattr(args, flag) is not None:
                raise ValueError(f"--{flag} applies to --prometheus; an export holds its own day")
        day = replay_data.read_export(args.export)
    if day.model and day.model != mp.model.served_model_name:
        raise ValueError(
            f"{args.export or args.prometheus} model: {day.model!r}; the stack's model is "
            f"{mp.model.served_model_name!r} (choose it with --model)"
        )
    stack_plan, result = forecast(args.stack, args.model, day, args.seed)
    cmp = compare(day, result)
    start = datetime.fromtimestamp(day.start, tz=UTC)
    cmp["forecast_entry"] = forecast_entry(cfg, mp.name, cmp["forecast"]["cost_usd_per_day"], start)
    if args.json:
        print(json.dumps({"model": stack_plan.model_name, "start": start.isoformat(), **cmp}, indent=2))
    else:
        title = (
            f"replay {stack_plan.model_name} from {start:%Y-%m-%d %H:%M} UTC: forecast ({DEPLOYED}) vs actual"
        )
        print(render(title, cmp))
    return 0
