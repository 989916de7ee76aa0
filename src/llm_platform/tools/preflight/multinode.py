"""Multi-node replicas (LeaderWorkerSets): what only holds when every node of a group comes up together.

For each LeaderWorkerSet: the pool's GPU limit holds every group at its maximum plus the rollout its strategy
asks for; each instance type the pool admits has the EFA interfaces its EC2NodeClass attaches and the pods
request (and the EFA device plugin runs there); the nodes are in one zone of the cluster with a cluster
placement group the stack creates, or none for a reserved-only (Capacity Block) pool; the EFA security group
allows all traffic to and from itself and is on the class; Karpenter's policy allows the placement-group calls.
That each worker schedules with its GPU and EFA requests is the schedulability check's (pods.leader_worker_pods).
"""

from __future__ import annotations

from typing import Any

from llm_platform.facts.catalog import GPU_INSTANCES
from llm_platform.plan.addon_pods import EFA
from llm_platform.tools.preflight.findings import Finding
from llm_platform.tools.preflight.iam import _policies_of, granted, references  # pyright: ignore[reportPrivateUsage]
from llm_platform.tools.preflight.nodes import requirement_values
from llm_platform.tools.preflight.pods import pod_requests
from llm_platform.tools.preflight.view import Manifest, RenderView

CHECK = "multinode"
POOL_LABEL = "llm-platform/gpu-pool"
EFA_PLUGIN = "aws-efa-k8s-device-plugin"


def _max_groups(view: RenderView, lws: Manifest) -> int:
    for so in view.of_kind("ScaledObject"):
        target = so.body["spec"]["scaleTargetRef"]
        if (
            so.namespace == lws.namespace
            and target.get("kind") == "LeaderWorkerSet"
            and target["name"] == lws.name
        ):
            return int(so.body["spec"].get("maxReplicaCount", 100))
    return int(lws.body["spec"].get("replicas", 1))


def _gpus_at_max(view: RenderView, pool: str) -> int:
    """GPUs every workload of the pool requests at its maximum (Deployments and LeaderWorkerSets)."""
    total = 0
    for d in view.of_kind("Deployment"):
        spec = d.body["spec"]["template"]["spec"]
        if (spec.get("nodeSelector") or {}).get(POOL_LABEL) == pool:
            so = [s for s in view.of_kind("ScaledObject") if s.namespace == d.namespace]
            most = (
                int(so[0].body["spec"].get("maxReplicaCount", 1))
                if so
                else int(d.body["spec"].get("replicas", 1))
            )
            total += most * pod_requests(spec)["nvidia.com/gpu"]
    for lws in view.of_kind("LeaderWorkerSet"):
        lwt = lws.body["spec"]["leaderWorkerTemplate"]
        spec = lwt["leaderTemplate"]["spec"]
        if (spec.get("nodeSelector") or {}).get(POOL_LABEL) == pool:
            total += _max_groups(view, lws) * int(lwt["size"]) * pod_requests(spec)["nvidia.com/gpu"]
    return total


def multinode(view: RenderView) -> list[Finding]:
    out: list[Finding] = []
    pools = {p.name: p for p in view.of_kind("NodePool")}
    classes = {c.name: c for c in view.of_kind("EC2NodeClass")}
    for lws in view.of_kind("LeaderWorkerSet"):
        lwt = lws.body["spec"]["leaderWorkerTemplate"]
        leader = lwt["leaderTemplate"]["spec"]
        pool_name = (leader.get("nodeSelector") or {}).get(POOL_LABEL, "")
        pool = pools.get(pool_name)
        if pool is None:
            out.append(Finding("blocker", CHECK, lws.ref, "leaderTemplate.spec.nodeSelector",
                               f"selects pool {pool_name!r}, which no NodePool of the stack is"))  # fmt: skip
            continue
        node_class = classes.get(pool.body["spec"]["template"]["spec"]["nodeClassRef"]["name"])
        out += _gpu_limit(view, lws, pool)
        out += _efa(view, lws, pool, node_class)
        out += _placement(view, lws, pool, node_class)
    return out


