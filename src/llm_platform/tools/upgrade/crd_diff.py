"""Old against new CRD schemas: the changes that can make the API server refuse an object it accepted before
(a field removed or renamed, a field newly required, an enum narrowed, a type changed, a served version
gone, a new CEL rule), and which of the render's objects use the field each change touches."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

Schemas = dict[tuple[str, str], dict[str, Any]]  # (apiVersion, kind) -> openAPIV3Schema (validate_render's)


@dataclass(frozen=True)
class SchemaChange:
    """One change of a CRD version's schema that can reject an object the old schema accepted."""

    api_version: str
    kind: str
    path: str  # `spec.rules[].matches[].path`; "" for the version itself
    change: str  # removed | required | enum | type | version | cel
    detail: str

    def line(self) -> str:
        where = f"{self.path}: " if self.path else ""
        return f"{self.kind} {self.api_version}: {where}{self.detail}"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _walk(old: Any, new: Any, path: str) -> Iterator[tuple[str, str, str]]:
    """(path, change, detail) for each refusing change between two schema nodes at `path`."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return
    old_type, new_type = old.get("type"), new.get("type")
    if old_type and new_type and old_type != new_type:
        yield path, "type", f"type {old_type} -> {new_type}"
    if isinstance(old.get("enum"), list) and isinstance(new.get("enum"), list):
        gone = [v for v in old["enum"] if v not in new["enum"]]
        if gone:
            yield path, "enum", f"enum values removed: {', '.join(map(str, gone))}"
    elif isinstance(new.get("enum"), list) and "enum" not in old:
        yield path, "enum", f"now limited to: {', '.join(map(str, new['enum']))}"
    old_rules = {r.get("rule") for r in old.get("x-kubernetes-validations") or [] if isinstance(r, dict)}
    for rule in new.get("x-kubernetes-validations") or []:
        if isinstance(rule, dict) and rule.get("rule") not in old_rules:
            yield (
                path,
                "cel",
                f"new validation rule (CEL, not evaluated here): {rule.get('message') or rule.get('rule')}",
            )
    old_props, new_props = old.get("properties") or {}, new.get("properties") or {}
    if old_props and not new.get("x-kubernetes-preserve-unknown-fields"):
        added = [k for k in new_props if k not in old_props]
        for key in old_props:
            if key not in new_props:
                hint = f" (renamed? new here: {', '.join(added)})" if added else ""
                yield _join(path, key), "removed", f"field removed{hint}"
    newly_required = [k for k in new.get("required") or [] if k not in (old.get("required") or [])]
    for key in newly_required:
        yield _join(path, key), "required", "field now required"
    for key in old_props.keys() & new_props.keys():
        yield from _walk(old_props[key], new_props[key], _join(path, key))
    if isinstance(old.get("items"), dict) and isinstance(new.get("items"), dict):
        yield from _walk(old["items"], new["items"], f"{path}[]")
    if isinstance(old.get("additionalProperties"), dict) and isinstance(
        new.get("additionalProperties"), dict
    ):
        yield from _walk(old["additionalProperties"], new["additionalProperties"], f"{path}{{*}}")


def compare(old: Schemas, new: Schemas, kinds: Iterable[str] | None = None) -> list[SchemaChange]:
    """Every refusing change from `old` to `new` for the CRD kinds both know (or `kinds`), ordered by kind,
    version and path. A version `old` serves that `new` lacks is a change of its own."""
    wanted = set(kinds) if kinds is not None else {kind for _, kind in old} & {kind for _, kind in new}
    found: list[SchemaChange] = []
    for api_version, kind in sorted(k for k in old if k[1] in wanted):
        if (api_version, kind) not in new:
            served = sorted(v for v, k in new if k == kind)
            found.append(
                SchemaChange(
                    api_version, kind, "", "version", f"version no longer served (new: {', '.join(served)})"
                )
            )
            continue
        for path, change, detail in _walk(old[(api_version, kind)], new[(api_version, kind)], ""):
            found.append(SchemaChange(api_version, kind, path, change, detail))
    return sorted(found, key=lambda c: (c.kind, c.api_version, c.path))


def _paths(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(schema-style path, value) of every field of an object: list items as `[]`, as `compare` names them."""
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, _join(path, str(key)))
    elif isinstance(value, list):
        for item in value:
            yield from _paths(item, f"{path}[]")


def _matches(schema_path: str, object_path: str) -> bool:
    """Whether an object's field path is the schema path (`{*}` stands for any map key)."""
    if "{*}" not in schema_path:
        return schema_path == object_path
    head, _, tail = schema_path.partition("{*}")
    if not object_path.startswith(head + "." if head else ""):
        return False
    rest = object_path[len(head) + 1 if head else 0 :]
    key, dot, remainder = rest.partition(".")
    if tail.startswith("."):
        return bool(dot) and _matches(tail[1:], remainder)
    return not tail and bool(key) and not dot


def used_by(change: SchemaChange, docs: Iterable[dict[str, Any]]) -> list[str]:
    """The render's objects the change rejects or touches: the objects of that version and kind (all of them
    when the version goes), those that set a removed or retyped field, that lack a newly required one (when
    its parent is set), or that use a removed enum value."""
    hits: list[str] = []
    for doc in docs:
        if doc.get("apiVersion") != change.api_version or doc.get("kind") != change.kind:
            continue
        if change.change == "version" or _object_uses(change, doc):
            meta = doc.get("metadata") or {}
            where = f"{meta['namespace']}/" if meta.get("namespace") else ""
            hits.append(f"{change.kind} {where}{meta.get('name')}")
    return hits


def _object_uses(change: SchemaChange, doc: dict[str, Any]) -> bool:
    paths = list(_paths(doc))
    if change.change == "required":
        parent = change.path.rpartition(".")[0]
        parents = [v for p, v in paths if _matches(parent, p) and isinstance(v, dict)] if parent else [doc]
        key = change.path.rpartition(".")[2]
        return any(key not in value for value in parents)
    values = [v for p, v in paths if _matches(change.path, p)]
    if change.change == "enum":
        listed = change.detail.partition(": ")[2].split(", ")
        if "removed" in change.detail:
            return any(str(v) in listed for v in values)
        return any(str(v) not in listed for v in values)  # "now limited to": a value outside the list
    return bool(values)
