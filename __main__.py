"""llm-platform: read the stack's config, resolve it into the plan, and compose the platform's components."""

import pulumi

from llm_platform.components.autoscaling import ModelAutoscaling, ModelAutoscalingArgs
from llm_platform.components.cluster import EksCluster, EksClusterArgs, ExistingCluster, ExistingClusterArgs
from llm_platform.components.gateway import Gateway, GatewayArgs
from llm_platform.components.gpu_operator import GpuOperator, GpuOperatorArgs
from llm_platform.components.headroom import GpuHeadroom, GpuHeadroomArgs
from llm_platform.components.inference import InferenceService, InferenceServiceArgs
from llm_platform.components.karpenter import (
    AddonNodePool,
    AddonNodePoolArgs,
    GpuNodePools,
    GpuNodePoolsArgs,
    Karpenter,
    KarpenterArgs,
)
from llm_platform.components.keda import Keda
from llm_platform.components.load_balancer import LoadBalancerController, LoadBalancerControllerArgs
from llm_platform.components.model_cache import ModelCache, ModelCacheArgs, ModelWeights
from llm_platform.components.network import Network, NetworkArgs
from llm_platform.components.observability import Observability, ObservabilityArgs
from llm_platform.config.loader import PROJECT, load_from_pulumi
from llm_platform.plan import resolve

# raises ConfigError (field, value, what is allowed) before any resource exists
plan = resolve(load_from_pulumi(), pulumi.get_stack())
# Pulumi secrets, read before anything is registered so a missing one stops the program first
secrets = pulumi.Config(PROJECT)
grafana_admin_password = secrets.require_secret("grafanaAdminPassword")
api_key = secrets.require_secret("apiKey") if plan.models else None
hf_token = (
    secrets.require_secret("huggingFaceToken")
    if plan.needs_hf_token
    else secrets.get_secret("huggingFaceToken")
)
gateway_cfg = plan.gateway
gateway_keys = secrets.require_secret_object("gatewayClientKeys") if gateway_cfg.enabled else None
alert_receiver = secrets.require_secret("alertReceiver") if plan.alerting.receiver != "none" else None
cluster_cfg = plan.cluster
environment = plan.environment
prod = plan.prod
eks_mode = plan.eks
stack_tags = plan.tags


def monitoring(opts: pulumi.ResourceOptions) -> Observability:
    """kube-prometheus-stack first: the charts that render a ServiceMonitor only when the
    monitoring.coreos.com/v1 API exists (Karpenter, KEDA, the GPU Operator) are installed after it."""
    return Observability(
        f"{cluster_cfg.name}-monitoring",
        ObservabilityArgs(
            grafana_admin_password=grafana_admin_password,
            retention=plan.monitoring.prometheus,
            create_storage_class=eks_mode,
            alerting=plan.alerting,
            alert_receiver=alert_receiver,
            reservation_node_classes=list(plan.reservation_node_classes) if eks_mode else [],
            scrape_karpenter=eks_mode,
        ),
        opts=opts,
    )


weights: ModelWeights | None = None
gateway_after: list[pulumi.Resource] = []  # what the gateway's load balancer needs first
if eks_mode:
    region = pulumi.Config("aws").require("region")
    network = Network(
        cluster_cfg.name,
        NetworkArgs(
            cluster_name=cluster_cfg.name,
            region=region,
            vpc_cidr=cluster_cfg.vpc_cidr,
            availability_zones=cluster_cfg.availability_zones,
            nat_per_zone=prod,
            tags=stack_tags,
        ),
    )
    cluster: EksCluster | ExistingCluster = EksCluster(
        cluster_cfg.name,
        EksClusterArgs(
            cluster_name=cluster_cfg.name,
            kubernetes_version=cluster_cfg.kubernetes_version,
            vpc_id=network.vpc_id,
            private_subnet_ids=network.private_subnet_ids,
            public_subnet_ids=network.public_subnet_ids,
            endpoint_public_access=cluster_cfg.endpoint_public_access,
            public_access_cidrs=[str(c) for c in cluster_cfg.public_access_cidrs],
            admin_role_arns=cluster_cfg.admin_role_arns,
            system_instance_type=cluster_cfg.system_nodes.instance_type,
            system_min=cluster_cfg.system_nodes.min,
            system_max=cluster_cfg.system_nodes.max,
            system_disk_gib=cluster_cfg.system_nodes.disk_size_gib,
            deletion_protection=prod,
            tags=stack_tags,
        ),
    )
    in_cluster = pulumi.ResourceOptions(providers=[cluster.provider], depends_on=[cluster])
    karpenter = Karpenter(
        f"{cluster_cfg.name}-karpenter",
        KarpenterArgs(
            cluster_name=cluster_cfg.name, region=region, tags=stack_tags, pools=plan.gpu_node_pools
        ),
        opts=in_cluster,
    )
    assert plan.addon_pool is not None  # every EKS plan has one
    addon_nodes = AddonNodePool(
        f"{cluster_cfg.name}-addons",
        AddonNodePoolArgs(
            cluster_name=cluster_cfg.name,
            pool=plan.addon_pool,
            zones=cluster_cfg.availability_zones,
            node_role_name=karpenter.node_role_name,
            tags=stack_tags,
        ),
        opts=pulumi.ResourceOptions(providers=[cluster.provider], depends_on=[karpenter]),
    )
    # every add-on below runs on the add-on nodes: its release waits until Karpenter may launch them
    in_cluster = pulumi.ResourceOptions(providers=[cluster.provider], depends_on=[cluster, addon_nodes])
    observability = monitoring(in_cluster)
    after_monitoring = pulumi.ResourceOptions.merge(
        in_cluster, pulumi.ResourceOptions(depends_on=[observability])
    )
    cache = ModelCache(
        f"{cluster_cfg.name}-cache",
        ModelCacheArgs(
            cluster_name=cluster_cfg.name,
            bucket=plan.model_cache.s3_bucket,
            fsx=plan.model_cache.fsx if plan.uses_fsx else None,
            vpc_id=network.vpc_id,
            subnet_id=network.private_subnet_ids[0],
            tags=stack_tags,
        ),
        opts=in_cluster,
    )
    weights = cache.weights
    GpuNodePools(
        f"{cluster_cfg.name}-gpu",
        GpuNodePoolsArgs(
            cluster_name=cluster_cfg.name,
            pools=plan.gpu_node_pools,
            node_classes=plan.node_classes,
            zones=cluster_cfg.availability_zones,
            node_role_name=karpenter.node_role_name,
            prod=prod,
            tags=stack_tags,
            extra_security_group_ids=[cache.fsx.client_security_group_id] if cache.fsx else [],
        ),
        opts=pulumi.ResourceOptions(providers=[cluster.provider], depends_on=[karpenter]),
    )
    if gateway_cfg.enabled:
        lb_controller = LoadBalancerController(
            f"{cluster_cfg.name}-lb-controller",
            LoadBalancerControllerArgs(
                cluster_name=cluster_cfg.name, region=region, vpc_id=network.vpc_id, tags=stack_tags
            ),
            opts=in_cluster,
        )
        gateway_after.append(lb_controller)
    pulumi.export("clusterEndpoint", cluster.endpoint)
    pulumi.export("vpcId", network.vpc_id)
    pulumi.export("modelBucket", cache.bucket_name)
