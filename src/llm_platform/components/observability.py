"""Observability: kube-prometheus-stack, Grafana dashboards for vLLM and GPUs."""

from collections.abc import Mapping
from typing import NotRequired, TypedDict

import pulumi
import pulumi_kubernetes as k8s

from llm_platform.components import child_options, typed_options
from llm_platform.components.kubernetes import apply_manifest
from llm_platform.components.specs import dashboards, gpu_health, karpenter, reservations
from llm_platform.components.specs import observability as spec
from llm_platform.components.specs.common import namespace_manifest
from llm_platform.components.specs.gateway_monitoring import epp_dashboard
from llm_platform.config.loader import parse_block
from llm_platform.config.stack_args import AlertingSettings, EnvironmentValue
from llm_platform.facts.addons import KUBE_PROMETHEUS_STACK, version_of
from llm_platform.plan import Plan
from llm_platform.plan.naming import MONITORING_NAMESPACE
from llm_platform.plan.stack import PROMETHEUS_SIZING


class ObservabilityArgs(TypedDict):
    """kube-prometheus-stack sized for the environment, alerting as the stack file's `alerting` block says
    (camelCase keys, checked by the schema), and the secrets."""

    environment: EnvironmentValue
    """dev, staging or prod: Prometheus' retention, volume and replicas (plan.stack.PROMETHEUS_SIZING)."""
    grafana_admin_password: pulumi.Input[str]
    """Grafana's admin password (a secret)."""
    alerting: NotRequired[AlertingSettings]
    """The stack file's `alerting`: where Alertmanager sends alerts (default: nowhere)."""
    alert_receiver: NotRequired[pulumi.Input[str]]
    """The receiver's URL or routing key (a secret), when alerting.receiver is not none."""
    create_storage_class: bool
    """EKS: an encrypted gp3 class on the EBS CSI driver; an existing cluster: its default class."""
    gateway_dashboard: NotRequired[bool]
    """The stack runs the gateway: ship the endpoint pickers' dashboard (without it every panel is empty)."""
    reservation_node_classes: NotRequired[list[str]]
    """EC2NodeClasses selecting capacity reservations: their end dates and selection are exported and alerted on."""
    gpu_health: NotRequired[bool]
    """GPU nodes run here (an EKS stack): alert on GPUs repair does not fix (components/specs/gpu_health.py)."""
    node_repair: NotRequired[bool]
    """The stack's cluster.nodeRepair, which the GPU alerts' advice follows."""
    scrape_karpenter: NotRequired[bool]
    """Karpenter is installed before monitoring (the add-ons run on nodes it launches), so its ServiceMonitor
    is made here, once the CRD exists."""


