"""What capacity reservations look like: the EC2NodeClass selector terms of a pool that launches into On-Demand
Capacity Reservations (ODCRs) or Capacity Blocks for ML, the IAM they need, and how their end dates reach an
alert.

How Karpenter 1.14 uses them (docs `tasks/odcrs.md` at v1.14; code `pkg/providers/instancetype/offering/
reserved_capacity_resolver.go` and `pkg/controllers/capacityreservation/expiration/controller.go` at v1.14.1):
- a NodePool admits reservations by allowing `karpenter.sh/capacity-type: reserved`; every reservation the
  EC2NodeClass's `capacityReservationSelectorTerms` select becomes an extra offering of its instance type and
  zone, priced at the on-demand price / 10,000,000. Karpenter launches the cheapest offering that fits, so it
  uses reserved capacity first and falls back to the pool's other capacity types (spot, on-demand) only when no
  reservation has room: no NodePool weights are involved (the `ReservedCapacity` feature gate, on by default
  since v1.6, must be on);
- open matching is not supported: a reservation is used only if a selector term names it;
- a Capacity Block ends at its end time; EC2 starts terminating its instances 30 minutes before, and Karpenter
  deletes the NodeClaims 40 minutes before (10 minutes ahead of EC2) so pods drain gracefully;
- the EC2NodeClass's `status.capacityReservations[]` carries each selected reservation's `id`, `instanceType`,
  `availabilityZone`, `reservationType` (`default` | `capacity-block`), `state` and `endTime`; kube-state-metrics
  turns that into metrics (custom resource state) which the alerts below read.
"""

from __future__ import annotations

from typing import Any

from llm_platform.components.specs.common import rule_manifest
from llm_platform.config.schema import GpuNodePool

NODE_CLASS_GROUP = "karpenter.k8s.aws"
NODE_CLASS_VERSION = "v1"
# kube-state-metrics custom resource state: metrics named <prefix>_<name>
METRIC_PREFIX = "karpenter_ec2nodeclass"
END_TIME = f"{METRIC_PREFIX}_capacity_reservation_end_time_seconds"
RESERVATION_INFO = f"{METRIC_PREFIX}_capacity_reservation_info"
# Karpenter deletes a Capacity Block's NodeClaims this long before its end time (expiration controller)
KARPENTER_DRAIN_BEFORE_END_SECONDS = 40 * 60
CAPACITY_BLOCK_WARN_SECONDS = 24 * 3600  # a day to buy the next block or make room elsewhere
CAPACITY_BLOCK_CRITICAL_SECONDS = 3 * 3600  # the drain is close: capacity must exist elsewhere now
RULE_NAME = "karpenter-capacity-reservations"
RUNBOOK = "docs/capacity.md#capacity-reservations-and-capacity-blocks"


def selector_terms(pool: GpuNodePool) -> list[dict[str, Any]]:
    """The pool's `capacityReservationSelectorTerms` (terms are ORed)."""
    terms: list[dict[str, Any]] = []
    for term in pool.capacity_reservations:
        if term.id is not None:
            terms.append({"id": term.id})
        else:
            body: dict[str, Any] = {"tags": dict(term.tags or {})}
            if term.owner_id is not None:
                body["ownerID"] = term.owner_id
            terms.append(body)
    return terms


def reservation_arns(pools: list[GpuNodePool], *, partition: str, region: str) -> list[str]:
    """Capacity reservations the controller may launch into beyond its own account's: a reservation named by id
    (its owner account is unknown here, the id is unique) and every reservation of a tag term's ownerID
    (reservations shared through AWS RAM carry their owner's account in the ARN)."""
    prefix = f"arn:{partition}:ec2:{region}"
    arns = {
        f"{prefix}:*:capacity-reservation/{t.id}"
        for p in pools
        for t in p.capacity_reservations
        if t.id is not None
    }
    arns |= {f"{prefix}:{owner}:capacity-reservation/*" for p in pools for owner in p.reservation_owner_ids}
    return sorted(arns)


# ------------------------------------------------------------------------------ kube-state-metrics


def kube_state_metrics_values() -> dict[str, Any]:
    """kube-state-metrics subchart values: EC2NodeClass reservation status as metrics, and the RBAC to read it."""
    return {
        "customResourceState": {
            "enabled": True,
            "config": {
                "kind": "CustomResourceStateMetrics",
                "spec": {"resources": [_node_class_resource()]},
            },
        },
        "rbac": {
            "extraRules": [
                {"apiGroups": [NODE_CLASS_GROUP], "resources": ["ec2nodeclasses"], "verbs": ["list", "watch"]}
            ]
        },
    }


