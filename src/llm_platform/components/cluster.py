"""Cluster: EKS (or an existing cluster) and the one Kubernetes provider every in-cluster object uses."""

import json
from collections.abc import Sequence
from typing import NotRequired, TypedDict

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks
import pulumi_kubernetes as k8s

from llm_platform.components import child_options, typed_options
from llm_platform.components.identity import node_role
from llm_platform.components.specs import cluster as spec
from llm_platform.components.specs import gpu_health
from llm_platform.components.specs.common import pod_identity_trust_policy


class EksClusterArgs(TypedDict):
    """An EKS cluster in an existing VPC (e.g. Network's), as the stack file's `cluster` block describes it."""

    cluster_name: str
    """The cluster's name (also the `karpenter.sh/discovery` value of its subnets and security groups)."""
    kubernetes_version: str
    """The Kubernetes minor version, e.g. "1.34"."""
    vpc_id: pulumi.Input[str]
    private_subnet_ids: Sequence[pulumi.Input[str]]
    """Subnets of the nodes and pods (one per zone)."""
    public_subnet_ids: Sequence[pulumi.Input[str]]
    """Subnets of internet-facing load balancers."""
    endpoint_public_access: bool
    """The API server is reachable from the internet (from `public_access_cidrs`), not only from the VPC."""
    public_access_cidrs: list[str]
    """Where the public API endpoint may be reached from."""
    admin_role_arns: list[str]
    """IAM roles granted cluster-admin (EKS access entries)."""
    system_instance_type: str
    """Instance type of the on-demand system node group (Karpenter and the EKS add-ons run there)."""
    system_min: int
    system_max: int
    system_disk_gib: int
    """Root volume of each system node, GiB."""
    deletion_protection: bool
    """EKS refuses to delete the cluster until this is turned off (prod)."""
    node_repair: NotRequired[bool]
    """EKS node auto repair on the system node group (default on); the node monitoring agent runs regardless."""
    tags: NotRequired[dict[str, str]]
    """Tags of this component's own AWS resources, beyond the AWS provider's default_tags (the stack's tags)."""


class EksCluster(pulumi.ComponentResource):
    """EKS with API authentication, OIDC, KMS-encrypted secrets, control-plane logs, managed add-ons and a
    tainted on-demand system node group for Karpenter and the EKS add-ons it needs to start. Every other
    add-on runs on the add-on NodePool and GPU capacity on the GPU NodePools, both Karpenter's."""

    cluster_name: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    cluster_security_group_id: pulumi.Output[str]
    node_security_group_id: pulumi.Output[str]
    provider: k8s.Provider
    system_nodes: eks.ManagedNodeGroup

    def __init__(self, name: str, args: EksClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(
            "llm-platform:index:EksCluster",
            name,
            None,
            typed_options(opts, "llm-platform:cluster:EksCluster"),
        )
        child = child_options(self, opts)
        tags = args.get("tags", {})

        self.cluster = self._eks(name, args, child)
        cluster_ready = child_options(self, opts, self.cluster)

        pod_identity = aws.eks.Addon(
            f"{name}-pod-identity",
            cluster_name=args["cluster_name"],
            addon_name=spec.POD_IDENTITY_ADDON,
            resolve_conflicts_on_update="OVERWRITE",
            tags=tags,
            opts=cluster_ready,
        )

        self.system_nodes = self._system_nodes(name, args, child)
        # the node conditions repair acts on (AcceleratedHardwareReady on GPU nodes): a DaemonSet on every node
        aws.eks.Addon(
            f"{name}-node-monitoring",
            cluster_name=args["cluster_name"],
            addon_name=gpu_health.NODE_MONITORING_AGENT_ADDON,
            resolve_conflicts_on_update="OVERWRITE",
            tags=tags,
            opts=child_options(self, opts, self.system_nodes),
        )

        self._ebs_csi(name, args, child, child_options(self, opts, self.system_nodes, pod_identity))

        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.cluster.kubeconfig_json,
            cluster_identifier=args["cluster_name"],
            enable_server_side_apply=True,
            opts=child_options(self, opts, self.system_nodes),
        )
        self.cluster_name = pulumi.Output.from_input(args["cluster_name"])
        self.endpoint = self.cluster.kubeconfig_json.apply(_server_of)
        self.cluster_security_group_id = self.cluster.cluster_security_group_id
        self.node_security_group_id = self.cluster.node_security_group_id
        self.register_outputs(
            {
                "clusterName": self.cluster_name,
                "endpoint": self.endpoint,
                "clusterSecurityGroupId": self.cluster_security_group_id,
            }
        )

    def _eks(self, name: str, args: EksClusterArgs, child: pulumi.ResourceOptions) -> eks.Cluster:
        """The cluster with its secrets' KMS key and the admins' access entries."""
        tags = args.get("tags", {})
        secrets_key = aws.kms.Key(
            f"{name}-secrets",
            description=f"Envelope encryption of Kubernetes secrets in {args['cluster_name']}",
            enable_key_rotation=True,
            deletion_window_in_days=30,
            tags=tags,
            opts=child,
        )
        access_entries = {
            f"admin-{i}": eks.AccessEntryArgs(
                principal_arn=arn,
                access_policies={
                    "cluster-admin": eks.AccessPolicyAssociationArgs(
                        policy_arn=spec.CLUSTER_ADMIN_POLICY,
                        access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
                    )
                },
            )
            for i, arn in enumerate(args["admin_role_arns"])
        }
        return eks.Cluster(
            f"{name}-eks",
            name=args["cluster_name"],
            version=args["kubernetes_version"],
            vpc_id=args["vpc_id"],
            private_subnet_ids=args["private_subnet_ids"],
            public_subnet_ids=args["public_subnet_ids"],
            node_associate_public_ip_address=False,
            endpoint_private_access=True,
            endpoint_public_access=args["endpoint_public_access"],
            public_access_cidrs=args["public_access_cidrs"] if args["endpoint_public_access"] else None,
            authentication_mode=eks.AuthenticationMode.API,
            access_entries=access_entries,
            skip_default_node_group=True,
            encryption_config_key_arn=secrets_key.arn,
            enabled_cluster_log_types=spec.CONTROL_PLANE_LOG_TYPES,
            deletion_protection=args["deletion_protection"],
            # prefix delegation for pod density; network policy enforcement for the vLLM NetworkPolicies
            vpc_cni_options=eks.VpcCniOptionsArgs(enable_prefix_delegation=True, enable_network_policy=True),
            tags=tags,
            opts=child,
        )

    def _system_nodes(
        self, name: str, args: EksClusterArgs, child: pulumi.ResourceOptions
    ) -> eks.ManagedNodeGroup:
        """The tainted on-demand system node group and its role."""
        tags = args.get("tags", {})
        system_node_role = node_role(
            f"{name}-system-node",
            description=f"System managed node group of {args['cluster_name']}",
            tags=tags,
            opts=child,
        )
        return eks.ManagedNodeGroup(
            f"{name}-system",
            cluster=self.cluster,
            node_role_arn=system_node_role.arn,
            instance_types=[args["system_instance_type"]],
            capacity_type="ON_DEMAND",
            # images and logs (EKS' 20 GiB default is tight for them)
            disk_size=args["system_disk_gib"],
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=args["system_min"], desired_size=args["system_min"], max_size=args["system_max"]
            ),
            labels=spec.system_node_labels(),
            taints=[aws.eks.NodeGroupTaintArgs(**t) for t in spec.system_node_taints()],
            subnet_ids=args["private_subnet_ids"],
            tags=tags,
            # EKS node auto repair: pulumi-eks 4.4.0 has no argument for it; its NodeGroup child gets it
            opts=pulumi.ResourceOptions.merge(
                child, pulumi.ResourceOptions(transforms=[gpu_health.system_node_group_repair])
            )
            if args.get("node_repair", True)
            else child,
        )

    def _ebs_csi(
        self,
        name: str,
        args: EksClusterArgs,
        child: pulumi.ResourceOptions,
        after_nodes: pulumi.ResourceOptions,
    ) -> None:
        """The EBS CSI driver add-on and its Pod Identity role (`after_nodes`: after the system nodes and the
        Pod Identity agent)."""
        tags = args.get("tags", {})
        ebs_role = aws.iam.Role(
            f"{name}-ebs-csi",
            assume_role_policy=pod_identity_trust_policy(),
            description=f"EBS CSI controller of {args['cluster_name']} (Pod Identity)",
            tags=tags,
            opts=child,
        )
        aws.iam.RolePolicyAttachment(
            f"{name}-ebs-csi", role=ebs_role.name, policy_arn=spec.EBS_CSI_POLICY_ARN, opts=child
        )
        aws.eks.Addon(
            f"{name}-ebs-csi",
            cluster_name=args["cluster_name"],
            addon_name=spec.EBS_CSI_ADDON,
            resolve_conflicts_on_update="OVERWRITE",
            pod_identity_associations=[
                aws.eks.AddonPodIdentityAssociationArgs(
                    role_arn=ebs_role.arn, service_account=spec.EBS_CSI_SERVICE_ACCOUNT
                )
            ],
            tags=tags,
            opts=after_nodes,
        )


