"""Render an `autoscaling` block the way it goes into Pulumi.<stack>.yaml (camelCase)."""

from __future__ import annotations

import yaml

from config.schema import Autoscaling


def autoscaling_yaml(a: Autoscaling) -> str:
    data = a.model_dump(by_alias=True, exclude_none=True, mode="json")
    return yaml.safe_dump({"autoscaling": data}, sort_keys=False, default_flow_style=None, width=200)
