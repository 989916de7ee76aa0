"""Every pod the stack will run, as a scheduling template: the program's own workloads from the render and
the pods of the Helm releases it configures.

A chart's pods come from its model in `plan/chart_pods.py` (the add-on records name it, `pods=`), applied to
the release's values as the render has them. A chart not modelled there is reported, never silently passed.
"""

from __future__ import annotations

from collections.abc import Callable

from llm_platform.facts import addons
from llm_platform.facts.addons import resolve_ref
from llm_platform.plan.chart_pods import value_at
from llm_platform.plan.pod_templates import RESOURCES, PodTemplate, from_pod_spec, pod_requests, requests_of
from llm_platform.tools.preflight.view import Release, RenderView

# re-exported: preflight's other checks and the tests read them from here
__all__ = [
    "RESOURCES",
    "PodTemplate",
    "chart_models",
    "envoy_proxy_pods",
    "from_pod_spec",
    "leader_worker_pods",
    "pod_requests",
    "program_pods",
    "release_pods",
    "requests_of",
]


def _scaled_maximum(view: RenderView, namespace: str, name: str) -> int | None:
    for so in view.of_kind("ScaledObject"):
        target = so.body["spec"]["scaleTargetRef"]
        if so.namespace == namespace and target.get("name") == name:
            return int(so.body["spec"].get("maxReplicaCount", 100))
    return None


def leader_worker_pods(view: RenderView) -> list[PodTemplate]:
    """A LeaderWorkerSet's leaders (one per group, at the ScaledObject's maximum) and workers (size - 1 each)."""
    out = []
    for m in view.of_kind("LeaderWorkerSet"):
        lwt = m.body["spec"]["leaderWorkerTemplate"]
        groups = _scaled_maximum(view, m.namespace, m.name) or int(m.body["spec"].get("replicas", 1))
        size = int(lwt.get("size", 1))
        for role, replicas in (("leaderTemplate", groups), ("workerTemplate", groups * (size - 1))):
            template = lwt[role]
            labels = (template.get("metadata") or {}).get("labels") or {}
            where = f"spec.leaderWorkerTemplate.{role}.spec"
            out.append(
                from_pod_spec(f"{m.ref} ({role[:-8]})", where, m.kind, replicas, template["spec"], labels)
            )
    return out


def program_pods(view: RenderView) -> list[PodTemplate]:
    out = leader_worker_pods(view)
    for m in view.of_kind("Deployment", "StatefulSet", "DaemonSet", "Job"):
        spec = m.body["spec"]
        template = spec["template"]
        replicas = _scaled_maximum(view, m.namespace, m.name) or int(spec.get("replicas", 1))
        if m.kind == "Job":
            replicas = int(spec.get("parallelism", 1))
        labels = (template.get("metadata") or {}).get("labels") or {}
        out.append(from_pod_spec(m.ref, "spec.template.spec", m.kind, replicas, template["spec"], labels))
    return out + envoy_proxy_pods(view)


def envoy_proxy_pods(view: RenderView) -> list[PodTemplate]:
    """The Envoy proxies Envoy Gateway creates from each EnvoyProxy object's Kubernetes provider settings."""
    out = []
    for proxy in view.of_kind("EnvoyProxy"):
        deployment = value_at(proxy.body, "spec.provider.kubernetes.envoyDeployment", {}) or {}
        pod = dict(deployment.get("pod") or {})
        pod["containers"] = [deployment.get("container") or {}]
        where = "spec.provider.kubernetes.envoyDeployment"
        out.append(from_pod_spec(proxy.ref, where, "Deployment", int(deployment.get("replicas", 1)), pod, {}))
    return out


def chart_models() -> dict[str, Callable[[Release], list[PodTemplate]] | None]:
    """Chart name -> the model of its release's pods (None: the chart runs no pods of its own, CRDs only), as
    the add-on records (llm_platform/facts/addons.py) name them; read anew on each call."""
    return {
        chart.name: resolve_ref(chart.pods) if chart.pods else None
        for record in addons.ADDONS
        for chart in record.charts
    }


def release_pods(view: RenderView) -> tuple[list[PodTemplate], list[str]]:
    """Pods of every modelled release, and the names of releases whose pods are not modelled."""
    pods: list[PodTemplate] = []
    unknown = []
    models = chart_models()
    for release in view.releases.values():
        if release.chart not in models:
            unknown.append(release.name)
            continue
        build = models[release.chart]
        if build is not None:
            pods += build(release)
    return pods, unknown
