"""CPU instance catalog: what the system node group and the add-on NodePool may run on, and what a node costs.

vCPUs and memory from the EC2 instance-type pages (general purpose m: 4 GiB per vCPU, compute c: 2, memory
r: 8; t3 stops at 2xlarge). Prices are Linux on-demand $/h in us-east-1 from Karpenter's generated price table
(karpenter-provider-aws `pkg/providers/pricing/zz_generated.pricing_aws.go`, generated 2026-01-19, the
us-east-1 table it ships). No other region has a known price here: whatever prices a CPU node elsewhere says
so instead of borrowing us-east-1's (facts/catalog.py's rule for GPU nodes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

PRICED_REGION = "us-east-1"


@dataclass(frozen=True)
class CpuInstance:
    instance_type: str
    vcpus: int
    memory_gib: int
    usd_per_hour: float  # us-east-1 on-demand

    @property
    def family(self) -> str:
        return self.instance_type.split(".", 1)[0]

    @property
    def size(self) -> str:
        return self.instance_type.split(".", 1)[1]

    def on_demand_usd_per_hour(self, region: str) -> float:
        """One node's $/h in `region`; NaN where no price is known (callers say so, never guess)."""
        return self.usd_per_hour if region == PRICED_REGION else math.nan


_SIZES = {"large": 2, "xlarge": 4, "2xlarge": 8, "4xlarge": 16, "8xlarge": 32}
_GIB_PER_VCPU = {"m": 4, "t": 4, "c": 2, "r": 8}
# family -> $/h by size, us-east-1 (zz_generated.pricing_aws.go)
_PRICES: dict[str, dict[str, float]] = {
    "m5": {"large": 0.096, "xlarge": 0.192, "2xlarge": 0.384, "4xlarge": 0.768, "8xlarge": 1.536},
    "m6i": {"large": 0.096, "xlarge": 0.192, "2xlarge": 0.384, "4xlarge": 0.768, "8xlarge": 1.536},
    "m6a": {"large": 0.0864, "xlarge": 0.1728, "2xlarge": 0.3456, "4xlarge": 0.6912, "8xlarge": 1.3824},
    "m7i": {"large": 0.1008, "xlarge": 0.2016, "2xlarge": 0.4032, "4xlarge": 0.8064, "8xlarge": 1.6128},
    "m7a": {"large": 0.11592, "xlarge": 0.23184, "2xlarge": 0.46368, "4xlarge": 0.92736, "8xlarge": 1.85472},
    "c6i": {"large": 0.085, "xlarge": 0.17, "2xlarge": 0.34, "4xlarge": 0.68, "8xlarge": 1.36},
    "c7i": {"large": 0.08925, "xlarge": 0.1785, "2xlarge": 0.357, "4xlarge": 0.714, "8xlarge": 1.428},
    "r6i": {"large": 0.126, "xlarge": 0.252, "2xlarge": 0.504, "4xlarge": 1.008, "8xlarge": 2.016},
    "r7i": {"large": 0.1323, "xlarge": 0.2646, "2xlarge": 0.5292, "4xlarge": 1.0584, "8xlarge": 2.1168},
    "t3": {"large": 0.0832, "xlarge": 0.1664, "2xlarge": 0.3328},
}

CPU_INSTANCES: dict[str, CpuInstance] = {
    f"{family}.{size}": CpuInstance(
        f"{family}.{size}", _SIZES[size], _SIZES[size] * _GIB_PER_VCPU[family[0]], price
    )
    for family, prices in _PRICES.items()
    for size, price in prices.items()
}


def cpu_families() -> list[str]:
    return list(_PRICES)


def cpu_sizes() -> list[str]:
    return list(_SIZES)


def cpu_instances(families: list[str], sizes: list[str]) -> list[CpuInstance]:
    """The catalog instances of these families and sizes, smallest first."""
    return sorted(
        (i for i in CPU_INSTANCES.values() if i.family in families and i.size in sizes),
        key=lambda i: (i.vcpus, i.usd_per_hour, i.instance_type),
    )
