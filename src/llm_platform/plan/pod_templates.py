"""A pod as the scheduler sees it: its requests (CPU in millicores, memory and storage in MiB), kind, replicas,
node selector, tolerations, required node affinity and hostname anti-affinity, and whether a node with given
labels and taints admits it. Read by preflight (from the render) and by the plan's model of the add-on pool
(from the add-on records), so both schedule alike.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DYNAMIC_LABELS",
    "EFA",
    "GI",
    "RESOURCES",
    "PodTemplate",
    "Requests",
    "admission_problem_on",
    "from_pod_spec",
    "matches_expression",
    "pod_requests",
    "quantity",
    "requests_of",
    "tolerates",
]

GI = 1024  # MiB per GiB
EFA = "vpc.amazonaws.com/efa"  # the EFA device plugin's resource (multi-node replicas)
RESOURCES = ("cpu", "memory", "ephemeral-storage", "nvidia.com/gpu", EFA)
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
_DECIMAL = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def quantity(resource: str, value: Any) -> int:
    """CPU in millicores, memory and storage in MiB, GPUs as a count."""
    text = str(value).strip()
    if resource == "cpu":
        return round(float(text[:-1])) if text.endswith("m") else round(float(text) * 1000)
    if resource in ("nvidia.com/gpu", EFA):
        return int(text)
    match = re.fullmatch(r"([0-9.eE+-]+)([KMGT]i?|k)?", text)
    if not match:
        raise ValueError(f"{resource}: cannot read quantity {value!r}")
    number, unit = float(match.group(1)), match.group(2) or ""
    scale = _BINARY.get(unit) or _DECIMAL.get(unit) or 1
    return round(number * scale / 2**20)


@dataclass(frozen=True)
class Requests:
    """A container's CPU and memory requests, as Kubernetes quantities."""

    cpu: str
    memory: str

    def as_dict(self) -> dict[str, str]:
        return {"cpu": self.cpu, "memory": self.memory}


# labels every node has without a NodePool naming them
DYNAMIC_LABELS = ("kubernetes.io/hostname", "topology.kubernetes.io/zone", "topology.kubernetes.io/region")


def requests_of(containers: list[dict[str, Any]]) -> dict[str, int]:
    total: dict[str, int] = dict.fromkeys(RESOURCES, 0)
    for c in containers:
        for resource, value in ((c.get("resources") or {}).get("requests") or {}).items():
            if resource in total:
                total[resource] += quantity(resource, value)
    return total


def pod_requests(spec: dict[str, Any]) -> dict[str, int]:
    """What the scheduler reserves for a pod: its containers plus its native sidecars (init containers with
    `restartPolicy: Always`, which run beside them), or an ordinary init container plus the sidecars started
    before it, whichever is larger (KEP-753; k8s.io/component-helpers resource.PodRequests, which the
    scheduler and Karpenter's own podRequests follow)."""
    sidecars: dict[str, int] = dict.fromkeys(RESOURCES, 0)
    peaks = []
    for c in spec.get("initContainers") or []:
        own = requests_of([c])
        if c.get("restartPolicy") == "Always":
            sidecars = {r: sidecars[r] + own[r] for r in RESOURCES}
        else:
            peaks.append({r: sidecars[r] + own[r] for r in RESOURCES})
    main = requests_of(spec.get("containers") or [])
    return {r: max([main[r] + sidecars[r], *(p[r] for p in peaks)]) for r in RESOURCES}


@dataclass
class PodTemplate:
    owner: str  # "Deployment model-x/x", "Helm release karpenter (controller)"
    where: str  # where its scheduling fields live
    kind: str  # Deployment | StatefulSet | DaemonSet | Job
    replicas: int  # the most the stack runs (a ScaledObject's maxReplicaCount)
    requests: dict[str, int]
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    required_terms: list[list[dict[str, Any]]] = field(default_factory=list)
    spread: list[dict[str, Any]] = field(default_factory=list)
    hostname_anti_affinity: bool = False
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def daemon(self) -> bool:
        return self.kind == "DaemonSet"


def from_pod_spec(
    owner: str, where: str, kind: str, replicas: int, spec: dict[str, Any], labels: dict[str, str]
) -> PodTemplate:
    requests = pod_requests(spec)
    affinity = spec.get("affinity") or {}
    node_affinity = (affinity.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    terms = [t.get("matchExpressions") or [] for t in (node_affinity or {}).get("nodeSelectorTerms") or []]
    anti = (affinity.get("podAntiAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or []
    return PodTemplate(
        owner=owner,
        where=where,
        kind=kind,
        replicas=replicas,
        requests=requests,
        node_selector=dict(spec.get("nodeSelector") or {}),
        tolerations=list(spec.get("tolerations") or []),
        required_terms=terms,
        spread=list(spec.get("topologySpreadConstraints") or []),
        hostname_anti_affinity=any(t.get("topologyKey") == "kubernetes.io/hostname" for t in anti),
        labels=labels,
    )


def tolerates(tolerations: list[dict[str, Any]], taint: Mapping[str, Any]) -> bool:
    if taint.get("effect") == "PreferNoSchedule":
        return True
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint.get("effect"):
            continue
        if t.get("operator", "Equal") == "Exists":
            if not t.get("key") or t["key"] == taint.get("key"):
                return True
        elif t.get("key") == taint.get("key") and str(t.get("value", "")) == str(taint.get("value", "")):
            return True
    return False


def matches_expression(expr: dict[str, Any], labels: Mapping[str, str]) -> bool:
    key, op, values = expr["key"], expr["operator"], [str(v) for v in expr.get("values") or []]
    present = key in labels or key in DYNAMIC_LABELS
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if key not in labels:
        return op == "NotIn"
    if op == "In":
        return labels[key] in values
    if op == "NotIn":
        return labels[key] not in values
    number = float(labels[key])
    return number > float(values[0]) if op == "Gt" else number < float(values[0])


def admission_problem_on(
    pod: PodTemplate, labels: Mapping[str, str], taints: Sequence[Mapping[str, Any]]
) -> str | None:
    """Why the pod may not land on a node with these labels and taints (taints, selector, affinity), or None."""
    for taint in taints:
        if not tolerates(pod.tolerations, taint):
            return f"taint {taint['key']}={taint.get('value', '')}:{taint['effect']} is not tolerated"
    for key, value in pod.node_selector.items():
        if labels.get(key) != str(value):
            return f"nodeSelector {key}={value} (node has {labels.get(key, 'no such label')})"
    if pod.required_terms and not any(
        all(matches_expression(e, labels) for e in term) for term in pod.required_terms
    ):
        return "required nodeAffinity matches no term"
    return None
