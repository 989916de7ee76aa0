"""The pods of one Deployment on the GPU nodes Karpenter gives them (serving/nodepool.py): where a pod binds,
when it is Ready, GPU headroom, and what scale-down deletes.

- A pod that needs a GPU binds to a Ready node with a free GPU (warm: image and node caches present), else to
  a node Karpenter is already launching, else Karpenter launches one (facts/cold_start.py gives launch, boot,
  pull, load and init times).
- Scale-down deletes pods in the ReplicaSet's order (unbound, then not Ready, then the newest Ready); the GPU
  is free after the pod drains, and a node left empty is Karpenter's to consolidate.
- GPU headroom (the pool's placeholders): placeholder pods hold one replica's slot each. A replica that finds
  no free slot on a Ready node preempts a Running placeholder there (PREEMPTION_SECONDS, then the start of a
  node whose image and weights the pre-pull and sync DaemonSets already put there) or takes a launching
  node's slot before the placeholder waiting for it; the evicted placeholder goes Pending and Karpenter
  launches a node for it, within the pool's `gpu_limit`. Pending pods are retried as capacity frees.
- A node's image (and NVMe weights) are there `max(image pull, prefetch)` after it is Ready, whoever asked for
  it; the compile cache only once a replica has started there.
- A node Karpenter takes away (spot interruption, an expiring Capacity Block) evicts its pods: the ReplicaSet
  recreates the replicas, the placeholders go Pending.
"""

from __future__ import annotations

from itertools import count

import numpy as np

from llm_platform.facts.cold_start import PREEMPTION_SECONDS
from llm_platform.simulator.serving.capacity_config import CapacityConfig, start_times
from llm_platform.simulator.serving.nodepool import POD_DRAIN_SECONDS, Events, Node, NodePool, Pod


class Cluster:
    """Pods of one Deployment and the node pool behind them; advance(t) applies due events."""

    def __init__(
        self,
        cfg: CapacityConfig,
        rng: np.random.Generator,
        initial_replicas: int = 0,
        initial_placeholders: int = 0,
    ):
        self.pods: list[Pod] = []
        self.placeholders: list[Pod] = []
        self.preemptions = 0
        self.events = Events()
        self._ids = count()
        starts = start_times(cfg)
        self.nodepool = NodePool(cfg, rng, self.events, starts, self._start_bound, self._evict)
        self.start_on_new_node = starts.new_node - starts.node_ready
        self.start_on_fresh_node = starts.fresh_node
        self.start_on_warm_node = starts.warm_node
        nodes = self.nodepool.nodes
        for _ in range(initial_replicas):
            # the day starts with the replicas packed as the scheduler left them: a node's free GPUs first
            node = next((n for n in nodes if n.free > 0), None)
            if node is None and not (cfg.fallback or self.nodepool.reservation_free):
                self.pods.append(Pod(next(self._ids), 0.0))  # a reserved-only pool holds no more: Pending
                continue
            node = node or self.nodepool.new_node(0.0, preexisting=True)
            pod = Pod(next(self._ids), 0.0, node, 0.0, True)
            node.pods.append(pod)
            self.pods.append(pod)
        for _ in range(initial_placeholders):
            free = [n for n in nodes if n.free > 0]
            if not free and not (cfg.fallback or self.nodepool.reservation_free):
                self.placeholders.append(Pod(next(self._ids), 0.0, placeholder=True))
                continue
            node = free[0] if free else self.nodepool.new_node(0.0, preexisting=True, replica=False)
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
    def warm_placeholders(self) -> int:
        """Placeholders Running on Ready nodes: replicas that can start without a new node."""
        return sum(1 for p in self.placeholders if p.ready)

    @property
    def pending(self) -> bool:
        return any(p.node is None for p in self.pods) or any(p.node is None for p in self.placeholders)

    # --- events ------------------------------------------------------------------------------------------

    def next_event(self) -> float:
        return self.events.next_at()

    def advance(self, now: float) -> None:
        self.events.run(now)

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

    def _schedule(self, now: float, pod: Pod) -> None:
        """Bind to a Ready node's free slot; a replica next preempts a Running placeholder; then a launching
        node's free slot (a replica also before a placeholder waiting for it); else Karpenter launches a node
        within the limit, or the pod stays Pending."""
        usable = [n for n in self.nodepool.nodes if n.terminated_at is None and not n.cordoned]
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
        if node is None and self.nodepool.can_launch():
            node = self.nodepool.new_node(now)
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
        self.events.push(pod.ready_at, self._pod_ready, pod)

    def _start_bound(self, now: float, node: Node) -> None:
        """The node is Ready: the pods bound to it while it launched start."""
        for pod in node.pods:
            if pod.ready_at is None:
                self._start(now, pod)

    def _pod_ready(self, now: float, pod: Pod) -> None:
        if pod in self.pods and pod.ready_at == now:
            pod.ready = True

    def _delete(self, now: float, pod: Pod) -> None:
        self.pods.remove(pod)
        pod.ready = False
        if pod.node is not None:
            self.events.push(
                now + (POD_DRAIN_SECONDS if pod.ready_at is not None else 0.0), self._unbind, pod
            )

    def _unbind(self, now: float, pod: Pod) -> None:
        node = pod.node
        if node is None or pod not in node.pods:
            return
        node.pods.remove(pod)
        if not node.pods and node.terminated_at is None:
            self.nodepool.mark_empty(max(now, node.ready_at), node)

    def fail_node(self, now: float) -> int:
        """The node serving the most Ready replicas loses a GPU (serving/nodepool.py `fail`); the replicas lost."""

        def serving(n: Node) -> int:
            return sum(1 for p in n.pods if p.ready and not p.placeholder)

        nodes = [n for n in self.nodepool.nodes if n.terminated_at is None and not n.cordoned]
        node = max(nodes, key=serving, default=None)
        if node is None or serving(node) == 0:
            return 0
        lost = serving(node)
        self.nodepool.fail(now, node)
        return lost

    def _evict(self, node: Node) -> None:
        """Karpenter cordoned the node: its replicas are gone (the ReplicaSet recreates them), its placeholders
        go Pending again."""
        for pod in list(node.pods):
            if pod in self.pods:
                self.pods.remove(pod)
            node.pods.remove(pod)
            if pod.placeholder:
                pod.node, pod.ready, pod.ready_at = None, False, None
