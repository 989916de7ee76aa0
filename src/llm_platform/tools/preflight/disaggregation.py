"""Disaggregated models (prefill and decode Deployments labelled `llm-d.ai/role`) and every pod that uses EFA:
what must hold before `pulumi up` for the KV cache to move over EFA, read from the render alone.

- The roles of one model land in one zone: both select one GPU pool whose NodePool admits one zone, or each
  role's pods carry a required pod affinity on the zone to the model's pods.
- The EFA interfaces cover the requests: on every instance type the pool admits, the pods that fit a node by
  their GPUs, times their `vpc.amazonaws.com/efa` request, stay within the interfaces the EC2NodeClass
  attaches (and the instance has).
- No NetworkPolicy closes a role port: the prefill pods admit the decode pods on vLLM's port (the routing
  sidecar's prefill request) and the model's pods admit each other on the NIXL side-channel port.
- An image without the EFA libraries: a container that requests EFA runs an image the platform knows to carry
  libfabric, aws-ofi-nccl and NIXL (facts/versions.py EFA_IMAGES); otherwise NCCL and NIXL fall back to TCP
  without a word.
"""

from __future__ import annotations

from typing import Any

from llm_platform.facts.catalog import GPU_INSTANCES
from llm_platform.facts.versions import EFA_IMAGES
from llm_platform.plan.addon_pods import EFA
from llm_platform.tools.preflight.findings import Finding
from llm_platform.tools.preflight.nodes import requirement_values
from llm_platform.tools.preflight.pods import pod_requests
from llm_platform.tools.preflight.view import Manifest, RenderView

CHECK = "disaggregation"
POOL_LABEL = "llm-platform/gpu-pool"
ROLE_LABEL = "llm-d.ai/role"
MODEL_LABEL = "app.kubernetes.io/instance"
ZONE = "topology.kubernetes.io/zone"


def _pod(workload: Manifest) -> dict[str, Any]:
    return workload.body["spec"]["template"]


def _roles(view: RenderView) -> dict[tuple[str, str], dict[str, Manifest]]:
    """(namespace, model) -> role -> its Deployment."""
    out: dict[tuple[str, str], dict[str, Manifest]] = {}
    for d in view.of_kind("Deployment"):
        labels = _pod(d)["metadata"].get("labels") or {}
        if ROLE_LABEL in labels:
            out.setdefault((d.namespace, labels.get(MODEL_LABEL, d.name)), {})[labels[ROLE_LABEL]] = d
    return out


def disaggregation(view: RenderView) -> list[Finding]:
    out: list[Finding] = []
    pools = {p.name: p for p in view.of_kind("NodePool")}
    classes = {c.name: c for c in view.of_kind("EC2NodeClass")}
    for (namespace, model), roles in sorted(_roles(view).items()):
        out += _one_zone(model, roles, pools)
        out += _ports(view, namespace, model, roles)
    for workload, spec in _efa_pods(view):
        out += _image(workload, spec)
        pool = pools.get((spec.get("nodeSelector") or {}).get(POOL_LABEL, ""))
        if pool is not None:
            node_class = classes.get(pool.body["spec"]["template"]["spec"]["nodeClassRef"]["name"])
            out += _efa_cover(workload, spec, pool, node_class)
    return out


def _efa_pods(view: RenderView) -> list[tuple[Manifest, dict[str, Any]]]:
    """Every pod template (Deployments, LeaderWorkerSet leaders and workers) that requests EFA."""
    out = []
    for d in view.of_kind("Deployment"):
        out.append((d, _pod(d)["spec"]))
    for lws in view.of_kind("LeaderWorkerSet"):
        lwt = lws.body["spec"]["leaderWorkerTemplate"]
        out += [(lws, lwt[role]["spec"]) for role in ("leaderTemplate", "workerTemplate") if role in lwt]
    return [(w, s) for w, s in out if pod_requests(s).get(EFA, 0) > 0]


def _zones(pool: Manifest) -> list[str]:
    return requirement_values(pool.body["spec"]["template"]["spec"]["requirements"], ZONE) or []


