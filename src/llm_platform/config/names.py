"""The names the platform builds from the stack file's name fields."""

from __future__ import annotations


def interruption_queue_name(cluster_name: str) -> str:
    return f"{cluster_name}-karpenter"


def interruption_rule_name(cluster_name: str, event: str) -> str:
    return f"{cluster_name}-karpenter-{event}"