def _server_of(kubeconfig_json: str) -> str:
    clusters = json.loads(kubeconfig_json).get("clusters") or [{}]
    return clusters[0].get("cluster", {}).get("server", "")


class ExistingClusterArgs(TypedDict):
    """A cluster someone else runs, reached through a kubeconfig."""

    cluster_name: str
    """A name for it (the Kubernetes provider's cluster identifier)."""
    kubeconfig: pulumi.Input[str]
    """The kubeconfig: its contents or a path to it. An Output will do (a config secret, another stack's
    output through a StackReference); it is kept secret in state either way."""
    context: NotRequired[str]
    """The kubeconfig context to use; default: its current context."""


class ExistingCluster(pulumi.ComponentResource):
    """A cluster someone else runs: only the Kubernetes provider, no AWS resource at all.

    A Python program passes `provider` on (`ResourceOptions(providers=[cluster.provider])`). A TypeScript,
    Go, C#, Java or YAML program gets `provider` back as an Output of a provider reference, and a resource's
    `provider`/`providers` option takes a provider resource, not an Output (TypeScript: TS2345); it builds
    its own `kubernetes` Provider from the `kubeconfig` output (a secret) with this one's settings: the same
    `context`, `clusterIdentifier: clusterName` and `enableServerSideApply: true` (docs/library.md)."""

    cluster_name: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    """The kubeconfig it was given, as a secret: what another language's program builds its Provider from."""
    provider: k8s.Provider

    def __init__(
        self, name: str, args: ExistingClusterArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(
            "llm-platform:index:ExistingCluster",
            name,
            None,
            typed_options(opts, "llm-platform:cluster:ExistingCluster"),
        )
        # a kubeconfig holds credentials: secret in this component's outputs and in the provider's state
        self.kubeconfig = pulumi.Output.secret(args["kubeconfig"])
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            context=args.get("context"),
            cluster_identifier=args["cluster_name"],
            enable_server_side_apply=True,
            opts=child_options(self, opts),
        )
        self.cluster_name = pulumi.Output.from_input(args["cluster_name"])
        self.register_outputs({"clusterName": self.cluster_name, "kubeconfig": self.kubeconfig})
