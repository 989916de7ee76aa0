"""Candidate versions (`--to NAME=VERSION`) as the render and the CRD comparison take them, and the candidate
CRD files read at the candidate tags.

NAME is one of:
- an add-on's name (facts/addons.py): its charts' version (`LlmPlatformArgs.addon_versions`, through
  `version_of`), and the tag of the CRD files its record pins at the chart's own version;
- the name of a repository whose CRD files a record pins at a tag of their own (`gateway-api`,
  `gateway-api-inference-extension`, `prometheus-operator`): those files' tag only (what the add-on's CRD
  chart installs at the candidate version);
- a pin of facts/versions.py (`VLLM_IMAGE`, `VALKEY_IMAGE`, ...): its value in every module that read it.
"""

from __future__ import annotations

import hashlib
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from llm_platform.facts import addons, versions
from llm_platform.facts.addons import Addon
from llm_platform.tools import validate_render
from llm_platform.tools.upgrade.crd_diff import Schemas
from llm_platform.tools.validate_render import CrdSource


class CandidateError(ValueError):
    """A `--to` that names nothing the platform pins, or a malformed one."""


@dataclass
class Candidates:
    """What the preview moves: each component's pinned and candidate version, and how the render takes it."""

    moves: dict[str, tuple[str, str]] = field(default_factory=dict)  # component -> (pinned, candidate)
    addon_versions: dict[str, str] = field(default_factory=dict)
    crd_tags: dict[str, str] = field(default_factory=dict)  # CRD repository -> candidate tag
    pins: dict[str, str] = field(default_factory=dict)  # facts/versions.py name -> candidate value

    def versions(self) -> dict[str, str]:
        """Every component's version in the candidate render (the ledger's checks read companions' too)."""
        now = {record.name: record.version for record in addons.ADDONS}
        now |= {_short(f.repo): f.tag for record in addons.ADDONS for f in record.crd_files}
        return now | {name: new for name, (_, new) in self.moves.items()}


def _short(repo: str) -> str:
    return repo.rsplit("/", 1)[-1]


def _follows_chart(record: Addon) -> set[str]:
    """The CRD repositories whose files the record pins at its chart's version."""
    tag = record.version if record.version.startswith("v") else f"v{record.version}"
    return {f.repo for f in record.crd_files if f.tag == tag}


def _pins() -> dict[str, str]:
    return {k: v for k, v in vars(versions).items() if k.isupper() and isinstance(v, str)}


def parse(specs: Iterable[str], records: Iterable[Addon] | None = None) -> Candidates:
    """`NAME=VERSION` strings as candidates; an unknown NAME lists what can be moved."""
    records = tuple(addons.ADDONS if records is None else records)
    by_name = {r.name: r for r in records}
    repos = {_short(f.repo): (f.repo, f.tag) for r in records for f in r.crd_files}
    pins = _pins()
    out = Candidates()
    for spec in specs:
        name, sep, value = spec.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name or not value:
            raise CandidateError(f"--to {spec!r}: expected NAME=VERSION, e.g. keda=2.21.1")
        if name in by_name:
            record = by_name[name]
            out.moves[name] = (record.version, value)
            out.addon_versions[name] = value
            tag = value if value.startswith("v") else f"v{value}"
            out.crd_tags |= {repo: tag for repo in _follows_chart(record)}
        elif name in repos:
            out.moves[name] = (repos[name][1], value)
            out.crd_tags[repos[name][0]] = value
        elif name in pins:
            out.moves[name] = (pins[name], value)
            out.pins[name] = value
        else:
            known = sorted(by_name) + sorted(set(repos) - set(by_name)) + ["a pin of facts/versions.py"]
            raise CandidateError(f"--to {spec!r}: {name!r} is not pinned here; names: {', '.join(known)}")
    return out


@dataclass(frozen=True)
class CrdRead:
    """Where one candidate CRD file came from, or why it could not be read."""

    source: CrdSource  # at the candidate tag; its sha256 is the pinned file's (the candidate has none yet)
    origin: str  # "DIR/file", the URL, or "" when unavailable
    sha256: str = ""
    why: str = ""


def candidate_sources(candidates: Candidates) -> list[CrdSource]:
    """The pinned CRD files whose tag the candidates move, at the candidate tag."""
    return [
        replace(s, tag=candidates.crd_tags[s.repo])
        for s in validate_render.crd_sources()
        if s.repo in candidates.crd_tags and candidates.crd_tags[s.repo] != s.tag
    ]


def read_candidate(source: CrdSource, folder: Path | None) -> tuple[bytes | None, CrdRead]:
    """A candidate CRD file from `folder` (its upstream file name), else downloaded from the tag."""
    if folder is not None:
        path = folder / source.file
        if not path.is_file():
            return None, CrdRead(source, "", why=f"not in {folder} (offline: put {source.url} there)")
        body = path.read_bytes()
        return body, CrdRead(source, str(path), hashlib.sha256(body).hexdigest())
    try:
        with urllib.request.urlopen(source.url, timeout=30) as response:
            body = response.read()
    except OSError as exc:
        return None, CrdRead(source, "", why=f"download failed ({exc}); offline, pass --crds DIR")
    return body, CrdRead(source, source.url, hashlib.sha256(body).hexdigest())


def schemas(candidates: Candidates, folder: Path | None) -> tuple[Schemas, Schemas, list[CrdRead]]:
    """The pinned CRDs' schemas, the candidate ones (a CRD file the candidates do not move, or that cannot be
    read, keeps its pinned schema) and how each moved file was read."""
    pinned: Schemas = {}
    by_file: dict[str, Schemas] = {}
    for source in validate_render.crd_sources():
        found = validate_render.schemas_of(
            yaml.load_all(validate_render.bundled_bytes(source), Loader=validate_render.SAFE_LOADER)
        )
        by_file[source.file] = found
        pinned |= found
    candidate = dict(pinned)
    reads = []
    for source in candidate_sources(candidates):
        body, read = read_candidate(source, folder)
        reads.append(read)
        if body is None:
            continue
        for key in by_file[source.file]:
            candidate.pop(key, None)
        candidate |= validate_render.schemas_of(yaml.load_all(body, Loader=validate_render.SAFE_LOADER))
    return pinned, candidate, reads
