"""An upgrade preview as Markdown (the terminal's text, and the page committed with a bump) or as JSON."""

from __future__ import annotations

from typing import Any

from llm_platform.cli.diff import shown_pair
from llm_platform.tools.upgrade.preview import Fields, Preview

FIELDS_SHOWN = 12  # per object; the JSON has them all


def _fields(fields: Fields, indent: str = "  ") -> list[str]:
    lines = []
    for path, before, after in fields[:FIELDS_SHOWN]:
        old, new = shown_pair(before, after, 70)
        lines.append(f"{indent}- `{path}`: {old} -> {new}")
    if len(fields) > FIELDS_SHOWN:
        lines.append(f"{indent}- ... {len(fields) - FIELDS_SHOWN} more fields (--json has them all)")
    return lines


def moves(preview: Preview) -> list[str]:
    return [f"- {name}: {old} -> {new}" for name, (old, new) in preview.candidates.moves.items()]


def markdown(preview: Preview) -> str:
    """The preview of one stack, section by section."""
    lines = [f"## Stack `{preview.stack}`", "", "### Helm releases"]
    for release, (old, new, values) in preview.releases.items():
        moved = f"{old} -> {new}" if old != new else f"{old} (values only)"
        lines.append(f"- `{release}`: chart {moved}")
        lines += _fields(values)
    if not preview.releases:
        lines.append("- no release changes")
    lines += ["", "### Objects"]
    lines += [f"- added: `{label}`" for label in preview.added]
    lines += [f"- removed: `{label}`" for label in preview.removed]
    for label, fields in preview.changed.items():
        lines.append(f"- changed: `{label}`")
        lines += _fields(fields)
    if not (preview.added or preview.removed or preview.changed):
        lines.append("- no object changes")
    lines += ["", "### CRDs at the candidate tags"]
    for read in preview.crd_reads:
        if read.origin:
            lines.append(
                f"- `{read.source.file}` @ {read.source.tag}: read from {read.origin}, sha256 {read.sha256}"
            )
        else:
            lines.append(f"- `{read.source.file}` @ {read.source.tag}: NOT CHECKED: {read.why}")
    if not preview.crd_reads:
        lines.append("- the candidates move no CRD file")
    lines += ["", "### CRD schema changes that can refuse an object"]
    for change, used in preview.crd_changes:
        hit = f" (used by {', '.join(used)})" if used else ""
        lines.append(f"- {change.line()}{hit}")
    if not preview.crd_changes:
        lines.append("- none in the CRDs read")
    lines += ["", "### The render against the candidate CRDs"]
    lines += [f"- REFUSED: {p}" for p in preview.rejected] or ["- every custom object passes"]
    if any(not read.origin for read in preview.crd_reads):
        lines.append(
            "- (a CRD file not read keeps its pinned schema here: its objects are not checked against the candidate)"
        )
    lines += ["", "### Known breaking changes (ledger)"]
    for entry, hits in preview.ledger:
        status = "note" if entry.check is None else "HITS" if hits else "not affected"
        lines.append(
            f"- [{status}] {entry.component} {entry.since}: {entry.summary} ({entry.source}; read: {entry.read_at})"
        )
        lines += [f"  - {hit}" for hit in hits]
    if not preview.ledger:
        lines.append("- no ledger entry for these moves")
    lines += [f"- upstream notes not read: {u.component} {u.version}: {u.why}" for u in preview.unread]
    return "\n".join(lines) + "\n"


def document(previews: list[Preview]) -> str:
    head = ["# Upgrade preview", "", "Candidates:", *moves(previews[0]), "", ""] if previews else []
    return "\n".join(head) + "\n".join(markdown(p) for p in previews)


def to_json(preview: Preview) -> dict[str, Any]:
    def fields(items: Fields) -> list[dict[str, Any]]:
        return [{"path": p, "before": b, "after": a} for p, b, a in items]

    return {
        "stack": preview.stack,
        "moves": {k: {"pinned": o, "candidate": n} for k, (o, n) in preview.candidates.moves.items()},
        "helm_releases": {
            r: {"version": {"before": o, "after": n}, "values": fields(v)} for r, (o, n, v) in preview.releases.items()
        },
        "objects": {
            "added": preview.added,
            "removed": preview.removed,
            "changed": {label: fields(f) for label, f in preview.changed.items()},
        },
        "crd_files": [
            {"file": r.source.file, "tag": r.source.tag, "origin": r.origin, "sha256": r.sha256, "unread": r.why}
            for r in preview.crd_reads
        ],
        "crd_changes": [
            {"kind": c.kind, "apiVersion": c.api_version, "path": c.path, "change": c.change, "detail": c.detail,
             "used_by": used}
            for c, used in preview.crd_changes
        ],
        "refused": preview.rejected,
        "ledger": [
            {"component": e.component, "since": e.since, "summary": e.summary, "source": e.source,
             "read_at": e.read_at, "check": e.check, "hits": hits}
            for e, hits in preview.ledger
        ],
        "unread": [{"component": u.component, "version": u.version, "why": u.why} for u in preview.unread],
    }  # fmt: skip
