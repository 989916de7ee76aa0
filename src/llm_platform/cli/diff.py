"""What a change does, from two plan documents (cli/snapshot.py): the objects added, removed and changed
(each changed leaf field with its old and new value), the change in $/day and in SLO misses per model, and
the preflight findings the change adds or clears."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

MISSING = "(absent)"


def flatten(value: Any, path: str = "") -> dict[str, Any]:
    """Leaf fields by path: `spec.template.spec.containers[name=vllm].args[3]`. A list whose items are all
    objects with a `name` is keyed by name, so an insertion does not shift every later item."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, item in value.items():
            out |= flatten(item, f"{path}.{key}" if path else str(key))
        return out
    if isinstance(value, list) and value:
        named = all(isinstance(i, dict) and isinstance(i.get("name"), str) for i in value)
        names = [i["name"] for i in value] if named else []
        keyed = named and len(set(names)) == len(names)
        out = {}
        for i, item in enumerate(value):
            out |= flatten(item, f"{path}[name={item['name']}]" if keyed else f"{path}[{i}]")
        return out
    return {path: value}


def shown(value: Any, width: int = 90) -> str:
    """A field's value on one line, cut to `width`."""
    text = MISSING if value is MISSING else json.dumps(value, sort_keys=True)
    return text if len(text) <= width else text[: width - 1] + "…"


def shown_pair(before: Any, after: Any, width: int = 90) -> tuple[str, str]:
    """Both values of a changed field on one line each; two long strings start at their first difference."""
    old, new = shown(before, 10**6), shown(after, 10**6)
    if max(len(old), len(new)) > width and isinstance(before, str) and isinstance(after, str):
        same = next(
            (i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), min(len(old), len(new))
        )
        cut = max(same - 20, 0)
        if cut > 0:
            old, new = "…" + old[cut:], "…" + new[cut:]
    return (
        old if len(old) <= width else old[: width - 1] + "…",
        new if len(new) <= width else new[: width - 1] + "…",
    )


@dataclass
class Changed:
    label: str
    fields: list[tuple[str, Any, Any]]  # path, before (MISSING if absent), after


@dataclass
class ModelDelta:
    model: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None

    def _value(self, side: dict[str, Any] | None, key: str) -> float:
        return float(side[key]) if side else 0.0

    @property
    def usd_delta(self) -> float:
        return self._value(self.after, "usd_per_day") - self._value(self.before, "usd_per_day")

    @property
    def miss_delta(self) -> float | None:
        if self.before is None or self.after is None:
            return None
        return self.after["slo_miss_pct"] - self.before["slo_miss_pct"]


@dataclass
class Comparison:
    against: str
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[Changed] = field(default_factory=list)
    models: list[ModelDelta] = field(default_factory=list)
    new_findings: list[dict[str, Any]] = field(default_factory=list)
    cleared_findings: list[dict[str, Any]] = field(default_factory=list)
    usd_before: float = 0.0
    usd_after: float = 0.0

    @property
    def usd_delta(self) -> float:
        return self.usd_after - self.usd_before

    def to_json(self) -> dict[str, Any]:
        return {
            "against": self.against,
            "objects": {
                "added": self.added,
                "removed": self.removed,
                "changed": [
                    {
                        "object": c.label,
                        "fields": [{"path": p, "before": b, "after": a} for p, b, a in c.fields],
                    }
                    for c in self.changed
                ],
            },
            "usd_per_day": {
                "before": round(self.usd_before, 2),
                "after": round(self.usd_after, 2),
                "change": round(self.usd_delta, 2),
            },
            "models": [
                {
                    "model": m.model,
                    "before": m.before,
                    "after": m.after,
                    "usd_per_day_change": round(m.usd_delta, 2),
                    "slo_miss_pct_change": None if m.miss_delta is None else round(m.miss_delta, 3),
                }
                for m in self.models
            ],
            "preflight": {"new": self.new_findings, "cleared": self.cleared_findings},
        }


def _field_changes(before: Any, after: Any) -> list[tuple[str, Any, Any]]:
    old, new = flatten(before), flatten(after)
    paths = sorted(set(old) | set(new))
    return [
        (p, old.get(p, MISSING), new.get(p, MISSING))
        for p in paths
        if old.get(p, MISSING) != new.get(p, MISSING)
    ]


def _finding_key(f: dict[str, Any]) -> tuple[str, str, str, str]:
    return (f["severity"], f["check"], f["object"], f["field"])


def compare(before: dict[str, Any], after: dict[str, Any], against: str) -> Comparison:
    """`after` (this change) against `before` (the ref or the previous plan)."""
    out = Comparison(against)
    old, new = before["objects"], after["objects"]
    out.added = sorted(new[k]["label"] for k in set(new) - set(old))
    out.removed = sorted(old[k]["label"] for k in set(old) - set(new))
    for key in sorted(set(old) & set(new), key=lambda k: new[k]["label"]):
        if old[key]["inputs"] != new[key]["inputs"]:
            out.changed.append(
                Changed(new[key]["label"], _field_changes(old[key]["inputs"], new[key]["inputs"]))
            )
    models_before = {m["model"]: m for m in before["models"]}
    models_after = {m["model"]: m for m in after["models"]}
    names = [m["model"] for m in after["models"]] + [m for m in models_before if m not in models_after]
    out.models = [ModelDelta(n, models_before.get(n), models_after.get(n)) for n in names]
    out.usd_before = sum(m["usd_per_day"] for m in before["models"])
    out.usd_after = sum(m["usd_per_day"] for m in after["models"])
    keys_before = {_finding_key(f) for f in before["preflight"]}
    keys_after = {_finding_key(f) for f in after["preflight"]}
    out.new_findings = [
        f for f in after["preflight"] if _finding_key(f) not in keys_before and f["severity"] != "info"
    ]
    out.cleared_findings = [
        f for f in before["preflight"] if _finding_key(f) not in keys_after and f["severity"] != "info"
    ]
    return out
