"""Cluster wiring: one explicit provider, tainted system nodes, access entries, names unique per stack."""

from __future__ import annotations

import json

from llm_platform.components.cluster import EksCluster, EksClusterArgs
from llm_platform.components.specs.network import subnet_plan
from llm_platform.config.schema import ClusterConfig
from llm_platform.testing import evaluate


def test_every_kubernetes_resource_uses_the_cluster_provider(run_program) -> None:
    m = run_program("prod")
    (provider,) = m.by_type("pulumi:providers:kubernetes")
    k8s = [r for r in m.created if r.typ.startswith("kubernetes:") and r.custom]
    assert k8s, "the prod stack registers Kubernetes objects"
    for r in k8s:
        assert r.provider.split("::")[-2] == provider.name, f"{r.typ} {r.name} uses {r.provider!r}"


def test_provider_is_built_from_the_eks_kubeconfig(run_program) -> None:
    m = run_program("dev")
    (provider,) = m.by_type("pulumi:providers:kubernetes")
    assert json.loads(provider.inputs["kubeconfig"])["kind"] == "Config"
    assert provider.inputs["clusterIdentifier"] == "llm-dev"


def test_system_node_group_is_tainted_and_on_demand(run_program) -> None:
    m = run_program("prod")
    (mng,) = m.by_type("eks:index:ManagedNodeGroup")
    assert mng.inputs["taints"] == [{"key": "CriticalAddonsOnly", "value": "true", "effect": "NO_SCHEDULE"}]
    assert mng.inputs["capacityType"] == "ON_DEMAND"
    assert mng.inputs["instanceTypes"] == ["m6i.xlarge"]
    assert mng.inputs["scalingConfig"] == {"minSize": 3, "desiredSize": 3, "maxSize": 5}


def test_eks_cluster_settings(run_program) -> None:
    m = run_program("prod")
    (cluster,) = m.by_type("eks:index:Cluster")
    i = cluster.inputs
    assert i["name"] == "llm-prod" and i["version"] == "1.34"
    assert i["authenticationMode"] == "API"
    assert i["skipDefaultNodeGroup"] is True
    # every workload identity is an EKS Pod Identity association: no IAM OIDC provider to keep
    assert not i.get("createOidcProvider")
    assert set(i["enabledClusterLogTypes"]) == {
        "api",
        "audit",
        "authenticator",
        "controllerManager",
        "scheduler",
    }
    assert i["encryptionConfigKeyArn"].startswith("arn:aws:kms:")
    assert i["publicAccessCidrs"] == ["203.0.113.0/24", "198.51.100.0/24"], "prod restricts the API endpoint"
    assert i["deletionProtection"] is True
    addons = {a.inputs["addonName"] for a in m.by_type("aws:eks/addon:Addon")}
    assert addons == {
        "eks-pod-identity-agent",
        "aws-ebs-csi-driver",
        "eks-node-monitoring-agent",  # the GPU health conditions node repair acts on
    }  # vpc-cni, coredns, kube-proxy: pulumi-eks


def _cluster(admin_role_arns: list[str]) -> None:
    """The EksCluster component alone, as a user's own program builds it."""
    EksCluster(
        "team",
        EksClusterArgs(
            cluster_name="team",
            kubernetes_version="1.34",
            vpc_id="vpc-0123456789abcdef0",
            private_subnet_ids=["subnet-a", "subnet-b"],
            public_subnet_ids=["subnet-c", "subnet-d"],
            endpoint_public_access=False,
            public_access_cidrs=[],
            admin_role_arns=admin_role_arns,
            system_instance_type="m6i.large",
            system_min=2,
            system_max=3,
            system_disk_gib=100,
            deletion_protection=False,
        ),
    )


def test_admin_roles_get_access_entries() -> None:
    """Built by the component alone (no whole-program evaluation): the access entries are its own."""
    admin = "arn:aws:iam::111122223333:role/platform-admins"
    m = evaluate(lambda: _cluster([admin]))
    (eks,) = m.by_type("eks:index:Cluster")
    (entry,) = eks.inputs["accessEntries"].values()
    assert entry["principalArn"] == admin
    (policy,) = entry["accessPolicies"].values()
    assert policy["policyArn"].endswith("AmazonEKSClusterAdminPolicy")
    assert policy["accessScope"] == {"type": "cluster"}
    (none,) = evaluate(lambda: _cluster([])).by_type("eks:index:Cluster")
    assert not none.inputs.get("accessEntries")


def test_network_spans_the_zones_with_private_nat_routes(run_program) -> None:
    m = run_program("prod")
    subnets = m.by_type("aws:ec2/subnet:Subnet")
    assert sorted({s.inputs["availabilityZone"] for s in subnets}) == [
        "us-east-1a",
        "us-east-1b",
        "us-east-1c",
    ]
    private = [s for s in subnets if "private" in s.name]
    assert all(s.inputs["tags"]["karpenter.sh/discovery"] == "llm-prod" for s in private)
    assert len(m.by_type("aws:ec2/natGateway:NatGateway")) == 3, "prod survives a zone outage"
    (endpoint,) = m.by_type("aws:ec2/vpcEndpoint:VpcEndpoint")
    assert endpoint.inputs["serviceName"] == "com.amazonaws.us-east-1.s3"
    assert len(endpoint.inputs["routeTableIds"]) == 3