def _gpu_limit(view: RenderView, lws: Manifest, pool: Manifest) -> list[Finding]:
    lwt = lws.body["spec"]["leaderWorkerTemplate"]
    gpus = pod_requests(lwt["leaderTemplate"]["spec"])["nvidia.com/gpu"]
    size, groups = int(lwt["size"]), _max_groups(view, lws)
    group_gpus = size * gpus
    limit = int(pool.body["spec"].get("limits", {}).get("nvidia.com/gpu", 0))
    need = _gpus_at_max(view, pool.name)
    surge = int(
        (lws.body["spec"].get("rolloutStrategy") or {})
        .get("rollingUpdateConfiguration", {})
        .get("maxSurge", 0)
    )
    shape = f"{groups} groups x {size} nodes x {gpus} GPUs = {groups * group_gpus} GPUs"
    if limit < need:
        return [Finding("blocker", CHECK, pool.ref, "spec.limits.nvidia.com/gpu",
                        f"{limit} is less than the {need} GPUs the pool's workloads reach at their maximum "
                        f"({lws.ref}: {shape}); Karpenter stops launching before the last group")]  # fmt: skip
    if surge and limit < need + surge * group_gpus:
        return [Finding("blocker", CHECK, pool.ref, "spec.limits.nvidia.com/gpu",
                        f"{limit} leaves {limit - need} GPUs above the maximum, but {lws.ref} surges {surge} "
                        f"group(s) of {group_gpus} GPUs in a rollout: the surge group never starts and the rollout hangs")]  # fmt: skip
    if not surge:
        return [Finding("warning", CHECK, pool.ref, "spec.limits.nvidia.com/gpu",
                        f"{limit} holds {shape} but not a surge group ({group_gpus} more): {lws.ref} rolls out "
                        f"one group at a time in place, serving one replica less meanwhile; gpuLimit "
                        f"{need + group_gpus} would let it surge")]  # fmt: skip
    return [Finding("info", CHECK, pool.ref, "spec.limits.nvidia.com/gpu",
                    f"{limit} holds {lws.ref} at {shape} plus a surge group of {group_gpus} GPUs")]  # fmt: skip


def _efa(view: RenderView, lws: Manifest, pool: Manifest, node_class: Manifest | None) -> list[Finding]:
    out: list[Finding] = []
    lwt = lws.body["spec"]["leaderWorkerTemplate"]
    wanted = {role: pod_requests(lwt[role]["spec"])[EFA] for role in ("leaderTemplate", "workerTemplate")}
    interfaces = ((node_class.body["spec"] if node_class else {}).get("networkInterfaces")) or []
    attached = sum(1 for i in interfaces if i.get("interfaceType") == "efa-only")
    where = node_class.ref if node_class else pool.ref
    if attached == 0:
        out.append(Finding("blocker", CHECK, where, "spec.networkInterfaces",
                           f"attaches no EFA-only interface; {lws.ref} needs EFA between its {lwt['size']} nodes"))  # fmt: skip
    for role, n in wanted.items():
        field = f"leaderWorkerTemplate.{role}.spec.containers[].resources"
        if n == 0 or n > attached:
            out.append(Finding("blocker", CHECK, lws.ref, field,
                               f"requests {n} {EFA}; each node gets {attached} (the EC2NodeClass's EFA-only "
                               "interfaces): the pod must request at least one and at most that"))  # fmt: skip
        elif n < attached:
            out.append(Finding("warning", CHECK, lws.ref, field,
                               f"requests {n} {EFA}; each node gets {attached}: NCCL uses only {n} of them"))  # fmt: skip
    types = (
        requirement_values(
            pool.body["spec"]["template"]["spec"]["requirements"], "node.kubernetes.io/instance-type"
        )
        or []
    )
    for t in types:
        have = GPU_INSTANCES[t].efa_interfaces if t in GPU_INSTANCES else 0
        if have < attached:
            out.append(Finding("blocker", CHECK, pool.ref, "spec.template.spec.requirements",
                               f"admits {t}, which has {have} EFA interfaces (facts/catalog.py) where the class "
                               f"attaches {attached}: Karpenter never launches it (compatibility check 5)"))  # fmt: skip
    plugin = next((r for r in view.releases.values() if r.chart == EFA_PLUGIN), None)
    if plugin is None:
        out.append(
            Finding("blocker", CHECK, lws.ref, "spec", f"no {EFA_PLUGIN} release: no node advertises {EFA}")
        )
    else:
        supported = (plugin.values.get("supportedInstanceLabels") or {}).get("values")
        missing = [t for t in types if supported is not None and t not in supported]
        if missing:
            out.append(Finding("blocker", CHECK, f"Helm release {plugin.name}", "values.supportedInstanceLabels",
                               f"leaves out {', '.join(missing)}: the plugin never runs there"))  # fmt: skip
    return out


