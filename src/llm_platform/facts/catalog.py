"""GPU instance catalog: the facts every validation rule, NodePool and cost estimate relies on.

Prices are Linux on-demand $/h per region. us-east-1: ../shared/reference/README.md ("AWS GPU instances",
Karpenter's generated price table of 2026-07-20) and, for p5en and p6-b200, the same generated table as pinned
(karpenter-provider-aws v1.14.1 `pkg/providers/pricing/zz_generated.pricing_aws.go`, which holds us-east-1 only
for the commercial partition). Other regions: the SkyPilot catalog built from the AWS Price List API
(skypilot-org/skypilot-catalog `catalogs/v8/aws/vms.csv`, column `Price`, commit 00148f2a); its us-east-1 prices
equal Karpenter's for every row. A region missing from a row's prices has no known price: whatever prices a
node there (simulator, oracle, reservations sweep) stops with an error naming the regions that have one,
never a guess from another region.
vCPU, memory and NVMe are from the EC2 instance-type pages; GPU memory, bandwidth and dense FP16 tensor
TFLOPS from the NVIDIA datasheets (H200: 141 GB HBM3e, 4.8 TB/s, H100's tensor cores; B200: 1,440 GB HBM3e
per 8-GPU board, 8 TB/s, 2.25 PFLOPS dense FP16 per GPU); the A10G is not an A10: 70 dense BF16 TFLOPS
(Baseten's A10 vs A10G spec table; NVIDIA publishes no A10G datasheet; shared/research/vllm_capacity_points.md
§2), not the A10's 125. Regions: where EC2 offers the instance type (DescribeInstanceTypeOfferings by region,
as captured in moto 5.2.5's `ec2/resources/instance_type_offerings/region/*.json.gz`, 30 commercial
regions); a pool of an instance not offered in the stack's region is a config error.
Only instances listed here can be launched: each NodePool restricts Karpenter to the catalog's sizes, so
every node the platform creates has a known price and GPU count.

p5e.48xlarge (H200) is sold only as Capacity Blocks: EC2 offers the type in seven regions (moto 5.2.1's
`instance_type_offerings/region`) but neither price source has an on-demand price for it in any region (the
Price List API has none). Its row has no prices and `reserved_only`: a pool of it must be reserved-only, and
the simulator prices it at the block's rate (`--reserved-usd-per-hour`), never an invented on-demand price.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class Interconnect:
    """How the GPUs of one instance all-reduce (the simulator's serving/physics.py derives the figures)."""

    name: str
    alpha_s: float  # fixed cost of one all-reduce
    small_gbps: float  # effective bandwidth of messages up to 1 MB (fit to the latency sweep)
    large_gbps: float  # bus bandwidth beyond it


# serving/physics.py's module doc: NVLink 4 fit to H100's custom all-reduce sweep (sgl-project/sglang#2904),
# its bus bandwidth 0.8 x 450 GB/s per direction; NVLink 3 (A100) scaled by 300/450; NVLink 5 (B200) keeps
# H100's latency fit (Unverified) at 900 GB/s; PCIe Gen4 (no NVLink: g5, g6, g6e) Unverified
NVLINK4 = Interconnect("NVLink 4", 4e-6, 65.0, 0.8 * 450)
NVLINK3 = Interconnect("NVLink 3", 4e-6 * 450 / 300, 65.0 * 300 / 450, 0.8 * 300)
NVLINK5 = Interconnect("NVLink 5", 4e-6, 65.0, 0.8 * 900)
PCIE4 = Interconnect("PCIe Gen4", 20e-6, 12.0, 20.0)


@dataclass(frozen=True)
class GpuModel:
    name: str
    memory_gib: int
    hbm_bandwidth_gbps: float  # GB/s per GPU
    fp16_tflops: float  # dense tensor-core FP16/BF16, per GPU
    # the part's links between the GPUs of one instance: NVLink on the SXM parts, PCIe on the others
    interconnect: Interconnect


@dataclass(frozen=True)
class GpuInstance:
    instance_type: str
    gpus: int
    gpu: GpuModel
    vcpus: int
    memory_gib: int
    nvme_disks: int
    nvme_disk_gb: int
    prices: Mapping[str, float]  # region -> Linux on-demand $/h; a region not listed has no known price
    regions: frozenset[str]
    network_gbps: float  # baseline network bandwidth, Gbit/s: bounds weight downloads on a new node
    node_ready_seconds: float  # EC2 launch -> node Ready with `nvidia.com/gpu` allocatable
    reserved_only: bool  # sold only as Capacity Blocks: no on-demand or spot offering
    # EFA interfaces the instance takes (EC2 MaximumEfaInterfaces, one per network card; 0: no EFA): what a
    # multi-node replica's pods request as `vpc.amazonaws.com/efa` and its EC2NodeClass attaches (see EFA_SOURCE)
    efa_interfaces: int
    dedicated: bool  # its family gets a single-family pool of its own (GpuFamily.dedicated)

    @property
    def family(self) -> str:
        return self.instance_type.split(".", 1)[0]

    @property
    def size(self) -> str:
        return self.instance_type.split(".", 1)[1]

    @property
    def nvme_total_gb(self) -> int:
        return self.nvme_disks * self.nvme_disk_gb

    @property
    def list_usd_per_hour(self) -> float:
        """us-east-1 on-demand $/h: orders a pool's sizes (Karpenter's cheapest fit; the regional prices keep
        the same order, tests/config/test_regions.py). A node's cost uses `on_demand_usd_per_hour(region)`.
        A reserved-only type has none (its pool is single-family, so there is nothing to order)."""
        return self.prices.get("us-east-1", math.inf)

    def on_demand_usd_per_hour(self, region: str) -> float:
        """What one node costs per hour in `region`; an unknown price is an error, never another region's."""
        if self.reserved_only:
            raise ValueError(
                f"{self.instance_type} is sold only as Capacity Blocks and has no on-demand price; price its "
                "reserved instances at the block's rate (--reserved-usd-per-hour)"
            )
        try:
            return self.prices[region]
        except KeyError:
            sold = "" if region in self.regions else f"; EC2 does not sell {self.instance_type} there"
            raise ValueError(
                f"{self.instance_type}: no on-demand price for region {region!r} in facts/catalog.py{sold}; "
                f"regions with a price: {', '.join(sorted(self.prices))}"
            ) from None


@dataclass(frozen=True)
class GpuSize:
    """One size of a family: `<family>.<size>` (columns as in GPU_FAMILIES)."""

    size: str
    gpus: int
    vcpus: int
    memory_gib: int
    nvme_disks: int
    nvme_disk_gb: int
    network_gbps: float
    efa_interfaces: int
    prices: Mapping[str, float]


@dataclass(frozen=True)
class GpuFamily:
    """One instance family, with every fact the code reads of it: its GPU (and that GPU's interconnect), the
    regions offering it, its node Ready time, whether it gets a pool of its own and is sold only as Capacity
    Blocks, and its sizes (each with its EFA interfaces and prices). Adding a family is one row here."""

    name: str
    gpu: GpuModel
    regions: frozenset[str]
    node_ready_seconds: float
    sizes: tuple[GpuSize, ...]
    # big enough to get a pool of its own (a p5 must never be picked to serve a 7B model a g5 pool could serve)
    dedicated: bool = False
    reserved_only: bool = False  # sold only as Capacity Blocks: no on-demand or spot offering

    def instances(self) -> tuple[GpuInstance, ...]:
        return tuple(
            GpuInstance(
                f"{self.name}.{z.size}", z.gpus, self.gpu, z.vcpus, z.memory_gib, z.nvme_disks, z.nvme_disk_gb,
                z.prices, self.regions, z.network_gbps, self.node_ready_seconds, self.reserved_only,
                z.efa_interfaces, self.dedicated,
            )
            for z in self.sizes
        )  # fmt: skip


A10G = GpuModel("A10G", 24, 600, 70, PCIE4)
L4 = GpuModel("L4", 24, 300, 121, PCIE4)
L40S = GpuModel("L40S", 48, 864, 362, PCIE4)
A100_40 = GpuModel("A100-40GB", 40, 1555, 312, NVLINK3)
A100_80 = GpuModel("A100-80GB", 80, 2039, 312, NVLINK3)
H100 = GpuModel("H100", 80, 3350, 989, NVLINK4)
H200 = GpuModel("H200", 141, 4800, 989, NVLINK4)
B200 = GpuModel("B200", 180, 8000, 2250, NVLINK5)


def _regions(*names: str) -> frozenset[str]:
    return frozenset(names)


def _prices(by_region: dict[str, float]) -> Mapping[str, float]:
    return MappingProxyType(by_region)


# Regions offering each family's catalog sizes (every size of a family is offered in the same regions)
G5_REGIONS = _regions(
    "ap-east-1", "ap-northeast-1", "ap-northeast-2", "ap-south-1", "ap-southeast-2", "ap-southeast-3",
    "ca-central-1", "eu-central-1", "eu-north-1", "eu-south-2", "eu-west-1", "eu-west-2", "eu-west-3",
    "il-central-1", "me-central-1", "sa-east-1", "us-east-1", "us-east-2", "us-west-2",
)  # fmt: skip
G6_REGIONS = _regions(
    "ap-northeast-1", "ap-northeast-2", "ap-south-1", "ap-south-2", "ap-southeast-2", "ap-southeast-5",
    "ca-central-1", "eu-central-1", "eu-central-2", "eu-north-1", "eu-south-2", "eu-west-2", "eu-west-3",
    "me-central-1", "sa-east-1", "us-east-1", "us-east-2", "us-west-2",
)  # fmt: skip
G6E_REGIONS = _regions(
    "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1", "ap-south-2", "eu-central-1",
    "eu-north-1", "eu-south-2", "me-central-1", "us-east-1", "us-east-2", "us-west-2",
)  # fmt: skip
P4D_REGIONS = _regions(
    "ap-northeast-1", "ap-northeast-2", "ap-south-1", "ap-southeast-2", "ca-central-1", "eu-central-1",
    "eu-north-1", "eu-west-1", "eu-west-2", "sa-east-1", "us-east-1", "us-east-2", "us-west-2",
)  # fmt: skip
P4DE_REGIONS = _regions(
    "ap-northeast-1", "ap-southeast-1", "eu-central-1", "il-central-1", "us-east-1", "us-west-2"
)
P5_REGIONS = _regions(
    "ap-northeast-1", "ap-northeast-2", "ap-south-1", "ap-southeast-2", "ap-southeast-3", "ca-central-1",
    "eu-north-1", "eu-west-2", "sa-east-1", "us-east-1", "us-east-2", "us-west-1", "us-west-2",
)  # fmt: skip
P5EN_REGIONS = _regions(
    "ap-northeast-1", "ap-northeast-2", "ap-south-1", "ap-southeast-3", "eu-north-1", "eu-south-2",
    "me-central-1", "us-east-1", "us-east-2", "us-west-1", "us-west-2",
)  # fmt: skip
P5E_REGIONS = _regions(
    "ap-southeast-2", "ap-southeast-3", "eu-north-1", "eu-west-2", "sa-east-1", "us-east-2", "us-west-2"
)
P6_B200_REGIONS = _regions(
    "ap-south-1", "ap-south-2", "eu-north-1", "eu-west-3", "us-east-1", "us-east-2", "us-west-2"
)
# the regions the offerings capture covers: a region outside it is unknown, not "offers nothing"
KNOWN_REGIONS = _regions(
    "af-south-1", "ap-east-1", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1",
    "ap-south-2", "ap-southeast-1", "ap-southeast-2", "ap-southeast-3", "ap-southeast-4", "ap-southeast-5",
    "ca-central-1", "ca-west-1", "eu-central-1", "eu-central-2", "eu-north-1", "eu-south-1", "eu-south-2",
    "eu-west-1", "eu-west-2", "eu-west-3", "il-central-1", "me-central-1", "me-south-1", "sa-east-1",
    "us-east-1", "us-east-2", "us-west-1", "us-west-2",
)  # fmt: skip

# Linux on-demand $/h by region (see the module docstring for the sources); a region not listed: no known price
G5_XLARGE_USD = _prices({
    "ap-east-1": 1.5488, "ap-northeast-1": 1.459, "ap-northeast-2": 1.237, "ap-south-1": 1.208,
    "ap-southeast-2": 1.308, "ap-southeast-3": 1.408, "ca-central-1": 1.117, "eu-central-1": 1.258,
    "eu-north-1": 1.067, "eu-west-1": 1.123, "eu-west-2": 1.277, "me-central-1": 1.234, "us-east-1": 1.006,
    "us-east-2": 1.006, "us-west-2": 1.006
})  # fmt: skip
G5_2XLARGE_USD = _prices({
    "ap-east-1": 1.86595, "ap-northeast-1": 1.75776, "ap-northeast-2": 1.4903, "ap-south-1": 1.45536,
    "ap-southeast-2": 1.57584, "ap-southeast-3": 1.69632, "ca-central-1": 1.34573, "eu-central-1": 1.5156,
    "eu-north-1": 1.28549, "eu-west-1": 1.35296, "eu-west-2": 1.53849, "me-central-1": 1.48669, "us-east-1":
    1.212, "us-east-2": 1.212, "us-west-2": 1.212
})  # fmt: skip
G5_12XLARGE_USD = _prices({
    "ap-east-1": 8.7324, "ap-northeast-1": 8.22609, "ap-northeast-2": 6.97442, "ap-south-1": 6.81091,
    "ap-southeast-2": 7.37473, "ap-southeast-3": 7.93854, "ca-central-1": 6.29784, "eu-central-1": 7.09282,
    "eu-north-1": 6.01593, "eu-west-1": 6.33167, "eu-west-2": 7.19994, "me-central-1": 6.9575, "us-east-1":
    5.672, "us-east-2": 5.672, "us-west-2": 5.672
})  # fmt: skip
G5_48XLARGE_USD = _prices({
    "ap-east-1": 25.0764, "ap-northeast-1": 23.62246, "ap-northeast-2": 20.02809, "ap-south-1": 19.55855,
    "ap-southeast-2": 21.17764, "ap-southeast-3": 22.79672, "ca-central-1": 18.08518, "eu-central-1":
    20.3681, "eu-north-1": 17.27564, "eu-west-1": 18.18233, "eu-west-2": 20.67572, "me-central-1": 19.97951,
    "us-east-1": 16.288, "us-east-2": 16.288, "us-west-2": 16.288
})  # fmt: skip
G6_XLARGE_USD = _prices({
    "ap-northeast-1": 1.1672, "ap-northeast-2": 0.9896, "ap-south-1": 0.9664, "ap-southeast-2": 1.0464,
    "ca-central-1": 0.8936, "eu-central-1": 1.0064, "eu-north-1": 0.8536, "eu-south-2": 0.848, "eu-west-2":
    1.0216, "eu-west-3": 1.0216, "me-central-1": 0.98824, "us-east-1": 0.8048, "us-east-2": 0.8048,
    "us-west-2": 0.8048
})  # fmt: skip
G6_2XLARGE_USD = _prices({
    "ap-northeast-1": 1.41781, "ap-northeast-2": 1.20208, "ap-south-1": 1.1739, "ap-southeast-2": 1.27107,
    "ca-central-1": 1.08547, "eu-central-1": 1.22249, "eu-north-1": 1.03688, "eu-south-2": 1.03008,
    "eu-west-2": 1.24095, "eu-west-3": 1.24095, "me-central-1": 1.20043, "us-east-1": 0.9776, "us-east-2":
    0.9776, "us-west-2": 0.9776
})  # fmt: skip
G6E_XLARGE_USD = _prices({
    "ap-northeast-1": 2.699, "ap-northeast-2": 2.288, "eu-central-1": 2.327, "eu-north-1": 1.974,
    "eu-south-2": 1.961, "us-east-1": 1.861, "us-east-2": 1.861, "us-west-2": 1.861
})  # fmt: skip
P4D_24XLARGE_USD = _prices({
    "ap-northeast-1": 30.09784, "ap-northeast-2": 30.41028, "ap-south-1": 26.3444, "ap-southeast-2":
    28.54493, "ca-central-1": 25.25174, "eu-central-1": 27.43298, "eu-north-1": 23.71569, "eu-west-1":
    23.71569, "eu-west-2": 28.54493, "us-east-1": 21.957642, "us-east-2": 21.95764, "us-west-2": 21.95764
})  # fmt: skip
P4DE_24XLARGE_USD = _prices({
    "ap-northeast-1": 37.6223, "ap-southeast-1": 32.93646, "eu-central-1": 34.29122, "us-east-1": 27.44705,
    "us-west-2": 27.44705
})  # fmt: skip
P5_48XLARGE_USD = _prices({
    "ap-northeast-1": 68.8, "ap-northeast-2": 75.9552, "ap-south-1": 66.048, "ap-southeast-2": 71.552,
    "ap-southeast-3": 75.9552, "ca-central-1": 63.296, "eu-north-1": 58.8928, "eu-west-2": 71.552,
    "us-east-1": 55.04, "us-east-2": 55.04, "us-west-1": 68.8, "us-west-2": 55.04
})  # fmt: skip
P5EN_48XLARGE_USD = _prices({
    "ap-northeast-1": 79.12, "ap-northeast-2": 87.34848, "ap-south-1": 75.9552, "ap-southeast-3": 87.34848,
    "eu-north-1": 67.72672, "eu-south-2": 68.35968, "me-central-1": 75.9552, "us-east-1": 63.296,
    "us-east-2": 63.296, "us-west-1": 79.12, "us-west-2": 63.296
})  # fmt: skip
P6_B200_48XLARGE_USD = _prices({
    "us-east-1": 113.9328, "us-east-2": 113.9328, "us-west-2": 113.9328
})  # fmt: skip

# Node Ready (EC2 launch -> Ready with `nvidia.com/gpu` allocatable; shared/research/autoscaling_sim.md §3.1).
# g-families: "Node Ready at 80-100 s" (karpenter-provider-aws#3102), ~70-80 s launch->registration (#6128);
# the NVIDIA device plugin's GPU registration mostly overlaps. p-families: no public measurement
# (Unverified): a longer, capacity-bound boot.
G_NODE_READY_S = 100.0
P_NODE_READY_S = 300.0

# EFA interfaces per instance type (`vpc.amazonaws.com/efa` capacity, EC2 DescribeInstanceTypes
# NetworkInfo.EfaInfo.MaximumEfaInterfaces) as Karpenter v1.14.1 lists them
# (website/content/en/docs/reference/instance-types.md); g5.xlarge, g5.2xlarge, g6.xlarge, g6.2xlarge and
# g6e.xlarge have none. Every one with EFA has at least as many network cards.
EFA_SOURCE = "karpenter-provider-aws v1.14.1 website/content/en/docs/reference/instance-types.md"

# One row per family. Sizes' columns: size, GPUs, vCPUs, memory GiB, NVMe disks, GB per disk, baseline network
# Gbit/s (karpenter-provider-aws v1.14.1 zz_generated.bandwidth.go), EFA interfaces (EFA_SOURCE), on-demand $/h
# by region.
GPU_FAMILIES: dict[str, GpuFamily] = {
    f.name: f
    for f in (
        GpuFamily("g5", A10G, G5_REGIONS, G_NODE_READY_S, sizes=(
            GpuSize("xlarge", 1, 4, 16, 1, 250, 2.5, 0, G5_XLARGE_USD),
            GpuSize("2xlarge", 1, 8, 32, 1, 450, 5.0, 0, G5_2XLARGE_USD),
            GpuSize("12xlarge", 4, 48, 192, 1, 3800, 40.0, 1, G5_12XLARGE_USD),
            GpuSize("48xlarge", 8, 192, 768, 2, 3800, 100.0, 1, G5_48XLARGE_USD),
        )),
        GpuFamily("g6", L4, G6_REGIONS, G_NODE_READY_S, sizes=(
            GpuSize("xlarge", 1, 4, 16, 1, 250, 2.5, 0, G6_XLARGE_USD),
            GpuSize("2xlarge", 1, 8, 32, 1, 450, 5.0, 0, G6_2XLARGE_USD),
        )),
        GpuFamily("g6e", L40S, G6E_REGIONS, G_NODE_READY_S, sizes=(
            GpuSize("xlarge", 1, 4, 32, 1, 250, 2.5, 0, G6E_XLARGE_USD),
        )),
        GpuFamily("p4d", A100_40, P4D_REGIONS, P_NODE_READY_S, dedicated=True, sizes=(
            GpuSize("24xlarge", 8, 96, 1152, 8, 1000, 400.0, 4, P4D_24XLARGE_USD),
        )),
        GpuFamily("p4de", A100_80, P4DE_REGIONS, P_NODE_READY_S, dedicated=True, sizes=(
            GpuSize("24xlarge", 8, 96, 1152, 8, 1000, 400.0, 4, P4DE_24XLARGE_USD),
        )),
        GpuFamily("p5", H100, P5_REGIONS, P_NODE_READY_S, dedicated=True, sizes=(
            GpuSize("48xlarge", 8, 192, 2048, 8, 3840, 3200.0, 32, P5_48XLARGE_USD),
        )),
        GpuFamily("p5e", H200, P5E_REGIONS, P_NODE_READY_S, dedicated=True, reserved_only=True, sizes=(
            GpuSize("48xlarge", 8, 192, 2048, 8, 3840, 3200.0, 32, _prices({})),
        )),
        GpuFamily("p5en", H200, P5EN_REGIONS, P_NODE_READY_S, dedicated=True, sizes=(
            GpuSize("48xlarge", 8, 192, 2048, 8, 3840, 3200.0, 16, P5EN_48XLARGE_USD),
        )),
        GpuFamily("p6-b200", B200, P6_B200_REGIONS, P_NODE_READY_S, dedicated=True, sizes=(
            GpuSize("48xlarge", 8, 192, 2048, 8, 3840, 3200.0, 8, P6_B200_48XLARGE_USD),
        )),
    )
}  # fmt: skip

# every instance type, a family's sizes in its row's order
GPU_INSTANCES: dict[str, GpuInstance] = {
    i.instance_type: i for f in GPU_FAMILIES.values() for i in f.instances()
}


def dedicated_families() -> list[str]:
    """Families that get a single-family pool of their own."""
    return sorted(f.name for f in GPU_FAMILIES.values() if f.dedicated)


def efa_families() -> list[str]:
    """Families every size of which has EFA: what the pool of a multi-node replica may be."""
    return sorted(f.name for f in GPU_FAMILIES.values() if all(z.efa_interfaces > 0 for z in f.sizes))


def instance(instance_type: str) -> GpuInstance:
    """The catalog row of an instance type; an instance the catalog does not list is an error, never a guess."""
    try:
        return GPU_INSTANCES[instance_type]
    except KeyError:
        raise ValueError(
            f"instance type {instance_type!r} is not in the GPU catalog (facts/catalog.py); "
            f"known: {', '.join(GPU_INSTANCES)}"
        ) from None


def families() -> list[str]:
    return sorted({i.family for i in GPU_INSTANCES.values()})


def instances(families_: list[str], sizes: list[str] | None = None) -> list[GpuInstance]:
    """Catalog instances of the given families, optionally restricted to sizes, cheapest first."""
    chosen = [i for i in GPU_INSTANCES.values() if i.family in families_ and (not sizes or i.size in sizes)]
    return sorted(chosen, key=lambda i: i.list_usd_per_hour)
