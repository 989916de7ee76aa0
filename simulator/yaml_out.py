"""Render an `autoscaling` or `headroom` block the way it goes into Pulumi.<stack>.yaml (camelCase)."""

from __future__ import annotations

import yaml

from config.schema import Autoscaling, Headroom


def autoscaling_yaml(a: Autoscaling) -> str:
    data = a.model_dump(by_alias=True, exclude_none=True, mode="json")
    return yaml.safe_dump({"autoscaling": data}, sort_keys=False, default_flow_style=None, width=200)


def headroom_yaml(h: Headroom | None) -> str:
    """The pool's `headroom` block (`headroom: null` when the best config keeps no warm GPUs)."""
    data = None if h is None else h.model_dump(by_alias=True, exclude_none=True, mode="json")
    return yaml.safe_dump({"headroom": data}, sort_keys=False, default_flow_style=None, width=200)
