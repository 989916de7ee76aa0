"""The repository's own render validation (what pr.yml runs, with no ../shared): custom resources against the
pinned CRDs as the API server reads them, core objects with kubernetes-validate, an unknown kind refused, the
bundled CRDs read with no network and only when they are the pinned files from the pinned tags, a refresh kept
only when its sha256 is the pinned one, a stale render refused."""

from __future__ import annotations

import copy
import gzip
import hashlib
import io
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from llm_platform.config.loader import ROOT
from llm_platform.facts import addons
from llm_platform.tools import render, validate_render
from llm_platform.tools.validate_render import CRD_SOURCES, CrdSource, CrdUnavailable, problems, schemas_of
from tests.conftest import fixture_stack

WIDGETS = schemas_of(yaml.safe_load_all((ROOT / "tests/fixtures/crds/example.com_widgets.yaml").read_text()))
REFERENCE_CRDS = ROOT.parent / "shared" / "reference" / "crds"


def widget(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "n"},
        "spec": spec,
    }


def test_a_valid_custom_resource_passes_with_its_defaults_filled_in() -> None:
    """`mode` is required and absent: the API server fills its default first, so it is not missing."""
    ok = widget(size="10Gi", owner=None, settings={"any": {"thing": 1}}, target={"host": "a"})
    assert problems([ok, widget(size=3)], WIDGETS, "1.34") == []


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"size": 1, "colour": "red"}, "Widget n/w: spec: Additional properties are not allowed ('colour'"),
        ({"mode": "fast"}, "Widget n/w: spec: 'size' is a required property"),
        ({"size": 1.5}, "Widget n/w: spec.size: 1.5 is not valid"),
        ({"size": 1, "mode": "medium"}, "Widget n/w: spec.mode: 'medium' is not one of ['fast', 'slow']"),
        ({"size": 1, "owner": "a-b"}, "Widget n/w: spec.owner: 'a-b' does not match"),
        (
            {"size": 1, "target": {}},
            "Widget n/w: spec.target: {} is not valid under any of the given schemas",
        ),
        (
            {"size": 1, "target": {"host": "a", "port": 1}},
            "spec.target: Additional properties are not allowed",
        ),
    ],
    ids=[
        "unknown field",
        "missing field",
        "int-or-string",
        "enum",
        "RE2 pattern",
        "oneOf",
        "unknown in oneOf",
    ],
)
def test_a_bad_custom_resource_is_one_line_with_its_field(spec: dict[str, Any], expected: str) -> None:
    found = problems([widget(**spec)], WIDGETS, "1.34")
    assert len(found) == 1 and expected in found[0], found


def test_core_objects_are_checked_strictly_at_the_stack_version() -> None:
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}}
    assert problems([config_map], {}, "1.34") == []
    assert problems([config_map | {"bogus": 1}], {}, "1.34") == [
        "ConfigMap c: (object): Additional properties are not allowed ('bogus' was unexpected)"
    ]
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "n"},
        "spec": {"selector": {}, "template": {"spec": {"containers": [{"name": "c", "imagePullPolicy": 1}]}}},
    }
    (line,) = problems([deployment], {}, "1.34")
    assert line.startswith(
        "Deployment n/d: spec.template.spec.containers.0.imagePullPolicy: 1 is not of type"
    )


def test_a_kind_without_a_schema_is_a_problem() -> None:
    assert problems([widget(size=1)], {}, "1.34") == [
        "Widget n/w: no schema for example.com/v1 Widget: add its CRD file to its add-on record (llm_platform/facts/addons.py)"
    ]


def test_every_kind_the_platform_renders_has_a_schema() -> None:
    """The fixture stacks together use every kind the components make (the gateway's too)."""
    kinds = {s.kind for s in CRD_SOURCES}
    unknown = set()
    for stack in ("prod", "gateway", "multinode"):
        for doc in render.evaluate(fixture_stack(stack)).manifests:
            if doc["kind"] not in kinds and any("no schema" in p for p in problems([doc], {}, "1.34")):
                unknown.add(f"{doc['apiVersion']} {doc['kind']}")
    assert unknown == set()


