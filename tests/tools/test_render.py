"""The offline render: what each stack will deploy, written for review, with secrets masked (fixture stacks)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from llm_platform.config.loader import stack_names
from llm_platform.tools import render
from tests.conftest import fixture_stack
from tests.shared_check import SHARED_CHECK, check_render


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for stack in ("dev", "staging", "prod"):
        target = tmp_path_factory.mktemp("render") / stack
        assert render.main([str(fixture_stack(stack)), "--out", str(target)]) == 0
        out[stack] = target
    return out


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_render_writes_resources_manifests_and_helm(rendered: dict[str, Path], stack: str) -> None:
    out = rendered[stack]
    resources = json.loads((out / "resources.json").read_text())
    assert all(set(r) == {"type", "name", "parent", "inputs"} for r in resources)
    types = {r["type"] for r in resources}
    assert {
        "eks:index:Cluster",
        "kubernetes:apps/v1:Deployment",
        "kubernetes:keda.sh/v1alpha1:ScaledObject",
    } <= types
    parents = {f"{r['type']}::{r['name']}" for r in resources}
    assert all(r["parent"] is None or r["parent"] in parents for r in resources)
    manifests = [d for d in yaml.safe_load_all((out / "manifests.yaml").read_text()) if d]
    assert all(list(d)[:3] == ["apiVersion", "kind", "metadata"] for d in manifests)
    assert not any(d["kind"] in ("Release", "Provider") for d in manifests)
    releases = {p.stem: yaml.safe_load(p.read_text()) for p in (out / "helm").glob("*.yaml")}
    assert {"karpenter", "keda", "kube-prometheus-stack", "gpu-operator"} <= set(releases)
    for body in releases.values():
        assert set(body) == {"chart", "version", "repository", "namespace", "values"}
        assert body["version"], "every chart is pinned"
    assert releases["karpenter"]["repository"] == "oci://public.ecr.aws/karpenter"


def test_secrets_never_reach_the_render(rendered: dict[str, Path]) -> None:
    for out in rendered.values():
        text = "".join(p.read_text() for p in out.rglob("*") if p.is_file())
        assert render.RENDER_SECRET not in text
        assert "[secret]" in text
    manifests = yaml.safe_load_all((rendered["prod"] / "manifests.yaml").read_text())
    secrets = [d for d in manifests if d and d["kind"] == "Secret"]
    assert secrets and all(set(d["stringData"].values()) == {"[secret]"} for d in secrets)


def test_render_is_deterministic(
    rendered: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second evaluation of the program (not the one tests/conftest.py keeps) writes the same bytes."""
    monkeypatch.setattr(render, "evaluate", render.evaluate.__wrapped__)  # type: ignore[attr-defined]
    again = tmp_path / "prod"
    assert render.main([str(fixture_stack("prod")), "--out", str(again)]) == 0
    for name in ("resources.json", "manifests.yaml"):
        assert (again / name).read_text() == (rendered["prod"] / name).read_text()


def test_bad_config_exits_non_zero_and_writes_nothing(tmp_path: Path, capsys) -> None:
    broken = yaml.safe_load(fixture_stack("dev").read_text())
    broken["config"]["llm-platform:models"][0]["autoscaling"]["kvCacheUsage"] = 1.5
    stack_file = tmp_path / "Pulumi.broken.yaml"
    stack_file.write_text(yaml.safe_dump(broken))
    out = tmp_path / "render"
    assert render.main([str(stack_file), "--out", str(out)]) == 2
    assert not out.exists()
    err = capsys.readouterr().err
    line = next(
        i for i, text in enumerate(stack_file.read_text().splitlines(), 1) if "kvCacheUsage: 1.5" in text
    )
    assert (
        f"Pulumi.broken.yaml:{line}: models[0] (qwen-1-5b).autoscaling.kvCacheUsage: 1.5 is not allowed"
        in err
    )


def test_unknown_stack_is_a_clear_error(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        render.main(["nope", "--out", str(tmp_path / "x")])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Pulumi.nope.yaml does not exist" in err
    assert f"stacks: {', '.join(stack_names())}" in err


@pytest.mark.skipif(
    not SHARED_CHECK.exists(), reason="shared/tools/check_render.py sits beside the repo in CI"
)
@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_render_passes_the_upstream_schema_check(rendered: dict[str, Path], stack: str) -> None:
    result = check_render(rendered[stack])
    assert result.returncode == 0, result.stdout
    assert result.stdout.strip().endswith(": 0 problems")
