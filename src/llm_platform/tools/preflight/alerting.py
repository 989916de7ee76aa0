"""Will an alert reach someone, and can the latency-SLO alerts tell a breach from healthy traffic?

- staging and prod: Alertmanager's root route must end at a receiver with a notifier (the chart's default
  routes everything to `null`), and a credential file it reads must come from a mounted Secret the stack makes;
- every latency SLO, and every rule over vLLM's TTFT/ITL histograms, must sit on a bucket boundary: between
  two boundaries `histogram_quantile` interpolates and an `le` that does not exist selects nothing.
"""

from __future__ import annotations

import re

from llm_platform.plan import promql
from llm_platform.tools.preflight.findings import Finding
from llm_platform.tools.preflight.view import RenderView

CHECK = "alerting"
SECRETS_DIR = "/etc/alertmanager/secrets/"


def _neighbours(histogram: str, seconds: float) -> str:
    bounds = promql.BUCKETS[histogram]
    below = max((b for b in bounds if b < seconds), default=0.0)
    above = min((b for b in bounds if b > seconds), default=float("inf"))
    return f"({below:g}, {above:g}]"


def _on_boundary(histogram: str, seconds: float) -> bool:
    return any(abs(b - seconds) < 1e-9 for b in promql.BUCKETS[histogram])


def receivers(view: RenderView) -> list[Finding]:
    if view.environment == "dev":
        return []
    release = next((r for r in view.releases.values() if r.chart == "kube-prometheus-stack"), None)
    if release is None:
        return [
            Finding(
                "blocker",
                CHECK,
                "cluster",
                "alertmanager",
                "no kube-prometheus-stack release: no alert is sent",
            )
        ]
    obj = f"Helm release {release.name}"
    config = (release.values.get("alertmanager") or {}).get("config")
    if not config:
        return [Finding("blocker", CHECK, obj, "values.alertmanager.config",
                        f"unset: the chart's default routes every alert to the 'null' receiver ({view.environment})")]  # fmt: skip
    route = config.get("route") or {}
    by_name = {r.get("name"): r for r in config.get("receivers") or []}
    target = by_name.get(route.get("receiver"))
    notifiers = {k: v for k, v in (target or {}).items() if k.endswith("_configs") and v}
    if not notifiers:
        return [Finding("blocker", CHECK, obj, "values.alertmanager.config.route.receiver",
                        f"{route.get('receiver')!r} has no notifier: every {view.environment} alert notifies nobody")]  # fmt: skip
    out = []
    mounted = set((release.values.get("alertmanager") or {}).get("alertmanagerSpec", {}).get("secrets") or [])
    secrets = {m.name for m in view.of_kind("Secret") if m.namespace == release.namespace}
    for kind, configs in notifiers.items():
        for c in configs:
            for key, path in c.items():
                if not key.endswith("_file") or not str(path).startswith(SECRETS_DIR):
                    continue
                name = str(path)[len(SECRETS_DIR) :].split("/", 1)[0]
                if name not in mounted or name not in secrets:
                    out.append(Finding("blocker", CHECK, obj, f"values.alertmanager.config.receivers.{kind}.{key}",
                                       f"reads {path}, but Secret {name!r} is {'not mounted (alertmanagerSpec.secrets)' if name not in mounted else 'not in the stack'}"))  # fmt: skip
    return out


QUANTILE = re.compile(r"histogram_quantile\(.*?(vllm:[a-z_]+)_bucket.*\)\s*>\s*([0-9.]+)", re.S)
LE = re.compile(r'(vllm:[a-z_]+)_bucket\{[^}]*le=~?"([^"]+)"')


def _rule_thresholds(expr: str) -> list[tuple[str, float, str]]:
    """(histogram, seconds, how) of every vLLM latency-histogram threshold in an expression."""
    found = []
    for histogram, value in QUANTILE.findall(expr):
        found.append((histogram, float(value), "histogram_quantile threshold"))
    for histogram, le in LE.findall(expr):
        first = le.split("|")[0].replace("\\\\", "").replace("\\", "")
        found.append((histogram, float(first), "le matcher"))
    return [f for f in found if f[0] in promql.BUCKETS]


def slo_thresholds(view: RenderView) -> list[Finding]:
    out = []
    for model, slo in sorted(view.slos.items()):
        for histogram, field, seconds in (
            (promql.TTFT, "ttftSeconds", slo[0]),
            (promql.ITL, "itlSeconds", slo[1]),
        ):
            if not _on_boundary(histogram, seconds):
                out.append(Finding("blocker", CHECK, f"model {model}", f"slo.{field}",
                                   f"{seconds:g} s lies inside vLLM's {histogram} bucket {_neighbours(histogram, seconds)}: "
                                   "no alert can tell a request just under it from one just over; use a boundary"))  # fmt: skip
    for rule in view.of_kind("PrometheusRule"):
        for group in rule.body["spec"].get("groups") or []:
            for r in group.get("rules") or []:
                for histogram, seconds, how in _rule_thresholds(str(r.get("expr", ""))):
                    if not _on_boundary(histogram, seconds):
                        name = r.get("alert") or r.get("record")
                        out.append(Finding("blocker", CHECK, rule.ref, f"spec.groups[{group['name']}].{name}",
                                           f"{how} {seconds:g} s lies inside {histogram} bucket "
                                           f"{_neighbours(histogram, seconds)}: "
                                           + ("interpolated, it fires on healthy traffic and misses breaches"
                                              if how.startswith("histogram") else "no such series, it never fires")))  # fmt: skip
    return out


def alerting(view: RenderView) -> list[Finding]:
    return receivers(view) + slo_thresholds(view)
