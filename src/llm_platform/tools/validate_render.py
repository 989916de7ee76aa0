"""`python -m llm_platform.tools.validate_render <stack> [--json]`: every Kubernetes object of a stack's render against the schema
the cluster will enforce, with nothing but the repository and its pinned versions.

- Custom resources (Karpenter, KEDA, Prometheus Operator, Gateway API, InferencePool, Envoy Gateway, Envoy AI
  Gateway, LeaderWorkerSet) against the openAPIV3Schema of their CRD at the version `facts/versions.py` pins, as the API
  server applies it: schema defaults filled in first, then every field checked; a field the schema does not
  know is a problem (the API server would prune it silently). CEL rules (`x-kubernetes-validations`) are not
  evaluated.
- Core objects with kubernetes-validate (strict) at the stack's `cluster.kubernetesVersion`.
- An object of a kind neither knows is a problem: add its CRD to `CRD_SOURCES`.

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
from llm_platform.facts.versions import (
    ENVOY_AI_GATEWAY_VERSION,
    ENVOY_GATEWAY_VERSION,
    GATEWAY_API_INFERENCE_EXTENSION_VERSION,
    GATEWAY_API_VERSION,
    KARPENTER_VERSION,
    KEDA_VERSION,
    LWS_VERSION,
    PROMETHEUS_OPERATOR_VERSION,
)

# kubernetes-validate reads and parses a kind's schema and the 1.5 MB `_definitions.json` again for every object
# it validates (~20 ms each); they are files of the installed package, so one parse per process serves every
# object, here and in anything else of the process that calls `kubernetes_validate.validate` (the schemas are
# only read: `referencing` and `jsonschema` never change them)
if not hasattr(kubernetes_validate.utils.schema_contents, "cache_info"):
    kubernetes_validate.utils.schema_contents = functools.cache(kubernetes_validate.utils.schema_contents)


def _tag(version: str) -> str:
    return version if version.startswith("v") else f"v{version}"


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


def _sources(repo: str, version: str, folder: str, files: dict[str, tuple[str, str]]) -> list[CrdSource]:
    return [
        CrdSource(repo, _tag(version), f"{folder}/{name}.yaml", sha, kind)
        for name, (kind, sha) in files.items()
    ]


# The CRDs the platform's objects use. A version bump in facts/versions.py changes the tag; the download then
# refuses the new file until its sha256 here is updated, after reading the CRD's changes.
CRD_SOURCES: tuple[CrdSource, ...] = (
    *_sources("aws/karpenter-provider-aws", KARPENTER_VERSION, "pkg/apis/crds", {
        "karpenter.sh_nodepools": ("NodePool", "3bb64a20c80776b77aa19a699ebdaf34480a7b2e7ec4ef890b43225b3517f878"),
        "karpenter.k8s.aws_ec2nodeclasses": ("EC2NodeClass", "62dec59f01c0972d4503ca3ed25f243ba9c2f561be0d964ce7a14c8df406132f"),
    }),
    *_sources("kedacore/keda", KEDA_VERSION, "config/crd/bases", {
        "keda.sh_scaledobjects": ("ScaledObject", "af35555862a83933b074af14ad439c4b4ceabaf4daa3e9338e9b23e36d308d80"),
        "keda.sh_triggerauthentications": ("TriggerAuthentication", "275307b4cb19ca8f0f506a879282aa4c67587ac16ec757f494d6585c5c185d65"),
    }),
    *_sources("prometheus-operator/prometheus-operator", PROMETHEUS_OPERATOR_VERSION, "example/prometheus-operator-crd", {
        "monitoring.coreos.com_servicemonitors": ("ServiceMonitor", "7dd4206947c94bc76f71daa07c45a1010a5d697c54fe079f8207b0e82026a26a"),
        "monitoring.coreos.com_podmonitors": ("PodMonitor", "eef45bb50df838a85226eb6b03c0c7094c54d605776bdf2ec149f17fba8a1df0"),
        "monitoring.coreos.com_prometheusrules": ("PrometheusRule", "2d72928f7ceb99d153f2f91d2c2fd68d4b89c4914f2a09e15ac049b2f0316df3"),
    }),
    *_sources("kubernetes-sigs/gateway-api", GATEWAY_API_VERSION, "config/crd/standard", {
        "gateway.networking.k8s.io_gatewayclasses": ("GatewayClass", "234ad4b2757ee1b3596a4187bb98df071c5bbdd9e1806f692f2dbf8387e6bef4"),
        "gateway.networking.k8s.io_gateways": ("Gateway", "7416e8300eb4d8c0a71a23445609075bbacbe8bc80104584b019cfe1ebe77c31"),
        "gateway.networking.k8s.io_httproutes": ("HTTPRoute", "682203b109baecb18d38073a578f7bc2c17d22fe9b0c27bf030850abe014c370"),
        "gateway.networking.k8s.io_referencegrants": ("ReferenceGrant", "a8902c486eed0b7339f5bb8a476ccaba0918eb038048402bdc01cbb69b0fbb51"),
    }),
    *_sources("kubernetes-sigs/gateway-api-inference-extension", GATEWAY_API_INFERENCE_EXTENSION_VERSION, "config/crd/bases", {
        "inference.networking.k8s.io_inferencepools": ("InferencePool", "55e0dbf39c50c4bbdd60106493a4573df4bb44479f9ce46762f1af718883e5cd"),
    }),
    *_sources("envoyproxy/gateway", ENVOY_GATEWAY_VERSION, "charts/gateway-helm/charts/crds/crds/generated", {
        "gateway.envoyproxy.io_backendtrafficpolicies": ("BackendTrafficPolicy", "3b285efcb7d8f9c292f386528d83a61bd719d992a67f9c48a848353f10655e66"),
        "gateway.envoyproxy.io_clienttrafficpolicies": ("ClientTrafficPolicy", "5322c533fd33282cce6eba9405331477872a06fafebaac20026bb6d08ff4a291"),
        "gateway.envoyproxy.io_envoyproxies": ("EnvoyProxy", "a1efb63b00659fe8dae385236deb20a29619b5537a9552b60940dc6425924a2e"),
        "gateway.envoyproxy.io_httproutefilters": ("HTTPRouteFilter", "ebba11783da910e78829941deeb3c6701ba95b4cddb9f595382c71793546efca"),
        "gateway.envoyproxy.io_securitypolicies": ("SecurityPolicy", "f156487aeb871a5f946d10153de0676b1e69a2b42be7a1259e2619a75adc4951"),
    }),
    *_sources("envoyproxy/ai-gateway", ENVOY_AI_GATEWAY_VERSION, "manifests/charts/ai-gateway-crds-helm/templates", {
        "aigateway.envoyproxy.io_aigatewayroutes": ("AIGatewayRoute", "c6ca0a06b214d93f1c7eefe8f9735fa551f23948088e0bf3c317b792ad68f162"),
    }),
    # multi-node replicas (the LWS chart's own CRD, what `helm install` applies)
    *_sources("kubernetes-sigs/lws", LWS_VERSION, "charts/lws/crds", {
        "leaderworkerset.x-k8s.io_leaderworkersets": ("LeaderWorkerSet", "4c5518df96ae0456ff66ec3d4337f5419aa42daae5b15c68878b85a2aee8556e"),
    }),
)  # fmt: skip


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
            "changes and update the pin in tools/validate_render.py"
        )
    return body


def refresh(folder: Path = BUNDLED, sources: Iterable[CrdSource] = CRD_SOURCES) -> list[Path]:
    """Download every pinned CRD into `folder` (gzipped, reproducibly) and rewrite its index."""
    bodies = [(source, fetch(source)) for source in sources]  # all or nothing: verify before writing
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
            f"{commandline.shown_path(path)} came from {came_from}, not {source.url} (facts/versions.py); {refresh_hint}"
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
        missing = [s.file for s in CRD_SOURCES if not (folder / s.file).exists()]
        if missing:
            raise CrdUnavailable(
                f"{commandline.shown_path(folder)} lacks {', '.join(missing)}; leave out --crds to use the bundled CRDs"
            )
    schemas: dict[tuple[str, str], dict[str, Any]] = {}
    for source in CRD_SOURCES:
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
            found.append(f"{_name(doc)}: no schema for {key[0]} {key[1]}: add its CRD to CRD_SOURCES")
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
