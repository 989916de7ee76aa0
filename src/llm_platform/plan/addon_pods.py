"""The pods that run all day on the add-on NodePool, from the plan, and their packing onto its instances.

One source for three readers: the specs write these requests and replica counts into the add-on releases'
values and the program's own workloads (EnvoyProxy, the quota store, the endpoint pickers); the chart
defaults (`plan/chart_pods.py` `CHART_DEFAULTS`) are what the charts' pod models assume where the values set
none; and the simulator prices the add-on pool (`simulator/controllers/platform_nodes.py`) from `addon_pool_pods`
and `pack` here without rendering the program. `pack` is preflight's packing too (`tools/preflight/room.py`
hands it the render's pods), and a test compares this module's pods and packing with preflight's from the
render of every fixture stack (tests/plan/test_addon_pods.py), so the two cannot drift apart.

The add-ons with a component of their own (their values written by the specs, above the plan) are listed
here by hand; an add-on `LlmPlatform` installs from its record alone is derived from the record (`record_pods`:
its charts' pod models applied to its values builder's output), so adding one edits nothing here.

Allocatable follows the EKS AMIs' kubelet reservations (`/etc/eks/bootstrap.sh` and nodeadm, identical
since AL2): CPU 6 % of the first core, 1 % of the second, 0.5 % of the next two, 0.25 % of the rest;
memory 255 MiB + 11 MiB per pod slot plus the 100 MiB eviction threshold; ephemeral storage 1 GiB kube-reserved
plus the 10 % `nodefs.available` eviction threshold. Pod slots: 110 (the VPC CNI's prefix delegation is on,
and the EKS max-pods calculator caps instances under 30 vCPUs at 110, larger ones at 250).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Protocol, TypeVar

from llm_platform.facts import addons
from llm_platform.facts.addons import resolve_ref
from llm_platform.facts.cpu_catalog import CPU_INSTANCES, CpuInstance
from llm_platform.plan.chart_pods import CHART_DEFAULTS
from llm_platform.plan.gateway import EPP_REPLICAS
from llm_platform.plan.model import ModelPlan
from llm_platform.plan.node_capacity import allocatable, max_pods, reserved_cpu_millis
from llm_platform.plan.nodes import ADDON_NODE_LABEL, ADDON_POOL, ADDON_TAINT
from llm_platform.plan.pod_templates import EFA, GI, RESOURCES, Requests, admission_problem_on, quantity
from llm_platform.plan.stack import Plan

__all__ = [
    "AI_GATEWAY_CONTROLLER_REQUESTS",
    "AI_GATEWAY_REPLICAS",
    "ARGO_ROLLOUTS_CONTROLLER",
    "ARGO_ROLLOUTS_REPLICAS",
    "CHART_DEFAULTS",
    "EFA",
    "EPP_MEMORY",
    "GI",
    "GPU_OPERATOR_OPERATOR",
    "LOADER",
    "LOADER_SCRATCH_GIB",
    "LOAD_BALANCER_REPLICAS",
    "OPENCOST_EXPORTER",
    "PROMETHEUS",
    "PROXY_CPU",
    "PROXY_MEMORY",
    "RATE_LIMIT_CPU",
    "RATE_LIMIT_MEMORY",
    "RESOURCES",
    "STORE_CPU",
    "STORE_MEMORY",
    "AddonPoolPeak",
    "Bin",
    "PoolPod",
    "Requests",
    "addon_pool_peak",
    "addon_pool_pods",
    "allocatable",
    "epp_cpu_millicores",
    "loader_job_pods",
    "max_pods",
    "pack",
    "pool_kinds",
    "quantity",
    "record_pods",
    "reserved_cpu_millis",
]

# ---------------------------------------------------------------- what the program sets (the specs read these)

PROXY_CPU = "1"  # each Envoy proxy of the gateway (components/specs/gateway.py envoy_proxy)
PROXY_MEMORY = "512Mi"
EPP_MEMORY = "1Gi"  # each endpoint picker (components/specs/inference_pool.py)
STORE_CPU = "100m"  # the quota store, Valkey (components/specs/quota.py)
STORE_MEMORY = "256Mi"
RATE_LIMIT_CPU = "100m"  # each replica of Envoy Gateway's global rate limit service
RATE_LIMIT_MEMORY = "128Mi"
PROMETHEUS = Requests("500m", "2Gi")  # each Prometheus replica (components/specs/observability.py)
GPU_OPERATOR_OPERATOR = Requests(
    "200m", "128Mi"
)  # the GPU Operator's operator (components/specs/gpu_operator.py)
AI_GATEWAY_CONTROLLER_REQUESTS = Requests(
    "100m", "256Mi"
)  # the AI Gateway controller (components/specs/gateway.py)
AI_GATEWAY_REPLICAS = 2
OPENCOST_EXPORTER = Requests("100m", "256Mi")  # the OpenCost exporter (components/specs/costs.py)
LOAD_BALANCER_REPLICAS = 2  # the AWS Load Balancer Controller (components/specs/load_balancer.py)
# each model's Hub -> S3 loader Job (components/specs/model_cache.py loader_job): CPU, memory, scratch space
LOADER = Requests("1", "2Gi")
LOADER_SCRATCH_GIB = 20
# the Argo Rollouts controller of progressive rollouts (components/specs/rollout.py): the chart's 2 replicas
# (leader and standby; argo-rollouts 2.41.0 values `controller.replicas`), requests the chart leaves unset
ARGO_ROLLOUTS_CONTROLLER = Requests("100m", "256Mi")
ARGO_ROLLOUTS_REPLICAS = 2


def epp_cpu_millicores(model: ModelPlan) -> int:
    """An endpoint picker's CPU: idle CPU grows with the pods it scrapes every 50 ms (docs/operations.md); a
    disaggregated model's pickers scrape both roles' pods."""
    d = model.disaggregation
    pods = model.model.autoscaling.max_replicas if d is None else sum(r.max_replicas for r in d.roles)
    return max(500, 100 * pods)


# -------------------------------------------------------------------------------------- the add-on pool's pods


@dataclass(frozen=True)
class PoolPod:
    """One workload on the add-on pool: CPU in millicores, memory in MiB (the shape `pack` reads)."""

    owner: str
    kind: str  # Deployment | StatefulSet | DaemonSet
    replicas: int
    requests: Mapping[str, int]
    hostname_anti_affinity: bool = False

    @property
    def daemon(self) -> bool:
        return self.kind == "DaemonSet"


def _pod(owner: str, kind: str, replicas: int = 1, requests: Requests | None = None) -> PoolPod:
    amounts: dict[str, int] = dict.fromkeys(RESOURCES, 0)
    if requests is not None:
        amounts |= {"cpu": quantity("cpu", requests.cpu), "memory": quantity("memory", requests.memory)}
    return PoolPod(owner, kind, replicas, amounts)


def _release(name: str, component: str) -> str:
    return f"Helm release {name} ({component})"


def _gateway_pods(plan: Plan) -> list[PoolPod]:
    """The gateway's own workloads and its controllers' (with the gateway on and an EKS cluster)."""
    store = plan.gateway.quota_store
    out = [
        _pod("StatefulSet llm-gateway/ratelimit-valkey", "StatefulSet", 1, Requests(STORE_CPU, STORE_MEMORY))
    ]
    out = out if store is not None else []
    out.append(
        _pod(
            "EnvoyProxy llm-gateway/llm-gateway-proxy",
            "Deployment",
            plan.gateway.replicas,
            Requests(PROXY_CPU, PROXY_MEMORY),
        )
    )
    out.append(
        _pod(_release("aws-load-balancer-controller", "controller"), "Deployment", LOAD_BALANCER_REPLICAS)
    )
    return out


def _controller_pods(plan: Plan) -> list[PoolPod]:
    store = plan.gateway.quota_store
    out = [_pod(_release("envoy-gateway", "controller"), "Deployment", 1, CHART_DEFAULTS["gateway-helm"])]
    if store is not None:
        rate_limit = Requests(RATE_LIMIT_CPU, RATE_LIMIT_MEMORY)
        out.append(
            _pod(_release("envoy-gateway", "ratelimit"), "Deployment", store.rate_limit_replicas, rate_limit)
        )
    out.append(
        _pod(
            _release("ai-gateway", "controller"),
            "Deployment",
            AI_GATEWAY_REPLICAS,
            AI_GATEWAY_CONTROLLER_REQUESTS,
        )
    )
    for m in plan.models:
        cpu = Requests(f"{epp_cpu_millicores(m)}m", EPP_MEMORY)
        # a progressive rollout's candidate has its own InferencePool and picker (`<model>-canary`)
        for release in (m.name, f"{m.name}-canary") if m.model.rollout is not None else (m.name,):
            picker = _pod(_release(release, "epp"), "Deployment", EPP_REPLICAS, cpu)
            # the pickers of one model on distinct nodes (inference_pool.py's required pod anti-affinity)
            out.append(replace(picker, hostname_anti_affinity=True))
    return out


@dataclass(frozen=True)
class _PlanRelease:
    """A release as a chart's pod model reads it, with the values the record's builder makes of the plan."""

    name: str
    values: dict[str, Any]


# the add-on pool's nodes as preflight reads the add-on NodePool (tools/preflight/nodes.py node_pool_nodes)
_POOL_LABELS = {**ADDON_NODE_LABEL, "karpenter.sh/nodepool": ADDON_POOL, "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64"}  # fmt: skip


def record_pods(plan: Plan) -> list[PoolPod]:
    """The pods that run all day on the add-on pool of every add-on `LlmPlatform` installs from its record
    alone (facts/addons.py `record_installed`): its charts' pod models (`pods=`) applied to the values its
    builder makes of the plan, the pods the pool admits kept (Jobs left out). Such an add-on is priced from its
    record, with no line here edited."""
    out: list[PoolPod] = []
    for record in addons.record_installed(plan):
        values: dict[str, Any] = resolve_ref(record.values)(plan) if record.values else {}
        for chart in record.charts:
            if chart.pods is None:
                continue
            release = _PlanRelease(chart.release, values if chart is record.chart else {})
            for pod in resolve_ref(chart.pods)(release):
                if pod.kind != "Job" and admission_problem_on(pod, _POOL_LABELS, [ADDON_TAINT]) is None:
                    out.append(
                        PoolPod(pod.owner, pod.kind, pod.replicas, pod.requests, pod.hostname_anti_affinity)
                    )
    return out


def addon_pool_pods(plan: Plan) -> list[PoolPod]:
    """Every workload of a deployed stack (its API keys set) that lands on the add-on pool and runs all day,
    DaemonSets included (loader Jobs finish after the first deploy and are left out); none without the pool."""
    if plan.addon_pool is None:
        return []
    gateway = plan.gateway.enabled and bool(plan.models)
    out = _gateway_pods(plan) if gateway else []
    if any(m.model.needs_efa for m in plan.models):
        out.append(_pod(_release("lws", "controller"), "Deployment", 1, CHART_DEFAULTS["lws"]))
    if plan.uses_fsx:
        fsx = CHART_DEFAULTS["aws-fsx-csi-driver"]
        out += [
            _pod(_release("aws-fsx-csi-driver", "controller"), "Deployment", 2, fsx),
            _pod(_release("aws-fsx-csi-driver", "node"), "DaemonSet", 1, fsx),
        ]
    kps = "kube-prometheus-stack"
    prometheus = _pod(
        _release(kps, "prometheus"), "StatefulSet", plan.monitoring.prometheus.replicas, PROMETHEUS
    )
    out += [
        prometheus,
        _pod(_release(kps, "alertmanager"), "StatefulSet"),
        *(_pod(_release(kps, c), "Deployment") for c in ("operator", "grafana", "kube-state-metrics")),
        _pod(_release(kps, "node-exporter"), "DaemonSet"),
    ]
    if plan.costs.enabled:
        out.append(_pod(_release("opencost", "exporter"), "Deployment", 1, OPENCOST_EXPORTER))
    out += [_pod(_release("node-feature-discovery", c), "Deployment") for c in ("master", "gc")]
    out += [
        _pod(_release("keda", c), "Deployment", 1, CHART_DEFAULTS["keda"])
        for c in ("operator", "metrics server", "webhooks")
    ]
    out.append(_pod(_release("gpu-operator", "operator"), "Deployment", 1, GPU_OPERATOR_OPERATOR))
    return out + (_controller_pods(plan) if gateway else []) + record_pods(plan)


# ------------------------------------------------------------------------------------------- nodes and packing


class Packable(Protocol):
    @property
    def owner(self) -> str: ...
    @property
    def replicas(self) -> int: ...
    @property
    def requests(self) -> Mapping[str, int]: ...
    @property
    def hostname_anti_affinity(self) -> bool: ...


K = TypeVar("K")


@dataclass
class Bin(Generic[K]):
    """One packed node: its kind, what is left free on it, the workloads on it."""

    node: K
    free: dict[str, int]
    owners: set[str] = field(default_factory=set)


def pack(pods: Sequence[Packable], kinds: Sequence[tuple[K, Mapping[str, int]]]) -> list[Bin[K]]:
    """First-fit decreasing by CPU of every replica onto nodes of the first kind (`kinds` smallest first, each
    with what its DaemonSets leave free) the replica fits, never two replicas of a pod with required hostname
    anti-affinity on one node; a replica no kind fits is left out (schedulability's blocker in preflight)."""
    replicas = sorted(((p, i) for p in pods for i in range(p.replicas)), key=lambda r: -r[0].requests["cpu"])
    packed: list[Bin[K]] = []
    for pod, _ in replicas:
        need = {**pod.requests, "pods": 1}
        home = next(
            (
                n
                for n in packed
                if all(n.free[r] >= need[r] for r in need)
                and not (pod.hostname_anti_affinity and pod.owner in n.owners)
            ),
            None,
        )
        if home is None:
            kind = next(((k, free) for k, free in kinds if all(free[r] >= need[r] for r in need)), None)
            if kind is None:
                continue
            home = Bin(kind[0], dict(kind[1]))
            packed.append(home)
        for r in need:
            home.free[r] -= need[r]
        home.owners.add(pod.owner)
    return packed


def pool_kinds(
    instances: Sequence[CpuInstance], disk_gib: float, daemons: Sequence[Packable]
) -> list[tuple[str, dict[str, int]]]:
    """The add-on pool's instance types, smallest allocatable first (ties in the CPU catalog's order, as
    preflight reads the pool's requirements), each with what the DaemonSets on it leave free."""
    order = list(CPU_INSTANCES)
    out = []
    for i in sorted(instances, key=lambda i: order.index(i.instance_type)):
        alloc = allocatable(i.vcpus, i.memory_gib, disk_gib, 0)
        free = {r: alloc[r] - sum(d.requests[r] for d in daemons) for r in RESOURCES}
        free["pods"] = alloc["pods"] - len(daemons)
        out.append((i.instance_type, free, (alloc["cpu"], alloc["memory"])))
    return [(name, free) for name, free, _ in sorted(out, key=lambda k: k[2])]


# ------------------------------------------------------------------------------------ the pool at its peak


def loader_job_pods(plan: Plan) -> list[PoolPod]:
    """Each model's Hub -> S3 loader Job (every cache mode but hub), on the add-on pool: all of them run at
    once on a first deploy, beside the all-day pods."""
    if plan.addon_pool is None:
        return []
    out = []
    for m in plan.models:
        if m.cache.loads_from_s3:
            job = _pod(f"Job {m.names.namespace}/{m.names.loader_job}", "Job", 1, LOADER)
            out.append(replace(job, requests={**job.requests, "ephemeral-storage": LOADER_SCRATCH_GIB * GI}))
    return out


@dataclass(frozen=True)
class AddonPoolPeak:
    """The add-on pool at its peak: every all-day pod at its maximum (each model's pickers sized for its
    maxReplicas) plus every loader Job, packed as preflight's ceilings check packs them (`pack`). Karpenter
    counts the NodePool's `limits` against the capacity of the nodes it launches, so the limits must hold
    `vcpus` and `memory_gib`."""

    pods: int  # replicas (the DaemonSets' pods on every node aside)
    cpu_millis: int  # their CPU requests
    nodes: tuple[str, ...]  # the packed nodes' instance types
    vcpus: int
    memory_gib: float

    @property
    def shape(self) -> str:
        return ", ".join(f"{self.nodes.count(t)} x {t}" for t in dict.fromkeys(self.nodes)) or "no node"


def addon_pool_peak(plan: Plan) -> AddonPoolPeak | None:
    """What the add-on pool's `limits` must hold (None without the pool: an existing cluster)."""
    if plan.addon_pool is None:
        return None
    pods = addon_pool_pods(plan) + loader_job_pods(plan)
    daemons = [p for p in pods if p.daemon]
    kinds = pool_kinds(plan.addon_pool.instances, plan.addon_pool.disk_size_gib, daemons)
    packed = pack([p for p in pods if not p.daemon], kinds)
    nodes = tuple(b.node for b in packed)
    landing = [p for p in pods if not p.daemon]
    return AddonPoolPeak(
        pods=sum(p.replicas for p in landing),
        cpu_millis=sum(p.requests["cpu"] * p.replicas for p in landing),
        nodes=nodes,
        vcpus=sum(CPU_INSTANCES[n].vcpus for n in nodes),
        memory_gib=sum(CPU_INSTANCES[n].memory_gib for n in nodes),
    )
