"""`LlmPlatform` resolves the stack's plan once and hands each child its slice (issue #44): no child parses the
stack file's serving blocks or resolves a model again."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from llm_platform.config import loader
from llm_platform.plan import stack as plan_stack
from llm_platform.tools import render
from tests.conftest import fixture_stack
from tests.plans import stack_plan


def test_each_model_of_the_two_model_prod_fixture_is_resolved_once(monkeypatch: pytest.MonkeyPatch) -> None:
    resolved: list[str] = []
    serving_parses: list[Any] = []
    resolve_model, parse_serving = plan_stack.resolve_model, plan_stack.parse_serving

    def counted_resolve(model: Any, *args: Any, **kwargs: Any) -> Any:
        resolved.append(model.name)
        return resolve_model(model, *args, **kwargs)

    def counted_parse(*args: Any, **kwargs: Any) -> Any:
        serving_parses.append(args)
        return parse_serving(*args, **kwargs)

    monkeypatch.setattr(plan_stack, "resolve_model", counted_resolve)
    monkeypatch.setattr(plan_stack, "parse_serving", counted_parse)
    evaluated = render.evaluate.__wrapped__(fixture_stack("prod"))  # type: ignore[attr-defined]

    assert sorted(resolved) == ["llama-70b", "mistral-7b"]  # before: 14 (N(2N+3) for N = 2)
    assert serving_parses == []  # before: 6
    # and the children were built from those plans: each model's workload, scaler and gateway pool
    for model in ("llama-70b", "mistral-7b"):
        kinds = {m["kind"] for m in evaluated.manifests if m["metadata"].get("namespace") == f"model-{model}"}
        assert {"ScaledObject", "PodMonitor"} <= kinds, model


def test_no_child_parses_a_block_of_the_stack_file_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pools, the cluster's AMI versions, the environment, alerting and the model cache are parsed once,
    with the whole stack file, by `LlmPlatform`: Karpenter, GpuNodePools, Observability and ModelCache get
    the plan's slice. Counted wherever `parse_block` is imported, so a new caller counts too."""
    parsed: list[str] = []
    original = loader.parse_block

    def counted(key: str, *args: Any, **kwargs: Any) -> Any:
        parsed.append(key)
        return original(key, *args, **kwargs)

    for module in list(sys.modules.values()):
        if (
            getattr(module, "__name__", "").startswith("llm_platform")
            and vars(module).get("parse_block") is original
        ):
            monkeypatch.setattr(module, "parse_block", counted)
    evaluated = render.evaluate.__wrapped__(fixture_stack("prod"))  # type: ignore[attr-defined]

    assert parsed == []  # before: gpuNodePools twice, amiVersions, environment, alerting, modelCache
    # and the children were built from the plan: a NodePool per pool, Prometheus sized for prod, the CSI driver
    pools = {m["metadata"]["name"] for m in evaluated.manifests if m["kind"] == "NodePool"}
    assert {p.name for p in stack_plan("prod").gpu_node_pools} <= pools
    prometheus = evaluated.helm["kube-prometheus-stack"]["values"]["prometheus"]["prometheusSpec"]
    assert prometheus["replicas"] == 2
    assert "aws-fsx-csi-driver" in evaluated.helm