def test_the_pinned_urls_follow_the_pinned_versions() -> None:
    from llm_platform.facts import versions

    urls = {s.kind: s.url for s in CRD_SOURCES}
    assert f"/aws/karpenter-provider-aws/v{versions.KARPENTER_VERSION}/" in urls["NodePool"]
    assert f"/kedacore/keda/v{versions.KEDA_VERSION}/" in urls["ScaledObject"]
    assert f"/{versions.PROMETHEUS_OPERATOR_VERSION}/" in urls["PrometheusRule"]
    assert f"/gateway-api/{versions.GATEWAY_API_VERSION}/config/crd/standard/" in urls["HTTPRoute"]
    assert f"/{versions.GATEWAY_API_INFERENCE_EXTENSION_VERSION}/" in urls["InferencePool"]
    assert versions.GATEWAY_API_INFERENCE_EXTENSION_VERSION in versions.INFERENCE_POOL_CRD_URL
    assert f"/envoyproxy/gateway/{versions.ENVOY_GATEWAY_VERSION}/" in urls["EnvoyProxy"]
    assert f"/envoyproxy/ai-gateway/{versions.ENVOY_AI_GATEWAY_VERSION}/" in urls["AIGatewayRoute"]
    assert f"/kubernetes-sigs/lws/v{versions.LWS_VERSION}/charts/lws/crds/" in urls["LeaderWorkerSet"]
    assert f"/argoproj/argo-rollouts/{addons.ARGO_ROLLOUTS_VERSION}/manifests/crds/" in urls["Rollout"]


@pytest.mark.skipif(
    not REFERENCE_CRDS.is_dir(), reason="../shared/reference/crds is not beside the repository"
)
def test_the_pins_are_the_reference_crds() -> None:
    """The reference copies (which check_render.py uses) are the pinned upstream files, byte for byte after the
    source-URL comment some of them carry on their first line. The shared reference has no LeaderWorkerSet CRD
    (multi-node replicas, issue #26); its pin is checked against the bundled copy alone."""
    for source in CRD_SOURCES:
        if source.file in NOT_IN_REFERENCE:
            assert not (REFERENCE_CRDS / source.file).exists(), (
                f"{source.file} is in the reference now: check it"
            )
            continue
        lines = (REFERENCE_CRDS / source.file).read_bytes().splitlines(keepends=True)
        header = [line for line in lines if line.startswith(b"# https://")][:1]
        assert not header or header[0].decode().strip() == f"# {source.url}", source.file
        body = b"".join(lines[len(header) :])
        assert hashlib.sha256(body).hexdigest() == source.sha256, source.file


# the shared reference has neither the LeaderWorkerSet CRD (multi-node replicas, issue #26) nor Argo Rollouts'
# (progressive rollouts, issue #47): their pins are checked against the bundled copies alone
NOT_IN_REFERENCE = {
    "leaderworkerset.x-k8s.io_leaderworkersets.yaml",
    "rollout-crd.yaml",
    "analysis-template-crd.yaml",
}


class _Response(io.BytesIO):
    def __enter__(self) -> _Response:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("the schema check must not use the network")

    monkeypatch.setattr(validate_render.urllib.request, "urlopen", refuse)


def test_the_bundled_crds_are_the_pins_and_need_no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """A clone can run the schema check offline: every pinned CRD ships, verified, small enough to commit."""
    _no_network(monkeypatch)
    schemas = validate_render.load_crds()
    assert {kind for _, kind in schemas} >= {s.kind for s in CRD_SOURCES}
    shipped = sum(f.stat().st_size for f in validate_render.BUNDLED.iterdir())
    assert shipped < 1_000_000, f"the bundled CRDs take {shipped:,} bytes"


def test_a_bundled_crd_from_another_tag_or_altered_is_refused(tmp_path: Path) -> None:
    source = next(s for s in CRD_SOURCES if s.kind == "NodePool")
    shutil.copytree(validate_render.BUNDLED, tmp_path, dirs_exist_ok=True)
    assert hashlib.sha256(validate_render.bundled_bytes(source, tmp_path)).hexdigest() == source.sha256
    bumped = CrdSource(source.repo, "v9.9.9", source.path, source.sha256, source.kind)
    with pytest.raises(CrdUnavailable, match=r"came from .*/v1\.14\.1/.*, not .*/v9\.9\.9/.*--download"):
        validate_render.bundled_bytes(bumped, tmp_path)
    gz = tmp_path / f"{source.file}.gz"
    gz.write_bytes(gzip.compress(gzip.decompress(gz.read_bytes()) + b"# changed\n"))
    with pytest.raises(CrdUnavailable, match=r"sha256 .*, pinned"):
        validate_render.bundled_bytes(source, tmp_path)
    gz.unlink()
    with pytest.raises(CrdUnavailable, match="is missing; refresh with"):
        validate_render.bundled_bytes(source, tmp_path)


