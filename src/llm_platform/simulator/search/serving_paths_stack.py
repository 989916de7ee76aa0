"""The serving-paths what-if for one model of a stack: the four paths (search/serving_paths.py) built from the
model's plan (its GPU, tensor parallelism, engine settings, SLO, instance price and replica floor) whatever the
stack enables, their days (search/serving_paths_day.py), and the stack-file block of the cheapest that meets the
SLO, spelled as the model options of issue #46 (`disaggregation`, `kvCacheOffload`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from llm_platform.config.schema import Slo
from llm_platform.plan import ModelPlan
from llm_platform.simulator.search.serving_paths import Inputs, build
from llm_platform.simulator.search.serving_paths_day import PathDay, best_shapes, recommend, simulate_day
from llm_platform.simulator.search.serving_paths_engine import EngineDay, engine_days
from llm_platform.simulator.search.stacks import stack_run
from llm_platform.simulator.serving.kv_paths import DEFAULT_HOST_SHARE_FOR_TIER, PrefixCache
from llm_platform.simulator.serving.replica import TokenStats
from llm_platform.simulator.traffic.traffic import Traffic

if TYPE_CHECKING:
    from llm_platform.config.loader import Stack

KV_TRANSPORT = "nixl-libfabric"  # NIXL's LIBFABRIC backend over EFA, llm-d's P/D path on AWS (issue #46)
OFFLOAD_BACKEND = "native"  # vLLM's OffloadingConnector


@dataclass(frozen=True)
class PathsRun:
    model_name: str
    model_path: str  # where the block goes in the stack file
    instance_type: str
    tensor_parallel: int  # GPUs of one replica as deployed
    deployed_tp: int  # its tensorParallelSize (a multi-node replica's GPUs are TP x PP)
    cpu_gib: float
    host_gib: float  # the replica's share of the instance's memory
    days: list[PathDay]
    best: PathDay | None
    slo: Slo | None = None  # the objectives the paths were sized and judged on
    engine: list[EngineDay] | None = None  # the same paths through the day engine (--day-engine)

    def block(self) -> dict[str, object]:
        """The stack-file block that selects the recommended path under the model (empty: as deployed)."""
        if self.best is None:
            return {}
        block: dict[str, object] = {}
        if self.best.name.startswith("pd"):
            block["disaggregation"] = {
                role.name: {
                    "tensorParallelSize": self.deployed_tp
                    if role.gpus == self.tensor_parallel
                    else role.gpus,
                    "autoscaling": {"minReplicas": int(role.replicas.min()), "maxReplicas": role.peak},
                }
                for role in self.best.roles
            } | {"kvTransport": KV_TRANSPORT}
        if self.best.name.endswith("cpu-tier"):
            block["kvCacheOffload"] = {"backend": OFFLOAD_BACKEND, "cpuGiBPerReplica": int(self.cpu_gib)}
        return block


def host_gib(mp: ModelPlan) -> float:
    """The host memory of a replica's GPU share of its instance (all of it for a multi-node replica's nodes)."""
    inst = mp.instance
    return inst.memory_gib * min(mp.replica_gpus, inst.gpus) / inst.gpus * mp.nodes


def paths_run(
    stack: Stack, model_name: str | None, traffic: Traffic, reuse: float, working_set_gib: float,
    cpu_gib: float | None = None, day_engine: bool = False, slo: Slo | None = None,
) -> PathsRun:  # fmt: skip
    """The four paths of one model of `stack` on `traffic` (module doc); `cpu_gib` None: the default tier;
    `day_engine` also runs each path's roles through the day engine (search/serving_paths_engine.py); `slo`
    a what-if SLO instead of the model's."""
    deployed = stack_run(stack, model_name, traffic)  # the pool as the day simulator buys it (spot, price)
    mp, sim = deployed.plan, deployed.setup.config
    m = mp.model
    if slo is not None:
        sim = replace(sim, slo=slo)
    target = sim.slo
    host = host_gib(mp)
    tier = float(int(host * DEFAULT_HOST_SHARE_FOR_TIER)) if cpu_gib is None else cpu_gib
    if tier <= 0 or tier > host:
        raise ValueError(
            f"--cpu-gib {tier:g}: a replica of {m.name} on {mp.instance.instance_type} has {host:g} GiB of host "
            f"memory; allowed: more than 0 and at most that"
        )
    model = deployed.setup.table.model  # the replica as the day simulator runs it (engine settings, LoRA)
    stats = TokenStats.from_arrays(traffic.input_tokens, traffic.output_tokens)
    inputs = Inputs(
        model, mp.instance, stats, traffic.input_tokens, target, PrefixCache(reuse, working_set_gib), tier
    )
    # one GPU's share of its node's price (a multi-node replica: of its nodes together)
    usd = sim.capacity.node_price_per_hour / sim.capacity.slots_per_node / mp.replica_gpus
    floor = max(1, sim.replica_floor)
    days = best_shapes([simulate_day(p, traffic, target, usd, floor) for p in build(inputs)])
    engine = engine_days(days, traffic, sim, mp) if day_engine else None
    path = deployed.model_path.removesuffix(".autoscaling")
    return PathsRun(
        m.name, path, mp.instance.instance_type, mp.replica_gpus, m.tensor_parallel_size, tier, host, days, recommend(days), target,
        engine,
    )  # fmt: skip
