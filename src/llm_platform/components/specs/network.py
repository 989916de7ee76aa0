"""What the VPC looks like: subnet plan and the tags EKS, load balancers and Karpenter discover."""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Network


@dataclass(frozen=True)
class SubnetPlan:
    zone: str
    private_cidr: str
    public_cidr: str


def subnet_plan(vpc_cidr: IPv4Network, zones: list[str]) -> list[SubnetPlan]:
    """Large private subnets for pods (VPC CNI gives each pod a VPC address), small public ones for NAT/LBs.

    The VPC is cut in eighths: the first eighths are the zones' private subnets, the last eighth holds
    the public subnets (one sixty-fourth of the VPC each).
    """
    eighths = list(vpc_cidr.subnets(new_prefix=vpc_cidr.prefixlen + 3))
    publics = list(eighths[-1].subnets(new_prefix=vpc_cidr.prefixlen + 6))
    return [SubnetPlan(z, str(eighths[i]), str(publics[i])) for i, z in enumerate(zones)]


def private_subnet_tags(cluster_name: str) -> dict[str, str]:
    return {
        "kubernetes.io/role/internal-elb": "1",
        f"kubernetes.io/cluster/{cluster_name}": "shared",
        "karpenter.sh/discovery": cluster_name,
    }


def public_subnet_tags(cluster_name: str) -> dict[str, str]:
    return {"kubernetes.io/role/elb": "1", f"kubernetes.io/cluster/{cluster_name}": "shared"}
