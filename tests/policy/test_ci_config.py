"""The CI workflows and the checkov suppressions keep the rules the platform relies on: OIDC only, pinned
actions, the policy pack on every preview and update, approvals before staging and prod, and a reason for
every skipped security check. actionlint runs too when it is installed."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from llm_platform.tools.security_scan import CHECKOV_VERSION, CONFIG, unjustified_skips

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"


def load(name: str) -> dict[str, Any]:
    data = yaml.safe_load((WORKFLOWS / name).read_text())
    # YAML 1.1 reads the bare key `on` as True
    if True in data:
        data["on"] = data.pop(True)
    return data


def steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for job in workflow["jobs"].values() for s in job.get("steps", [])]


def uses(workflow: dict[str, Any]) -> list[str]:
    return [s["uses"] for s in steps(workflow) if "uses" in s]


def all_workflows() -> list[str]:
    return sorted(p.name for p in WORKFLOWS.glob("*.yml"))


@pytest.mark.parametrize("name", all_workflows())
def test_actions_are_pinned_and_no_long_lived_keys(name: str) -> None:
    text = (WORKFLOWS / name).read_text()
    for ref in uses(load(name)):
        if ref.startswith("./"):
            continue
        assert re.search(r"@(v[0-9]+(\.[0-9]+)*|[0-9a-f]{40})$", ref), (
            f"{name}: {ref} is not pinned to a version"
        )
    for forbidden in ("AWS_SECRET_ACCESS_KEY", "aws-secret-access-key", "PULUMI_ACCESS_TOKEN"):
        assert forbidden not in text, f"{name} uses {forbidden}; use OIDC"


def test_pr_workflow_renders_scans_and_previews_every_stack_with_the_policy_pack() -> None:
    pr = load("pr.yml")
    assert "pull_request" in pr["on"]
    job = pr["jobs"]["stack"]
    assert job["strategy"]["matrix"]["stack"] == ["dev", "staging", "prod"]
    assert job["permissions"]["id-token"] == "write"
    by_action = {s["uses"].split("@")[0]: s for s in job["steps"] if "uses" in s}
    assert "actions/upload-artifact" in by_action
    assert by_action["aws-actions/configure-aws-credentials"]["with"]["role-to-assume"].startswith(
        "${{ vars."
    )
    assert "pulumi/auth-actions" in by_action
    preview = by_action["pulumi/actions"]
    assert preview["uses"] == "pulumi/actions@v7"
    assert preview["with"]["command"] == "preview"
    assert preview["with"]["comment-on-pr"] is True
    assert preview["with"]["policyPacks"] == "./policy"
    runs = " ".join(s.get("run", "") for s in steps(pr))
    for command in (
        "uv sync --frozen",
        "uv run pytest",
        "llm-platform render",
        "llm-platform validate",
        "llm-platform scan",
        "llm-platform plan",
    ):
        assert command in runs
    render = next(i for i, s in enumerate(job["steps"]) if "llm-platform render" in s.get("run", ""))
    schema = next(i for i, s in enumerate(job["steps"]) if "llm-platform validate" in s.get("run", ""))
    # the plan comment: against the base branch, its Markdown posted, the job failing on a blocker
    plan = next(s for s in job["steps"] if "llm-platform plan" in s.get("run", ""))
    assert "--against" in plan["run"] and "--markdown" in plan["run"] and 'exit "$status"' in plan["run"]
    comment = next(s for s in job["steps"] if s.get("name") == "Comment the plan on the pull request")
    assert "plan.md" in comment["with"]["script"] and "llm-platform-plan:" in comment["with"]["script"]
    # a GitHub runner has no ../shared and needs no network: the CRDs ship with the package
    assert render < schema and "--download" not in job["steps"][schema]["run"]


def test_deploy_goes_dev_then_staging_then_prod_behind_environments() -> None:
    deploy = load("deploy.yml")
    assert deploy["on"]["push"]["branches"] == ["main"]
    jobs = deploy["jobs"]
    assert jobs["staging"]["needs"] == "dev"
    assert jobs["prod"]["needs"] == "staging"
    for stack in ("dev", "staging", "prod"):
        assert jobs[stack]["uses"] == "./.github/workflows/pulumi-up.yml"
        assert jobs[stack]["with"]["stack"] == stack
    up = load("pulumi-up.yml")["jobs"]["up"]
    assert up["environment"] == "${{ inputs.stack }}"
    assert up["concurrency"]["group"] == "pulumi-${{ inputs.stack }}"
    assert up["concurrency"]["cancel-in-progress"] is False
    action = next(s for s in up["steps"] if s.get("uses", "").startswith("pulumi/actions@"))
    assert action["with"]["command"] == "up"
    assert action["with"]["policyPacks"] == "./policy"


def test_every_checkov_skip_is_justified_and_checkov_is_pinned() -> None:
    assert unjustified_skips(CONFIG) == []
    assert re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", CHECKOV_VERSION)
    config = yaml.safe_load(CONFIG.read_text())
    assert config["framework"] == ["kubernetes"]
    assert all(re.fullmatch(r"CKV2?_K8S_[0-9]+", c) for c in config["skip-check"])


def test_unjustified_skip_is_detected(tmp_path: Path) -> None:
    config = tmp_path / "checkov.yaml"
    config.write_text(
        "skip-check:\n  - CKV_K8S_1 # a real reason given here\n  - CKV_K8S_2\n  - CKV_K8S_3 # ok\n"
    )
    assert unjustified_skips(config) == ["CKV_K8S_2", "CKV_K8S_3"]


@pytest.mark.skipif(shutil.which("actionlint") is None, reason="actionlint is not installed")
def test_workflows_pass_actionlint() -> None:
    result = subprocess.run(
        ["actionlint", "-no-color", *map(str, sorted(WORKFLOWS.glob("*.yml")))],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_pulumi_cli_is_pinned_to_the_sdk_version() -> None:
    # the SDK version CI and the deploys install: uv.lock's (pyproject.toml holds a range)
    sdk = re.search(
        r'\[\[package\]\]\nname = "pulumi"\nversion = "([0-9.]+)"', (ROOT / "uv.lock").read_text()
    )
    assert sdk is not None
    for name in ("pr.yml", "pulumi-up.yml"):
        actions = [s for s in steps(load(name)) if s.get("uses", "").startswith("pulumi/actions@")]
        assert actions and all(str(s["with"]["pulumi-version"]) == sdk.group(1) for s in actions), name


def test_deploy_runs_only_on_changes_to_the_program() -> None:
    from fnmatch import fnmatch

    paths = load("deploy.yml")["on"]["push"]["paths"]

    def deploys(changed: str) -> bool:
        return any(fnmatch(changed, p.replace("**", "*")) for p in paths)

    assert (
        not deploys("README.md") and not deploys("docs/simulator/overview.md") and not deploys("mkdocs.yml")
    )
    assert not deploys("tests/conftest.py")
    for changed in (
        "__main__.py",
        "Pulumi.prod.yaml",
        "src/llm_platform/components/specs/serving.py",
        "src/llm_platform/config/schema/stack.py",
        "uv.lock",
    ):
        assert deploys(changed), changed
    for package in ("src", "policy"):
        assert f"{package}/**" in paths


def test_a_deploy_checks_the_render_and_runs_preflight_before_pulumi_up() -> None:
    steps_ = load("pulumi-up.yml")["jobs"]["up"]["steps"]
    up = next(i for i, s in enumerate(steps_) if s.get("uses", "").startswith("pulumi/actions@"))
    before = " ".join(s.get("run", "") for s in steps_[:up])
    for command in ("tools.render", "tools.validate_render", "tools.security_scan", "tools.preflight"):
        assert f"uv run python -m llm_platform.{command} " in before, command
