"""What the day's capacity is made of, before any pod moves: the pool's instance, cache and pricing as the plan
resolves them (CapacityConfig), EC2's per-second billing, and how long a replica takes to start on each kind of
node (StartTimes, from facts/cold_start.py). serving/capacity.py's Cluster runs the day on them; the oracle,
the tuner and `--explain` read them without a Cluster."""

from __future__ import annotations

from dataclasses import dataclass

from llm_platform.facts.catalog import GpuInstance
from llm_platform.facts.cold_start import (
    PREEMPTION_SECONDS,
    CacheMode,
    ImageMode,
    cold_start,
    headroom_start,
)
from llm_platform.plan import HeadroomPlan

MINIMUM_BILLED_SECONDS = 60
CAPACITY_BLOCK_EXPIRING_SECONDS = (
    40 * 60
)  # Karpenter drains a Capacity Block's nodes this long before its end


def billed_seconds(launched: float, terminated: float, preexisting: bool = False) -> float:
    """Per-second billing with a 60 s minimum for an instance launched in the window."""
    duration = max(0.0, terminated - launched)
    return duration if preexisting else max(float(MINIMUM_BILLED_SECONDS), duration)


def instance_cost(
    price_per_hour: float, launched: float, terminated: float, preexisting: bool = False
) -> float:
    return price_per_hour / 3600 * billed_seconds(launched, terminated, preexisting)


@dataclass(frozen=True)
class CapacityConfig:
    instance: GpuInstance
    region: str  # the stack's aws:region: nodes cost the catalog's on-demand price there
    gpus_per_pod: int = 1
    cache_mode: CacheMode = "nvme"
    image: ImageMode = "registry"
    weights_gb: float = 16.0
    nodes: int = 1  # a multi-node replica's nodes (one unit here): each rank loads 1/nodes of the weights
    compile_cache_persisted: bool = False  # every start restores the model's compile cache (plan's cache)
    consolidate_after: float = 300.0
    # the NodePool's disruption budget (%): empty nodes deleted per disruption pass; None: all at once
    disruption_budget_percent: float | None = None
    spot: bool = False
    spot_discount: float = 0.6
    spot_interruptions_per_hour: float = 0.0
    gpu_limit: int | None = None  # the NodePool's nvidia.com/gpu limit left to this model; None: unlimited
    headroom: HeadroomPlan | None = None  # the pool's placeholders and their windows, as rendered
    reserved_nodes: int = 0
    reserved_usd_per_hour: float | None = None
    """Prepaid rate of one reserved instance; None: the on-demand price (what an ODCR bills)."""
    reserved_until: float | None = None
    """When a Capacity Block ends, seconds into the horizon; None: the reservations outlast the horizon."""
    fallback: bool = True  # the pool lists on-demand or spot: Karpenter buys beyond the reservations

    def __post_init__(self) -> None:
        if self.fallback or self.reserved_usd_per_hour is None:  # on-demand is bought, or is the ODCR rate
            self.instance.on_demand_usd_per_hour(self.region)  # an unknown price stops here, before any day

    @property
    def reserved_price_per_hour(self) -> float:
        rate = self.reserved_usd_per_hour
        return self.on_demand_price_per_hour if rate is None else rate

    def reserved_cost(self, horizon: float) -> float:
        """The prepaid cost of the reservations over `horizon` seconds, used or not (a block up to its end)."""
        held = horizon if self.reserved_until is None else min(horizon, self.reserved_until)
        return self.reserved_nodes * self.reserved_price_per_hour * held / 3600

    @property
    def reservations_expire_at(self) -> float | None:
        """When Karpenter stops using the reservations and deletes their nodes (None: never in the horizon)."""
        if self.reserved_until is None or not self.reserved_nodes:
            return None
        return max(0.0, self.reserved_until - CAPACITY_BLOCK_EXPIRING_SECONDS)

    @property
    def on_demand_price_per_hour(self) -> float:
        return self.instance.on_demand_usd_per_hour(self.region)

    @property
    def price_per_hour(self) -> float:
        base = self.on_demand_price_per_hour
        return base * (1 - self.spot_discount) if self.spot else base

    @property
    def node_price_per_hour(self) -> float:
        """What a node the pool can launch costs per hour: bought on-demand or spot, else its reservation's
        rate (a reserved-only pool); the oracle prices its nodes at this."""
        return self.price_per_hour if self.fallback else self.reserved_price_per_hour

    @property
    def slots_per_node(self) -> int:
        return max(1, self.instance.gpus // self.gpus_per_pod)


@dataclass(frozen=True)
class StartTimes:
    """Seconds from a replica needing a GPU to Ready, per where it lands (facts/cold_start.py's phases)."""

    node_ready: float  # Karpenter launch + EC2 boot until the GPU is allocatable
    image_wait: float  # the image pull (or the NVMe weight sync, whichever is longer) on a new node
    new_node: float  # on a node launched for it
    fresh_node: float  # on an up node with the image and weights but no replica yet (a headroom node)
    warm_node: float  # on a node where a replica ran (node-local compile cache too)

    @property
    def preempting_placeholder(self) -> float:
        return PREEMPTION_SECONDS + self.fresh_node


def start_times(cfg: CapacityConfig) -> StartTimes:
    persisted = cfg.compile_cache_persisted
    new = cold_start(cfg.cache_mode, cfg.instance, cfg.weights_gb, True, cfg.image, persisted, cfg.nodes)
    warm = cold_start(cfg.cache_mode, cfg.instance, cfg.weights_gb, False, cfg.image, persisted, cfg.nodes)
    fresh = headroom_start(cfg.cache_mode, cfg.instance, cfg.weights_gb, cfg.image, persisted)
    return StartTimes(new.node_ready, new.image_wait, new.total, fresh.total, warm.total)
