"""llm-platform: read the stack's config, validate it, and compose the platform's components."""

import pulumi

from components.autoscaling import ModelAutoscaling, ModelAutoscalingArgs
from components.cluster import EksCluster, EksClusterArgs, ExistingCluster, ExistingClusterArgs
from components.gateway import Gateway, GatewayArgs
from components.gpu_operator import GpuOperator, GpuOperatorArgs
from components.headroom import GpuHeadroom, GpuHeadroomArgs
from components.inference import InferenceService, InferenceServiceArgs, ModelWeights
from components.karpenter import GpuNodePools, GpuNodePoolsArgs, Karpenter, KarpenterArgs
from components.keda import Keda
from components.load_balancer import LoadBalancerController, LoadBalancerControllerArgs
from components.model_cache import ModelCache, ModelCacheArgs
from components.network import Network, NetworkArgs
from components.observability import Observability, ObservabilityArgs
from components.specs import gateway as gateway_spec
from components.specs.common import tags
from components.specs.karpenter import al2023_user_data, reservation_node_classes
from components.specs.observability import retention
from components.specs.serving import expected_start_seconds, pool_headroom_gpus
from config.loader import PROJECT, load_from_pulumi
from config.schema import Environment

settings = load_from_pulumi()  # raises ConfigError (field, value, what is allowed) before any resource exists
# Pulumi secrets, read before anything is registered so a missing one stops the program first
secrets = pulumi.Config(PROJECT)
grafana_admin_password = secrets.require_secret("grafanaAdminPassword")
api_key = secrets.require_secret("apiKey") if settings.models else None
needs_hf_token = any(m.needs_hf_token for m in settings.models)
hf_token = (
    secrets.require_secret("huggingFaceToken") if needs_hf_token else secrets.get_secret("huggingFaceToken")
)
gateway_cfg = settings.gateway
gateway_keys = secrets.require_secret_object("gatewayClientKeys") if gateway_cfg.enabled else None
alert_receiver = secrets.require_secret("alertReceiver") if settings.alerting.receiver != "none" else None
cluster_cfg = settings.cluster
environment = settings.environment.value
prod = settings.environment is Environment.PROD
eks_mode = cluster_cfg.mode == "eks"
stack_tags = tags(cluster_cfg.name, environment, **{"llm-platform/stack": pulumi.get_stack()})


def monitoring(opts: pulumi.ResourceOptions) -> Observability:
    """kube-prometheus-stack first: the charts that render a ServiceMonitor only when the
    monitoring.coreos.com/v1 API exists (Karpenter, KEDA, the GPU Operator) are installed after it."""
    return Observability(
        f"{cluster_cfg.name}-monitoring",
        ObservabilityArgs(
            grafana_admin_password=grafana_admin_password,
            retention=retention(environment),
            create_storage_class=eks_mode,
            alerting=settings.alerting,
            alert_receiver=alert_receiver,
            reservation_node_classes=reservation_node_classes(settings.gpu_node_pools) if eks_mode else [],
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
    observability = monitoring(in_cluster)
    after_monitoring = pulumi.ResourceOptions.merge(
        in_cluster, pulumi.ResourceOptions(depends_on=[observability])
    )
    cache = ModelCache(
        f"{cluster_cfg.name}-cache",
        ModelCacheArgs(
            cluster_name=cluster_cfg.name,
            bucket=settings.model_cache.s3_bucket,
            fsx=settings.model_cache.fsx if settings.uses_fsx else None,
            vpc_id=network.vpc_id,
            subnet_id=network.private_subnet_ids[0],
            reader=any(m.cache in ("s3", "nvme") for m in settings.models),
            tags=stack_tags,
        ),
        opts=in_cluster,
    )
    weights = ModelWeights(
        bucket_name=cache.bucket_name,
        bucket_arn=cache.bucket_arn,
        reader_role_arn=cache.reader_role_arn,
        fsx_file_system_id=cache.fsx.file_system_id if cache.fsx else None,
        fsx_dns_name=cache.fsx.dns_name if cache.fsx else None,
        fsx_mount_name=cache.fsx.mount_name if cache.fsx else None,
        fsx_capacity_gib=cache.fsx.capacity_gib if cache.fsx else 0,
    )
    karpenter = Karpenter(
        f"{cluster_cfg.name}-karpenter",
        KarpenterArgs(
            cluster_name=cluster_cfg.name, region=region, tags=stack_tags, pools=settings.gpu_node_pools
        ),
        opts=after_monitoring,
    )
    GpuNodePools(
        f"{cluster_cfg.name}-gpu",
        GpuNodePoolsArgs(
            cluster_name=cluster_cfg.name,
            pools=settings.gpu_node_pools,
            ami_versions=cluster_cfg.ami_versions.model_dump(),
            zones=cluster_cfg.availability_zones,
            node_role_name=karpenter.node_role_name,
            prod=prod,
            tags=stack_tags,
            extra_security_group_ids=[cache.fsx.client_security_group_id] if cache.fsx else [],
            user_data={"al2023": al2023_user_data(lustre_client=cache.fsx is not None)},
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
    GpuOperatorArgs(mig_in_use=any(p.mig for p in settings.gpu_node_pools)),
    opts=after_monitoring,
)
keda = Keda(f"{cluster_cfg.name}-keda", opts=after_monitoring)

headroom = GpuHeadroom(
    f"{cluster_cfg.name}-headroom",
    GpuHeadroomArgs(
        pools=settings.gpu_node_pools, models=settings.models, keda=keda, monitoring=observability.release
    ),
    opts=in_cluster,
)

services: list[pulumi.Resource] = []
if api_key is not None:
    serving_opts = pulumi.ResourceOptions.merge(
        after_monitoring, pulumi.ResourceOptions(depends_on=[headroom.serving_priority_class])
    )
    for model in settings.models:
        pool = settings.pool(model.node_pool)
        service = InferenceService(
            f"{cluster_cfg.name}-{model.name}",
            InferenceServiceArgs(
                model=model,
                environment=environment,
                api_key=api_key,
                hf_token=hf_token,
                smallest_instance=pool.instances[0],
                ami_family=pool.ami_family,
                cold_start_seconds=expected_start_seconds(model, pool.instances[0]),
                pool_headroom_gpus=pool_headroom_gpus(pool, settings.models),
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
            models=settings.models,
            clients=[gateway_spec.Client(c.name, c.requests_per_minute) for c in gateway_cfg.clients],
            client_keys=gateway_keys,
            vllm_api_key=api_key,
            environment=environment,
            vpc_cidr=str(cluster_cfg.vpc_cidr),
            internal=gateway_cfg.internal,
            certificate_arn=gateway_cfg.certificate_arn,
            replicas=gateway_cfg.replicas,
            max_pending_per_replica=gateway_cfg.max_pending_per_replica,
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