class Observability(pulumi.ComponentResource):
    """Prometheus (persistent, selecting every monitor and rule in the cluster), Alertmanager, Grafana.

    Its pods run on the add-on nodes (a cluster prerequisite): nodes labelled `llm-platform/node-role: addons` and
    tainted `llm-platform/addons: true` (NoSchedule), which LlmPlatform's AddonNodePool makes; on a cluster you
    run, label and taint a node group so. Without `create_storage_class`, the cluster's default StorageClass holds
    Prometheus's and Grafana's volumes; the EBS CSI driver (an EKS add-on) provisions them either way."""

    release: k8s.helm.v3.Release

    def __init__(
        self,
        name: str,
        args: ObservabilityArgs,
        opts: pulumi.ResourceOptions | None = None,
        *,
        plan: Plan | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> None:
        """`plan`: the stack's plan, already resolved from these args (`LlmPlatform` passes its own; monitoring
        reads its Prometheus sizing and `alerting`); without it the args' blocks are validated here.
        `versions`: chart versions by add-on name (`llm_platform.facts.addons`) in place of the pinned ones
        (`LlmPlatform` passes its `addon_versions`)."""
        # bad input stops before any resource
        if plan is not None:
            sizing, alerting = plan.monitoring.prometheus, plan.alerting
        else:
            sizing = PROMETHEUS_SIZING[parse_block("environment", args["environment"]).value]
            alerting = parse_block("alerting", args.get("alerting", {}))
        create_storage_class = args["create_storage_class"]
        reservation_node_classes = args.get("reservation_node_classes", [])
        super().__init__(
            "llm-platform:index:Observability",
            name,
            None,
            typed_options(opts, "llm-platform:observability:Observability"),
        )
        # a disaggregated model's replicas are per role (the dashboard's panel only where the stack serves one)
        roles = plan is not None and any(m.disaggregation is not None for m in plan.models)
        waits = self._before_release(name, args, opts, roles=roles)
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name=spec.RELEASE,
            chart=KUBE_PROMETHEUS_STACK.chart.chart,
            version=version_of(KUBE_PROMETHEUS_STACK, KUBE_PROMETHEUS_STACK.chart, versions),
            repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=KUBE_PROMETHEUS_STACK.chart.repo),
            namespace=MONITORING_NAMESPACE,
            values=spec.helm_values(
                sizing=sizing,
                storage_class=spec.STORAGE_CLASS if create_storage_class else None,
                alerting=alerting,
                capacity_reservations=bool(reservation_node_classes),
            ),
            opts=child_options(self, opts, *waits),
        )
        if args.get("scrape_karpenter"):
            apply_manifest(
                f"{name}-karpenter-monitor",
                karpenter.service_monitor(),
                child_options(self, opts, self.release),
            )
        if reservation_node_classes:
            # the PrometheusRule CRD comes with the chart
            apply_manifest(
                f"{name}-capacity-reservations",
                reservations.prometheus_rule(reservation_node_classes, MONITORING_NAMESPACE),
                child_options(self, opts, self.release),
            )
        if args.get("gpu_health"):
            apply_manifest(
                f"{name}-gpu-health",
                gpu_health.prometheus_rule(MONITORING_NAMESPACE, node_repair=args.get("node_repair", True)),
                child_options(self, opts, self.release),
            )
        self.register_outputs({"release": self.release.name})

    def _before_release(
        self, name: str, args: ObservabilityArgs, opts: pulumi.ResourceOptions | None, *, roles: bool = False
    ) -> list[pulumi.Resource]:
        """The namespace, the StorageClass (when asked), Grafana's admin and the alert receiver's secrets and the
        dashboards: what the release waits for (the dashboards excepted), in that order."""
        # node-exporter uses the host's namespaces
        namespace = apply_manifest(
            f"{name}-ns", namespace_manifest(MONITORING_NAMESPACE, "privileged"), child_options(self, opts)
        )
        waits: list[pulumi.Resource] = [namespace]
        if args["create_storage_class"]:
            waits.append(apply_manifest(f"{name}-gp3", spec.storage_class(), child_options(self, opts)))
        waits.append(
            apply_manifest(
                f"{name}-grafana-admin",
                spec.grafana_secret(pulumi.Output.secret(args["grafana_admin_password"])),
                child_options(self, opts, namespace),
            )
        )
        alert_receiver = args.get("alert_receiver")
        if alert_receiver is not None:
            waits.append(
                apply_manifest(
                    f"{name}-alert-receiver",
                    spec.alert_receiver_secret(pulumi.Output.secret(alert_receiver)),
                    child_options(self, opts, namespace),
                )
            )
        boards = [("vllm", dashboards.vllm_dashboard(roles=roles)), ("gpu", dashboards.gpu_dashboard())]
        if args.get("gateway_dashboard"):
            boards.append(("endpoint-picker", epp_dashboard()))
        for key, board in boards:
            apply_manifest(
                f"{name}-dashboard-{key}",
                dashboards.dashboard_configmap(f"llm-platform-{key}", MONITORING_NAMESPACE, board),
                child_options(self, opts, namespace),
            )
        return waits
