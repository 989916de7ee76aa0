"""`python -m llm_platform.tools.validate_render <stack> [--json]`: every Kubernetes object of a stack's render against the schema
the cluster will enforce, with nothing but the repository and its pinned versions.

- Custom resources (Karpenter, KEDA, Prometheus Operator, Gateway API, InferencePool, Envoy Gateway, Envoy AI
  Gateway, LeaderWorkerSet) against the openAPIV3Schema of their CRD at the version `facts/versions.py` pins, as the API
  server applies it: schema defaults filled in first, then every field checked; a field the schema does not
  know is a problem (the API server would prune it silently). CEL rules (`x-kubernetes-validations`) are not
  evaluated.
- Core objects with kubernetes-validate (strict) at the stack's `cluster.kubernetesVersion`.
- An object of a kind neither knows is a problem: add its CRD file to its add-on's record (`crd_files`, llm_platform/facts/addons.py).

The CRDs ship with the package (`tools/crds/`, gzipped upstream bytes and `SOURCES.txt`, the URL each came
from), so the check needs no network: each is read only if its sha256 is the pin below and it came from the
tag `facts/versions.py` pins (a version bump without a refresh is refused). `--download` refreshes them:
fetches every pinned CRD from its upstream repository at the pinned tag and refuses one whose sha256 differs
from the pin. `--crds DIR` reads plain `<file>.yaml` files from a folder instead, unverified (a CRD read
before its pin is updated). Helm values are not checked here (that needs each chart's default values:
`.ci/run`'s `check_render.py` does it).
Exit 0: no problem; 1: problems, one line each; 2: bad arguments, a stale render, missing or altered CRDs.
"""

from __future__ import annotations

import copy
import functools
import gzip
import hashlib
import json
import re
import sys
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import jsonschema
import kubernetes_validate
import kubernetes_validate.utils
import yaml

from llm_platform import commandline
from llm_platform.config.loader import load_stack, stack_name
from llm_platform.facts import addons
from llm_platform.facts.addons import Addon

# kubernetes-validate reads and parses a kind's schema and the 1.5 MB `_definitions.json` again for every object
# it validates (~20 ms each); they are files of the installed package, so one parse per process serves every
# object, here and in anything else of the process that calls `kubernetes_validate.validate` (the schemas are
# only read: `referencing` and `jsonschema` never change them)
if not hasattr(kubernetes_validate.utils.schema_contents, "cache_info"):
    kubernetes_validate.utils.schema_contents = functools.cache(kubernetes_validate.utils.schema_contents)


@dataclass(frozen=True)
class CrdSource:
    """One CRD file in its upstream repository at a pinned tag, and the sha256 of its bytes there."""

    repo: str
    tag: str
    path: str
    sha256: str
    kind: str

    @property
    def file(self) -> str:
        return PurePosixPath(self.path).name

    @property
    def url(self) -> str:
        return f"https://raw.githubusercontent.com/{self.repo}/{self.tag}/{self.path}"


def crd_sources(records: Iterable[Addon] | None = None) -> tuple[CrdSource, ...]:
    """The CRD files of every add-on record (llm_platform/facts/addons.py): the CRDs the platform's objects use. A
    version bump there changes the tag; the download then refuses the new file until its sha256 is updated,
    after reading the CRD's changes."""
    return tuple(
        CrdSource(f.repo, f.tag, f.path, f.sha256, f.kind)
        for record in (addons.ADDONS if records is None else records)
        for f in record.crd_files
    )


CRD_SOURCES: tuple[CrdSource, ...] = crd_sources()


class CrdUnavailable(Exception):
    """A CRD file is missing or is not the pinned one."""


# ------------------------------------------------------------------------------------------- the CRDs


# PyYAML's libyaml-backed safe loader where the wheel has it (the same safe constructors, ~10x faster on the
# megabytes of CRD schemas), else the pure-Python one
SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
BUNDLED = Path(__file__).resolve().parent / "crds"  # package data: the pinned CRDs, gzipped
INDEX = "SOURCES.txt"  # one line per bundled CRD: `<url> <sha256>`, written by --download


def fetch(source: CrdSource) -> bytes:
    """The upstream bytes of `source`, refused unless their sha256 is the pinned one."""
    with urllib.request.urlopen(source.url, timeout=60) as response:
        body = response.read()
    digest = hashlib.sha256(body).hexdigest()
    if digest != source.sha256:
        raise CrdUnavailable(
            f"{source.url}: sha256 {digest}, pinned {source.sha256}; after a version bump, read the CRD's "
            "changes and update the pin in its add-on record (llm_platform/facts/addons.py)"
        )
    return body


