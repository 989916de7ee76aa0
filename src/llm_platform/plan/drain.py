"""How long a vLLM pod needs to stop without cutting a stream: its drain plan, derived once from the model, its GPU
and tensor-parallel size with the simulator's replica model (simulator/serving/replica.py), and rendered as the
pod's preStop sleep, vLLM's `--shutdown-timeout` and `terminationGracePeriodSeconds` (components/specs/serving.py).

The order of a stop:
1. The pod is deleted. The gateway's endpoint picker (llm-d-router EPP v0.10.0) watches Pods, not
   EndpointSlices: its pod reconciler drops a pod from its datastore as soon as `IsPodReady` is false
   (pkg/epp/controller/pod_reconciler.go:98), and `IsPodReady` is false once the pod has a deletionTimestamp
   (pkg/epp/util/pod/pod.go:23-26). One watch event, so no new request is picked for the pod after it lands.
2. The preStop sleep (`PRESTOP_SLEEP_SECONDS`) keeps vLLM serving while that event reaches every EPP replica and
   requests the picker already sent reach the pod; only then does the kubelet send SIGTERM.
3. On SIGTERM vLLM rejects new requests and waits up to `--shutdown-timeout` seconds for the in-flight ones
   (vllm PR #34730, re-landed as #36666 for v0.18.0; the default 0 aborts them): the drain below. The flag is
   `EngineArgs.shutdown_timeout: int = 0` (vllm/engine/arg_utils.py, whole seconds, so the plan writes an int)
   and is still there at the pinned v0.30.0 (facts/versions.py VLLM_IMAGE): the v0.27 arg_utils carries it, and
   vllm PR #56886 (2026-09, after v0.30.0) and llm-d's graceful-shutdown guide (2026-09) drive
   `--shutdown-timeout` with these semantics; the v0.30.0 tree itself is over the source index's fetch limit.
4. `terminationGracePeriodSeconds` covers 2 and 3 plus the process's own exit (`EXIT_SECONDS`).

The drain: after SIGTERM no request is admitted, so the engine only decodes what it holds. The slowest step it
can then take carries one token for each of `max_num_seqs` running sequences while reading the whole KV cache;
the longest stream has at most `max_model_len` tokens left (prompt and output share the context), one per step.
So the longest generation takes at most max_model_len x that step, and the drain allows `DRAIN_MARGIN` over it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llm_platform.config.schema import ModelConfig
from llm_platform.facts.catalog import GpuModel
from llm_platform.plan.lora import LoraPlan
from llm_platform.simulator.serving.lora import LoraCost
from llm_platform.simulator.serving.replica import ReplicaModel
from llm_platform.simulator.serving.replica_config import EngineConfig

# EPP informer event to every EPP replica plus requests already routed (the value llm-d's graceful-shutdown
# recipe and KServe v0.19 use; ../shared/research/vllm_stack_anchors.md "Graceful shutdown")
PRESTOP_SLEEP_SECONDS = 15
# the replica model is checked within 20 % of published ITLs (simulator/serving/calibration_points.py TOLERANCE);
# requests queued before SIGTERM still prefill during the drain: 50 % over the physics bound covers both
DRAIN_MARGIN = 1.5
# vLLM's exit after the drain: engine-core and worker processes, NCCL and CUDA teardown
EXIT_SECONDS = 15


@dataclass(frozen=True)
class DrainPlan:
    """A replica's stop, in seconds: see the module doc."""

    slowest_step_seconds: float  # a decode-only step with max_num_seqs running and the KV cache full
    longest_generation_seconds: float  # max_model_len such steps
    shutdown_timeout_seconds: int  # vLLM `--shutdown-timeout`: the longest generation x DRAIN_MARGIN
    prestop_sleep_seconds: int
    termination_grace_seconds: int

    @property
    def cut_after_seconds(self) -> int:
        """A stream still running this long after its pod is told to stop is cut (SIGKILL)."""
        return self.termination_grace_seconds


def replica_model(
    model: ModelConfig, gpu: GpuModel, replica_gpus: int, lora: LoraPlan | None
) -> ReplicaModel:
    """The replica as the simulator runs it (simulator/search/stacks.py builds the same one)."""
    engine = EngineConfig(
        gpu_memory_utilization=model.gpu_memory_utilization, max_model_len=model.max_model_len
    )
    cost = (
        LoraCost.of(
            model.profile, adapters=len(lora.adapters), slots=lora.max_loras, max_rank=lora.max_lora_rank
        )
        if lora is not None
        else None
    )
    return ReplicaModel(model.profile, gpu, replica_gpus, engine, lora=cost)


def drain_plan(replica: ReplicaModel) -> DrainPlan:
    """The drain of a replica as the replica model runs it (its engine's max_model_len is the longest stream)."""
    max_num_seqs, _ = replica.limits
    step = replica.step_seconds(max_num_seqs, replica.kv_capacity_tokens)
    longest = replica.engine.max_model_len * step
    timeout = math.ceil(longest * DRAIN_MARGIN)
    return DrainPlan(
        slowest_step_seconds=step,
        longest_generation_seconds=longest,
        shutdown_timeout_seconds=timeout,
        prestop_sleep_seconds=PRESTOP_SLEEP_SECONDS,
        termination_grace_seconds=PRESTOP_SLEEP_SECONDS + timeout + EXIT_SECONDS,
    )
