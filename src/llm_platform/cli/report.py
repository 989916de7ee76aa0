"""How `llm-platform plan` says it: plain text for a terminal or a log, Markdown for the pull-request comment
(`--markdown`), both from the plan document (cli/snapshot.py) and, with `--against`, its comparison
(cli/diff.py)."""

from __future__ import annotations

from typing import Any

from llm_platform.cli.diff import Comparison, shown_pair

MARKER = "<!-- llm-platform-plan:{stack} -->"  # the comment the workflow finds and updates
MAX_OBJECTS = 40  # changed objects listed in full; GitHub refuses a comment over 65,536 characters
MAX_FIELDS = 15  # changed fields listed per object
MAX_NAMES = 60  # added or removed objects named


def day(traffic: dict[str, Any]) -> str:
    """`builtin:seed-day x0.1 (stated)`, or `(assumed: no costs.expectedTraffic entry)`."""
    where = (
        "stated in costs.expectedTraffic" if traffic["stated"] else "assumed: no costs.expectedTraffic entry"
    )
    return f"{traffic['day']} x{traffic['scale']:g} ({where})"


def _blockers(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in plan["preflight"] if f["severity"] == "blocker"]


def _warnings(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in plan["preflight"] if f["severity"] == "warning"]


def _finding(f: dict[str, Any]) -> str:
    return f"{f['severity']} {f['check']} {f['object']} {f['field']}: {f['message']}"


def _usd(value: float, sign: bool = False) -> str:
    return f"{'+' if sign and value >= 0 else '-' if value < 0 else ''}${abs(value):,.2f}"


def _pct(value: float | None, sign: bool = False) -> str:
    return "n/a" if value is None else f"{value:+.2f} pp" if sign else f"{value:.2f} %"


def _headline(plan: dict[str, Any]) -> str:
    r = plan["render"]
    return (
        f"{r['resources']} resources, {r['manifests']} Kubernetes manifests, {r['helm_releases']} Helm releases; "
        f"preflight {len(_blockers(plan))} blocker(s), {len(_warnings(plan))} warning(s); "
        f"forecast {_usd(sum(m['usd_per_day'] for m in plan['models']))}/day"
    )


def _field_lines(cmp: Comparison, limit_objects: int | None) -> list[str]:
    lines = [f"+ {name}" for name in cmp.added[:MAX_NAMES]]
    if len(cmp.added) > MAX_NAMES:
        lines.append(f"+ ... and {len(cmp.added) - MAX_NAMES} more added")
    lines += [f"- {name}" for name in cmp.removed[:MAX_NAMES]]
    if len(cmp.removed) > MAX_NAMES:
        lines.append(f"- ... and {len(cmp.removed) - MAX_NAMES} more removed")
    changed = cmp.changed if limit_objects is None else cmp.changed[:limit_objects]
    for c in changed:
        lines.append(f"~ {c.label}")
        for path, before, after in c.fields[:MAX_FIELDS]:
            old, new = shown_pair(before, after)
            lines.append(f"    {path}: {old} -> {new}")
        if len(c.fields) > MAX_FIELDS:
            lines.append(f"    ... and {len(c.fields) - MAX_FIELDS} more fields")
    if len(cmp.changed) > len(changed):
        lines.append(f"~ ... and {len(cmp.changed) - len(changed)} more changed objects")
    return lines


def text(plan: dict[str, Any], cmp: Comparison | None = None) -> str:
    """The plan for a terminal or a log."""
    lines = [f"plan {plan['stack']} ({plan['stack_file']}): {_headline(plan)}", "schema: valid"]
    lines.append(f"preflight: {len(_blockers(plan))} blocker(s), {len(_warnings(plan))} warning(s)")
    lines += [f"  {_finding(f)}" for f in plan["preflight"] if f["severity"] != "info"]
    lines.append("forecast: each model's own autoscaling on a simulated traffic day")
    width = max([len(m["model"]) for m in plan["models"]] + [5])
    for m in plan["models"]:
        lines.append(
            f"  {m['model']:<{width}}  {_usd(m['usd_per_day']):>11}/day  SLO misses {_pct(m['slo_miss_pct']):>8}  "
            f"peak {m['peak_replicas']} replicas on {m['instance']}  day: {day(m['traffic'])}"
        )
    lines.append(f"  {'total':<{width}}  {_usd(sum(m['usd_per_day'] for m in plan['models'])):>11}/day")
    if cmp is not None:
        lines.append(
            f"against {cmp.against}: {len(cmp.added)} added, {len(cmp.changed)} changed, {len(cmp.removed)} "
            f"removed; {_usd(cmp.usd_delta, sign=True)}/day ({_usd(cmp.usd_before)} -> {_usd(cmp.usd_after)})"
        )
        for m in cmp.models:
            lines.append(f"  {m.model}: {_model_change(m.before, m.after)}")
        lines += [f"  new: {_finding(f)}" for f in cmp.new_findings]
        lines += [f"  cleared: {_finding(f)}" for f in cmp.cleared_findings]
        lines += [f"  {line}" for line in _field_lines(cmp, None)]
    s = plan["seconds"]
    lines.append(
        f"planned in {s['total']:.1f} s (render {s['render']:.1f} s, preflight {s['preflight']:.1f} s, "
        f"forecast {s['forecast']:.1f} s)"
    )
    return "\n".join(lines)


