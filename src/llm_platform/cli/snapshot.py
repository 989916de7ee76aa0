"""One stack's plan as data: what it deploys (every resource and its inputs, from the offline render), its
preflight findings and, for each model, the simulated $/day and SLO misses of its deployed autoscaling on
the stack's expected traffic day (`costs.expectedTraffic`; the seed day at 1x when it names none).

`llm-platform plan` builds it in-process for the working tree. For `plan --against REF` the same file runs
as a script against the ref's own package and program (`python -P snapshot.py STACK_FILE OUT_JSON`, the
ref's `src/` first on the path, its project folder the working directory), so a change to the components
shows in the objects. It therefore imports only engines every version has: `tools.render.evaluate`,
`tools.preflight` (`view.from_mocks`, `run.run`), `simulator.search.stacks.stack_run`,
`simulator.day.engine.simulate`, `simulator.traffic.traffic.load` and `config.loader`.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from llm_platform.config.loader import Stack, load_stack, stack_arg, stack_file, stack_name
from llm_platform.tools import render

FORMAT = 1  # the plan document's version: a previous plan's JSON of another format is refused
SEED = 0  # the arrivals' seed: the same day for both sides of a comparison
DEFAULT_DAY = "builtin:seed-day"
DEPLOYED = "stack-config"  # the simulator's strategy for the stack's own ScaledObject

Progress = Callable[[str], None]


def label(resource: dict[str, Any]) -> str:
    """How an object is named to a reader: `Deployment model-a/vllm` for a Kubernetes object, else
    `<type> <name>`."""
    inputs = resource["inputs"]
    if resource["type"].startswith("kubernetes:") and isinstance(inputs.get("metadata"), dict):
        meta = inputs["metadata"]
        if "kind" in inputs and "name" in meta:
            where = f"{meta['namespace']}/" if meta.get("namespace") else ""
            return f"{inputs['kind']} {where}{meta['name']}"
    return f"{resource['type']} {resource['name']}"


def objects(resources: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every registered resource by `type::name` (its parent's too when two share one)."""
    out: dict[str, dict[str, Any]] = {}
    for r in resources:
        key = f"{r['type']}::{r['name']}"
        if key in out:
            key = f"{key}@{r['parent']}"
        out[key] = {"label": label(r), "inputs": r["inputs"]}
    return out


def expected_traffic(stack: Stack, cfg: Any, model: str) -> dict[str, Any]:
    """The day a model is planned on: its `costs.expectedTraffic` entry, else the seed day at 1x (`stated`
    false). A file's path is relative to the stack file."""
    entries = {t.model: t for t in getattr(cfg.costs, "expected_traffic", [])}
    entry = entries.get(model)
    if entry is None:
        return {"day": DEFAULT_DAY, "scale": 1.0, "stated": False}
    return {"day": entry.day, "scale": entry.scale, "stated": True}


def forecast(stack: Stack, cfg: Any, model: str) -> dict[str, Any]:
    """A model's simulated day as deployed: $/day of its GPU nodes and the share of requests missing its SLO."""
    from llm_platform.simulator.day.engine import simulate
    from llm_platform.simulator.search.stacks import stack_run
    from llm_platform.simulator.traffic.traffic import load

    day = expected_traffic(stack, cfg, model)
    spec = day["day"]
    if not spec.startswith("builtin:"):
        spec = str(stack_file(stack).resolve().parent / spec)
    run = stack_run(stack, model, load(spec, SEED, None, day["scale"]), SEED)
    deployed = next(s for s in run.strategies if s.name == DEPLOYED)
    result = simulate(run.setup.traffic, run.setup.table, deployed, run.setup.config)
    return {
        "model": model,
        "traffic": day,
        "instance": run.instance.instance_type,
        "usd_per_day": round(float(result.gpu_cost_usd_per_day), 2),
        "slo_miss_pct": round(float(result.slo_violation_pct), 3),
        "requests": int(result.requests),
        "p95_ttft_ms": round(float(result.p95_ttft_ms), 1),
        "peak_replicas": int(result.peak_replicas),
    }


def snapshot(stack: Stack, progress: Progress | None = None) -> dict[str, Any]:
    """The plan document of a stack (a name or a stack file); raises ConfigError on a bad stack file."""
    from llm_platform.tools.preflight.run import run as preflight
    from llm_platform.tools.preflight.view import from_mocks

    step = progress or (lambda _what: None)
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    step("schema")
    cfg = load_stack(stack)
    step("render")
    rendered = render.evaluate(stack)
    seconds["render"] = time.perf_counter() - started
    mark = time.perf_counter()
    step("preflight")
    findings = preflight(from_mocks(stack, rendered.mocks))
    seconds["preflight"] = time.perf_counter() - mark
    mark = time.perf_counter()
    models = []
    for m in cfg.models:
        step(f"forecast {m.name}")
        models.append(forecast(stack, cfg, m.name))
    seconds["forecast"] = time.perf_counter() - mark
    seconds["total"] = time.perf_counter() - started
    return {
        "format": FORMAT,
        "stack": stack_name(stack),
        "stack_file": stack_file(stack).name,
        "environment": cfg.environment.value,
        "render": {
            "resources": len(rendered.resources),
            "manifests": len(rendered.manifests),
            "helm_releases": len(rendered.helm),
        },
        "objects": objects(rendered.resources),
        "preflight": [asdict(f) for f in findings],
        "models": models,
        "seconds": {k: round(v, 2) for k, v in seconds.items()},
    }


def empty(stack: str) -> dict[str, Any]:
    """The plan of a stack that does not exist yet (its file is new in the change): nothing deployed."""
    return {
        "format": FORMAT,
        "stack": stack,
        "stack_file": None,
        "environment": None,
        "render": {"resources": 0, "manifests": 0, "helm_releases": 0},
        "objects": {},
        "preflight": [],
        "models": [],
        "seconds": {},
    }


if __name__ == "__main__":  # the ref's side of `plan --against REF`
    Path(sys.argv[2]).write_text(json.dumps(snapshot(stack_arg(sys.argv[1]))))