def test_a_refresh_is_kept_only_with_the_pinned_sha256(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = (ROOT / "tests/fixtures/crds/example.com_widgets.yaml").read_bytes()
    served: dict[str, bytes] = {}
    monkeypatch.setattr(
        validate_render.urllib.request, "urlopen", lambda url, timeout: _Response(served[url])
    )
    good = CrdSource(
        "example/widgets",
        "v1.0.0",
        "crds/example.com_widgets.yaml",
        hashlib.sha256(body).hexdigest(),
        "Widget",
    )
    served[good.url] = body
    (written,) = validate_render.refresh(tmp_path, [good])
    assert validate_render.bundled_bytes(good, tmp_path) == body
    assert written.read_bytes() == gzip.compress(body, compresslevel=9, mtime=0)  # reproducible bytes
    tampered = CrdSource(good.repo, "v1.0.1", good.path, good.sha256, good.kind)
    served[tampered.url] = body + b"# changed\n"
    with pytest.raises(CrdUnavailable, match="update the pin"):
        validate_render.refresh(tmp_path, [tampered])
    assert validate_render.bundled_bytes(good, tmp_path) == body  # nothing was overwritten


def test_a_crds_folder_missing_files_names_them(tmp_path: Path) -> None:
    with pytest.raises(CrdUnavailable, match=r"lacks karpenter\.sh_nodepools\.yaml, .*; leave out --crds"):
        validate_render.load_crds(tmp_path)


def _one_line_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exit_:
        validate_render.main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


def test_a_stale_render_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stack = tmp_path / "Pulumi.team.yaml"
    shutil.copy(fixture_stack("dev"), stack)
    manifests = tmp_path / "build" / "team" / "manifests.yaml"
    manifests.parent.mkdir(parents=True)
    manifests.write_text("")
    os.utime(manifests, (1, 1))
    err = _one_line_exit_2(capsys, [str(stack), "--build", str(tmp_path / "build"), "--crds", str(tmp_path)])
    assert "render it again" in err


def test_the_cli_validates_a_fresh_render(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end on a fixture stack with the bundled CRDs, offline: clean, then a NodePool with a mistyped
    field."""
    _no_network(monkeypatch)
    parsed: list[dict[tuple[str, str], dict[str, Any]]] = []
    load_crds = validate_render.load_crds

    def parsed_once(folder: Path | None = None) -> dict[tuple[str, str], dict[str, Any]]:
        """Both runs read the same bundled CRDs: the first parses them (seconds of pure-Python YAML), the
        second gets a fresh copy of what it parsed."""
        if not parsed:
            parsed.append(load_crds(folder))
        return copy.deepcopy(parsed[0])

    monkeypatch.setattr(validate_render, "load_crds", parsed_once)
    stack = tmp_path / "Pulumi.team.yaml"
    shutil.copy(fixture_stack("dev"), stack)
    manifests = tmp_path / "build" / "team" / "manifests.yaml"
    render.write(render.evaluate(stack), manifests.parent)
    argv = [str(stack), "--build", str(tmp_path / "build")]
    assert validate_render.main(argv) == 0
    summary = capsys.readouterr().out.splitlines()[-1]
    assert summary.startswith("team: ") and summary.endswith(
        "with kubernetes-validate 1.34 (strict): 0 problems"
    )
    docs = list(yaml.safe_load_all(manifests.read_text()))
    pool = next(d for d in docs if d["kind"] == "NodePool")
    pool["spec"]["disruption"]["consolidateAfterr"] = "1m"
    manifests.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    assert validate_render.main(argv) == 1
    out = capsys.readouterr().out
    assert (
        f"NodePool {pool['metadata']['name']}: spec.disruption: Additional properties are not allowed" in out
    )
    assert "'consolidateAfterr' was unexpected" in out
