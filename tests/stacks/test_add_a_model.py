"""The most common team edit, adding models to a stack file, needs no hand-sizing: a copy of each real stack
gets two more models (Llama-3.1-8B, weights streamed from S3, on the stack's first GPU pool) and only that
pool's GPU limit raised by what they may use. It must still render, validate against the upstream schemas,
pass the policies and preflight with no blocker, each new model fully deployed: the add-ons they bring (loader
Jobs, endpoint pickers) land on the autoscaled add-on NodePool, never on the fixed system node group."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from llm_platform.config.loader import PROJECT, Stack, load_stack, stack_file, stack_name, stack_names
from llm_platform.tools import render
from tests.stacks.real import check

ADDED = 2


def with_more_models(stack: Stack, folder: Path, count: int = ADDED) -> tuple[Path, list[str]]:
    """A copy of the stack file with `count` more models, and their names; the pool's GPU limit grows by what
    they may use, as a team adding models would raise it (nothing else changes)."""
    document = yaml.safe_load(stack_file(stack).read_text())
    config = document["config"]
    pool = config[f"{PROJECT}:gpuNodePools"][0]
    models = config.setdefault(f"{PROJECT}:models", [])
    replicas = 2  # prod needs at least 2
    names = []
    for _ in range(count):
        taken = {m.get("name") for m in models}
        name = next(n for n in (f"llama-8b-{i}" if i else "llama-8b" for i in range(100)) if n not in taken)
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
        names.append(name)
    path = folder / f"Pulumi.{stack_name(stack)}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path, names


@pytest.mark.parametrize("stack", stack_names())
def test_adding_two_models_to_a_stack_needs_nothing_else(stack: str, tmp_path: Path) -> None:
    edited, names = with_more_models(stack, tmp_path)
    assert [m.name for m in load_stack(edited).models][-ADDED:] == names
    checked = check(edited, tmp_path / "render")
    assert checked.problems == []
    assert checked.blockers == [], [f.line() for f in checked.blockers]
    manifests = [d for d in yaml.safe_load_all((tmp_path / "render" / "manifests.yaml").read_text()) if d]
    for name in names:
        kinds = {d["kind"] for d in manifests if d["metadata"].get("namespace") == f"model-{name}"}
        assert {"Deployment", "Service", "ScaledObject", "PrometheusRule", "PodDisruptionBudget"} <= kinds
        (loader,) = [
            d for d in manifests if d["kind"] == "Job" and d["metadata"]["namespace"] == f"model-{name}"
        ]
        assert loader["spec"]["template"]["spec"]["nodeSelector"] == {"llm-platform/node-role": "addons"}
    assert render.RENDER_SECRET not in (tmp_path / "render" / "manifests.yaml").read_text()