def refresh(folder: Path = BUNDLED, sources: Iterable[CrdSource] | None = None) -> list[Path]:
    """Download every pinned CRD into `folder` (gzipped, reproducibly) and rewrite its index."""
    bodies = [
        (source, fetch(source)) for source in (crd_sources() if sources is None else sources)
    ]  # all or nothing: verify before writing
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for source, body in bodies:
        path = folder / f"{source.file}.gz"
        path.write_bytes(gzip.compress(body, compresslevel=9, mtime=0))
        written.append(path)
    index = "".join(f"{source.url} {source.sha256}\n" for source, _ in bodies)
    (folder / INDEX).write_text(index)
    return written


def bundled_bytes(source: CrdSource, folder: Path = BUNDLED) -> bytes:
    """A bundled CRD's upstream bytes, refused unless they are the pinned file from the pinned tag."""
    refresh_hint = "refresh with: uv run python -m llm_platform.tools.validate_render <stack> --download"
    index = folder / INDEX
    recorded = dict(line.split() for line in index.read_text().splitlines()) if index.exists() else {}
    path = folder / f"{source.file}.gz"
    if not path.exists():
        raise CrdUnavailable(f"{commandline.shown_path(path)} is missing; {refresh_hint}")
    by_file = {PurePosixPath(url).name: url for url in recorded}
    if by_file.get(source.file) != source.url:
        came_from = by_file.get(source.file, "nowhere recorded")
        raise CrdUnavailable(
            f"{commandline.shown_path(path)} came from {came_from}, not {source.url} (llm_platform/facts/addons.py); {refresh_hint}"
        )
    body = gzip.decompress(path.read_bytes())
    digest = hashlib.sha256(body).hexdigest()
    if digest != source.sha256:
        raise CrdUnavailable(
            f"{commandline.shown_path(path)}: sha256 {digest}, pinned {source.sha256}; {refresh_hint}"
        )
    return body


def load_crds(folder: Path | None = None) -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> openAPIV3Schema of every version of every pinned CRD: the bundled ones, verified,
    or with `folder` the plain files there."""
    if folder is not None:
        missing = [s.file for s in crd_sources() if not (folder / s.file).exists()]
        if missing:
            raise CrdUnavailable(
                f"{commandline.shown_path(folder)} lacks {', '.join(missing)}; leave out --crds to use the bundled CRDs"
            )
    schemas: dict[tuple[str, str], dict[str, Any]] = {}
    for source in crd_sources():
        body = bundled_bytes(source) if folder is None else (folder / source.file).read_bytes()
        found = schemas_of(yaml.load_all(body, Loader=SAFE_LOADER))
        if not any(kind == source.kind for _, kind in found):
            raise CrdUnavailable(f"{source.file}: no CustomResourceDefinition of kind {source.kind}")
        schemas |= found
    return schemas


def schemas_of(docs: Iterable[Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> openAPIV3Schema of every version of the CRDs among `docs`."""
    schemas = {}
    for crd in docs:
        if not isinstance(crd, dict) or crd.get("kind") != "CustomResourceDefinition":
            continue
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            schemas[(f"{group}/{version['name']}", kind)] = version["schema"]["openAPIV3Schema"]
    return schemas


# --------------------------------------------------------------------- a CRD schema as the API server reads it

_GO_FLAGS = re.compile(r"\(\?[imsU]+\)")


def _python_pattern(pattern: str) -> str | None:
    """An RE2 pattern as Python reads it (RE2 allows inline flags mid-pattern); None if Python cannot."""
    moved = "".join(_GO_FLAGS.findall(pattern)).replace("U", "") + _GO_FLAGS.sub("", pattern)
    for candidate in (pattern, moved):
        try:
            re.compile(candidate)
        except re.error:
            continue
        return candidate
    return None


def json_schema(structural: dict[str, Any]) -> dict[str, Any]:
    """A CRD's structural schema as JSON Schema in which an unknown field is an error, not pruned."""

    def convert(node: Any, in_branch: bool) -> Any:
        if not isinstance(node, dict):
            return node
        out = {k: v for k, v in node.items() if k not in ("x-kubernetes-validations", "nullable")}
        if node.get("nullable") and "type" in node:
            out["type"] = [node["type"], "null"]
        if node.get("x-kubernetes-int-or-string"):
            out.pop("type", None)
            out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        if isinstance(node.get("pattern"), str):
            pattern = _python_pattern(node["pattern"])
            out.pop("pattern")
            if pattern is not None:
                out["pattern"] = pattern
        if isinstance(node.get("properties"), dict):
            out["properties"] = {k: convert(v, in_branch) for k, v in node["properties"].items()}
            # allOf/anyOf/oneOf branches restate some of their object's fields only: closing them refuses the rest
            open_ = node.get("x-kubernetes-preserve-unknown-fields") or "additionalProperties" in node
            if not in_branch and not open_:
                out["additionalProperties"] = False
        for key in ("items", "additionalProperties", "not"):
            if isinstance(node.get(key), dict):
                out[key] = convert(node[key], in_branch or key == "not")
        for key in ("allOf", "anyOf", "oneOf"):
            if isinstance(node.get(key), list):
                out[key] = [convert(branch, True) for branch in node[key]]
        return out

    schema = convert(structural, False)
    if "metadata" in schema.get("properties", {}):
        schema["properties"]["metadata"] = {
            "type": "object"
        }  # ObjectMeta: validated by the API server itself
    return schema


