"""Karpenter's side of a Deployment's capacity: the GPU nodes it launches, deletes and loses, and their bill.

- Karpenter launches the cheapest allowed catalog instance for a pod that finds no slot (serving/capacity.py
  binds the pods); it is Ready after launch and boot, its image (and NVMe weights) `max(image pull, prefetch)`
  later (facts/cold_start.py).
- An empty node is deleted `consolidateAfter` later if still empty (Karpenter's empty-node consolidation), by
  the disruption controller's next pass (every 10 s), at most the pool's disruption budget per pass:
  ceil(budget % x the Ready nodes) (kubernetes-sigs/karpenter `BuildDisruptionBudgetMapping`; an empty node's
  deletion is done within the pass); the rest wait for the next pass. The pool's other models' nodes are not
  counted (the budget is per pool).
- Spot nodes are interrupted at a Poisson rate: the 2-minute notice evicts the pod at once (Karpenter cordons
  and drains on the notice) and the instance bills until it is reclaimed.
- Billing: EC2 Linux per-second with a 60-second minimum per instance (§3.2), the catalog's on-demand price
  in the stack's region, spot as on-demand x (1 - discount). Nodes that exist when the day starts bill from 0 with no minimum.
- Reserved capacity (On-Demand Capacity Reservations, Capacity Blocks) is prepaid: `reserved_nodes` instances
  cost their hourly rate for the whole horizon whether used or not (an ODCR bills at the on-demand rate; a
  Capacity Block at the price it was bought for), and a node launched into a reservation costs nothing more.
  Karpenter prices a reservation at on-demand / 10^7, so it launches into a free reservation first; only
  beyond the reserved count does it buy on-demand or spot, and only if the pool lists one of them (a
  reserved-only pool leaves the pod Pending). Reserved nodes are never spot-interrupted; an empty reserved
  node is still consolidated after `consolidateAfter` (the reservation stays paid).
- A Capacity Block that ends inside the horizon (`reserved_until`) is paid up to its end. Karpenter marks it
  expiring 40 minutes before the end (10 minutes before EC2 starts reclaiming its instances): from then on no
  node launches into it and its nodes are deleted, their pods evicted; the ReplicaSet's replacements go to
  on-demand or spot nodes (a cold start each), or stay Pending in a reserved-only pool
  (karpenter-provider-aws v1.14.1 `capacityreservation/expiration/controller.go`, `ec2nodeclass_status.go`).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import count

import numpy as np

from llm_platform.simulator.serving.capacity_config import (
    MINIMUM_BILLED_SECONDS,
    CapacityConfig,
    StartTimes,
    instance_cost,
)

SPOT_NOTICE_SECONDS = 120
POD_DRAIN_SECONDS = 10.0  # preStop + in-flight drain before the GPU is free (Unverified)
# Karpenter NodeRepair deletes a node whose AcceleratedHardwareReady has been False this long
# (karpenter-provider-aws v1.14.1 pkg/cloudprovider/cloudprovider.go:320-324); it bills until then
REPAIR_SECONDS = 600.0
# kubernetes-sigs/karpenter pkg/controllers/disruption/controller.go `pollingPeriod`
DISRUPTION_POLL_SECONDS = 10.0


class Events:
    """The cluster's scheduled events, soonest first; a tie runs in the order it was scheduled. The pods and
    the nodes schedule into one queue, so what each does at the same instant keeps its order."""

    def __init__(self) -> None:
        self._queue: list[tuple[float, int, Callable[..., None], tuple[object, ...]]] = []
        self._seq = count()

    def push(self, when: float, handler: Callable[..., None], *args: object) -> None:
        """`handler(when, *args)` runs at `when`."""
        heapq.heappush(self._queue, (when, next(self._seq), handler, args))

    def next_at(self) -> float:
        return self._queue[0][0] if self._queue else math.inf

    def run(self, now: float) -> None:
        """Every event due by `now`, including those a handler schedules within it."""
        while self._queue and self._queue[0][0] <= now:
            when, _, handler, args = heapq.heappop(self._queue)
            handler(when, *args)


@dataclass
class Node:
    id: int
    launched_at: float
    ready_at: float
    price_per_hour: float
    slots: int
    preexisting: bool = False
    image_cached: bool = False  # a replica has started here: node-local caches (compile cache) exist
    image_ready_at: float = 0.0  # the vLLM image (and NVMe weights) are on the node from then on
    pods: list[Pod] = field(default_factory=list)
    terminated_at: float | None = None
    empty_since: float | None = None
    cordoned: bool = False
    reserved: bool = False

    @property
    def free(self) -> int:
        return self.slots - len(self.pods)


@dataclass
class Pod:
    id: int
    created_at: float
    node: Node | None = None
    ready_at: float | None = None  # scheduled readiness (None until it has a node that is up)
    ready: bool = False
    placeholder: bool = False  # a GPU headroom placeholder (pause pod, lowest priority)


class NodePool:
    """The nodes Karpenter gives one Deployment (see module doc). The pods are the cluster's: once a node is
    Ready `start_pods(now, node)` starts those bound to it, and `evict(node)` takes a cordoned node's pods."""

    def __init__(
        self,
        cfg: CapacityConfig,
        rng: np.random.Generator,
        events: Events,
        starts: StartTimes,
        start_pods: Callable[[float, Node], None],
        evict: Callable[[Node], None],
    ):
        self.cfg = cfg
        self.rng = rng
        self.events = events
        self.node_boot = starts.node_ready
        self.image_wait = starts.image_wait
        self.start_pods = start_pods
        self.evict = evict
        self.nodes: list[Node] = []
        self.reservations_expired = False
        self._ids = count()
        self._disruption_pass_at: float | None = None  # the next pass of Karpenter's disruption controller
        if cfg.reservations_expire_at is not None:
            events.push(cfg.reservations_expire_at, self._expire_reservations)

    @property
    def live_nodes(self) -> int:
        return sum(1 for n in self.nodes if n.terminated_at is None)

    @property
    def reserved_in_use(self) -> int:
        return sum(1 for n in self.nodes if n.reserved and n.terminated_at is None)

    @property
    def reservation_free(self) -> bool:
        return not self.reservations_expired and self.reserved_in_use < self.cfg.reserved_nodes

    # --- launch ------------------------------------------------------------------------------------------

    def can_launch(self) -> bool:
        if not self.cfg.fallback and not self.reservation_free:
            return False  # a reserved-only pool: no free reservation, nothing else to buy
        if self.cfg.gpu_limit is None:
            return True
        live = sum(self.cfg.instance.gpus for n in self.nodes if n.terminated_at is None)
        return live + self.cfg.instance.gpus <= self.cfg.gpu_limit

    def new_node(self, now: float, preexisting: bool = False, replica: bool = True) -> Node:
        """A node launched now, into a free reservation first; `preexisting`: up when the day starts (with a
        replica's caches unless it holds a placeholder)."""
        ready_at = now if preexisting else now + self.node_boot
        reserved = self.reservation_free
        node = Node(
            next(self._ids), now, ready_at, 0.0 if reserved else self.cfg.price_per_hour,
            self.cfg.slots_per_node, preexisting=preexisting, image_cached=preexisting and replica,
            image_ready_at=ready_at if preexisting else ready_at + self.image_wait, reserved=reserved,
        )  # fmt: skip
        self.nodes.append(node)
        if not preexisting:
            self.events.push(ready_at, self._node_ready, node)
        if self.cfg.spot and self.cfg.spot_interruptions_per_hour > 0 and not reserved:
            self.events.push(
                now + self.rng.exponential(3600 / self.cfg.spot_interruptions_per_hour), self._interrupt, node
            )
        return node

    def _node_ready(self, now: float, node: Node) -> None:
        if node.terminated_at is not None:
            return
        self.start_pods(now, node)
        if not node.pods:
            self.mark_empty(now, node)

    # --- empty-node consolidation ------------------------------------------------------------------------

    def mark_empty(self, now: float, node: Node) -> None:
        node.empty_since = now
        self.events.push(now + self.cfg.consolidate_after, self._consolidate, node)

    def _consolidatable(self, now: float, node: Node) -> bool:
        empty = node.terminated_at is None and not node.pods and node.empty_since is not None
        return empty and now >= (node.empty_since or 0.0) + self.cfg.consolidate_after

    def _consolidate(self, now: float, node: Node) -> None:
        if not self._consolidatable(now, node):
            return
        if self.cfg.disruption_budget_percent is None:
            node.terminated_at = now
        elif self._disruption_pass_at is None:  # the disruption controller's next pass takes it
            self._disruption_pass_at = math.ceil(now / DISRUPTION_POLL_SECONDS) * DISRUPTION_POLL_SECONDS
            self.events.push(self._disruption_pass_at, self._disruption_pass)

    def _disruption_pass(self, now: float) -> None:
        """One pass of Karpenter's disruption controller: the empty nodes past consolidateAfter, longest
        empty first, up to the budget; the rest wait for the next pass."""
        self._disruption_pass_at = None
        budget = self.cfg.disruption_budget_percent
        assert budget is not None
        ready = sum(1 for n in self.nodes if n.terminated_at is None and n.ready_at <= now)
        allowed = math.ceil(budget / 100 * ready - 1e-9)
        candidates = sorted(
            (n for n in self.nodes if self._consolidatable(now, n)), key=lambda n: n.empty_since or 0.0
        )
        for node in candidates[:allowed]:
            node.terminated_at = now
        if len(candidates) > allowed:
            self._disruption_pass_at = now + DISRUPTION_POLL_SECONDS
            self.events.push(self._disruption_pass_at, self._disruption_pass)

    # --- nodes taken away --------------------------------------------------------------------------------

    def _interrupt(self, now: float, node: Node) -> None:
        if node.terminated_at is not None:
            return
        self._drain(node)
        self.events.push(now + SPOT_NOTICE_SECONDS, self._reclaimed, node)

    def fail(self, now: float, node: Node) -> None:
        """A GPU of the node fails: its pods die at once, nothing new lands there, and node repair deletes the
        node REPAIR_SECONDS later (the ReplicaSet's replacements launch elsewhere meanwhile)."""
        if node.terminated_at is not None:
            return
        self._drain(node)
        self.events.push(now + REPAIR_SECONDS, self._reclaimed, node)

    def _expire_reservations(self, now: float) -> None:
        """The Capacity Block is expiring: no launches into it from now on, its nodes drained and deleted."""
        self.reservations_expired = True
        for node in self.nodes:
            if node.reserved and node.terminated_at is None and not node.cordoned:
                self._drain(node)
                self.events.push(now + POD_DRAIN_SECONDS, self._reclaimed, node)

    def _drain(self, node: Node) -> None:
        node.cordoned = True
        self.evict(node)

    @staticmethod
    def _reclaimed(now: float, node: Node) -> None:
        node.terminated_at = now

    # --- cost --------------------------------------------------------------------------------------------

    def cost(self, horizon: float) -> float:
        """Prepaid reservations plus every node bought beyond them."""
        total = self.cfg.reserved_cost(horizon)
        for n in self.nodes:
            end = min(n.terminated_at if n.terminated_at is not None else horizon, horizon)
            total += instance_cost(n.price_per_hour, n.launched_at, end, n.preexisting)
        return total

    def cost_curve(self, times: np.ndarray) -> np.ndarray:
        """Cumulative cost at each time (the 60 s minimum counts from launch; reservations accrue evenly)."""
        total = np.array([self.cfg.reserved_cost(float(t)) for t in times])
        for n in self.nodes:
            end = n.terminated_at if n.terminated_at is not None else np.inf
            run = np.clip(np.minimum(times, end) - n.launched_at, 0.0, None)
            if not n.preexisting:
                run = np.where(times > n.launched_at, np.maximum(run, MINIMUM_BILLED_SECONDS), 0.0)
            total += run * n.price_per_hour / 3600
        return total

    def node_seconds(self, horizon: float) -> float:
        return sum(
            max(
                0.0, min(n.terminated_at if n.terminated_at is not None else horizon, horizon) - n.launched_at
            )
            for n in self.nodes
        )
