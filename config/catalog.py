"""GPU instance catalog: the facts every validation rule, NodePool and cost estimate relies on.

Source: ../shared/reference/README.md ("AWS GPU instances", us-east-1 on-demand, Karpenter's generated
price table of 2026-07-20). vCPU and memory are from the EC2 instance-type pages; dense FP16 tensor
TFLOPS from the NVIDIA datasheets; the A10G is not an A10: 70 dense BF16 TFLOPS (Baseten's A10 vs A10G
spec table; NVIDIA publishes no A10G datasheet; shared/research/vllm_capacity_points.md §2), not the A10's 125.
Only instances listed here can be launched: each NodePool restricts Karpenter to the catalog's sizes, so
every node the platform creates has a known price and GPU count.
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

GPU_INSTANCES: dict[str, GpuInstance] = {
    i.instance_type: i
    for i in (
        GpuInstance("g5.xlarge", 1, A10G, 4, 16, 1, 250, 1.006),
        GpuInstance("g5.2xlarge", 1, A10G, 8, 32, 1, 450, 1.212),
        GpuInstance("g5.12xlarge", 4, A10G, 48, 192, 1, 3800, 5.672),
        GpuInstance("g5.48xlarge", 8, A10G, 192, 768, 2, 3800, 16.288),
        GpuInstance("g6.xlarge", 1, L4, 4, 16, 1, 250, 0.8048),
        GpuInstance("g6.2xlarge", 1, L4, 8, 32, 1, 450, 0.9776),
        GpuInstance("g6e.xlarge", 1, L40S, 4, 32, 1, 250, 1.861),
        GpuInstance("p4d.24xlarge", 8, A100_40, 96, 1152, 8, 1000, 21.957642),
        GpuInstance("p4de.24xlarge", 8, A100_80, 96, 1152, 8, 1000, 27.44705),
        GpuInstance("p5.48xlarge", 8, H100, 192, 2048, 8, 3840, 55.04),
    )
}

# Families big enough that they get a pool of their own (a p5 must never be picked to serve a 7B model
# that a g5 pool could have served).
DEDICATED_FAMILIES = frozenset({"p4d", "p4de", "p5"})


def families() -> list[str]:
    return sorted({i.family for i in GPU_INSTANCES.values()})


def instances(families_: list[str], sizes: list[str] | None = None) -> list[GpuInstance]:
    """Catalog instances of the given families, optionally restricted to sizes, cheapest first."""
    chosen = [i for i in GPU_INSTANCES.values() if i.family in families_ and (not sizes or i.size in sizes)]
    return sorted(chosen, key=lambda i: i.on_demand_usd_per_hour)