def _model_change(before: dict[str, Any] | None, after: dict[str, Any] | None) -> str:
    if before is None and after is not None:
        return f"added: {_usd(after['usd_per_day'])}/day, SLO misses {_pct(after['slo_miss_pct'])}"
    if after is None and before is not None:
        return f"removed: -{_usd(before['usd_per_day'])}/day"
    assert before is not None and after is not None
    return (
        f"{_usd(before['usd_per_day'])} -> {_usd(after['usd_per_day'])}/day "
        f"({_usd(after['usd_per_day'] - before['usd_per_day'], sign=True)}), SLO misses "
        f"{_pct(before['slo_miss_pct'])} -> {_pct(after['slo_miss_pct'])} "
        f"({_pct(after['slo_miss_pct'] - before['slo_miss_pct'], sign=True)})"
    )


def markdown(plan: dict[str, Any], cmp: Comparison | None = None) -> str:
    """The pull-request comment: verdict, cost and misses, preflight, objects, each model's day."""
    stack = plan["stack"]
    blockers = _blockers(plan)
    verdict = (
        f"**{len(blockers)} preflight blocker(s): `pulumi up` will not finish**" if blockers else "No blocker"
    )
    out = [MARKER.format(stack=stack), f"### llm-platform plan: {stack}", ""]
    against = f" against `{cmp.against}`" if cmp else ""
    out += [f"{verdict}{against}. {_headline(plan)}.", ""]
    out += ["| model | traffic day | $/day | SLO misses | peak replicas |", "|---|---|---:|---:|---:|"]
    deltas = {m.model: m for m in cmp.models} if cmp else {}
    for m in plan["models"]:
        usd, miss = _usd(m["usd_per_day"]), _pct(m["slo_miss_pct"])
        d = deltas.get(m["model"])
        if d is not None and d.before is None:
            usd, miss = f"{usd} (new)", f"{miss} (new)"
        elif d is not None:
            usd = f"{usd} ({_usd(d.usd_delta, sign=True)})"
            miss = f"{miss} ({_pct(d.miss_delta, sign=True)})"
        out.append(f"| {m['model']} | {day(m['traffic'])} | {usd} | {miss} | {m['peak_replicas']} |")
    for d in cmp.models if cmp else []:
        if d.after is None and d.before is not None:
            out.append(f"| ~~{d.model}~~ (removed) | | {_usd(-d.before['usd_per_day'], sign=True)} | | |")
    total = _usd(sum(m["usd_per_day"] for m in plan["models"]))
    change = f" ({_usd(cmp.usd_delta, sign=True)}, was {_usd(cmp.usd_before)})" if cmp else ""
    out += [f"| **total** | | **{total}**{change} | | |", ""]
    out += _markdown_preflight(plan, cmp)
    if cmp is not None:
        out += [
            f"**Objects**: {len(cmp.added)} added, {len(cmp.changed)} changed, {len(cmp.removed)} removed",
            "",
        ]
        lines = _field_lines(cmp, MAX_OBJECTS)
        if lines:
            out += [
                "<details><summary>what changes</summary>",
                "",
                "```diff",
                *lines,
                "```",
                "",
                "</details>",
                "",
            ]
    out.append(
        "<sub>Offline: the render under Pulumi mocks, preflight, and the simulator's day of each model's own "
        "autoscaling (`llm-platform plan`).</sub>"
    )
    return "\n".join(out) + "\n"


def _markdown_preflight(plan: dict[str, Any], cmp: Comparison | None) -> list[str]:
    out = [f"**Preflight**: {len(_blockers(plan))} blocker(s), {len(_warnings(plan))} warning(s)"]
    if cmp is not None:
        out[0] += f"; {len(cmp.new_findings)} new, {len(cmp.cleared_findings)} cleared by this change"
    shown_findings = [f for f in plan["preflight"] if f["severity"] != "info"]
    new = [_finding(f) for f in cmp.new_findings] if cmp else []
    out.append("")
    for f in shown_findings:
        line = _finding(f)
        out.append(f"- {'**new** ' if line in new else ''}`{line}`")
    out += [f"- cleared: ~~`{_finding(f)}`~~" for f in (cmp.cleared_findings if cmp else [])]
    return [*out, ""] if len(out) > 2 else [out[0], ""]
