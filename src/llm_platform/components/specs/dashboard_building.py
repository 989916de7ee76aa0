"""The pieces every Grafana dashboard of the platform is built from: Prometheus targets, panels flowed into a
24-column grid, the `datasource` and query variables, and the dashboard document around them.

Kept apart from the dashboards themselves (`dashboards`, `gateway_monitoring`) so each of those reads as a list
of panels.
"""

from __future__ import annotations

from typing import Any

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
SCHEMA_VERSION = 39


def _target(expr: str, legend: str, ref: str, *, instant: bool = False) -> dict[str, Any]:
    target: dict[str, Any] = {"refId": ref, "datasource": DATASOURCE, "expr": expr, "legendFormat": legend}
    if instant:
        target.update(instant=True, range=False, format="table")
    return target


def _panel(
    title: str,
    targets: list[tuple[str, str]],
    *,
    unit: str,
    description: str,
    kind: str = "timeseries",
    instant: bool = False,
    width: int = 12,
    height: int = 8,
    min_value: float | None = 0,
) -> dict[str, Any]:
    defaults: dict[str, Any] = {"unit": unit}
    if min_value is not None:
        defaults["min"] = min_value
    return {
        "type": kind,
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "targets": [
            _target(expr, legend, chr(ord("A") + i), instant=instant)
            for i, (expr, legend) in enumerate(targets)
        ],
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "options": {
            "legend": {"displayMode": "table", "placement": "bottom", "calcs": ["lastNotNull", "max"]}
        }
        if kind == "timeseries"
        else {},
        "gridPos": {"w": width, "h": height},
    }


def _layout(panels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Give panels ids and flow them left to right, 24 columns wide."""
    x = y = row_height = 0
    for i, panel in enumerate(panels, start=1):
        pos = panel["gridPos"]
        if x + pos["w"] > 24:
            x, y, row_height = 0, y + row_height, 0
        pos.update(x=x, y=y)
        x += pos["w"]
        row_height = max(row_height, pos["h"])
        panel["id"] = i
    return panels


def _datasource_variable() -> dict[str, Any]:
    return {
        "name": "datasource",
        "label": "Data source",
        "type": "datasource",
        "query": "prometheus",
        "current": {"text": "Prometheus", "value": "prometheus"},
        "hide": 0,
        "refresh": 1,
        "regex": "",
    }


def _query_variable(name: str, label: str, query: str, *, multi: bool = False) -> dict[str, Any]:
    variable: dict[str, Any] = {
        "name": name,
        "label": label,
        "type": "query",
        "datasource": DATASOURCE,
        "definition": query,
        "query": {"query": query, "refId": f"{name}-variable"},
        "refresh": 2,  # on time range change: new models and nodes appear without a reload
        "sort": 1,
        "hide": 0,
        "multi": multi,
        "includeAll": multi,
        "current": {},
        "regex": "",
    }
    if multi:
        variable["allValue"] = ".*"
    return variable


def _dashboard(
    uid: str, title: str, description: str, variables: list[dict[str, Any]], panels: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "uid": uid,
        "title": title,
        "description": description,
        "tags": ["llm-platform"],
        "editable": True,
        "graphTooltip": 1,
        "refresh": "30s",
        "schemaVersion": SCHEMA_VERSION,
        "time": {"from": "now-6h", "to": "now"},
        "timezone": "browser",
        "annotations": {"list": []},
        "links": [],
        "templating": {"list": [_datasource_variable(), *variables]},
        "panels": _layout(panels),
        "version": 1,
    }
