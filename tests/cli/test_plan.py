"""`llm-platform plan` on a fixture change (a model added, a threshold moved): every part of the pull-request
comment, from a previous plan's --json and from a git ref."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from llm_platform.cli import main as llm_platform
from llm_platform.cli import plan
from llm_platform.config.loader import ROOT
from tests.conftest import fixture_stack

# a 20-minute rate day: each model's forecast is a short simulation
DAY = "minute,requests_per_second\n" + "".join(f"{m},{1.0 + (m % 5) * 0.5}\n" for m in range(20))
TRAFFIC = """  llm-platform:costs:
    expectedTraffic:
      - {model: qwen-1-5b, day: day.csv, scale: 1}
"""
ADDED = """    - name: qwen-0-5b
      huggingFaceId: Qwen/Qwen2.5-0.5B-Instruct
      nodePool: gpu-spot
      maxModelLen: 4096
      cache: s3
      autoscaling: {minReplicas: 1, maxReplicas: 1, queueDepthPerReplica: 5, kvCacheUsage: 0.8}
      slo: {ttftSeconds: 0.5, itlSeconds: 0.05}
"""


def _before(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "day.csv").write_text(DAY)
    stack = folder / "Pulumi.dev.yaml"
    stack.write_text(fixture_stack("dev").read_text() + TRAFFIC)
    return stack


def _change(stack: Path) -> None:
    """A model added (not in expectedTraffic: its day is assumed) and the first model's queue threshold moved."""
    text = stack.read_text()
    assert "queueDepthPerReplica: 5\n" in text and "  llm-platform:modelCache:" in text
    text = text.replace("queueDepthPerReplica: 5\n", "queueDepthPerReplica: 3\n", 1)
    stack.write_text(text.replace("  llm-platform:modelCache:", ADDED + "  llm-platform:modelCache:", 1))


def _check_comment(comment: str, against: str) -> None:
    assert comment.startswith("<!-- llm-platform-plan:dev -->\n### llm-platform plan: dev\n")
    assert f"No blocker against `{against}`." in comment
    rows = {line.split(" | ")[0].lstrip("| "): line for line in comment.splitlines() if line.startswith("| ")}
    # the moved threshold: same day, a cost and miss change with their signs
    moved = rows["qwen-1-5b"]
    assert "day.csv x1 (stated in costs.expectedTraffic)" in moved
    assert re.search(r"^\$[\d,.]+ \([+-]\$[\d,.]+\)$", moved.split(" | ")[2])
    assert re.search(r"^[\d.]+ % \([+-][\d.]+ pp\)$", moved.split(" | ")[3])
    # the added model: new, on the assumed day
    assert "builtin:seed-day x1 (assumed: no costs.expectedTraffic entry)" in rows["qwen-0-5b"]
    assert "(new)" in rows["qwen-0-5b"].split(" | ")[2]
    assert ", was $" in rows["**total**"]
    assert "**Preflight**: 0 blocker(s)" in comment and "new, 0 cleared by this change" in comment
    assert "**Objects**: " in comment and " added, " in comment
    diff = comment.split("```diff\n", 1)[1].split("```", 1)[0].splitlines()
    assert "+ Deployment model-qwen-0-5b/qwen-0-5b" in diff
    scaled = diff.index("~ ScaledObject model-qwen-1-5b/qwen-1-5b")
    fields = [line.strip() for line in diff[scaled + 1 :] if line.startswith("    ")]
    assert any(f.endswith('.threshold: "5" -> "3"') for f in fields), fields
    assert not [line for line in diff if line.startswith("- ")]  # nothing removed


@pytest.mark.slow
def test_plan_against_a_previous_plans_json_writes_every_part_of_the_comment(tmp_path: Path, capsys) -> None:
    stack = _before(tmp_path / "stack")
    assert llm_platform(["plan", str(stack), "--json"]) == 0
    before = tmp_path / "before.json"
    before.write_text(capsys.readouterr().out)
    _change(stack)
    comment = tmp_path / "plan.md"
    assert llm_platform(["plan", str(stack), "--against", str(before), "--markdown", str(comment)]) == 0
    text = capsys.readouterr().out
    assert "against " in text and "qwen-0-5b: added: $" in text
    _check_comment(comment.read_text(), str(before))


@pytest.mark.slow
def test_plan_against_a_git_ref_plans_the_refs_stack_file_and_program(tmp_path: Path, monkeypatch) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(ROOT / name, repo / name)
    stack = _before(repo)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "before"], cwd=repo, check=True)
    _change(stack)
    monkeypatch.setattr(plan, "ROOT", repo)
    comment = tmp_path / "plan.md"
    assert plan.main([str(stack), "--against", "main", "--markdown", str(comment)]) == 0
    _check_comment(comment.read_text(), "main")


def test_a_plan_file_or_ref_that_cannot_be_compared_is_a_usage_error(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "old.json"
    bad.write_text(json.dumps({"stack": "dev"}))
    with pytest.raises(plan.PlanError, match="not a plan's --json output"):
        plan.previous("dev", str(bad))
    with pytest.raises(plan.PlanError, match="no-such-ref"):
        plan.at_ref("dev", "no-such-ref")


@pytest.mark.slow
def test_a_change_that_adds_a_preflight_finding_marks_it_new(tmp_path: Path, capsys) -> None:
    """gpuLimit 4 -> 2 under a model whose 2 replicas take 2 GPUs: the schema accepts it, the program rolls the
    model out in place (maxSurge 0) and preflight warns that every rollout serves a replica fewer; the comment
    counts the finding as new, marks it, and shows both field changes that caused it."""
    stack = _before(tmp_path / "stack")
    assert llm_platform(["plan", str(stack), "--json"]) == 0
    before = tmp_path / "before.json"
    before.write_text(capsys.readouterr().out)
    text = stack.read_text()
    assert text.count("gpuLimit: 4\n") == 1
    stack.write_text(text.replace("gpuLimit: 4\n", "gpuLimit: 2\n"))
    comment = tmp_path / "plan.md"
    assert llm_platform(["plan", str(stack), "--against", str(before), "--markdown", str(comment)]) == 0
    body = comment.read_text()
    assert f"No blocker against `{before}`." in body
    assert "**Preflight**: 0 blocker(s), 1 warning(s); 1 new, 0 cleared by this change" in body
    new = [
        line for line in body.splitlines() if line.startswith("- **new** `warning ceilings NodePool gpu-spot")
    ]
    assert len(new) == 1 and "rolls out with maxSurge 0" in new[0] and "gpuLimit 3 lets it surge" in new[0], (
        new
    )
    diff = [line.strip() for line in body.split("```diff\n", 1)[1].split("```", 1)[0].splitlines()]
    assert 'spec.limits.nvidia.com/gpu: "4" -> "2"' in diff, diff
    assert "spec.strategy.rollingUpdate.maxSurge: 1 -> 0" in diff, diff
