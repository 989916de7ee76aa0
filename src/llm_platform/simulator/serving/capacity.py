"""GPU capacity behind the replicas: Karpenter nodes, pod cold starts, consolidation, spot, billing.

- A pod that needs a GPU binds to a Ready node with a free GPU (warm: image and node caches present), else to
  a node Karpenter is already launching, else Karpenter launches the cheapest allowed catalog instance
  (config/cold_start.py gives launch, boot, pull, load and init times).
- Scale-down deletes pods in the ReplicaSet's order (unbound, then not Ready, then the newest Ready); the GPU
  is free after the pod drains; an empty node is deleted `consolidateAfter` later if still empty
  (Karpenter's empty-node consolidation), by the disruption controller's next pass (every 10 s), at most the
  pool's disruption budget per pass: ceil(budget % x the Ready nodes) (kubernetes-sigs/karpenter
  `BuildDisruptionBudgetMapping`; an empty node's deletion is done within the pass); the rest wait for the
  next pass. The pool's other models' nodes are not counted (the budget is per pool).
- GPU headroom (the pool's placeholders): placeholder pods hold one replica's slot each. A replica that finds
  no free slot on a Ready node preempts a Running placeholder there (PREEMPTION_SECONDS, then the start of a
  node whose image and weights the pre-pull and sync DaemonSets already put there) or takes a launching
  node's slot before the placeholder waiting for it; the evicted placeholder goes Pending and Karpenter
  launches a node for it, within the pool's `gpu_limit`. Pending pods are retried as capacity frees.
- A node's image (and NVMe weights) are there `max(image pull, prefetch)` after it is Ready, whoever asked for
  it; the compile cache only once a replica has started there.
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
from dataclasses import dataclass, field
from itertools import count

import numpy as np

from llm_platform.config.cold_start import PREEMPTION_SECONDS
from llm_platform.simulator.serving.capacity_config import (
    MINIMUM_BILLED_SECONDS,
    CapacityConfig,
    instance_cost,
    start_times,
)

SPOT_NOTICE_SECONDS = 120
POD_DRAIN_SECONDS = 10.0  # preStop + in-flight drain before the GPU is free (Unverified)
# kubernetes-sigs/karpenter pkg/controllers/disruption/controller.go `pollingPeriod`
DISRUPTION_POLL_SECONDS = 10.0


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


class Cluster:
    """Pods of one Deployment and the nodes Karpenter gives them; advance(t) applies due events."""

    def __init__(
        self,
        cfg: CapacityConfig,
        rng: np.random.Generator,
        initial_replicas: int = 0,
        initial_placeholders: int = 0,
    ):
        self.cfg = cfg
        self.rng = rng
        self.nodes: list[Node] = []
        self.pods: list[Pod] = []
        self.placeholders: list[Pod] = []
        self.preemptions = 0
        self.reservations_expired = False
        self._events: list[tuple[float, int, str, object]] = []
        self._seq = count()
        self._ids = count()
        self._disruption_pass_at: float | None = None  # the next pass of Karpenter's disruption controller
        if cfg.reservations_expire_at is not None:
            self._push(cfg.reservations_expire_at, "reservations-expiring", self)
        starts = start_times(cfg)
        self.node_boot = starts.node_ready
        self.image_wait = starts.image_wait
        self.start_on_new_node = starts.new_node - starts.node_ready
        self.start_on_fresh_node = starts.fresh_node
        self.start_on_warm_node = starts.warm_node
        for _ in range(initial_replicas):
            # the day starts with the replicas packed as the scheduler left them: a node's free GPUs first
            node = next((n for n in self.nodes if n.free > 0), None)
            if node is None and not (cfg.fallback or self.reservation_free):
                self.pods.append(Pod(next(self._ids), 0.0))  # a reserved-only pool holds no more: Pending
                continue
            node = node or self._new_node(0.0, preexisting=True)
            pod = Pod(next(self._ids), 0.0, node, 0.0, True)
            node.pods.append(pod)
            self.pods.append(pod)
        for _ in range(initial_placeholders):
            free = [n for n in self.nodes if n.free > 0]
            if not free and not (cfg.fallback or self.reservation_free):
                self.placeholders.append(Pod(next(self._ids), 0.0, placeholder=True))
                continue
            node = free[0] if free else self._new_node(0.0, preexisting=True, replica=False)
            pod = Pod(next(self._ids), 0.0, node, 0.0, True, placeholder=True)
            node.pods.append(pod)
            self.placeholders.append(pod)

    # --- queries -----------------------------------------------------------------------------------------

    @property
    def ready(self) -> int:
        return sum(1 for p in self.pods if p.ready)

    @property
    def status_replicas(self) -> int:
        return len(self.pods)

    @property
    def unready(self) -> int:
        return sum(1 for p in self.pods if not p.ready)

    @property
    def live_nodes(self) -> int:
        return sum(1 for n in self.nodes if n.terminated_at is None)

    @property
    def warm_placeholders(self) -> int:
        """Placeholders Running on Ready nodes: replicas that can start without a new node."""
        return sum(1 for p in self.placeholders if p.ready)

    @property
    def pending(self) -> bool:
        return any(p.node is None for p in self.pods) or any(p.node is None for p in self.placeholders)

    # --- events ------------------------------------------------------------------------------------------

    def _push(self, when: float, kind: str, obj: object) -> None:
        heapq.heappush(self._events, (when, next(self._seq), kind, obj))

    def next_event(self) -> float:
        return self._events[0][0] if self._events else math.inf

    def advance(self, now: float) -> None:
        while self._events and self._events[0][0] <= now:
            when, _, kind, obj = heapq.heappop(self._events)
            if kind == "node-ready":
                assert isinstance(obj, Node)
                self._node_ready(when, obj)
            elif kind == "pod-ready":
                assert isinstance(obj, Pod)
                if obj in self.pods and obj.ready_at == when:
                    obj.ready = True
            elif kind == "pod-gone":
                assert isinstance(obj, Pod)
                self._release(when, obj)
            elif kind == "consolidate":
                assert isinstance(obj, Node)
                self._consolidate(when, obj)
            elif kind == "disruption-pass":
                self._disruption_pass(when)
            elif kind == "interrupt":
                assert isinstance(obj, Node)
                self._interrupt(when, obj)
            elif kind == "reclaimed":
                assert isinstance(obj, Node)
                obj.terminated_at = when
            elif kind == "reservations-expiring":
                self._expire_reservations(when)

    # --- replica count -----------------------------------------------------------------------------------

    def set_replicas(self, now: float, replicas: int) -> None:
        """The ReplicaSet controller: create or delete pods to match `replicas`."""
        while len(self.pods) < replicas:
            pod = Pod(next(self._ids), now)
            self.pods.append(pod)
            self._schedule(now, pod)
        if len(self.pods) > replicas:
            victims = sorted(
                self.pods,
                key=lambda p: (p.node is not None, p.ready, -(p.ready_at or p.created_at), -p.id),
            )[: len(self.pods) - replicas]
            for pod in victims:
                self._delete(now, pod)

    def set_placeholders(self, now: float, count: int) -> None:
        """The placeholder Deployment resized (KEDA cron): create Pending ones, or delete the least useful
        first (Pending, then on launching nodes, then the newest Running)."""
        while len(self.placeholders) < count:
            pod = Pod(next(self._ids), now, placeholder=True)
            self.placeholders.append(pod)
            self._schedule(now, pod)
        if len(self.placeholders) > count:
            victims = sorted(
                self.placeholders, key=lambda p: (p.node is not None, p.ready, -p.created_at, -p.id)
            )[: len(self.placeholders) - count]
            for pod in victims:
                self.placeholders.remove(pod)
                self._unbind(now, pod)

    def reschedule_pending(self, now: float) -> None:
        """Pending pods retried, replicas before placeholders (the scheduler's priority queue)."""
        for pod in [*self.pods, *self.placeholders]:
            if pod.node is None:
                self._schedule(now, pod)

    # --- internals ---------------------------------------------------------------------------------------

    @property
    def reserved_in_use(self) -> int:
        return sum(1 for n in self.nodes if n.reserved and n.terminated_at is None)

    @property
    def reservation_free(self) -> bool:
        return not self.reservations_expired and self.reserved_in_use < self.cfg.reserved_nodes

    def _new_node(self, now: float, preexisting: bool = False, replica: bool = True) -> Node:
        ready_at = now if preexisting else now + self.node_boot
        reserved = self.reservation_free
        node = Node(
            next(self._ids), now, ready_at, 0.0 if reserved else self.cfg.price_per_hour,
            self.cfg.slots_per_node, preexisting=preexisting, image_cached=preexisting and replica,
            image_ready_at=ready_at if preexisting else ready_at + self.image_wait, reserved=reserved,
        )  # fmt: skip
        self.nodes.append(node)
        if not preexisting:
            self._push(ready_at, "node-ready", node)
        if self.cfg.spot and self.cfg.spot_interruptions_per_hour > 0 and not reserved:
            self._push(
                now + self.rng.exponential(3600 / self.cfg.spot_interruptions_per_hour), "interrupt", node
            )
        return node

    def _can_launch(self) -> bool:
        if not self.cfg.fallback and not self.reservation_free:
            return False  # a reserved-only pool: no free reservation, nothing else to buy
        if self.cfg.gpu_limit is None:
            return True
        live = sum(self.cfg.instance.gpus for n in self.nodes if n.terminated_at is None)
        return live + self.cfg.instance.gpus <= self.cfg.gpu_limit

    def _schedule(self, now: float, pod: Pod) -> None:
        """Bind to a Ready node's free slot; a replica next preempts a Running placeholder; then a launching
        node's free slot (a replica also before a placeholder waiting for it); else Karpenter launches a node
        within the limit, or the pod stays Pending."""
        usable = [n for n in self.nodes if n.terminated_at is None and not n.cordoned]
        ready = [n for n in usable if n.ready_at <= now]
        launching = [n for n in usable if n.ready_at > now]
        node = next((n for n in ready if n.free > 0), None)
        victim = None
        if node is None and not pod.placeholder:
            node, victim = self._placeholder_on(ready)
        if node is None:
            node = next((n for n in launching if n.free > 0), None)
        if node is None and not pod.placeholder:
            node, victim = self._placeholder_on(launching)
        if node is None and self._can_launch():
            node = self._new_node(now)
        if node is None:
            return
        if victim is not None:  # preempted: Pending again, scheduled once the replica holds its slot
            node.pods.remove(victim)
            victim.node, victim.ready, victim.ready_at = None, False, None
            self.preemptions += 1
        node.pods.append(pod)
        node.empty_since = None
        pod.node = node
        if node.ready_at <= now:
            self._start(now, pod, PREEMPTION_SECONDS if victim is not None else 0.0)
        if victim is not None:
            self._schedule(now, victim)

    @staticmethod
    def _placeholder_on(nodes: list[Node]) -> tuple[Node | None, Pod | None]:
        for node in nodes:
            victim = next((p for p in node.pods if p.placeholder), None)
            if victim is not None:
                return node, victim
        return None, None

    def _start(self, now: float, pod: Pod, extra: float = 0.0) -> None:
        node = pod.node
        assert node is not None
        if pod.placeholder:  # a pause container: Running at once
            pod.ready_at, pod.ready = now, True
            return
        start = self.start_on_warm_node if node.image_cached else self.start_on_fresh_node
        delay = extra + max(0.0, node.image_ready_at - now) + start
        node.image_cached = True
        pod.ready_at = now + delay
        self._push(pod.ready_at, "pod-ready", pod)

    def _node_ready(self, now: float, node: Node) -> None:
        if node.terminated_at is not None:
            return
        for pod in node.pods:
            if pod.ready_at is None:
                self._start(now, pod)
        if not node.pods:
            self._mark_empty(now, node)

    def _delete(self, now: float, pod: Pod) -> None:
        self.pods.remove(pod)
        pod.ready = False
        if pod.node is not None:
            self._push(now + (POD_DRAIN_SECONDS if pod.ready_at is not None else 0.0), "pod-gone", pod)

    def _release(self, now: float, pod: Pod) -> None:
        self._unbind(now, pod)

    def _unbind(self, now: float, pod: Pod) -> None:
        node = pod.node
        if node is None or pod not in node.pods:
            return
        node.pods.remove(pod)
        if not node.pods and node.terminated_at is None:
            self._mark_empty(max(now, node.ready_at), node)

    def _mark_empty(self, now: float, node: Node) -> None:
        node.empty_since = now
        self._push(now + self.cfg.consolidate_after, "consolidate", node)

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
            self._push(self._disruption_pass_at, "disruption-pass", self)

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
            self._push(self._disruption_pass_at, "disruption-pass", self)

    def _interrupt(self, now: float, node: Node) -> None:
        if node.terminated_at is not None:
            return
        self._evict(node)
        self._push(now + SPOT_NOTICE_SECONDS, "reclaimed", node)

    def _expire_reservations(self, now: float) -> None:
        """The Capacity Block is expiring: no launches into it from now on, its nodes drained and deleted."""
        self.reservations_expired = True
        for node in self.nodes:
            if node.reserved and node.terminated_at is None and not node.cordoned:
                self._evict(node)
                self._push(now + POD_DRAIN_SECONDS, "reclaimed", node)

    def _evict(self, node: Node) -> None:
        """Cordon the node and evict its pods: replicas are gone (the ReplicaSet recreates them), placeholders
        go Pending again."""
        node.cordoned = True
        for pod in list(node.pods):
            if pod in self.pods:
                self.pods.remove(pod)
            node.pods.remove(pod)
            if pod.placeholder:
                pod.node, pod.ready, pod.ready_at = None, False, None

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
