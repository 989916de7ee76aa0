"""One record per add-on (issue #48): a made-up add-on described by its record alone (chart, repository,
version, namespace, CRDs, pods, values builder, what it comes after) is installed by `LlmPlatform` after what it
names, modelled by preflight, ordered by its CRD group, validated against its CRD and, its pods running all day
on the add-on pool, priced by the simulator's model of that pool, with no other file of the package edited."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from llm_platform.components.addon import HelmAddon, HelmAddonArgs
from llm_platform.config.loader import ROOT
from llm_platform.facts import addons
from llm_platform.facts.addons import ADDONS, Addon, Chart, CrdFile, resolve_ref
from llm_platform.plan import Plan
from llm_platform.plan.addon_pods import addon_pool_pods
from llm_platform.plan.chart_pods import ChartRelease
from llm_platform.plan.nodes import ADDON_NODE_LABEL, ADDON_TOLERATION
from llm_platform.plan.pod_templates import PodTemplate, from_pod_spec
from llm_platform.simulator.controllers.platform_nodes import platform_nodes
from llm_platform.tools import render
from llm_platform.tools.mocks import Registered
from llm_platform.tools.preflight import ordering, pods, scheduling
from llm_platform.tools.preflight.view import Manifest, from_mocks
from llm_platform.tools.validate_render import (
    CrdUnavailable,
    bundled_bytes,
    crd_sources,
    load_crds,
    problems,
    schemas_of,
)
from tests.conftest import fixture_stack
from tests.plans import stack_plan

CRD = ROOT / "tests/fixtures/crds/example.com_widgets.yaml"
HERE = __name__


WIDGET_CPU = "250m"


def widget_values(plan: Plan) -> dict[str, Any]:
    """The made-up add-on's values builder: reads the plan it is given; its controllers on the add-on nodes."""
    return {
        "replicas": 2 if plan.prod else 1,
        "resources": {"requests": {"cpu": WIDGET_CPU, "memory": "64Mi"}},
        "nodeSelector": dict(ADDON_NODE_LABEL),
        "tolerations": [dict(ADDON_TOLERATION)],
    }


def widget_pods(release: ChartRelease) -> list[PodTemplate]:
    """Its pod model, for preflight and the simulator's add-on pool: one Deployment of `replicas` controllers."""
    v = release.values
    spec = {
        "containers": [{"resources": v.get("resources") or {}}],
        "nodeSelector": v.get("nodeSelector") or {},
        "tolerations": v.get("tolerations") or [],
    }
    owner = f"Helm release {release.name} (controller)"
    return [from_pod_spec(owner, "values", "Deployment", int(v.get("replicas", 1)), spec, {})]


WIDGETS = Addon(
    name="widget-operator",
    namespace="widgets",
    charts=(
        Chart("widget-operator", "widget-operator", "1.2.3", "https://charts.example.com",
              pods=f"{HERE}:widget_pods", crd_groups=("example.com",)),
    ),
    crd_files=(
        CrdFile("example/widget-operator", "v1.2.3", "config/crd/example.com_widgets.yaml", "Widget",
                hashlib.sha256(CRD.read_bytes()).hexdigest()),
    ),
    after=("keda",),
    values=f"{HERE}:widget_values",
)  # fmt: skip


@pytest.fixture
def with_widgets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(addons, "ADDONS", (*ADDONS, WIDGETS))


def _release(created: list[Registered], name: str) -> Registered:
    return next(
        r for r in created if r.typ == "kubernetes:helm.sh/v3:Release" and r.inputs.get("name") == name
    )


