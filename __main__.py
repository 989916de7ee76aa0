"""llm-platform: read the stack's config, validate it, and compose the platform's components."""

import pulumi

from components.cluster import EksCluster, EksClusterArgs, ExistingCluster, ExistingClusterArgs
from components.gpu_operator import GpuOperator, GpuOperatorArgs
from components.karpenter import GpuNodePools, GpuNodePoolsArgs, Karpenter, KarpenterArgs
from components.network import Network, NetworkArgs
from components.specs.common import tags
from config.loader import load_from_pulumi
from config.schema import Environment

settings = load_from_pulumi()  # raises ConfigError (field, value, what is allowed) before any resource exists
cluster_cfg = settings.cluster
prod = settings.environment is Environment.PROD
stack_tags = tags(cluster_cfg.name, settings.environment.value, **{"llm-platform/stack": pulumi.get_stack()})

if cluster_cfg.mode == "eks":
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
            deletion_protection=prod,
            tags=stack_tags,
        ),
    )
    in_cluster = pulumi.ResourceOptions(providers=[cluster.provider], depends_on=[cluster])
    karpenter = Karpenter(
        f"{cluster_cfg.name}-karpenter",
        KarpenterArgs(cluster_name=cluster_cfg.name, region=region, tags=stack_tags),
        opts=in_cluster,
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
        ),
        opts=pulumi.ResourceOptions(providers=[cluster.provider], depends_on=[karpenter]),
    )
    pulumi.export("clusterEndpoint", cluster.endpoint)
    pulumi.export("vpcId", network.vpc_id)
else:
    assert cluster_cfg.kubeconfig is not None  # enforced by the schema
    cluster = ExistingCluster(
        cluster_cfg.name,
        ExistingClusterArgs(
            cluster_name=cluster_cfg.name, kubeconfig=cluster_cfg.kubeconfig, context=cluster_cfg.context
        ),
    )
    in_cluster = pulumi.ResourceOptions(providers=[cluster.provider])

GpuOperator(
    f"{cluster_cfg.name}-gpu-operator",
    GpuOperatorArgs(mig_in_use=any(p.mig for p in settings.gpu_node_pools)),
    opts=in_cluster,
)

pulumi.export("clusterName", cluster_cfg.name)
pulumi.export("environment", settings.environment.value)