else:
    assert cluster_cfg.kubeconfig is not None  # enforced by the schema
    cluster = ExistingCluster(
        cluster_cfg.name,
        ExistingClusterArgs(
            cluster_name=cluster_cfg.name, kubeconfig=cluster_cfg.kubeconfig, context=cluster_cfg.context
        ),
    )
    in_cluster = pulumi.ResourceOptions(providers=[cluster.provider])
    observability = monitoring(in_cluster)
    after_monitoring = pulumi.ResourceOptions.merge(
        in_cluster, pulumi.ResourceOptions(depends_on=[observability])
    )

GpuOperator(
    f"{cluster_cfg.name}-gpu-operator",
    GpuOperatorArgs(mig_in_use=plan.mig_in_use),
    opts=after_monitoring,
)
keda = Keda(f"{cluster_cfg.name}-keda", opts=after_monitoring)

headroom = GpuHeadroom(
    f"{cluster_cfg.name}-headroom",
    GpuHeadroomArgs(
        pools=plan.pools,
        keda=keda,
        monitoring=observability.release,
    ),
    opts=in_cluster,
)

services: list[pulumi.Resource] = []
if api_key is not None:
    serving_opts = pulumi.ResourceOptions.merge(
        after_monitoring, pulumi.ResourceOptions(depends_on=[headroom.serving_priority_class])
    )
    for model in plan.models:
        service = InferenceService(
            f"{cluster_cfg.name}-{model.name}",
            InferenceServiceArgs(
                model=model,
                environment=environment,
                api_key=api_key,
                hf_token=hf_token,
                cluster_name=cluster_cfg.name if eks_mode else None,
                weights=weights,
                tags=stack_tags,
            ),
            opts=serving_opts,
        )
        ModelAutoscaling(
            f"{cluster_cfg.name}-{model.name}-autoscaling",
            ModelAutoscalingArgs(model=model, environment=environment),
            opts=pulumi.ResourceOptions.merge(
                in_cluster, pulumi.ResourceOptions(depends_on=[keda, observability, service])
            ),
        )
        services.append(service)
        pulumi.export(f"{model.name}Endpoint", f"http://{service.service_host}/v1")

if gateway_cfg.enabled and api_key is not None and gateway_keys is not None:
    gateway = Gateway(
        f"{cluster_cfg.name}-gateway",
        GatewayArgs(
            models=list(plan.models),
            clients=gateway_cfg.clients,
            client_keys=gateway_keys,
            vllm_api_key=api_key,
            environment=environment,
            vpc_cidr=str(cluster_cfg.vpc_cidr),
            internal=gateway_cfg.internal,
            certificate_arn=gateway_cfg.certificate_arn,
            replicas=gateway_cfg.replicas,
            depends_on_models=services,
        ),
        # monitors and alert rules of the pickers need the Prometheus Operator's CRDs
        opts=pulumi.ResourceOptions.merge(
            in_cluster, pulumi.ResourceOptions(depends_on=[*gateway_after, observability])
        ),
    )
    # the NLB's DNS name: kubectl -n llm-gateway get gateway llm-gateway -o jsonpath='{.status.addresses[0].value}'
    pulumi.export("gatewayNamespace", gateway.namespace)

pulumi.export("clusterName", cluster_cfg.name)
pulumi.export("environment", environment)
