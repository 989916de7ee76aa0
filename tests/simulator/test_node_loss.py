"""What-if: a GPU node lost at the busiest minute (search/node_loss.py, serving/nodepool.py `fail`)."""

from __future__ import annotations

import numpy as np

from llm_platform.facts.catalog import GPU_INSTANCES
from llm_platform.simulator.search.node_loss import gpu_node_loss
from llm_platform.simulator.search.scenarios import seed_setup, seed_strategies
from llm_platform.simulator.serving.capacity import Cluster
from llm_platform.simulator.serving.capacity_config import CapacityConfig
from llm_platform.simulator.serving.nodepool import REPAIR_SECONDS


def test_a_failed_node_loses_its_replicas_and_repair_deletes_it_later() -> None:
    cfg = CapacityConfig(
        GPU_INSTANCES["g5.2xlarge"], "us-east-1", cache_mode="nvme", image="prebaked", weights_gb=4.0
    )
    cluster = Cluster(cfg, np.random.default_rng(0), initial_replicas=3)
    assert cluster.ready == 3
    assert cluster.fail_node(100.0) == 1  # one GPU per g5.2xlarge: one replica per node
    assert cluster.ready == 2 and len(cluster.pods) == 2
    failed = next(n for n in cluster.nodepool.nodes if n.cordoned)
    cluster.set_replicas(100.0, 3)  # the ReplicaSet's replacement lands on a new node, not the failed one
    assert all(p.node is not failed for p in cluster.pods)
    cluster.advance(100.0 + REPAIR_SECONDS)
    assert failed.terminated_at == 100.0 + REPAIR_SECONDS  # billed until node repair deletes it


def test_the_seed_day_reports_the_misses_and_the_headroom_that_covers_them() -> None:
    setup = seed_setup(0)
    keda = next(s for s in seed_strategies(setup) if s.kind == "keda")
    loss = gpu_node_loss(setup.traffic, setup.table, keda, setup.config)
    rates = np.bincount((setup.traffic.arrivals // 60).astype(int))
    assert loss.minute == int(np.argmax(rates[: setup.traffic.duration // 60]))
    assert loss.added_misses > 0, "a replica lost at the peak misses requests"
    assert loss.headroom is not None and loss.headroom >= 1
    assert loss.headroom_usd_per_day is not None and loss.headroom_usd_per_day > 0
    assert "busiest" in loss.lines()[0]
