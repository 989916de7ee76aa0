"""Render an `autoscaling` or `headroom` block (or a duration) the way it goes into Pulumi.<stack>.yaml (camelCase)."""

from __future__ import annotations

import yaml

from llm_platform.config.schema import Autoscaling, Headroom


def autoscaling_yaml(a: Autoscaling) -> str:
    """The block to paste; prod's scale-to-zero opt-in appears only when it is on."""
    skip = None if a.allow_scale_to_zero else {"allow_scale_to_zero"}
    data = a.model_dump(by_alias=True, exclude_none=True, mode="json", exclude=skip)
    return yaml.safe_dump({"autoscaling": data}, sort_keys=False, default_flow_style=None, width=200)


def go_duration(seconds: float) -> str:
    """Seconds as the Go-style duration a stack file takes (`consolidateAfter: 5m`)."""
    n = int(seconds)
    return f"{n // 3600}h" if n and n % 3600 == 0 else f"{n // 60}m" if n and n % 60 == 0 else f"{n}s"


def headroom_yaml(h: Headroom | None) -> str:
    """The pool's `headroom` block; when the best config keeps no warm GPUs, say so (no block to paste)."""
    if h is None:
        return "# no headroom: leave the pool without a `headroom` block\n"
    data = h.model_dump(by_alias=True, exclude_none=True, mode="json")
    return yaml.safe_dump({"headroom": data}, sort_keys=False, default_flow_style=None, width=200)
