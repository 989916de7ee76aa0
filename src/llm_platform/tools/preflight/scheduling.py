"""Will every pod find a node? Per pod template: taints vs tolerations, node selectors and required node
affinity, requests (with the DaemonSets already on that node) against allocatable, pod slots, hostname
anti-affinity and zone spread against the nodes there are. Per GPU pool: the DaemonSets a GPU node needs.
Per fixed-size group (the system node group does not autoscale): everything pinned there fits at once.
"""

from __future__ import annotations

from llm_platform.plan.pod_templates import admission_problem_on
from llm_platform.tools.preflight.findings import Finding
from llm_platform.tools.preflight.nodes import NodeType, node_pool_nodes, system_node
from llm_platform.tools.preflight.pods import RESOURCES, PodTemplate, program_pods, release_pods
from llm_platform.tools.preflight.view import RenderView

CHECK = "schedulability"
COVERAGE = "coverage"
UNITS = {
    "cpu": "m CPU",
    "memory": " MiB memory",
    "ephemeral-storage": " MiB ephemeral storage",
    "vpc.amazonaws.com/efa": " EFA interfaces",
    "nvidia.com/gpu": " GPUs",
}


def node_types(view: RenderView) -> tuple[list[NodeType], list[Finding]]:
    nodes: list[NodeType] = []
    findings: list[Finding] = []
    for key, group in view.of_type("eks:index:ManagedNodeGroup").items():
        instance = (group.get("instanceTypes") or ["?"])[0]
        scaling = group.get("scalingConfig") or {}
        node = system_node(
            instance,
            int(group.get("diskSize") or 20),  # EKS' default root volume
            labels=group.get("labels") or {},
            taints=group.get("taints") or [],
            zones=view.zones,
            min_nodes=int(scaling.get("desiredSize") or scaling.get("minSize") or 1),
            max_nodes=int(scaling.get("maxSize") or 1),
        )
        if node is None:
            findings.append(
                Finding("warning", CHECK, key.split("::")[-1], "instanceTypes",
                        f"{instance} is not in facts/cpu_catalog.py: its capacity is unknown, "
                        "pods pinned to the system nodes are not checked against it")
            )  # fmt: skip
        else:
            nodes.append(node)
    node_classes = {c.name: c.body for c in view.of_kind("EC2NodeClass")}
    efa_plugin = any(r.chart == "aws-efa-k8s-device-plugin" for r in view.releases.values())
    for pool in view.of_kind("NodePool"):
        admitted = node_pool_nodes(pool.body, node_classes, efa_plugin)
        if not admitted:
            findings.append(
                Finding("blocker", CHECK, pool.ref, "spec.template.spec.requirements",
                        "admits no catalog instance: every pod of this pool stays Pending")
            )  # fmt: skip
        nodes += admitted
    return nodes, findings


def admission_problem(pod: PodTemplate, node: NodeType) -> str | None:
    """Why the pod may not land on this node type (taints, selector, affinity), or None."""
    return admission_problem_on(pod, node.labels, node.taints)


def _daemons_on(node: NodeType, daemons: list[PodTemplate]) -> list[PodTemplate]:
    return [d for d in daemons if admission_problem(d, node) is None]


def _overhead(node: NodeType, daemons: list[PodTemplate]) -> dict[str, int]:
    on = _daemons_on(node, daemons)
    total = {r: sum(d.requests[r] for d in on) for r in RESOURCES}
    total["pods"] = len(on)
    return total


def shortfall(pod: PodTemplate, node: NodeType, daemons: list[PodTemplate]) -> str | None:
    """The first resource the pod does not get on an otherwise empty node of this type, with the numbers."""
    overhead = _overhead(node, daemons)
    alloc = node.allocatable
    for r in RESOURCES:
        need = pod.requests[r]
        free = alloc[r] - (0 if pod.daemon else overhead[r])
        if need > free:
            return f"requests {need}{UNITS[r]}, {node.name} has {free} free of {alloc[r]} allocatable"
    slots = alloc["pods"] - overhead["pods"]
    if not pod.daemon and slots < 1:
        return f"{node.name} has {overhead['pods']} DaemonSet pods of {alloc['pods']} pod slots: none left"
    return None


