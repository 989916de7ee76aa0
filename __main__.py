"""llm-platform: read the stack's config, validate it, and compose the platform's components."""

import pulumi

from components.cluster import EksCluster, EksClusterArgs, ExistingCluster, ExistingClusterArgs
from components.network import Network, NetworkArgs
from components.specs.common import tags
from config.loader import load_from_pulumi
from config.schema import Environment

settings = load_from_pulumi()  # raises ConfigError, naming field, value and what is allowed, before any resource
stack_tags = tags(settings.cluster.name, settings.environment.value, **{"llm-platform/stack": pulumi.get_stack()})
cluster_cfg = settings.cluster
prod = settings.environment is Environment.PROD

if cluster_cfg.mode == "eks":
    network = Network(
        cluster_cfg.name,
        NetworkArgs(
            cluster_name=cluster_cfg.name,
            region=pulumi.Config("aws").require("region"),
            vpc_cidr=cluster_cfg.vpc_cidr,
            availability_zones=cluster_cfg.availability_zones,
            nat_per_zone=prod,
            tags=stack_tags,
        ),
    )
    cluster = EksCluster(
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
    pulumi.export("clusterEndpoint", cluster.endpoint)
    pulumi.export("vpcId", network.vpc_id)
else:
    assert cluster_cfg.kubeconfig is not None  # enforced by the schema
    existing = ExistingCluster(
        cluster_cfg.name,
        ExistingClusterArgs(
            cluster_name=cluster_cfg.name, kubeconfig=cluster_cfg.kubeconfig, context=cluster_cfg.context
        ),
    )

pulumi.export("clusterName", cluster_cfg.name)
pulumi.export("environment", settings.environment.value)
