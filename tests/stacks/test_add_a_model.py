"""The most common team edit, adding a model to a stack file, breaks nothing: a copy of each real stack gets
one more model (Llama-3.1-8B, weights streamed from S3, on the stack's first GPU pool) and must still render,
validate against the upstream schemas and pass the policies, with the new model fully deployed. Preflight may
rightly block it for one reason only, the system node group's room for the model's gateway and controller
pods (nothing autoscales that group); one more system node, as preflight advises, clears it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from llm_platform.config.loader import PROJECT, load_stack, stack_file, stack_names
from llm_platform.tools import render
from llm_platform.tools.preflight.findings import Finding
from tests.stacks.real import check, problems


def with_one_more_model(stack: str, folder: Path) -> tuple[Path, str]:
    """A copy of the stack file with one more model, and its name; the pool's GPU limit grows by what the
    model may use, as a team adding a model would raise it."""
    document = yaml.safe_load(stack_file(stack).read_text())
    config = document["config"]
    pool = config[f"{PROJECT}:gpuNodePools"][0]
    models = config.setdefault(f"{PROJECT}:models", [])
    taken = {m.get("name") for m in models}
    name = next(n for n in (f"llama-8b-{i}" if i else "llama-8b" for i in range(100)) if n not in taken)
    replicas = 2  # prod needs at least 2
    models.append(
        {
            "name": name,
            "huggingFaceId": "meta-llama/Llama-3.1-8B-Instruct",
            "nodePool": pool["name"],
            "tensorParallelSize": 1,
            "maxModelLen": 8192,
            "cache": "s3",
            "needsHfToken": True,
            "autoscaling": {"minReplicas": replicas, "maxReplicas": replicas},
            "slo": {"ttftSeconds": 0.5, "itlSeconds": 0.05},
        }
    )
    pool["gpuLimit"] += replicas
    path = folder / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path, name


def with_one_more_system_node(path: Path) -> Path:
    """The stack file with one more node in its system group, what preflight advises when it is full."""
    document = yaml.safe_load(path.read_text())
    cluster = document["config"][f"{PROJECT}:cluster"]
    nodes = cluster.setdefault("systemNodes", {})
    nodes["min"] = nodes.get("min", 2) + 1
    nodes["max"] = max(nodes.get("max", 3), nodes["min"])
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def is_system_group_capacity(finding: Finding) -> bool:
    return finding.check == "schedulability" and finding.object == "node group system"


@pytest.mark.parametrize("stack", stack_names())
def test_adding_a_model_to_a_stack_breaks_nothing(stack: str, tmp_path: Path) -> None:
    edited, name = with_one_more_model(stack, tmp_path)
    assert [m.name for m in load_stack(edited).models][-1] == name
    checked = check(edited, tmp_path / "render")
    assert checked.problems == []
    assert all(is_system_group_capacity(f) for f in checked.blockers), [f.line() for f in checked.blockers]
    manifests = [d for d in yaml.safe_load_all((tmp_path / "render" / "manifests.yaml").read_text()) if d]
    kinds = {d["kind"] for d in manifests if d["metadata"].get("namespace") == f"model-{name}"}
    assert {"Deployment", "Service", "ScaledObject", "PrometheusRule", "PodDisruptionBudget"} <= kinds
    assert render.RENDER_SECRET not in (tmp_path / "render" / "manifests.yaml").read_text()
    if checked.blockers:
        assert problems(with_one_more_system_node(edited), tmp_path / "with-room") == []
