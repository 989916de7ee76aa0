"""Gateway: the platform's entry point, an Envoy proxy behind an AWS NLB in front of every model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import pulumi
import pulumi_kubernetes as k8s

from components import child_options
from components.kubernetes import apply_manifest
from components.specs import gateway as spec
from config.schema import GatewayClient
from plan import ModelPlan


@dataclass(frozen=True, kw_only=True)
class GatewayArgs:
    models: Sequence[ModelPlan]
    clients: Sequence[GatewayClient]
    client_keys: pulumi.Input[Mapping[str, str]]
    """Client name -> API key (a Pulumi secret, e.g. the `gatewayClientKeys` JSON object)."""
    vllm_api_key: pulumi.Input[str]
    """The key vLLM checks; the gateway sends it on every forwarded request, clients never see it."""
    environment: str
    vpc_cidr: str
    """Where the NLB's connections (and kubelet's probes) come from."""
    internal: bool = True
    certificate_arn: str | None = None
    """ACM certificate: TLS on port 443 at the NLB. Required when `internal` is false."""
    replicas: int = spec.DEFAULT_REPLICAS
    max_inflight_per_replica: int = spec.DEFAULT_MAX_INFLIGHT_PER_REPLICA
    max_pending_per_replica: int = spec.DEFAULT_MAX_PENDING_PER_REPLICA
    depends_on_models: Sequence[pulumi.Resource] = field(default_factory=list)
    """The models' InferenceServices, so the gateway starts once their Services exist."""


class Gateway(pulumi.ComponentResource):
    """Namespace, the Envoy config Secret, the Envoy Deployment, its NLB Service, PodDisruptionBudget,
    PodMonitor and NetworkPolicies."""

    namespace: str
    hostname: pulumi.Output[str | None]
    """The NLB's DNS name, once the AWS Load Balancer Controller has provisioned it."""

    def __init__(self, name: str, args: GatewayArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llm-platform:gateway:Gateway", name, None, opts)
        self._name, self._opts = name, opts
        self.namespace = spec.NAMESPACE
        if args.replicas < 2:
            pulumi.log.warn(
                f"{name}: {args.replicas} gateway replica(s): one node loss stops all traffic", self
            )
        # fail at preview on a bad setting, before any secret is resolved
        spec.service(
            environment=args.environment, internal=args.internal, certificate_arn=args.certificate_arn
        )

        ns = self._apply("ns", spec.namespace(args.environment))
        sa = self._apply("sa", spec.service_account(), ns)

        def render(values: list[Any]) -> str:
            keys, vllm_key = values
            config = spec.envoy_config(
                args.models,
                args.clients,
                dict(keys),
                vllm_key,
                replicas=args.replicas,
                max_inflight_per_replica=args.max_inflight_per_replica,
                max_pending_per_replica=args.max_pending_per_replica,
            )
            return spec.render_config(config)

        rendered = pulumi.Output.secret(pulumi.Output.all(args.client_keys, args.vllm_api_key).apply(render))
        secret = self._apply("config", spec.config_secret(rendered), ns)
        # an HMAC keyed with the vLLM key: safe to show in the Deployment, so the Deployment stays readable
        checksum = pulumi.Output.unsecret(
            pulumi.Output.all(rendered, args.vllm_api_key).apply(lambda v: spec.config_checksum(v[0], v[1]))
        )
        self._apply(
            "deployment",
            spec.deployment(environment=args.environment, replicas=args.replicas, config_checksum=checksum),
            ns,
            sa,
            secret,
            *args.depends_on_models,
        )
        service = cast(
            k8s.core.v1.Service,
            self._apply(
                "service",
                spec.service(
                    environment=args.environment, internal=args.internal, certificate_arn=args.certificate_arn
                ),
                ns,
            ),
        )
        self._apply("pdb", spec.pod_disruption_budget(), ns)
        self._apply("podmonitor", spec.pod_monitor(), ns)
        self._apply("deny-ingress", spec.default_deny_ingress(), ns)
        self._apply("netpol", spec.network_policy(args.vpc_cidr), ns)

        self.hostname = service.status.apply(_lb_hostname)
        self.register_outputs({"namespace": self.namespace, "hostname": self.hostname})

    def _apply(self, suffix: str, manifest: dict, *after: pulumi.Resource) -> pulumi.CustomResource:
        return apply_manifest(f"{self._name}-{suffix}", manifest, child_options(self, self._opts, *after))


def _lb_hostname(status: Any) -> str | None:
    ingress = getattr(getattr(status, "load_balancer", None), "ingress", None) or []
    return ingress[0].hostname if ingress else None
