"""One stack's upgrade preview: the render at the pins against the render with the candidates, object by
object (Helm releases' versions and values, objects added, changed, removed), the CRD schema changes that
can refuse an object, the candidate render checked against the candidate CRDs (validate_render's checks),
and the ledger of known breaking changes (facts/breaking_changes.py) run against it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

import llm_platform
from llm_platform.cli.diff import MISSING, flatten
from llm_platform.config.loader import Stack, load_stack, stack_name
from llm_platform.facts import breaking_changes, versions
from llm_platform.facts.addons import resolve_ref
from llm_platform.facts.breaking_changes import BreakingChange, Unread
from llm_platform.tools import render, validate_render
from llm_platform.tools.upgrade import candidates as candidates_
from llm_platform.tools.upgrade import crd_diff
from llm_platform.tools.upgrade.candidates import Candidates, CrdRead
from llm_platform.tools.upgrade.checks import RenderView, version

Fields = list[tuple[str, Any, Any]]  # path, before (MISSING if absent), after


@dataclass
class Preview:
    stack: str
    candidates: Candidates
    releases: dict[str, tuple[str, str, Fields]] = field(default_factory=dict)  # release -> versions, values
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: dict[str, Fields] = field(default_factory=dict)
    crd_reads: list[CrdRead] = field(default_factory=list)
    crd_changes: list[tuple[crd_diff.SchemaChange, list[str]]] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    ledger: list[tuple[BreakingChange, list[str]]] = field(default_factory=list)
    unread: list[Unread] = field(default_factory=list)

    @property
    def blocking(self) -> bool:
        """Whether the candidate render would be refused or a known breaking change hits it."""
        return bool(self.rejected or any(hits for entry, hits in self.ledger if entry.check))


@contextmanager
def candidate_program(candidates: Candidates) -> Iterator[None]:
    """The stack program as it runs with the candidates: `platform_args` adds their `addon_versions` (the
    stack file has no key for them: they are an argument of `LlmPlatform`), and each moved pin of
    facts/versions.py reads its candidate value in every module of the package that imported it."""
    original = llm_platform.platform_args

    def with_versions(values: dict[str, Any], **secrets: Any) -> Any:
        args = original(values, **secrets)
        args["addon_versions"] = {**(args.get("addon_versions") or {}), **candidates.addon_versions}
        return args

    pinned_values = {getattr(versions, name): value for name, value in candidates.pins.items()}
    patched: list[tuple[object, str, object]] = [(llm_platform, "platform_args", original)]
    llm_platform.platform_args = with_versions  # type: ignore[assignment]
    for name, value in candidates.pins.items():
        pinned = getattr(versions, name)
        for module in [m for n, m in list(sys.modules.items()) if n.startswith("llm_platform") and m]:
            if getattr(module, name, None) == pinned:
                patched.append((module, name, pinned))
                setattr(module, name, value)
    defaults = _schema_defaults(pinned_values)
    try:
        yield
    finally:
        for owner, name, value in reversed(patched):
            setattr(owner, name, value)
        _schema_defaults({new: old for old, new in defaults.items()})


def _schema_models() -> list[type[BaseModel]]:
    """The package's pydantic models, parents after the models they were defined from."""
    found: list[type[BaseModel]] = []

    def walk(cls: type[BaseModel]) -> None:
        for sub in cls.__subclasses__():
            if sub.__module__.startswith("llm_platform") and sub not in found:
                found.append(sub)
                walk(sub)

    walk(BaseModel)
    return found


def _schema_defaults(moves: dict[str, str]) -> dict[str, str]:
    """The stack schema's field defaults that are a moved pin (a model's `image` defaults to VLLM_IMAGE) set
    to the candidate, the models rebuilt; returns the moves made."""
    made: dict[str, str] = {}
    models = _schema_models()
    for model in models:
        for info in model.model_fields.values():
            if isinstance(info.default, str) and info.default in moves:
                made[info.default] = moves[info.default]
                info.default = moves[info.default]
    if made:
        for model in models:
            model.model_rebuild(force=True)
    return made


def _label(doc: dict[str, Any]) -> str:
    return f"{doc.get('apiVersion')} {checks_name(doc)}"