@pytest.mark.usefixtures("with_widgets")
def test_a_new_record_is_installed_after_what_it_names_and_preflighted() -> None:
    evaluated = render.evaluate.__wrapped__(fixture_stack("dev"))  # type: ignore[attr-defined]
    created = evaluated.mocks.created
    release = _release(created, "widget-operator")
    assert (release.inputs["chart"], release.inputs["version"], release.inputs["namespace"]) == (
        "widget-operator",
        "1.2.3",
        "widgets",
    )
    assert release.inputs["repositoryOpts"]["repo"] == "https://charts.example.com"
    assert release.inputs["values"]["replicas"] == 1  # the dev plan, through the values builder
    assert any(m["kind"] == "Namespace" and m["metadata"]["name"] == "widgets" for m in evaluated.manifests)
    # ordered: after KEDA (its `after`), and on the cluster's provider after the add-on nodes like every add-on
    assert release.depends_on("kubernetes:helm.sh/v3:Release", "llm-dev-keda-release")
    assert release.k8s_provider == _release(created, "keda").k8s_provider

    view = from_mocks(fixture_stack("dev"), evaluated.mocks)
    modelled, unknown = pods.release_pods(view)
    assert "widget-operator" not in unknown
    (controller,) = [p for p in modelled if p.owner == "Helm release widget-operator (controller)"]
    assert (controller.replicas, controller.requests["cpu"], controller.requests["memory"]) == (1, 250, 64)
    # on the add-on pool, where the plan's model of that pool (what the simulator prices) has it too
    pool = [n for n in scheduling.node_types(view)[0] if n.group == "addons"]
    assert any(scheduling.admission_problem(controller, n) is None for n in pool)
    (planned,) = [p for p in addon_pool_pods(stack_plan("dev")) if p.owner == controller.owner]
    assert (planned.kind, planned.replicas, dict(planned.requests)) == ("Deployment", 1, controller.requests)
    assert ordering.crd_charts()["example.com"] == ("widget-operator",)
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "widgets"},
              "spec": {"size": 1}}  # fmt: skip
    # a Widget waits for the release that installs its CRD group, or preflight says it races it
    view.manifests.append(Manifest("kubernetes:example.com/v1:Widget::w", widget))
    (finding,) = [f for f in ordering.ordering(view) if f.object.startswith("Widget")]
    assert "does not wait for llm-dev-widget-operator-release, which installs example.com" in finding.message
    view.dependencies["kubernetes:example.com/v1:Widget::w"] = {view.releases["widget-operator"].key}
    assert not [f for f in ordering.ordering(view) if f.object.startswith("Widget")]


@pytest.mark.usefixtures("with_widgets")
def test_a_new_records_crd_is_what_the_render_validator_checks(tmp_path: Path) -> None:
    (source,) = [s for s in crd_sources() if s.kind == "Widget"]
    assert source.url == (
        "https://raw.githubusercontent.com/example/widget-operator/v1.2.3/config/crd/example.com_widgets.yaml"
    )
    with pytest.raises(CrdUnavailable, match=r"example\.com_widgets\.yaml"):
        load_crds()  # not bundled yet: `validate_render --download` refreshes the bundle from the records
    (tmp_path / f"{source.file}.gz").write_bytes(gzip.compress(CRD.read_bytes()))
    (tmp_path / "SOURCES.txt").write_text(f"{source.url} {source.sha256}\n")
    schemas = schemas_of(yaml.safe_load_all(bundled_bytes(source, tmp_path)))
    widget = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "widgets"},
    }
    assert problems([{**widget, "spec": {"size": 1}}], schemas, "1.34") == []
    (bad,) = problems([{**widget, "spec": {"size": 1, "colour": "red"}}], schemas, "1.34")
    assert "'colour' was unexpected" in bad


def test_a_new_records_pods_on_the_addon_pool_are_priced_by_the_simulator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stack = fixture_stack("dev")
    without = platform_nodes(stack)
    monkeypatch.setattr(addons, "ADDONS", (*ADDONS, WIDGETS))
    monkeypatch.setattr(f"{HERE}.WIDGET_CPU", "1500m")  # a controller no add-on node has room left for
    with_widgets = platform_nodes(stack)
    assert without is not None and with_widgets is not None
    assert sum(n for _, n in with_widgets.addons) == sum(n for _, n in without.addons) + 1
    assert with_widgets.usd_per_day(0.6)[1] > without.usd_per_day(0.6)[1]
    # off the add-on pool (no toleration of its taint) it is not the pool's cost
    monkeypatch.setattr(f"{HERE}.ADDON_TOLERATION", {"key": "example.com/other", "operator": "Exists"})
    assert platform_nodes(stack) == without


def test_a_caller_overrides_a_records_version(with_widgets: None) -> None:
    from llm_platform.testing import evaluate

    plan = stack_plan("dev")
    recorded = evaluate(
        lambda: HelmAddon(
            "w", HelmAddonArgs(record=WIDGETS, plan=plan, versions={"widget-operator": "1.3.0"})
        )
    )
    assert _release(recorded.created, "widget-operator").inputs["version"] == "1.3.0"


def test_every_records_references_resolve_and_its_order_holds() -> None:
    for record in ADDONS:
        for ref in [record.values, record.component, record.enabled, *(c.pods for c in record.charts)]:
            if ref:
                assert callable(resolve_ref(ref)), (record.name, ref)
    names = [a.name for a in addons.ordered()]
    for record in ADDONS:
        assert all(names.index(d) < names.index(record.name) for d in record.after), record.name
    with pytest.raises(ValueError, match="cycle"):
        addons.ordered(
            [Addon("a", "n", WIDGETS.charts, after=("b",)), Addon("b", "n", WIDGETS.charts, after=("a",))]
        )