def defaulted(schema: Any, value: Any) -> Any:
    """`value` with every absent field that has a schema `default` filled in (the API server defaults first)."""
    if isinstance(value, dict) and isinstance(schema, dict):
        properties = schema.get("properties")
        if isinstance(properties, dict):
            for name, sub in properties.items():
                if name not in value and isinstance(sub, dict) and "default" in sub:
                    value[name] = copy.deepcopy(sub["default"])
                if name in value:
                    defaulted(sub, value[name])
        elif isinstance(schema.get("additionalProperties"), dict):
            for item in value.values():
                defaulted(schema["additionalProperties"], item)
    elif isinstance(value, list) and isinstance(schema, dict) and isinstance(schema.get("items"), dict):
        for item in value:
            defaulted(schema["items"], item)
    return value


# ------------------------------------------------------------------------------------------ the checks


def _name(doc: dict[str, Any]) -> str:
    meta = doc.get("metadata") or {}
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{doc.get('kind')} {where}{meta.get('name')}"


def problems(
    docs: Iterable[dict[str, Any]], crds: dict[tuple[str, str], dict[str, Any]], version: str
) -> list[str]:
    """One line per problem: `<Kind> <namespace>/<name>: <field path>: <what is wrong>`."""
    found: list[str] = []
    validators: dict[tuple[str, str], jsonschema.Draft7Validator] = {}
    for doc in docs:
        key = (str(doc.get("apiVersion")), str(doc.get("kind")))
        if key in crds:
            if key not in validators:
                validators[key] = jsonschema.Draft7Validator(json_schema(crds[key]))
            for error in validators[key].iter_errors(defaulted(crds[key], copy.deepcopy(doc))):
                path = ".".join(str(p) for p in error.absolute_path) or "(object)"
                found.append(f"{_name(doc)}: {path}: {error.message[:300]}")
            continue
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.SchemaNotFoundError:
            found.append(
                f"{_name(doc)}: no schema for {key[0]} {key[1]}: add its CRD file to its add-on record (llm_platform/facts/addons.py)"
            )
        except kubernetes_validate.ValidationError as error:
            path = ".".join(str(p) for p in error.path) or "(object)"
            found.append(f"{_name(doc)}: {path}: {error.message[:300]}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = commandline.stack_parser(
        "python -m llm_platform.tools.validate_render",
        "A stack's render against the pinned CRDs and Kubernetes' own schemas.",
    )
    parser.add_argument(
        "--build", type=Path, default=Path("build"), help="folder holding <stack>/ (default: build)"
    )
    parser.add_argument(
        "--crds",
        type=Path,
        help="read plain CRD files from this folder, unverified (default: the bundled ones)",
    )
    parser.add_argument(
        "--download", action="store_true",
        help=f"first refresh the bundled CRDs ({commandline.shown_path(BUNDLED)}) from upstream at the pinned tags",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="the counts and problems as JSON on stdout")
    args = parser.parse_args(argv)
    name = stack_name(args.stack)
    if args.download:
        if args.crds is not None:
            parser.error("--download refreshes the bundled CRDs; it takes no --crds")
        try:
            for path in refresh():
                print(f"refreshed {commandline.shown_path(path)}")
        except (CrdUnavailable, OSError) as exc:
            commandline.fail(parser.prog, f"{name}: {exc}")
    manifests = args.build / name / "manifests.yaml"
    stale = commandline.stale_render(args.stack, manifests)
    if stale:
        commandline.fail(parser.prog, f"{name}: {stale}")
    try:
        crds = load_crds(args.crds)
    except (CrdUnavailable, OSError) as exc:
        commandline.fail(parser.prog, f"{name}: {exc}")
    version = load_stack(args.stack).cluster.kubernetes_version
    docs = [d for d in yaml.load_all(manifests.read_text(), Loader=SAFE_LOADER) if d]
    found = problems(docs, crds, version)
    custom = sum((str(d.get("apiVersion")), str(d.get("kind"))) in crds for d in docs)
    if args.json:
        print(
            json.dumps(
                {"stack": name, "objects": len(docs), "against_crds": custom, "problems": found}, indent=2
            )
        )
        return 1 if found else 0
    for line in found:
        print(line)
    print(
        f"{name}: {len(docs)} objects, {custom} against the pinned CRDs, {len(docs) - custom} with "
        f"kubernetes-validate {version} (strict): {len(found)} problems"
    )
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
