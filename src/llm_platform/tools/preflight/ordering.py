"""Is every object that needs a CustomResourceDefinition (or an API a chart probes at install time) created
after what provides it? Without the dependency `pulumi up` races: a custom object fails with "no matches for
kind", and charts that test `.Capabilities.APIVersions.Has "monitoring.coreos.com/v1"` silently render no
ServiceMonitor.
"""

from __future__ import annotations

from typing import Any

from llm_platform.facts import addons
from llm_platform.tools.preflight.findings import Finding
from llm_platform.tools.preflight.view import RenderView

CHECK = "ordering"


def crd_charts() -> dict[str, tuple[str, ...]]:
    """API group -> the charts that install its CRDs, as the add-on records (llm_platform/facts/addons.py) say; read
    anew on each call."""
    out: dict[str, tuple[str, ...]] = {}
    for record in addons.ADDONS:
        for chart in record.charts:
            for group in chart.crd_groups:
                out[group] = (*out.get(group, ()), chart.name)
    return out


BUILTIN_SUFFIXES = (".k8s.io",)
BUILTIN = {"v1", "apps", "batch", "policy", "autoscaling"}


def _group(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else "v1"


def _builtin(group: str, crd_charts: dict[str, tuple[str, ...]]) -> bool:
    return group in BUILTIN or (group.endswith(BUILTIN_SUFFIXES) and group not in crd_charts)


def _monitoring_enabled(values: Any) -> list[str]:
    """Paths of `serviceMonitor`/`podMonitor`/`prometheusRule` blocks a chart's values enable."""
    found = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for key, child in node.items():
                here = f"{path}.{key}" if path else key
                monitor = key in ("serviceMonitor", "podMonitor", "prometheusRule") and isinstance(
                    child, dict
                )
                if monitor and child.get("enabled") is True:
                    found.append(here)
                walk(child, here)

    walk(values, "")
    return found


def ordering(view: RenderView) -> list[Finding]:
    out = []
    providers: dict[str, list[str]] = {}
    by_group = crd_charts()
    for release in view.releases.values():
        for group, charts in by_group.items():
            if release.chart in charts:
                providers.setdefault(group, []).append(release.key)
    for crd in view.of_kind("CustomResourceDefinition"):
        providers.setdefault(crd.body["spec"]["group"], []).append(crd.key)
    for m in view.manifests:
        group = _group(m.body["apiVersion"])
        if _builtin(group, by_group) or m.kind == "CustomResourceDefinition":
            continue
        provided_by = providers.get(group)
        if not provided_by:
            out.append(Finding("blocker", CHECK, m.ref, "apiVersion",
                               f"{m.body['apiVersion']}: no release or CustomResourceDefinition in the stack provides "
                               "this API group"))  # fmt: skip
        elif not set(provided_by) & view.dependencies.get(m.key, set()):
            out.append(Finding("blocker", CHECK, m.ref, "dependsOn",
                               f"does not wait for {' or '.join(k.split('::')[1] for k in provided_by)}, which "
                               f"installs {group}: on a fresh cluster it fails with 'no matches for kind {m.kind}'"))  # fmt: skip
    monitoring = providers.get("monitoring.coreos.com", [])
    for release in view.releases.values():
        if release.chart == "kube-prometheus-stack":
            continue
        enabled = _monitoring_enabled(release.values)
        if enabled and not set(monitoring) & view.dependencies.get(release.key, set()):
            out.append(Finding("blocker", CHECK, f"Helm release {release.name}", f"values.{enabled[0]}",
                               "the chart renders it only if monitoring.coreos.com/v1 exists at install time; the "
                               "release does not wait for kube-prometheus-stack, so on a fresh cluster it is never "
                               "scraped"))  # fmt: skip
    return out