def _node_class_resource() -> dict[str, Any]:
    reservation_labels = {
        "capacity_reservation_id": ["id"],
        "instance_type": ["instanceType"],
        "zone": ["availabilityZone"],
        "reservation_type": ["reservationType"],
    }
    path = ["status", "capacityReservations"]
    return {
        "groupVersionKind": {
            "group": NODE_CLASS_GROUP,
            "version": NODE_CLASS_VERSION,
            "kind": "EC2NodeClass",
        },
        "metricNamePrefix": METRIC_PREFIX,
        "labelsFromPath": {"ec2nodeclass": ["metadata", "name"]},
        "metrics": [
            {
                "name": "capacity_reservation_info",
                "help": "A capacity reservation the EC2NodeClass selects (one series per reservation).",
                "each": {
                    "type": "Info",
                    "info": {"path": path, "labelsFromPath": {**reservation_labels, "state": ["state"]}},
                },
            },
            {
                # RFC 3339 `endTime` -> Unix seconds (kube-state-metrics converts timestamps); reservations
                # without an end time (unlimited ODCRs) export no series
                "name": "capacity_reservation_end_time_seconds",
                "help": "When the capacity reservation ends (Unix seconds); Capacity Blocks always have one.",
                "each": {
                    "type": "Gauge",
                    "gauge": {"path": path, "labelsFromPath": reservation_labels, "valueFrom": ["endTime"]},
                },
            },
        ],
    }


# ------------------------------------------------------------------------------ alerts


def alert_rules(node_classes: list[str]) -> list[dict[str, Any]]:
    """Capacity Block end dates, and reservation pools that select no reservation at all."""
    block = f'{END_TIME}{{reservation_type="capacity-block"}}'
    remaining = f"({block} - time())"
    drain_minutes = KARPENTER_DRAIN_BEFORE_END_SECONDS // 60
    rules: list[dict[str, Any]] = [
        _rule(
            "CapacityBlockEndingSoon",
            f"{remaining} < {CAPACITY_BLOCK_WARN_SECONDS} and {remaining} > {CAPACITY_BLOCK_CRITICAL_SECONDS}",
            "warning",
            "Capacity Block {{ $labels.capacity_reservation_id }} ends in {{ $value | humanizeDuration }}",
            "The {{ $labels.instance_type }} Capacity Block {{ $labels.capacity_reservation_id }} of EC2NodeClass "
            "{{ $labels.ec2nodeclass }} ({{ $labels.zone }}) ends in {{ $value | humanizeDuration }}. Karpenter "
            f"drains its nodes {drain_minutes} minutes before the end; buy the next block or make sure the pool's "
            "fallback capacity types and gpuLimit can carry the load.",
        ),
        _rule(
            "CapacityBlockEnding",
            f"{remaining} <= {CAPACITY_BLOCK_CRITICAL_SECONDS} and {remaining} > 0",
            "critical",
            "Capacity Block {{ $labels.capacity_reservation_id }} ends in {{ $value | humanizeDuration }}",
            "The {{ $labels.instance_type }} Capacity Block {{ $labels.capacity_reservation_id }} of EC2NodeClass "
            "{{ $labels.ec2nodeclass }} ends in {{ $value | humanizeDuration }}; Karpenter starts draining its "
            f"nodes {drain_minutes} minutes before the end and EC2 terminates them 30 minutes before. Models on "
            "it move to the pool's other capacity types, or stay Pending if the pool has none.",
        ),
    ]
    for node_class in node_classes:
        rules.append(
            _rule(
                "CapacityReservationsNotSelected",
                f'absent({RESERVATION_INFO}{{ec2nodeclass="{node_class}"}})',
                "warning",
                f"EC2NodeClass {node_class} selects no capacity reservation",
                f"EC2NodeClass {node_class} has capacityReservationSelectorTerms but its status lists no "
                "reservation (wrong id or tags, another region, expired, or kube-state-metrics cannot read "
                "EC2NodeClasses); its pool launches only its fallback capacity types, at their price.",
            )
        )
    return rules


def _rule(alert: str, expr: str, severity: str, summary: str, description: str) -> dict[str, Any]:
    # absent() keeps the selector's `ec2nodeclass` label, so every alert names its EC2NodeClass
    return {
        "alert": alert,
        "expr": expr,
        "for": "15m" if alert == "CapacityReservationsNotSelected" else "1m",
        "labels": {"severity": severity},
        "annotations": {"summary": summary, "description": description, "runbook": RUNBOOK},
    }


def prometheus_rule(node_classes: list[str], namespace: str) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": "karpenter", "app.kubernetes.io/component": "alerting"}
    groups = [{"name": "karpenter.capacity-reservations", "rules": alert_rules(node_classes)}]
    return rule_manifest(RULE_NAME, namespace, groups, labels)
