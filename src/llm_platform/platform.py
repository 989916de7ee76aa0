"""LlmPlatform: the whole platform of one environment as one component, composed from the others.

Its args are the stack file's schema: the same keys users write under `llm-platform:` in
`Pulumi.<stack>.yaml` (`gpuNodePools`, `modelCache`, ... in YAML, TypeScript and Go; snake_case at the top
level in Python), validated by the same rules (`config/schema/`) with the same messages, before any
resource is registered. The stack program (`__main__.py`) is its first consumer.
"""

from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from llm_platform.components import given_provider
from llm_platform.components.addon import HelmAddon, HelmAddonArgs
from llm_platform.components.autoscaling import ModelAutoscaling, ModelAutoscalingArgs
from llm_platform.components.cluster import EksCluster, ExistingCluster, ExistingClusterArgs
from llm_platform.components.costs import CostAllocation, CostAllocationArgs
from llm_platform.components.gateway import Gateway, GatewayArgs
from llm_platform.components.gpu_operator import GpuOperator, GpuOperatorArgs
from llm_platform.components.headroom import GpuHeadroom, GpuHeadroomArgs
from llm_platform.components.inference import InferenceService, InferenceServiceArgs
from llm_platform.components.karpenter import (
    GpuNodePools,
    GpuNodePoolsArgs,
    Karpenter,
)
from llm_platform.components.keda import Keda, KedaArgs
from llm_platform.components.load_balancer import LoadBalancerController, LoadBalancerControllerArgs
from llm_platform.components.model_cache import ModelCache, ModelCacheArgs, ModelWeights
from llm_platform.components.multinode import EfaNetwork, EfaNetworkArgs, MultiNodeControllers
from llm_platform.components.network import Network
from llm_platform.components.observability import Observability, ObservabilityArgs
from llm_platform.components.specs.observability import STORAGE_CLASS
from llm_platform.config.loader import parse, stack_source
from llm_platform.config.stack_args import Environment
from llm_platform.facts import addons
from llm_platform.plan import ModelPlan, Plan
from llm_platform.plan.nodes import efa_pool
from llm_platform.plan.stack import SERVING_KEYS
from llm_platform.platform_checks import (
    SECRET_ARGS,
    PlanChecks,
    needed_secrets,
    platform_checks,
    secrets_check,
)
from llm_platform.platform_eks import karpenter_and_addon_nodes, network_and_cluster
from llm_platform.platform_inputs import LlmPlatformArgs, config_of, platform_args

__all__ = [
    "SECRET_ARGS",
    "TYPE",
    "LlmPlatform",
    "LlmPlatformArgs",
    "config_of",
    "needed_secrets",
    "platform_args",
    "secrets_check",
]

TYPE = "llm-platform:index:LlmPlatform"


@dataclass
class _Inside:
    """What the children inside the cluster wait for and use, as `LlmPlatform._compose` builds it."""

    in_cluster: pulumi.ResourceOptions  # the cluster's Kubernetes provider (on EKS: after the add-on nodes)
    observability: Observability
    after_monitoring: pulumi.ResourceOptions  # in_cluster, after kube-prometheus-stack
    weights: ModelWeights | None = None  # the model cache's bucket and file system (EKS)
    gateway_after: list[pulumi.Resource] = field(
        default_factory=list
    )  # the gateway's load balancer needs first
    installed: dict[str, pulumi.Resource] = field(default_factory=dict)  # what installs each add-on, by name


def _rollout_controller(inside: _Inside, model: ModelPlan) -> list[pulumi.Resource]:
    """A progressively rolled model's Rollout and AnalysisTemplate wait for Argo Rollouts and its CRDs."""
    controller = inside.installed.get("argo-rollouts")
    if model.model.rollout is None or controller is None:
        return []
    return [controller.release] if isinstance(controller, HelmAddon) else [controller]


