"""`llm-platform upgrade` on a fixture stack: the candidate chart version reaches the Helm release, a moved image
pin reaches the objects, and CRD files that cannot be read offline are named as not checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_platform.cli import main as llm_platform
from llm_platform.facts.versions import KEDA_VERSION, VLLM_IMAGE
from llm_platform.tools import render
from llm_platform.tools.upgrade import candidates
from tests.conftest import fixture_stack

CANDIDATE_IMAGE = "vllm/vllm-openai:v9.9.9"


def test_upgrade_lists_the_helm_release_version_change_and_the_objects_a_moved_image_changes(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    # the session's evaluation cache (tests/conftest.py) keys on the stack file and the program, not on the
    # candidates the preview hands the program: evaluate anew
    monkeypatch.setattr(render, "evaluate", getattr(render.evaluate, "__wrapped__", render.evaluate))
    stack = str(fixture_stack("dev"))
    code = llm_platform(
        [
            "upgrade",
            stack,
            "--to",
            "keda=2.99.0",
            "--to",
            f"VLLM_IMAGE={CANDIDATE_IMAGE}",
            "--crds",
            str(tmp_path),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"- `keda`: chart {KEDA_VERSION} -> 2.99.0" in out
    assert f'"{VLLM_IMAGE}" -> "{CANDIDATE_IMAGE}"' in out  # the model's Deployment, field by field
    assert "- changed: `apps/v1 Deployment " in out
    assert "`keda.sh_scaledobjects.yaml` @ v2.99.0: NOT CHECKED: not in" in out
    from llm_platform.facts import versions

    assert versions.VLLM_IMAGE == VLLM_IMAGE  # the pin is back for the next caller


def test_an_unknown_or_malformed_candidate_is_a_usage_error(capsys) -> None:
    assert llm_platform(["upgrade", str(fixture_stack("dev")), "--to", "kedda=2.21.1"]) == 2
    err = capsys.readouterr().err
    assert "'kedda' is not pinned here; names: " in err and "keda" in err
    with pytest.raises(candidates.CandidateError, match="expected NAME=VERSION"):
        candidates.parse(["keda"])


def test_a_crd_repository_moves_only_its_files_and_an_add_on_moves_the_files_at_its_chart_version() -> None:
    moved = candidates.parse(["gateway-api=v1.6.1", "envoy-gateway=v1.9.0"])
    assert moved.crd_tags == {"kubernetes-sigs/gateway-api": "v1.6.1", "envoyproxy/gateway": "v1.9.0"}
    assert moved.addon_versions == {"envoy-gateway": "v1.9.0"}
    assert json.dumps(moved.versions()["gateway-api-inference-extension"]) == '"v1.6.0"'
