"""GPU instance catalog: the facts every validation rule, NodePool and cost estimate relies on.

Source: ../shared/reference/README.md ("AWS GPU instances", us-east-1 on-demand, Karpenter's generated
price table of 2026-07-20); p5en and p6-b200 from the same generated table as pinned
(karpenter-provider-aws v1.14.1 `pkg/providers/pricing/zz_generated.pricing_aws.go`, us-east-1).
vCPU, memory and NVMe are from the EC2 instance-type pages; GPU memory, bandwidth and dense FP16 tensor
TFLOPS from the NVIDIA datasheets (H200: 141 GB HBM3e, 4.8 TB/s, H100's tensor cores; B200: 1,440 GB HBM3e
per 8-GPU board, 8 TB/s, 2.25 PFLOPS dense FP16 per GPU); the A10G is not an A10: 70 dense BF16 TFLOPS
(Baseten's A10 vs A10G spec table; NVIDIA publishes no A10G datasheet; shared/research/vllm_capacity_points.md
§2), not the A10's 125. Regions: where EC2 offers the instance type (DescribeInstanceTypeOfferings by region,
as captured in moto 5.2.5's `ec2/resources/instance_type_offerings/region/*.json.gz`, 30 commercial
regions); a pool of an instance not offered in the stack's region is a config error.
Only instances listed here can be launched: each NodePool restricts Karpenter to the catalog's sizes, so
every node the platform creates has a known price and GPU count.

Not listed: p5e.48xlarge (H200; offered in us-east-2, us-west-2 and five more regions but not in us-east-1,
so the pinned price table has no on-demand price for it).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuModel:
    name: str
    memory_gib: int
    hbm_bandwidth_gbps: float  # GB/s per GPU
    fp16_tflops: float  # dense tensor-core FP16/BF16, per GPU


@dataclass(frozen=True)
class GpuInstance:
    instance_type: str
    gpus: int
    gpu: GpuModel
    vcpus: int
    memory_gib: int
    nvme_disks: int
    nvme_disk_gb: int
    on_demand_usd_per_hour: float
    regions: frozenset[str]
    network_gbps: float  # baseline network bandwidth, Gbit/s: bounds weight downloads on a new node
    node_ready_seconds: float  # EC2 launch -> node Ready with `nvidia.com/gpu` allocatable

    @property
    def family(self) -> str:
        return self.instance_type.split(".", 1)[0]

    @property
    def size(self) -> str:
        return self.instance_type.split(".", 1)[1]

    @property
    def nvme_total_gb(self) -> int:
        return self.nvme_disks * self.nvme_disk_gb


A10G = GpuModel("A10G", 24, 600, 70)
L4 = GpuModel("L4", 24, 300, 121)
L40S = GpuModel("L40S", 48, 864, 362)
A100_40 = GpuModel("A100-40GB", 40, 1555, 312)
A100_80 = GpuModel("A100-80GB", 80, 2039, 312)
H100 = GpuModel("H100", 80, 3350, 989)
H200 = GpuModel("H200", 141, 4800, 989)
B200 = GpuModel("B200", 180, 8000, 2250)


def _regions(*names: str) -> frozenset[str]:
    return frozenset(names)


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

# Node Ready (EC2 launch -> Ready with `nvidia.com/gpu` allocatable; shared/research/autoscaling_sim.md §3.1).
# g-families: "Node Ready at 80-100 s" (karpenter-provider-aws#3102), ~70-80 s launch->registration (#6128);
# the NVIDIA device plugin's GPU registration mostly overlaps. p-families: no public measurement
# (Unverified): a longer, capacity-bound boot.
G_NODE_READY_S = 100.0
P_NODE_READY_S = 300.0

# Columns: type, GPUs, GPU, vCPUs, memory GiB, NVMe disks, GB per disk, on-demand $/h, regions, baseline network
# Gbit/s (karpenter-provider-aws v1.14.1 zz_generated.bandwidth.go), node Ready seconds.
GPU_INSTANCES: dict[str, GpuInstance] = {
    i.instance_type: i
    for i in (
        GpuInstance("g5.xlarge", 1, A10G, 4, 16, 1, 250, 1.006, G5_REGIONS, 2.5, G_NODE_READY_S),
        GpuInstance("g5.2xlarge", 1, A10G, 8, 32, 1, 450, 1.212, G5_REGIONS, 5.0, G_NODE_READY_S),
        GpuInstance("g5.12xlarge", 4, A10G, 48, 192, 1, 3800, 5.672, G5_REGIONS, 40.0, G_NODE_READY_S),
        GpuInstance("g5.48xlarge", 8, A10G, 192, 768, 2, 3800, 16.288, G5_REGIONS, 100.0, G_NODE_READY_S),
        GpuInstance("g6.xlarge", 1, L4, 4, 16, 1, 250, 0.8048, G6_REGIONS, 2.5, G_NODE_READY_S),
        GpuInstance("g6.2xlarge", 1, L4, 8, 32, 1, 450, 0.9776, G6_REGIONS, 5.0, G_NODE_READY_S),
        GpuInstance("g6e.xlarge", 1, L40S, 4, 32, 1, 250, 1.861, G6E_REGIONS, 2.5, G_NODE_READY_S),
        GpuInstance(
            "p4d.24xlarge", 8, A100_40, 96, 1152, 8, 1000, 21.957642, P4D_REGIONS, 400.0, P_NODE_READY_S
        ),
        GpuInstance(
            "p4de.24xlarge", 8, A100_80, 96, 1152, 8, 1000, 27.44705, P4DE_REGIONS, 400.0, P_NODE_READY_S
        ),
        GpuInstance("p5.48xlarge", 8, H100, 192, 2048, 8, 3840, 55.04, P5_REGIONS, 3200.0, P_NODE_READY_S),
        GpuInstance(
            "p5en.48xlarge", 8, H200, 192, 2048, 8, 3840, 63.296, P5EN_REGIONS, 3200.0, P_NODE_READY_S
        ),
        GpuInstance(
            "p6-b200.48xlarge", 8, B200, 192, 2048, 8, 3840, 113.9328, P6_B200_REGIONS, 3200.0, P_NODE_READY_S
        ),
    )
}

# Families big enough that they get a pool of their own (a p5 must never be picked to serve a 7B model
# that a g5 pool could have served).
DEDICATED_FAMILIES = frozenset({"p4d", "p4de", "p5", "p5en", "p6-b200"})


def instance(instance_type: str) -> GpuInstance:
    """The catalog row of an instance type; an instance the catalog does not list is an error, never a guess."""
    try:
        return GPU_INSTANCES[instance_type]
    except KeyError:
        raise ValueError(
            f"instance type {instance_type!r} is not in the GPU catalog (config/catalog.py); "
            f"known: {', '.join(GPU_INSTANCES)}"
        ) from None


def families() -> list[str]:
    return sorted({i.family for i in GPU_INSTANCES.values()})


def instances(families_: list[str], sizes: list[str] | None = None) -> list[GpuInstance]:
    """Catalog instances of the given families, optionally restricted to sizes, cheapest first."""
    chosen = [i for i in GPU_INSTANCES.values() if i.family in families_ and (not sizes or i.size in sizes)]
    return sorted(chosen, key=lambda i: i.on_demand_usd_per_hour)
