"""Offline render: evaluate the real `__main__.py` of a stack under Pulumi mocks and write what it would deploy.

    uv run python -m llm_platform.tools.render <stack> [--out <dir>] [--json]   # <dir>: build/<stack>

Writes <dir>/resources.json (every registered resource and its inputs, secrets as "[secret]"),
<dir>/manifests.yaml (every Kubernetes object the program registers itself, as it would be applied) and
<dir>/helm/<release>.yaml (chart, version, repository, namespace and values of each Helm release).
No cloud credentials, Pulumi CLI or cluster are needed.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from llm_platform import commandline
from llm_platform.config.loader import (
    PROJECT,
    ROOT,
    SECRET_KEYS,
    ConfigError,
    Stack,
    load_stack,
    raw_stack_config,
    stack_name,
)
from llm_platform.tools import mocks as platform_mocks

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
NOT_MANIFESTS = ("pulumi:providers:", HELM_RELEASE, "kubernetes:helm.sh/", "kubernetes:yaml")
# a value only the render uses for Pulumi secrets the stack file holds encrypted (or not at all);
# every secret is written as "[secret]", so this never reaches an output
RENDER_SECRET = "render-only-secret"


@dataclass
class Render:
    resources: list[dict[str, Any]]
    manifests: list[dict[str, Any]]
    helm: dict[str, dict[str, Any]]
    mocks: platform_mocks.PlatformMocks
    seconds: float


def stack_config(stack: Stack) -> tuple[dict[str, str], list[str]]:
    """Pulumi.<stack>.yaml as the engine hands it to the program: strings, objects JSON-encoded."""
    config: dict[str, str] = {}
    for key, value in raw_stack_config(stack).items():
        if isinstance(value, dict) and "secure" in value:
            continue
        config[key] = value if isinstance(value, str) else json.dumps(value)
    secret_keys = [f"{PROJECT}:{k}" for k in SECRET_KEYS]
    for key in secret_keys:
        config[key] = RENDER_SECRET
    # the gateway's client keys are a JSON object, one distinct key per configured client
    clients = (raw_stack_config(stack).get(f"{PROJECT}:gateway") or {}).get("clients") or []
    config[f"{PROJECT}:gatewayClientKeys"] = json.dumps(
        {c["name"]: f"{RENDER_SECRET}-{c['name']}-{i:04d}" for i, c in enumerate(clients) if "name" in c}
    )
    return config, secret_keys


def evaluate(stack: Stack) -> Render:
    """Validate the stack file, then run __main__.py under mocks and collect every registration."""
    load_stack(stack)  # a bad config stops here with the field, the value and what is allowed
    started = time.perf_counter()
    config, secret_keys = stack_config(stack)
    mocks, loop = platform_mocks.install(stack_name(stack), config, secret_keys)
    try:
        platform_mocks.run_main()
    finally:
        platform_mocks.uninstall(loop)
    seconds = time.perf_counter() - started
    return Render(
        # registration order depends on when outputs resolve; sort so a PR's render diff shows changes only
        resources=sorted((_resource(r) for r in mocks.created), key=lambda r: (r["type"], r["name"])),
        manifests=sorted((_manifest(r) for r in mocks.created if _is_manifest(r.typ)), key=_manifest_order),
        helm={r.inputs.get("name", r.name): _helm(r) for r in mocks.by_type(HELM_RELEASE)},
        mocks=mocks,
        seconds=seconds,
    )


def _parent(urn: str) -> str | None:
    """`type::name` of a parent URN (`urn:pulumi:<stack>::<project>::<type chain>::<name>`); None for the stack."""
    if not urn:
        return None
    *_, type_chain, name = urn.split("::")
    typ = type_chain.split("$")[-1]
    return None if typ == "pulumi:pulumi:Stack" else f"{typ}::{name}"


def _sorted(value: Any) -> Any:
    """Keys in a stable order: the engine hands inputs over as unordered maps, and a render is diffed in PRs."""
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def _resource(r: platform_mocks.Registered) -> dict[str, Any]:
    inputs = _sorted(platform_mocks.plain(r.inputs))
    return {"type": r.typ, "name": r.name, "parent": _parent(r.parent_urn), "inputs": inputs}


def _is_manifest(typ: str) -> bool:
    return typ.startswith("kubernetes:") and not typ.startswith(NOT_MANIFESTS)


def _manifest(r: platform_mocks.Registered) -> dict[str, Any]:
    body = _sorted(platform_mocks.plain(r.inputs))
    ordered = {
        "apiVersion": body.pop("apiVersion"),
        "kind": body.pop("kind"),
        "metadata": body.pop("metadata", {}),
    }
    return ordered | body


def _manifest_order(manifest: dict[str, Any]) -> tuple[str, str, str]:
    metadata = manifest["metadata"]
    return (metadata.get("namespace", ""), manifest["kind"], metadata.get("name", ""))


def _helm(r: platform_mocks.Registered) -> dict[str, Any]:
    inputs = platform_mocks.plain(r.inputs)
    repository = (inputs.get("repositoryOpts") or {}).get("repo")
    chart = inputs["chart"]
    if repository is None and chart.startswith("oci://"):
        repository, _, chart = chart.rpartition("/")
    return {
        "chart": chart,
        "version": inputs.get("version"),
        "repository": repository,
        "namespace": inputs.get("namespace"),
        "values": _sorted(inputs.get("values") or {}),
    }


def write(render: Render, out: Path) -> None:
    """Write atomically: a failed render never leaves a half-written folder behind."""
    staging = Path(tempfile.mkdtemp(prefix=".render-", dir=out.parent if out.parent.exists() else None))
    (staging / "helm").mkdir()
    (staging / "resources.json").write_text(json.dumps(render.resources, indent=2, sort_keys=False) + "\n")
    (staging / "manifests.yaml").write_text(yaml.safe_dump_all(render.manifests, sort_keys=False))
    for release, body in sorted(render.helm.items()):
        (staging / "helm" / f"{release}.yaml").write_text(yaml.safe_dump(body, sort_keys=False))
    if out.exists():
        shutil.rmtree(out)
    shutil.move(str(staging), out)


def summary(stack: str, render: Render) -> str:
    counts = Counter(r["type"] for r in render.resources)
    width = max(len(t) for t in counts)
    lines = [
        f"stack {stack}: {len(render.resources)} resources, {len(render.manifests)} Kubernetes "
        f"manifests, {len(render.helm)} Helm releases"
    ]
    lines += [f"  {t:<{width}}  {n}" for t, n in sorted(counts.items())]
    lines.append(f"rendered in {render.seconds:.2f} s")
    return "\n".join(lines)


def summary_json(stack: str, render: Render, out: Path) -> dict[str, Any]:
    return {
        "stack": stack,
        "out": str(out),
        "resources": len(render.resources),
        "manifests": len(render.manifests),
        "helm_releases": len(render.helm),
        "by_type": dict(sorted(Counter(r["type"] for r in render.resources).items())),
        "seconds": round(render.seconds, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = commandline.stack_parser(
        "python -m llm_platform.tools.render", "Render a stack offline under Pulumi mocks."
    )
    parser.add_argument(
        "--out", type=Path, help="folder to write the render to (default: build/<stack> in the project)"
    )
    parser.add_argument("--json", action="store_true", help="the summary as JSON on stdout")
    args = parser.parse_args(argv)
    name = stack_name(args.stack)
    out = args.out or ROOT / "build" / name
    try:
        with commandline.working(f"rendering {name} under Pulumi mocks", quiet=args.json):
            render = evaluate(args.stack)
    except ConfigError as exc:
        return commandline.invalid_config(parser.prog, args.stack, exc)
    out.parent.mkdir(parents=True, exist_ok=True)
    write(render, out)
    print(json.dumps(summary_json(name, render, out), indent=2) if args.json else summary(name, render))
    return 0


if __name__ == "__main__":
    sys.exit(main())