def test_dev_shares_one_nat_gateway(run_program) -> None:
    m = run_program("dev")
    assert len(m.by_type("aws:ec2/natGateway:NatGateway")) == 1


def test_names_are_unique_per_stack(run_program) -> None:
    dev = run_program("dev")
    staging = run_program("staging")
    dev_names = {(r.typ, r.name) for r in dev.created}
    staging_names = {(r.typ, r.name) for r in staging.created}
    assert not dev_names & staging_names
    assert len(dev_names) == len(dev.created), "no two resources of a stack share a type and name"


def test_existing_mode_creates_no_aws_resource(run_program) -> None:
    from tests.conftest import stack_values

    values = stack_values("dev")
    cluster = values["cluster"] | {"mode": "existing", "kubeconfig": "~/.kube/config", "context": "lab"}
    models = [model | {"cache": "hub"} for model in values["models"]]
    m = run_program("dev", {"cluster": cluster, "models": models})
    assert not [r for r in m.created if r.typ.startswith(("aws:", "eks:"))]
    (provider,) = m.by_type("pulumi:providers:kubernetes")
    assert provider.inputs["context"] == "lab"


def test_subnet_plan_does_not_overlap() -> None:
    cfg = ClusterConfig(name="x", availabilityZones=["a", "b", "c"], vpcCidr="10.0.0.0/16")  # type: ignore[call-arg]
    plan = subnet_plan(cfg.vpc_cidr, cfg.availability_zones)
    from ipaddress import ip_network

    nets = [ip_network(c) for p in plan for c in (p.private_cidr, p.public_cidr)]
    assert all(n.subnet_of(cfg.vpc_cidr) for n in nets)  # type: ignore[arg-type]
    assert not any(a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1 :])
    assert plan[0].private_cidr == "10.0.0.0/19"


def test_what_the_network_and_cluster_wait_for_their_children_wait_for() -> None:
    """Pulumi does not pass a component's depends_on to its children: the components do, so a VPC or an
    EKS cluster composed after something (a permission boundary, a shared network) really waits for it."""

    import pulumi
    import pulumi_aws as aws

    from llm_platform.components.cluster import EksCluster, EksClusterArgs
    from llm_platform.components.network import Network, NetworkArgs
    from llm_platform.testing import evaluate

    def program() -> None:
        first = aws.s3.Bucket("first")
        after_first = pulumi.ResourceOptions(depends_on=[first])
        network = Network(
            "net",
            NetworkArgs(
                cluster_name="c",
                vpc_cidr="10.0.0.0/16",
                availability_zones=["us-east-1a", "us-east-1b"],
                region="us-east-1",
                nat_per_zone=False,
                tags={},
            ),
            opts=after_first,
        )
        EksCluster(
            "eks",
            EksClusterArgs(
                cluster_name="c",
                kubernetes_version="1.34",
                vpc_id=network.vpc_id,
                private_subnet_ids=network.private_subnet_ids,
                public_subnet_ids=network.public_subnet_ids,
                endpoint_public_access=False,
                public_access_cidrs=[],
                admin_role_arns=[],
                system_instance_type="m6i.large",
                system_min=2,
                system_max=3,
                system_disk_gib=100,
                deletion_protection=False,
                tags={},
            ),
            opts=after_first,
        )

    recorded = evaluate(program)
    children = [r for r in recorded.created if r.name != "first"]
    assert {r.typ for r in children} >= {"aws:ec2/vpc:Vpc", "aws:kms/key:Key", "eks:index:Cluster"}
    assert [r.name for r in children if not r.depends_on("aws:s3/bucket:Bucket", "first")] == []


def test_one_aws_provider_tags_every_aws_resource_with_the_stacks_tags(run_program) -> None:
    m = run_program("prod")
    (provider,) = m.by_type("pulumi:providers:aws")
    default_tags = json.loads(provider.inputs["defaultTags"])["tags"]
    assert provider.inputs["region"] == "us-east-1"
    assert default_tags["llm-platform/stack"] == "prod" and default_tags["llm-platform/environment"] == "prod"
    aws_resources = [r for r in m.created if r.typ.startswith("aws:")]
    assert aws_resources and {r.provider.split("::")[-2] for r in aws_resources} == {provider.name}
    by_hand = [r.name for r in aws_resources if set(default_tags) & set(r.inputs.get("tags") or {})]
    assert by_hand == []
    # what Karpenter launches is no Pulumi resource: its EC2NodeClasses carry the tags themselves
    node_classes = [r for r in m.created if r.typ.endswith(":EC2NodeClass")]
    assert node_classes and all(
        default_tags.items() <= r.inputs["spec"]["tags"].items() for r in node_classes
    )
