"""The add-ons as their records describe them (issue #48). A caller's chart versions (`LlmPlatformArgs.addon_versions`, issue #48) reach every add-on's Helm releases:
the components that install an add-on (Karpenter, Observability, KEDA, the GPU Operator, the load balancer
controller, the model cache's FSx CSI driver, the Gateway's charts, the multi-node controllers) take each
chart's version from its record through `version_of`, so an override lands on the rendered release, with the
charts released alongside the main one (a CRD chart), and only there. And the order `LlmPlatform` builds the
add-ons in agrees with the records' `after`, as the engine sees it: each add-on's main release waits, directly
or through what it waits for, for the main release of every installed add-on its record comes after (a CRD
chart of its own may come sooner)."""

from __future__ import annotations

import pytest

from llm_platform.facts.addons import ADDONS, Addon, Chart
from llm_platform.platform import LlmPlatform
from llm_platform.testing import evaluate, stack_file_values, test_args
from llm_platform.tools import render
from llm_platform.tools.mocks import Registered
from tests.conftest import fixture_stack

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
# a version no record pins: wherever it shows up, the override put it there
OVERRIDES = {a.name: f"{a.version.removeprefix('v')}-override.{i}" for i, a in enumerate(ADDONS)}


def _chart_of(release_chart: str) -> tuple[Addon, Chart]:
    """The record and chart a release installs, by its chart (name in its repository or `oci://` reference)."""
    for record in ADDONS:
        for chart in record.charts:
            if release_chart in (chart.chart, chart.name):
                return record, chart
    raise AssertionError(f"release of chart {release_chart!r} has no add-on record")


def _releases(stack: str, **versions: dict[str, str]) -> dict[str, tuple[Addon, Chart, str]]:
    args = test_args(stack_file_values(fixture_stack(stack))) | versions
    recorded = evaluate(lambda: LlmPlatform(f"llm-{stack}", args), stack=stack)  # type: ignore[arg-type]
    return {
        r.inputs["name"]: (*_chart_of(r.inputs["chart"].rsplit("/", 1)[-1]), r.inputs["version"])
        for r in recorded.by_type(HELM_RELEASE)
    }


@pytest.mark.parametrize(
    ("stack", "expected"),
    [
        (
            "prod",  # EKS with the fsx cache and the gateway
            {"karpenter", "kube-prometheus-stack", "keda", "gpu-operator", "aws-load-balancer-controller",
             "aws-fsx-csi-driver", "envoy-gateway", "ai-gateway", "llm-d-router"},
        ),
        ("multinode", {"lws", "aws-efa-k8s-device-plugin"}),
        ("costs", {"opencost"}),
    ],
)  # fmt: skip
def test_a_callers_versions_reach_every_add_ons_releases(stack: str, expected: set[str]) -> None:
    overridden = _releases(stack, addon_versions=OVERRIDES)
    assert expected <= {record.name for record, _, _ in overridden.values()}
    for release, (record, chart, version) in overridden.items():
        # the main chart and the charts pinned with it follow the override; a chart versioned on its own
        # (the GPU Operator's Node Feature Discovery) keeps its pin
        wanted = OVERRIDES[record.name] if chart.version == record.chart.version else chart.version
        assert version == wanted, release
    assert overridden["karpenter-crd"][2] == overridden["karpenter"][2] == OVERRIDES["karpenter"]
    if stack == "prod":
        assert overridden["node-feature-discovery"][2] == "0.19.0"


def _waits_for(mocks_created: list[Registered]) -> dict[str, set[str]]:
    """Every registration's URN -> the URNs it waits for, directly or through what it waits for."""
    direct = {r.urn: set(r.dependencies) for r in mocks_created}
    closed: dict[str, set[str]] = {}

    def walk(urn: str) -> set[str]:
        if urn not in closed:
            closed[urn] = set()
            for d in direct.get(urn, ()):
                closed[urn] |= {d, *walk(d)}
        return closed[urn]

    return {urn: walk(urn) for urn in direct}


@pytest.mark.parametrize("stack", ["prod", "multinode", "costs", "dev"])
def test_the_add_ons_are_built_in_their_records_order_at_their_pins(stack: str) -> None:
    created = render.evaluate(fixture_stack(stack)).mocks.created
    releases = [r for r in created if r.typ == HELM_RELEASE]
    by_addon: dict[str, list[Registered]] = {}
    for release in releases:
        record, chart = _chart_of(release.inputs["chart"].rsplit("/", 1)[-1])
        assert release.inputs["version"] == chart.version, release.name  # no override: the record's pin
        if chart is record.chart:  # the main release: what an add-on that comes after this one waits for
            by_addon.setdefault(record.name, []).append(release)
    waits = _waits_for(created)
    checked = 0
    for record in ADDONS:
        for release in by_addon.get(record.name, []):
            for before in record.after:
                for dependency in by_addon.get(before, []):
                    assert dependency.urn in waits[release.urn], (
                        f"{release.name} does not wait for {dependency.name}"
                    )
                    checked += 1
    assert checked >= 2, by_addon.keys()
