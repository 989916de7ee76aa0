"""Network: a VPC across the configured zones with private subnets for nodes and pods."""

from collections.abc import Sequence
from ipaddress import IPv4Network
from typing import NotRequired, Protocol, TypedDict

import pulumi
import pulumi_aws as aws

from llm_platform.components import child_options, typed_options
from llm_platform.components.specs.network import (
    SubnetPlan,
    private_subnet_tags,
    public_subnet_tags,
    subnet_plan,
)


class Tagger(Protocol):
    """A resource's tags from its name suffix and any extra tags (Network's own tags and its Name)."""

    def __call__(self, suffix: str, extra: dict[str, str] | None = None) -> dict[str, str]: ...


class NetworkArgs(TypedDict):
    """A VPC for an EKS cluster: the stack file's `cluster.vpcCidr` and `availabilityZones`."""

    cluster_name: str
    """The cluster the subnets are tagged for (load balancers, Karpenter's discovery)."""
    vpc_cidr: str
    """The VPC's IPv4 range (a /16 to /20), split into a public and a private subnet per zone."""
    availability_zones: list[str]
    """Two or three zones of `region`: a public and a private subnet in each."""
    region: str
    """The VPC's region (its S3 gateway endpoint)."""
    nat_per_zone: bool
    """One NAT gateway per zone (survives a zone outage) or a single shared one (cheaper)."""
    tags: NotRequired[dict[str, str]]
    """Tags of this component's own AWS resources, beyond the AWS provider's default_tags (the stack's tags)."""


class Network(pulumi.ComponentResource):
    """VPC, public and private subnets per zone, NAT, and an S3 gateway endpoint.

    Model weights come from S3: the gateway endpoint keeps that traffic off the NAT gateways (no per-GB
    NAT charge, no NAT bandwidth ceiling during a scale-out).
    """

    vpc_id: pulumi.Output[str]
    private_subnet_ids: list[pulumi.Output[str]]
    public_subnet_ids: list[pulumi.Output[str]]

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(
            "llm-platform:index:Network", name, None, typed_options(opts, "llm-platform:network:Network")
        )
        child = child_options(self, opts)
        cidr = IPv4Network(args["vpc_cidr"])

        def tagged(suffix: str, extra: dict[str, str] | None = None) -> dict[str, str]:
            return {**args.get("tags", {}), "Name": f"{name}-{suffix}", **(extra or {})}

        vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=str(cidr),
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags=tagged("vpc"),
            opts=child,
        )
        igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags=tagged("igw"), opts=child)
        public_rt = aws.ec2.RouteTable(
            f"{name}-public",
            vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)],
            tags=tagged("public"),
            opts=child,
        )

        plan = subnet_plan(cidr, args["availability_zones"])
        public_subnets, nat_gateways = self._public_subnets(
            name, args, plan, vpc, igw, public_rt, tagged, opts
        )
        private_subnets, private_route_tables = self._private_subnets(
            name, args, plan, vpc, nat_gateways, tagged, child
        )

        aws.ec2.VpcEndpoint(
            f"{name}-s3",
            vpc_id=vpc.id,
            service_name=f"com.amazonaws.{args['region']}.s3",
            vpc_endpoint_type="Gateway",
            route_table_ids=[rt.id for rt in private_route_tables],
            tags=tagged("s3"),
            opts=child,
        )

        self.vpc_id = vpc.id
        self.private_subnet_ids = [s.id for s in private_subnets]
        self.public_subnet_ids = [s.id for s in public_subnets]
        self.register_outputs(
            {
                "vpcId": self.vpc_id,
                "privateSubnetIds": self.private_subnet_ids,
                "publicSubnetIds": self.public_subnet_ids,
            }
        )

    def _public_subnets(
        self,
        name: str,
        args: NetworkArgs,
        plan: Sequence[SubnetPlan],
        vpc: aws.ec2.Vpc,
        igw: aws.ec2.InternetGateway,
        public_rt: aws.ec2.RouteTable,
        tagged: Tagger,
        opts: pulumi.ResourceOptions | None,
    ) -> tuple[list[aws.ec2.Subnet], list[aws.ec2.NatGateway]]:
        """A public subnet per zone on the internet gateway's route table, and the NAT gateways (one per zone,
        or one in the first zone)."""
        child = child_options(self, opts)
        public_subnets: list[aws.ec2.Subnet] = []
        nat_gateways: list[aws.ec2.NatGateway] = []
        for i, p in enumerate(plan):
            public = aws.ec2.Subnet(
                f"{name}-public-{p.zone}",
                vpc_id=vpc.id,
                cidr_block=p.public_cidr,
                availability_zone=p.zone,
                map_public_ip_on_launch=False,
                tags=tagged(f"public-{p.zone}", public_subnet_tags(args["cluster_name"])),
                opts=child,
            )
            aws.ec2.RouteTableAssociation(
                f"{name}-public-{p.zone}", subnet_id=public.id, route_table_id=public_rt.id, opts=child
            )
            public_subnets.append(public)
            if args["nat_per_zone"] or i == 0:
                eip = aws.ec2.Eip(
                    f"{name}-nat-{p.zone}", domain="vpc", tags=tagged(f"nat-{p.zone}"), opts=child
                )
                nat_gateways.append(
                    aws.ec2.NatGateway(
                        f"{name}-nat-{p.zone}",
                        allocation_id=eip.id,
                        subnet_id=public.id,
                        tags=tagged(f"nat-{p.zone}"),
                        opts=child_options(self, opts, igw),
                    )
                )
        return public_subnets, nat_gateways

    def _private_subnets(
        self,
        name: str,
        args: NetworkArgs,
        plan: Sequence[SubnetPlan],
        vpc: aws.ec2.Vpc,
        nat_gateways: list[aws.ec2.NatGateway],
        tagged: Tagger,
        child: pulumi.ResourceOptions,
    ) -> tuple[list[aws.ec2.Subnet], list[aws.ec2.RouteTable]]:
        """A private subnet per zone, each with its route table through its zone's NAT gateway (or the one)."""
        private_subnets: list[aws.ec2.Subnet] = []
        private_route_tables: list[aws.ec2.RouteTable] = []
        for i, p in enumerate(plan):
            nat = nat_gateways[i if args["nat_per_zone"] else 0]
            rt = aws.ec2.RouteTable(
                f"{name}-private-{p.zone}",
                vpc_id=vpc.id,
                routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat.id)],
                tags=tagged(f"private-{p.zone}"),
                opts=child,
            )
            private = aws.ec2.Subnet(
                f"{name}-private-{p.zone}",
                vpc_id=vpc.id,
                cidr_block=p.private_cidr,
                availability_zone=p.zone,
                tags=tagged(f"private-{p.zone}", private_subnet_tags(args["cluster_name"])),
                opts=child,
            )
            aws.ec2.RouteTableAssociation(
                f"{name}-private-{p.zone}", subnet_id=private.id, route_table_id=rt.id, opts=child
            )
            private_subnets.append(private)
            private_route_tables.append(rt)
        return private_subnets, private_route_tables