def _zone_affinity(d: Manifest, model: str) -> bool:
    terms = ((_pod(d)["spec"].get("affinity") or {}).get("podAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or []
    return any(
        t.get("topologyKey") == ZONE
        and (t.get("labelSelector") or {}).get("matchLabels", {}).get(MODEL_LABEL) == model
        for t in terms
    )


def _one_zone(model: str, roles: dict[str, Manifest], pools: dict[str, Manifest]) -> list[Finding]:
    selected = {r: (_pod(d)["spec"].get("nodeSelector") or {}).get(POOL_LABEL, "") for r, d in roles.items()}
    zones = {r: _zones(pools[p]) if p in pools else [] for r, p in selected.items()}
    if len(set(selected.values())) == 1 and all(len(z) == 1 for z in zones.values()):
        return []
    if all(_zone_affinity(d, model) for d in roles.values()) and set.intersection(*map(set, zones.values())):
        return []
    where = ", ".join(f"{r}: pool {selected[r]!r} in {zones[r] or 'no zone'}" for r in sorted(roles))
    return [Finding("blocker", CHECK, f"model {model}", "nodeSelector",
                    f"its roles can land in different zones ({where}) and carry no required pod affinity on "
                    f"{ZONE}: EFA does not cross zones, so the KV transfer would fall back to TCP or fail")]  # fmt: skip


def _efa_cover(
    workload: Manifest, spec: dict[str, Any], pool: Manifest, node_class: Manifest | None
) -> list[Finding]:
    requests = pod_requests(spec)
    efa, gpus = requests[EFA], requests.get("nvidia.com/gpu", 0)
    interfaces = ((node_class.body["spec"] if node_class else {}).get("networkInterfaces")) or []
    attached = sum(1 for i in interfaces if i.get("interfaceType") == "efa-only")
    out = []
    for t in (
        requirement_values(
            pool.body["spec"]["template"]["spec"]["requirements"], "node.kubernetes.io/instance-type"
        )
        or []
    ):
        instance = GPU_INSTANCES.get(t)
        if instance is None:
            continue
        have = min(attached, instance.efa_interfaces)
        per_node = instance.gpus // gpus if gpus else 1
        if per_node * efa > have:
            out.append(Finding("blocker", CHECK, workload.ref, "resources.requests",
                               f"{per_node} pods of {gpus} GPUs fit a {t} and each requests {efa} {EFA}: "
                               f"{per_node * efa} > the {have} EFA interfaces it gets (the class attaches "
                               f"{attached}, the instance has {instance.efa_interfaces}); the GPUs left over stay idle"))  # fmt: skip
    return out


def _image(workload: Manifest, spec: dict[str, Any]) -> list[Finding]:
    out = []
    for c in spec.get("containers") or []:
        if (
            int((c.get("resources") or {}).get("requests", {}).get(EFA, 0) or 0)
            and c["image"] not in EFA_IMAGES
        ):
            out.append(Finding("blocker", CHECK, workload.ref, f"containers[{c['name']}].image",
                               f"{c['image']} requests {EFA} but is not known to carry libfabric, aws-ofi-nccl "
                               f"and NIXL (facts/versions.py EFA_IMAGES: {', '.join(EFA_IMAGES)}): NCCL and NIXL "
                               "would fall back to TCP without an error"))  # fmt: skip
    return out


def _admits(policies: list[Manifest], pods: dict[str, str], peers: dict[str, str], port: int) -> bool:
    """Some NetworkPolicy selecting `pods` admits `peers` (a pod label set of the namespace) on `port`."""

    def matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())

    for p in policies:
        spec = p.body["spec"]
        if not matches(spec.get("podSelector") or {}, pods):
            continue
        for rule in spec.get("ingress") or []:
            ports = [int(x["port"]) for x in rule.get("ports") or [] if isinstance(x.get("port"), int)]
            peer_ok = not rule.get("from") or any(
                "podSelector" in f and "namespaceSelector" not in f and matches(f["podSelector"], peers)
                for f in rule["from"]
            )
            if peer_ok and (not rule.get("ports") or port in ports):
                return True
    return False


def _port_of(container: dict[str, Any], env: str) -> int | None:
    value = next((e.get("value") for e in container.get("env") or [] if e["name"] == env), None)
    return int(value) if value else None


def _ports(view: RenderView, namespace: str, model: str, roles: dict[str, Manifest]) -> list[Finding]:
    prefill, decode = roles.get("prefill"), roles.get("decode")
    if prefill is None or decode is None:
        return [Finding("blocker", CHECK, f"model {model}", "roles", f"has roles {sorted(roles)}; it needs prefill and decode")]  # fmt: skip
    policies = [p for p in view.of_kind("NetworkPolicy") if p.namespace == namespace]
    p_labels, d_labels = _pod(prefill)["metadata"]["labels"], _pod(decode)["metadata"]["labels"]
    p_vllm = _pod(prefill)["spec"]["containers"][0]
    http = next(p["containerPort"] for p in p_vllm["ports"] if p["name"] == "http")
    out = []
    if not _admits(policies, p_labels, d_labels, http):
        out.append(Finding("blocker", CHECK, prefill.ref, "NetworkPolicy",
                           f"no NetworkPolicy admits the decode pods on port {http}: the routing sidecar's "
                           "prefill request never reaches vLLM"))  # fmt: skip
    for role, d in (("prefill", prefill), ("decode", decode)):
        port = _port_of(_pod(d)["spec"]["containers"][0], "VLLM_NIXL_SIDE_CHANNEL_PORT")
        peer = d_labels if role == "prefill" else p_labels
        labels = p_labels if role == "prefill" else d_labels
        if port is None:
            out.append(Finding("blocker", CHECK, d.ref, "env", "sets no VLLM_NIXL_SIDE_CHANNEL_PORT"))
        elif not _admits(policies, labels, peer, port):
            out.append(Finding("blocker", CHECK, d.ref, "NetworkPolicy",
                               f"no NetworkPolicy admits the other role's pods on the NIXL side-channel port "
                               f"{port}: the KV handshake times out"))  # fmt: skip
    return out
