"""`LlmPlatform` resolves the stack's plan once and hands each child its slice (issue #44): no child parses the
stack file's serving blocks or resolves a model again."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from llm_platform.config import loader
from llm_platform.plan import stack as plan_stack
from llm_platform.tools import render
from tests.conftest import fixture_stack
from tests.plans import stack_plan


@dataclass
class Counted:
    """One evaluation of the prod fixture with every model resolution, serving-block parse and
    `parse_block` call counted (the counters pass each call on, so one evaluation serves both tests)."""

    resolved: list[str] = field(default_factory=list)
    serving_parses: list[Any] = field(default_factory=list)
    parsed: list[str] = field(default_factory=list)
    evaluated: render.Render | None = None


def _count_parse_blocks(monkeypatch: pytest.MonkeyPatch, parsed: list[str]) -> None:
    """Count `parse_block` wherever it is imported, so a new caller counts too."""
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


@pytest.fixture(scope="module")
def counted() -> Iterator[Counted]:
    counts = Counted()
    resolve_model, parse_serving = plan_stack.resolve_model, plan_stack.parse_serving

    def counted_resolve(model: Any, *args: Any, **kwargs: Any) -> Any:
        counts.resolved.append(model.name)
        return resolve_model(model, *args, **kwargs)

    def counted_parse(*args: Any, **kwargs: Any) -> Any:
        counts.serving_parses.append(args)
        return parse_serving(*args, **kwargs)

    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(plan_stack, "resolve_model", counted_resolve)
        monkeypatch.setattr(plan_stack, "parse_serving", counted_parse)
        _count_parse_blocks(monkeypatch, counts.parsed)
        # a fresh evaluation (not the session's stored one): the counters must see this one run
        counts.evaluated = render.evaluate.__wrapped__(fixture_stack("prod"))  # type: ignore[attr-defined]
        yield counts


def test_each_model_of_the_two_model_prod_fixture_is_resolved_once(counted: Counted) -> None:
    assert sorted(counted.resolved) == ["llama-70b", "mistral-7b"]  # before: 14 (N(2N+3) for N = 2)
    assert counted.serving_parses == []  # before: 6
    # and the children were built from those plans: each model's workload, scaler and gateway pool
    assert counted.evaluated is not None
    for model in ("llama-70b", "mistral-7b"):
        kinds = {
            m["kind"]
            for m in counted.evaluated.manifests
            if m["metadata"].get("namespace") == f"model-{model}"
        }
        assert {"ScaledObject", "PodMonitor"} <= kinds, model


def test_no_child_parses_a_block_of_the_stack_file_again(counted: Counted) -> None:
    """The pools, the cluster's AMI versions, the environment, alerting and the model cache are parsed once,
    with the whole stack file, by `LlmPlatform`: Karpenter, GpuNodePools, Observability and ModelCache get
    the plan's slice."""
    assert counted.parsed == []  # before: gpuNodePools twice, amiVersions, environment, alerting, modelCache
    # and the children were built from the plan: a NodePool per pool, Prometheus sized for prod, the CSI driver
    assert counted.evaluated is not None
    pools = {m["metadata"]["name"] for m in counted.evaluated.manifests if m["kind"] == "NodePool"}
    assert {p.name for p in stack_plan("prod").gpu_node_pools} <= pools
    prometheus = counted.evaluated.helm["kube-prometheus-stack"]["values"]["prometheus"]["prometheusSpec"]
    assert prometheus["replicas"] == 2
    assert "aws-fsx-csi-driver" in counted.evaluated.helm
