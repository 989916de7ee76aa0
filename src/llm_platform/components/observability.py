"""Observability: kube-prometheus-stack, Grafana dashboards for vLLM and GPUs."""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from llm_platform.components import child_options
from llm_platform.components.kubernetes import apply_manifest
from llm_platform.components.specs import dashboards, karpenter, reservations
from llm_platform.components.specs import observability as spec
from llm_platform.components.specs.common import namespace_manifest
from llm_platform.components.specs.gateway_monitoring import epp_dashboard
from llm_platform.config.schema import AlertingConfig
from llm_platform.config.versions import KUBE_PROMETHEUS_STACK_REPO, KUBE_PROMETHEUS_STACK_VERSION
from llm_platform.plan import PrometheusSizing
from llm_platform.plan.naming import MONITORING_NAMESPACE


@dataclass(frozen=True, kw_only=True)
class ObservabilityArgs:
    grafana_admin_password: pulumi.Input[str]
    retention: PrometheusSizing
    create_storage_class: bool
    """EKS: an encrypted gp3 class on the EBS CSI driver; an existing cluster: its default class."""
    alerting: AlertingConfig
    alert_receiver: pulumi.Input[str] | None
    """The receiver's URL or routing key (Pulumi secret), when alerting.receiver is not none."""
    gateway_dashboard: bool = False
    """The stack runs the gateway: ship the endpoint pickers' dashboard (without it every panel is empty)."""
    reservation_node_classes: list[str] = field(default_factory=list)
    """EC2NodeClasses selecting capacity reservations: their end dates and selection are exported and alerted on."""
    scrape_karpenter: bool = False
    """Karpenter is installed before monitoring (the add-ons run on nodes it launches), so its ServiceMonitor
    is made here, once the CRD exists."""


class Observability(pulumi.ComponentResource):
    """Prometheus (persistent, selecting every monitor and rule in the cluster), Alertmanager, Grafana."""

    release: k8s.helm.v3.Release

    def __init__(
        self, name: str, args: ObservabilityArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("llm-platform:observability:Observability", name, None, opts)
        # node-exporter uses the host's namespaces
        namespace = apply_manifest(
            f"{name}-ns", namespace_manifest(MONITORING_NAMESPACE, "privileged"), child_options(self, opts)
        )
        waits: list[pulumi.Resource] = [namespace]
        if args.create_storage_class:
            waits.append(apply_manifest(f"{name}-gp3", spec.storage_class(), child_options(self, opts)))
        waits.append(
            apply_manifest(
                f"{name}-grafana-admin",
                spec.grafana_secret(pulumi.Output.secret(args.grafana_admin_password)),
                child_options(self, opts, namespace),
            )
        )
        if args.alert_receiver is not None:
            waits.append(
                apply_manifest(
                    f"{name}-alert-receiver",
                    spec.alert_receiver_secret(pulumi.Output.secret(args.alert_receiver)),
                    child_options(self, opts, namespace),
                )
            )
        boards = [("vllm", dashboards.vllm_dashboard()), ("gpu", dashboards.gpu_dashboard())]
        if args.gateway_dashboard:
            boards.append(("endpoint-picker", epp_dashboard()))
        for key, board in boards:
            apply_manifest(
                f"{name}-dashboard-{key}",
                dashboards.dashboard_configmap(f"llm-platform-{key}", MONITORING_NAMESPACE, board),
                child_options(self, opts, namespace),
            )
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name=spec.RELEASE,
            chart="kube-prometheus-stack",
            version=KUBE_PROMETHEUS_STACK_VERSION,
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=KUBE_PROMETHEUS_STACK_REPO),
            namespace=MONITORING_NAMESPACE,
            values=spec.helm_values(
                sizing=args.retention,
                storage_class=spec.STORAGE_CLASS if args.create_storage_class else None,
                alerting=args.alerting,
                capacity_reservations=bool(args.reservation_node_classes),
            ),
            opts=child_options(self, opts, *waits),
        )
        if args.scrape_karpenter:
            apply_manifest(
                f"{name}-karpenter-monitor",
                karpenter.service_monitor(),
                child_options(self, opts, self.release),
            )
        if args.reservation_node_classes:
            # the PrometheusRule CRD comes with the chart
            apply_manifest(
                f"{name}-capacity-reservations",
                reservations.prometheus_rule(args.reservation_node_classes, MONITORING_NAMESPACE),
                child_options(self, opts, self.release),
            )
        self.register_outputs({"release": self.release.name})