def checks_name(doc: dict[str, Any]) -> str:
    meta = doc.get("metadata") or {}
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{doc.get('kind')} {where}{meta.get('name')}"


def field_changes(before: Any, after: Any) -> Fields:
    old, new = flatten(before), flatten(after)
    return [
        (p, old.get(p, MISSING), new.get(p, MISSING))
        for p in sorted(set(old) | set(new))
        if old.get(p, MISSING) != new.get(p, MISSING)
    ]


def compare_renders(out: Preview, pinned: render.Render, candidate: render.Render) -> None:
    """Helm releases (version, values) and objects added, removed and changed, field by field."""
    for release in sorted(set(pinned.helm) | set(candidate.helm)):
        old, new = pinned.helm.get(release), candidate.helm.get(release)
        if old is None or new is None:
            (out.added if old is None else out.removed).append(f"helm release {release}")
            continue
        values = field_changes(old["values"], new["values"])
        if old["version"] != new["version"] or values:
            out.releases[release] = (str(old["version"]), str(new["version"]), values)
    old_docs = {_label(d): d for d in pinned.manifests}
    new_docs = {_label(d): d for d in candidate.manifests}
    out.added += sorted(set(new_docs) - set(old_docs))
    out.removed += sorted(set(old_docs) - set(new_docs))
    for label in sorted(set(old_docs) & set(new_docs)):
        fields = field_changes(old_docs[label], new_docs[label])
        if fields:
            out.changed[label] = fields


def run_ledger(view: RenderView, moves: dict[str, tuple[str, str]]) -> list[tuple[BreakingChange, list[str]]]:
    """The ledger's entries a move crosses (pinned below `since`, candidate at or above it), each with what
    its check finds in the candidate render."""
    found = []
    for entry in breaking_changes.LEDGER:
        if entry.component not in moves:
            continue
        old, new = (version(v) for v in moves[entry.component])
        since = version(entry.since)
        if old is None or new is None or since is None or not old < since <= new:
            continue
        found.append((entry, resolve_ref(entry.check)(view) if entry.check else []))
    return found


def refused(
    docs: list[dict[str, Any]], pinned: crd_diff.Schemas, candidate: crd_diff.Schemas, kubernetes: str
) -> list[str]:
    """The custom objects' problems against the candidate CRDs (validate_render's check: defaults filled in,
    unknown fields refused; a version the candidate no longer serves has no schema) that the pinned CRDs
    did not already report."""
    custom = [d for d in docs if (str(d.get("apiVersion")), str(d.get("kind"))) in pinned | candidate]
    before = set(validate_render.problems(custom, pinned, kubernetes))
    return [p for p in validate_render.problems(custom, candidate, kubernetes) if p not in before]


def preview(
    stack: Stack, candidates: Candidates, crds: Path | None = None, write_to: Path | None = None
) -> Preview:
    """The preview of one stack (two renders under mocks: a few seconds each); `write_to` also keeps the
    candidate render there (`<write_to>/<stack>`, as `llm-platform render` writes it) for the other checks."""
    out = Preview(stack_name(stack), candidates)
    pinned_render = render.evaluate(stack)
    with candidate_program(candidates):
        candidate_render = render.evaluate(stack)
    if write_to is not None:
        write_to.mkdir(parents=True, exist_ok=True)
        render.write(candidate_render, write_to / out.stack)
    compare_renders(out, pinned_render, candidate_render)
    pinned, candidate, out.crd_reads = candidates_.schemas(candidates, crds)
    docs = candidate_render.manifests
    out.crd_changes = [(c, crd_diff.used_by(c, docs)) for c in crd_diff.compare(pinned, candidate)]
    out.rejected = refused(docs, pinned, candidate, load_stack(stack).cluster.kubernetes_version)
    view = RenderView(docs, candidate_render.helm, candidates.versions())
    out.ledger = run_ledger(view, candidates.moves)
    out.unread = [
        u for u in breaking_changes.UNREAD
        if u.component in candidates.moves and version(candidates.moves[u.component][1]) == version(u.version)
    ]  # fmt: skip
    return out