class LlmPlatform(pulumi.ComponentResource):
    """One environment of the LLM platform: VPC and EKS (or an existing cluster), Karpenter GPU NodePools,
    the GPU Operator, kube-prometheus-stack, KEDA, vLLM per model autoscaled on its own metrics, the
    model-weights cache and the gateway.

    Children are named from `cluster.name`, as the stack program always named them, and alias the URNs they
    had as the program's top-level resources, so an existing stack adopting the component sees no
    replacement.

    Providers: an `aws` provider given in `opts.providers` (or `opts.provider`), an assume-role one for
    instance, is the one every AWS resource uses (its region should be `region`'s; its default_tags, not the
    stack's, tag what it creates); without one the component builds its own in the stack's region with the
    stack's tags. With `cluster.mode: existing`, a `kubernetes` provider given the same way is the one every
    in-cluster resource uses instead of one built from `cluster.kubeconfig`.
    """

    cluster_name: pulumi.Output[str]
    """The cluster's name."""
    environment: pulumi.Output[str]
    """dev, staging or prod."""
    model_endpoints: pulumi.Output[dict[str, str]]
    """Each model's in-cluster OpenAI endpoint (`http://<service>.<namespace>.svc:8000/v1`) by model name."""
    kubeconfig: pulumi.Output[str]
    """The cluster's kubeconfig (a secret; eks mode), for a StackReference or kubectl."""
    cluster_endpoint: pulumi.Output[str]
    """The Kubernetes API server URL (eks mode)."""
    vpc_id: pulumi.Output[str]
    """The VPC's id (eks mode)."""
    model_bucket: pulumi.Output[str]
    """The S3 bucket holding model weights and compile caches (eks mode)."""
    gateway_namespace: pulumi.Output[str]
    """The gateway's namespace, where its Gateway reports the NLB address (with the gateway)."""

    def __init__(self, name: str, args: LlmPlatformArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        # bad input stops here, before any resource exists: field, value and what is allowed
        region = args.get("region") or pulumi.Config("aws").get("region")
        stack, values = pulumi.get_stack(), config_of(args)
        planned = PlanChecks(stack)  # the plan's checks resolve it once, and the children get that plan
        checks = [*platform_checks(args, region), *planned.checks]
        # the stack file's lines when the args are its values (the stack program)
        config = parse(values, stack_source(stack, values), region=region, checks=checks)
        plan = planned.plan_of(config)
        super().__init__(TYPE, name, None, opts)
        self._given_aws = given_provider(opts, "aws")
        self._given_kubernetes = given_provider(opts, "kubernetes")
        self._compose(plan, args, region)

    def _compose(self, plan: Plan, args: LlmPlatformArgs, region: str | None) -> None:
        """The children in the order their dependencies need: the cluster (and on EKS its network, Karpenter,
        add-on nodes, cache and GPU pools), monitoring, the cluster-wide add-ons, the models, the gateway."""
        self._plan, self._args, self._region = plan, args, region
        self._versions: dict[str, str] = dict(args.get("addon_versions") or {})
        # every child was a top-level resource of the stack program before this component existed
        self._top = pulumi.ResourceOptions(
            parent=self, aliases=[pulumi.Alias(parent=pulumi.ROOT_STACK_RESOURCE)]
        )
        self._outputs: dict[str, pulumi.Input[Any]] = {}
        # the stack file's blocks a serving component resolves its plan from, as the stack file has them
        self._serving: dict[str, Any] = {k: args[k] for k in SERVING_KEYS if args.get(k) is not None}  # type: ignore[literal-required]
        inside = self._eks(region) if plan.eks else self._existing()
        keda, headroom = self._cluster_addons(inside)
        services = self._models(inside, keda, headroom)
        self._gateway(inside, list(services.values()))
        self._register(services)

    def _child(self, opts: pulumi.ResourceOptions) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions.merge(opts, self._top)

    def _monitoring(self, opts: pulumi.ResourceOptions) -> Observability:
        """kube-prometheus-stack before the charts that render a ServiceMonitor only when the
        monitoring.coreos.com/v1 API exists (KEDA, the GPU Operator); Karpenter comes before it (the add-ons
        run on the nodes it launches), so Observability makes Karpenter's ServiceMonitor itself."""
        plan, args = self._plan, self._args
        receiver: dict[str, Any] = {}
        alert_receiver = args.get("alert_receiver")
        if plan.alerting.receiver != "none" and alert_receiver is not None:
            receiver["alert_receiver"] = alert_receiver
        return Observability(
            f"{plan.cluster.name}-monitoring",
            ObservabilityArgs(
                environment=Environment(plan.environment),
                grafana_admin_password=args["grafana_admin_password"],
                create_storage_class=plan.eks,
                alerting=args.get("alerting") or {},
                **receiver,
                # under the Gateway's own condition (_gateway)
                gateway_dashboard=plan.gateway.enabled
                and args.get("api_key") is not None
                and args.get("gateway_client_keys") is not None,
                reservation_node_classes=list(plan.reservation_node_classes) if plan.eks else [],
                scrape_karpenter=plan.eks,
                gpu_health=plan.eks,
                node_repair=plan.cluster.node_repair,
            ),
            opts=self._child(opts),
            plan=plan,
            versions=self._versions,
        )

    def _inside(self, in_cluster: pulumi.ResourceOptions) -> _Inside:
        """Monitoring first, then what the children inside the cluster wait for."""
        observability = self._monitoring(in_cluster)
        after_monitoring = pulumi.ResourceOptions.merge(
            in_cluster, pulumi.ResourceOptions(depends_on=[observability])
        )
        installed: dict[str, pulumi.Resource] = {"kube-prometheus-stack": observability}
        return _Inside(in_cluster, observability, after_monitoring, installed=installed)

    def _existing(self) -> _Inside:
        cluster_cfg = self._plan.cluster
        assert cluster_cfg.kubeconfig is not None  # enforced by the schema
        cluster = ExistingCluster(
            cluster_cfg.name,
            ExistingClusterArgs(
                cluster_name=cluster_cfg.name,
                kubeconfig=cluster_cfg.kubeconfig,
                **({"context": cluster_cfg.context} if cluster_cfg.context else {}),
            ),
            opts=self._top,
        )
        return self._inside(pulumi.ResourceOptions(providers=[self._given_kubernetes or cluster.provider]))

    def _eks(self, region: str | None) -> _Inside:
        """The VPC and the EKS cluster, Karpenter and the add-on nodes, monitoring, the model cache, the GPU
        pools and (with the gateway) the load balancer controller."""
        assert region, "platform_checks refuses the eks mode without a region"
        plan = self._plan
        name = plan.cluster.name
        # one AWS provider: the caller's, else the stack's region and its tags on every AWS resource
        aws_provider = self._given_aws or aws.Provider(
            f"{name}-aws",
            region=region,
            default_tags=aws.ProviderDefaultTagsArgs(tags=plan.tags),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self._top = pulumi.ResourceOptions.merge(self._top, pulumi.ResourceOptions(providers=[aws_provider]))
        network, cluster = network_and_cluster(plan, region, self._top)
        karpenter, addon_nodes = karpenter_and_addon_nodes(
            plan, self._args["gpu_node_pools"], region, cluster, self._top, self._versions
        )
        # every add-on below runs on the add-on nodes: its release waits until Karpenter may launch them
        in_cluster = pulumi.ResourceOptions(providers=[cluster.provider], depends_on=[cluster, addon_nodes])
        inside = self._inside(in_cluster)
        inside.installed["karpenter"] = karpenter
        cache = ModelCache(
            f"{name}-cache",
            ModelCacheArgs(
                cluster_name=name,
                model_cache=self._args.get("model_cache") or {},
                fsx=plan.uses_fsx,
                vpc_id=network.vpc_id,
                subnet_id=network.private_subnet_ids[0],
            ),
            opts=self._child(in_cluster),
            plan=plan,
            versions=self._versions,
        )
        inside.weights = cache.weights
        self._gpu_pools(network, cluster, karpenter, cache)
        if plan.gateway.enabled:
            lb_controller = LoadBalancerController(
                f"{name}-lb-controller",
                LoadBalancerControllerArgs(cluster_name=name, region=region, vpc_id=network.vpc_id),
                opts=self._child(in_cluster),
                versions=self._versions,
            )
            inside.gateway_after.append(lb_controller)
            inside.installed["aws-load-balancer-controller"] = lb_controller
        self._outputs |= {
            "cluster_endpoint": cluster.endpoint,
            "kubeconfig": pulumi.Output.secret(cluster.cluster.kubeconfig_json),
            "vpc_id": network.vpc_id,
            "model_bucket": cache.bucket_name,
        }
        return inside

    def _gpu_pools(
        self, network: Network, cluster: EksCluster, karpenter: Karpenter, cache: ModelCache
    ) -> None:
        """The GPU NodePools, and for multi-node replicas the EFA security group and placement groups."""
        plan = self._plan
        name = plan.cluster.name
        efa_pools = [p for p in plan.gpu_node_pools if efa_pool(p)]
        efa = (
            EfaNetwork(
                f"{name}-efa",
                EfaNetworkArgs(cluster_name=name, vpc_id=network.vpc_id, pools=efa_pools, tags=plan.tags),
                opts=self._top,
            )
            if efa_pools
            else None
        )
        pools_args = GpuNodePoolsArgs(
            cluster_name=name,
            gpu_node_pools=self._args["gpu_node_pools"],
            ami_versions=self._args["cluster"].get("amiVersions") or {},
            lustre_client=plan.uses_fsx,
            zones=plan.cluster.availability_zones,
            node_role_name=karpenter.node_role_name,
            prod=plan.prod,
            tags=plan.tags,  # on what Karpenter launches; default_tags do not reach it
            extra_security_group_ids=[cache.fsx["client_security_group_id"]] if cache.fsx else [],
        )
        if efa is not None:
            pools_args["efa_security_group_id"] = efa.security_group_id
        GpuNodePools(
            f"{name}-gpu",
            pools_args,
            opts=self._child(
                pulumi.ResourceOptions(
                    providers=[cluster.provider], depends_on=[karpenter, *([efa] if efa else [])]
                )
            ),
            plan=plan,
        )

    def _cluster_addons(self, inside: _Inside) -> tuple[Keda, GpuHeadroom]:
        """The GPU Operator, cost allocation, KEDA and the GPU headroom, after monitoring."""
        plan, args, region = self._plan, self._args, self._region
        name = plan.cluster.name
        inside.installed["gpu-operator"] = GpuOperator(
            f"{name}-gpu-operator",
            GpuOperatorArgs(mig_in_use=plan.mig_in_use),
            opts=self._child(inside.after_monitoring),
            versions=self._versions,
        )
        if plan.costs.enabled and region:
            inside.installed["opencost"] = CostAllocation(
                f"{name}-costs",
                CostAllocationArgs(
                    cluster_name=name,
                    region=region,
                    costs=args.get("costs") or {},
                    has_model_bucket=plan.eks,
                    monitoring=inside.observability.release,
                    **self._serving,
                ),
                opts=self._child(inside.after_monitoring),
                plan=plan,
                versions=self._versions,
            )
        keda = Keda(
            f"{name}-keda", KedaArgs(), opts=self._child(inside.after_monitoring), versions=self._versions
        )
        headroom = GpuHeadroom(
            f"{name}-headroom",
            GpuHeadroomArgs(
                **{k: v for k, v in self._serving.items() if k != "gateway"},
                has_model_bucket=plan.eks,
                keda=keda.release,
                monitoring=inside.observability.release,
            ),
            opts=self._child(inside.in_cluster),
            pools=plan.pools,
        )
        inside.installed["keda"] = keda
        self._record_addons(inside)
        return keda, headroom

    def _record_addons(self, inside: _Inside) -> None:
        """Every add-on record without a component of its own that the stack runs (llm_platform/facts/addons.py), in
        the records' order, each after the add-ons its `after` names."""
        plan = self._plan
        versions = self._versions
        for record in addons.record_installed(plan):
            after = [inside.installed[d] for d in record.after if d in inside.installed]
            inside.installed[record.name] = HelmAddon(
                f"{plan.cluster.name}-{record.name}",
                HelmAddonArgs(record=record, plan=plan, versions=versions),
                opts=self._child(
                    pulumi.ResourceOptions.merge(inside.in_cluster, pulumi.ResourceOptions(depends_on=after))
                ),
            )

    def _models(self, inside: _Inside, keda: Keda, headroom: GpuHeadroom) -> dict[str, InferenceService]:
        """Each model's InferenceService and ModelAutoscaling (with the LeaderWorkerSet controller first when
        a model spans nodes); none without the API key."""
        plan, args = self._plan, self._args
        name = plan.cluster.name
        # multi-node replicas: the LeaderWorkerSet controller and the EFA device plugin
        multi_node_after: list[pulumi.Resource] = []
        if any(m.model.needs_efa for m in plan.models):
            controllers = MultiNodeControllers(
                f"{name}-multinode", opts=self._child(inside.in_cluster), versions=self._versions
            )
            multi_node_after = [controllers.lws]
        services: dict[str, InferenceService] = {}
        api_key = args.get("api_key")
        if not plan.models or api_key is None:
            return services
        serving_opts = pulumi.ResourceOptions.merge(
            inside.after_monitoring, pulumi.ResourceOptions(depends_on=[headroom.serving_priority_class])
        )
        secrets: dict[str, Any] = {"api_key": api_key}
        hf_token = args.get("hugging_face_token")
        if hf_token is not None:
            secrets["hugging_face_token"] = hf_token
        if plan.eks and inside.weights is not None:
            secrets |= {"cluster_name": name, "weights": inside.weights}
        for entry in args.get("models", []):
            model = plan.model(entry["name"])
            service = InferenceService(
                f"{name}-{model.name}",
                InferenceServiceArgs(
                    **self._serving,
                    model=entry,
                    priority_class=headroom.serving_priority_class_name,
                    **secrets,
                ),
                opts=self._child(serving_opts),
                after=multi_node_after if model.multi_node else _rollout_controller(inside, model),
                plan=model,
            )
            ModelAutoscaling(
                f"{name}-{model.name}-autoscaling",
                ModelAutoscalingArgs(**self._serving, model=entry),
                opts=self._child(
                    pulumi.ResourceOptions.merge(
                        inside.in_cluster,
                        pulumi.ResourceOptions(depends_on=[keda, inside.observability, service]),
                    )
                ),
                plan=model,
            )
            services[model.name] = service
        return services

    def _gateway(self, inside: _Inside, services: list[InferenceService]) -> None:
        """The gateway in front of the models, with its keys (and on EKS after the load balancer controller)."""
        plan, args = self._plan, self._args
        api_key, gateway_keys = args.get("api_key"), args.get("gateway_client_keys")
        if not plan.gateway.enabled or api_key is None or gateway_keys is None:
            return
        gateway_args = GatewayArgs(
            **self._serving,
            client_keys=gateway_keys,
            vllm_api_key=api_key,
            vpc_cidr=str(plan.cluster.vpc_cidr),
        )
        if plan.eks:  # the quota store's volume on the stack's StorageClass (else the cluster's default)
            gateway_args["storage_class"] = STORAGE_CLASS
        gateway = Gateway(
            f"{plan.cluster.name}-gateway",
            gateway_args,
            # monitors and alert rules of the pickers need the Prometheus Operator's CRDs
            opts=self._child(
                pulumi.ResourceOptions.merge(
                    inside.in_cluster,
                    pulumi.ResourceOptions(depends_on=[*inside.gateway_after, inside.observability]),
                )
            ),
            models_ready=services,
            plan=plan,
            versions=self._versions,
        )
        self._outputs["gateway_namespace"] = gateway.namespace

    def _register(self, services: dict[str, InferenceService]) -> None:
        plan = self._plan
        served = list(services)
        self.cluster_name = pulumi.Output.from_input(plan.cluster.name)
        self.environment = pulumi.Output.from_input(plan.environment)
        self.model_endpoints = pulumi.Output.all(
            *[pulumi.Output.concat("http://", s.service_host, "/v1") for s in services.values()]
        ).apply(lambda urls: dict(zip(served, urls, strict=True)))
        for key in ("kubeconfig", "cluster_endpoint", "vpc_id", "model_bucket", "gateway_namespace"):
            setattr(self, key, pulumi.Output.from_input(self._outputs.get(key, "")))
        self.register_outputs(
            {
                "clusterName": self.cluster_name,
                "environment": self.environment,
                "modelEndpoints": self.model_endpoints,
                "kubeconfig": self.kubeconfig,
                "clusterEndpoint": self.cluster_endpoint,
                "vpcId": self.vpc_id,
                "modelBucket": self.model_bucket,
                "gatewayNamespace": self.gateway_namespace,
            }
        )