def schedulability(view: RenderView) -> list[Finding]:
    nodes, findings = node_types(view)
    pods = program_pods(view)
    chart_pods, unknown = release_pods(view)
    pods += chart_pods
    for release in unknown:
        findings.append(
            Finding("warning", CHECK, f"Helm release {release}", "chart",
                    f"pods of chart {view.releases[release].chart} are not modelled (no `pods=` in its add-on record, facts/addons.py; the models: plan/chart_pods.py)")
        )  # fmt: skip
    if not nodes:
        return [
            *findings,
            Finding("warning", CHECK, "cluster", "nodes", "no node group or NodePool to check against"),
        ]
    daemons = [p for p in pods if p.daemon]
    for pod in pods:
        if pod.daemon:
            continue
        findings += _fit(pod, nodes, daemons, view)
    findings += _fixed_groups(pods, nodes, daemons)
    return findings


def _fit(
    pod: PodTemplate, nodes: list[NodeType], daemons: list[PodTemplate], view: RenderView
) -> list[Finding]:
    admitted = [n for n in nodes if admission_problem(pod, n) is None]
    if not admitted:
        reasons = sorted({f"{n.group}: {admission_problem(pod, n)}" for n in nodes})
        return [
            Finding("blocker", CHECK, pod.owner, pod.where, "no node type admits it; " + "; ".join(reasons))
        ]
    fitting = [n for n in admitted if shortfall(pod, n, daemons) is None]
    if not fitting:
        worst = max(admitted, key=lambda n: n.cpu_millis + n.memory_mib)
        return [Finding("blocker", CHECK, pod.owner, f"{pod.where}.containers[].resources.requests",
                        f"fits no node it may land on: {shortfall(pod, worst, daemons)}")]  # fmt: skip
    out = []
    groups = {n.group for n in fitting}
    fixed = [n for n in fitting if n.min_nodes is not None]
    if pod.hostname_anti_affinity and fixed and len(groups) == 1:
        nodes_there = fixed[0].min_nodes or 0
        if pod.replicas > nodes_there:
            out.append(Finding("blocker", CHECK, pod.owner, f"{pod.where}.affinity.podAntiAffinity",
                               f"{pod.replicas} replicas need {pod.replicas} distinct nodes (required hostname "
                               f"anti-affinity); the {fixed[0].group} group runs {nodes_there}"))  # fmt: skip
    zones = {z for n in fitting for z in n.zones} or set(view.zones)
    for c in pod.spread:
        if (
            c.get("whenUnsatisfiable") != "DoNotSchedule"
            or c.get("topologyKey") != "topology.kubernetes.io/zone"
        ):
            continue
        if int(c.get("minDomains", 1)) > len(zones):
            out.append(Finding("blocker", CHECK, pod.owner, f"{pod.where}.topologySpreadConstraints",
                               f"minDomains {c['minDomains']} zones, its nodes span {len(zones)} ({', '.join(sorted(zones))})"))  # fmt: skip
    return out


def _fixed_groups(
    pods: list[PodTemplate], nodes: list[NodeType], daemons: list[PodTemplate]
) -> list[Finding]:
    """A group that does not autoscale must hold, at once, every pod that can only land there."""
    out = []
    for node in nodes:
        if node.min_nodes is None:
            continue
        pinned = [p for p in pods if not p.daemon and all(
            admission_problem(p, n) is not None for n in nodes if n.group != node.group
        ) and admission_problem(p, node) is None]  # fmt: skip
        overhead = _overhead(node, daemons)
        count = node.min_nodes
        found = len(out)
        for r in (*RESOURCES, "pods"):
            per_pod = (lambda p, r=r: 1) if r == "pods" else (lambda p, r=r: p.requests[r])
            need = sum(per_pod(p) * p.replicas for p in pinned)
            free = count * (node.allocatable[r] - overhead[r])
            if need > free:
                unit = UNITS.get(r, " pods")
                out.append(Finding("blocker", CHECK, f"node group {node.group}", "scalingConfig.desiredSize",
                                   f"its {len(pinned)} pinned workloads request {need}{unit} at their maximum "
                                   f"replicas; {count} x {node.instance_type} offer {free} after DaemonSets "
                                   "(nothing scales this group: raise systemNodes.min or the instance type)"))  # fmt: skip
            elif need > 0.85 * free:
                out.append(Finding("warning", CHECK, f"node group {node.group}", "scalingConfig.desiredSize",
                                   f"pinned workloads request {need}{UNITS.get(r, ' pods')} of {free} "
                                   f"({need / free:.0%}) on {count} x {node.instance_type}"))  # fmt: skip
        if len(out) == found:
            names = ", ".join(f"{p.owner} x {p.replicas}" for p in pinned) or "nothing"
            cpu = sum(p.requests["cpu"] * p.replicas for p in pinned)
            memory = sum(p.requests["memory"] * p.replicas for p in pinned)
            out.append(Finding("info", CHECK, f"node group {node.group}", "scalingConfig.desiredSize",
                               f"pinned at their maximum replicas ({names}) request {cpu}m CPU and {memory} MiB; "
                               f"{count} x {node.instance_type} offer {count * (node.allocatable['cpu'] - overhead['cpu'])}m "
                               f"and {count * (node.allocatable['memory'] - overhead['memory'])} MiB after DaemonSets"))  # fmt: skip
    return out


