"""What KEDA looks like: operator, metrics server and webhooks on the add-on nodes, with its own metrics
scraped (the scaler-error alerts read them)."""

from __future__ import annotations

from typing import Any

from llm_platform.components.specs.common import ADDON_NODE_LABEL, ADDON_TOLERATION


def helm_values() -> dict[str, Any]:
    return {
        "nodeSelector": dict(ADDON_NODE_LABEL),
        "tolerations": [ADDON_TOLERATION],
        "prometheus": {
            "operator": {"enabled": True, "serviceMonitor": {"enabled": True}},
            "metricServer": {"enabled": True, "serviceMonitor": {"enabled": True}},
        },
    }