def _placement(view: RenderView, lws: Manifest, pool: Manifest, node_class: Manifest | None) -> list[Finding]:
    out: list[Finding] = []
    reqs = pool.body["spec"]["template"]["spec"]["requirements"]
    zones = requirement_values(reqs, "topology.kubernetes.io/zone") or []
    capacity = requirement_values(reqs, "karpenter.sh/capacity-type") or []
    if len(zones) != 1 or zones[0] not in view.zones:
        out.append(Finding("blocker", CHECK, pool.ref, "requirements[topology.kubernetes.io/zone]",
                           f"{zones}: a group's nodes need one zone of the cluster's {view.zones} (EFA does not "
                           "cross zones; a cluster placement group is in one)"))  # fmt: skip
    spec = node_class.body["spec"] if node_class else {}
    selector = spec.get("placementGroupSelector")
    reserved = "reserved" in capacity
    if reserved and len(capacity) > 1:
        out.append(Finding("blocker", CHECK, pool.ref, "requirements[karpenter.sh/capacity-type]",
                           f"{capacity}: a group could take nodes from its reservation and from outside it"))  # fmt: skip
    if reserved and selector:
        out.append(Finding("blocker", CHECK, node_class.ref if node_class else pool.ref, "spec.placementGroupSelector",
                           f"{selector}: the pool launches into capacity reservations, whose instances EC2 places "
                           "itself; a launch into a placement group the reservation is not in fails"))  # fmt: skip
    if not reserved:
        groups = {g.get("name"): g for g in view.of_type("aws:ec2/placementGroup:PlacementGroup").values()}
        name = (selector or {}).get("name")
        group = groups.get(name)
        if group is None or group.get("strategy") != "cluster":
            out.append(Finding("blocker", CHECK, node_class.ref if node_class else pool.ref, "spec.placementGroupSelector",
                               f"{selector}: no cluster placement group of that name is created by the stack "
                               f"(created: {sorted(n for n in groups if n)})"))  # fmt: skip
    out += _security_group(view, spec, node_class.ref if node_class else pool.ref)
    if not reserved:
        out += _iam(view)
    return out


def _security_group(view: RenderView, spec: dict[str, Any], where: str) -> list[Finding]:
    ids = {t["id"] for t in spec.get("securityGroupSelectorTerms") or [] if "id" in t}
    ingress = view.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule").values()
    egress = view.of_type("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule").values()

    def self_all(rules: Any, sg: str) -> bool:
        return any(r.get("securityGroupId") == sg and r.get("referencedSecurityGroupId") == sg
                   and str(r.get("ipProtocol")) == "-1" for r in rules)  # fmt: skip

    if not any(self_all(ingress, sg) and self_all(egress, sg) for sg in ids):
        return [Finding("blocker", CHECK, where, "spec.securityGroupSelectorTerms",
                        f"none of {sorted(ids)} allows all traffic from and to itself, which EFA requires")]  # fmt: skip
    return []


def _iam(view: RenderView) -> list[Finding]:
    ref = next(r for r in references() if r["controller"] == "karpenter")
    found = _policies_of(view, ref)
    if found is None:
        return []
    grants: dict[str, list[str]] = {}
    for policy in found[0]:
        for action, resources in granted(policy).items():
            grants.setdefault(action, []).extend(resources)
    out = []
    if "ec2:DescribePlacementGroups" not in grants:
        out.append(Finding("blocker", CHECK, "IAM karpenter", "Statement[].Action",
                           "ec2:DescribePlacementGroups is not granted: the EC2NodeClass's placementGroupSelector "
                           "never resolves (Karpenter v1.14.1 nodeclasses.md)"))  # fmt: skip
    for action in ("ec2:RunInstances", "ec2:CreateFleet"):
        if not any(":placement-group/" in r or r == "*" for r in grants.get(action, [])):
            out.append(Finding("blocker", CHECK, "IAM karpenter", "Statement[].Resource",
                               f"{action} is not granted on placement-group ARNs: launches into the placement "
                               "group are denied"))  # fmt: skip
    return out