# ------------------------------------------------------------------------------------------ coverage


def _needed_daemons(view: RenderView, pods: list[PodTemplate], pool: str) -> list[tuple[str, str]]:
    """(what, owner-prefix) of the DaemonSets every node of this GPU pool needs."""
    needs = []
    for release in view.releases.values():
        if release.chart == "gpu-operator":
            needs += [(f"GPU Operator {c}", f"Helm release {release.name} ({c})") for c in
                      ("device plugin", "DCGM exporter", "GPU feature discovery")]  # fmt: skip
        if release.chart == "node-feature-discovery":
            needs.append(("NFD worker", f"Helm release {release.name} (worker)"))
    for d in view.of_kind("Deployment"):
        spec = d.body["spec"]["template"]["spec"]
        if (spec.get("nodeSelector") or {}).get("llm-platform/gpu-pool") != pool:
            continue
        volumes = spec.get("volumes") or []
        if any("hostPath" in v and "/models" in v["hostPath"]["path"] for v in volumes):
            # the model's sync, by its instance label (one per model, whatever Deployments serve it)
            model = d.body["spec"]["template"]["metadata"]["labels"].get("app.kubernetes.io/instance", d.name)
            needs.append((f"weights sync of {model}", f"DaemonSet {d.namespace}/"))
        claims = {v["persistentVolumeClaim"]["claimName"] for v in volumes if "persistentVolumeClaim" in v}
        if claims and any(r.chart == "aws-fsx-csi-driver" for r in view.releases.values()):
            needs.append(("FSx CSI node plugin", "Helm release aws-fsx-csi-driver (node)"))
    return sorted(set(needs))


def coverage(view: RenderView) -> list[Finding]:
    """Every GPU pool gets the device plugin, DCGM exporter, GPU feature discovery, the NFD worker, its
    models' weights sync and the FSx node plugin where a model mounts FSx."""
    nodes, _ = node_types(view)
    pods = program_pods(view) + release_pods(view)[0]
    daemons = [p for p in pods if p.daemon]
    out = []
    for pool in view.of_kind("NodePool"):
        pool_nodes = [n for n in nodes if n.group == pool.name]
        if not pool_nodes or all(n.gpus == 0 for n in pool_nodes):
            continue  # a CPU pool (the add-on nodes) needs none of the GPU DaemonSets
        labels = pool_nodes[0].labels
        if not any(r.chart == "gpu-operator" for r in view.releases.values()):
            out.append(Finding("blocker", COVERAGE, pool.ref, "nvidia.com/gpu",
                               "no GPU Operator release: nothing advertises nvidia.com/gpu, GPU pods never bind"))  # fmt: skip
        for what, owner in _needed_daemons(view, pods, pool.name):
            if (
                what == "GPU Operator device plugin"
                and labels.get("nvidia.com/gpu.deploy.device-plugin") == "false"
            ):
                continue  # Bottlerocket's NVIDIA variant ships its own device plugin
            candidates = [d for d in daemons if d.owner.startswith(owner) and (
                not what.startswith("weights sync") or d.labels.get("app.kubernetes.io/instance") == what.split()[-1]
            )]  # fmt: skip
            if not candidates:
                out.append(
                    Finding(
                        "blocker",
                        COVERAGE,
                        pool.ref,
                        "DaemonSets",
                        f"{what}: no such DaemonSet in the render",
                    )
                )
                continue
            for node in pool_nodes:
                problems = [admission_problem(d, node) for d in candidates]
                if all(problems):
                    out.append(Finding("blocker", COVERAGE, pool.ref, "spec.template.spec.taints",
                                       f"{what} ({candidates[0].owner}) never reaches {node.name}: {problems[0]}"))  # fmt: skip
                    break
    return out
