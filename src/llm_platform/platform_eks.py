"""The first children of `LlmPlatform` on EKS (platform.py): the VPC and the cluster, then Karpenter on the
system nodes and the CPU NodePool every other add-on runs on.

Functions of the plan and the platform's top-level options (`top`: its parent, the alias to the stack's
root, the AWS provider), apart from the composition so platform.py stays one screenful per step; the
children's names, parents and options are the ones the component always gave them.
"""

import pulumi

from llm_platform.components.cluster import EksCluster, EksClusterArgs
from llm_platform.components.karpenter import AddonNodePool, AddonNodePoolArgs, Karpenter, KarpenterArgs
from llm_platform.components.network import Network, NetworkArgs
from llm_platform.config.stack_args import GpuNodePoolSettings
from llm_platform.plan import Plan

__all__ = ["karpenter_and_addon_nodes", "network_and_cluster"]


def network_and_cluster(plan: Plan, region: str, top: pulumi.ResourceOptions) -> tuple[Network, EksCluster]:
    """The VPC and the EKS cluster in its subnets."""
    cluster_cfg = plan.cluster
    network = Network(
        cluster_cfg.name,
        NetworkArgs(
            cluster_name=cluster_cfg.name,
            region=region,
            vpc_cidr=str(cluster_cfg.vpc_cidr),
            availability_zones=cluster_cfg.availability_zones,
            nat_per_zone=plan.prod,
        ),
        opts=top,
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
            system_disk_gib=cluster_cfg.system_nodes.disk_size_gib,
            deletion_protection=plan.prod,
            node_repair=cluster_cfg.node_repair,
        ),
        opts=top,
    )
    return network, cluster


def karpenter_and_addon_nodes(
    plan: Plan,
    gpu_node_pools: list[GpuNodePoolSettings],
    region: str,
    cluster: EksCluster,
    top: pulumi.ResourceOptions,
    versions: dict[str, str],
) -> tuple[Karpenter, AddonNodePool]:
    """Karpenter on the system nodes, then the CPU NodePool every other add-on runs on."""
    name = plan.cluster.name
    karpenter = Karpenter(
        f"{name}-karpenter",
        KarpenterArgs(
            cluster_name=name,
            region=region,
            gpu_node_pools=gpu_node_pools,
            node_repair=plan.cluster.node_repair,
        ),
        opts=pulumi.ResourceOptions.merge(
            pulumi.ResourceOptions(providers=[cluster.provider], depends_on=[cluster]), top
        ),
        pools=plan.gpu_node_pools,
        versions=versions,
    )
    assert plan.addon_pool is not None  # every EKS plan has one
    addon_nodes = AddonNodePool(
        f"{name}-addons",
        AddonNodePoolArgs(
            cluster_name=name,
            pool=plan.addon_pool,
            zones=plan.cluster.availability_zones,
            node_role_name=karpenter.node_role_name,
            tags=plan.tags,  # on what Karpenter launches; default_tags do not reach it
        ),
        opts=pulumi.ResourceOptions.merge(
            pulumi.ResourceOptions(providers=[cluster.provider], depends_on=[karpenter]), top
        ),
    )
    return karpenter, addon_nodes
