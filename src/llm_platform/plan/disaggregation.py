"""A disaggregated model's roles as the plan resolves them once: each role's Deployment and ScaledObject names,
tensor parallelism, GPUs and EFA interfaces per pod, replica bounds and the KEDA trigger it scales on. The
specs (components/specs/disaggregation.py), preflight and the policies read these; nothing recomputes them."""

from __future__ import annotations

from dataclasses import dataclass

from llm_platform.config.schema import GpuNodePool, ModelConfig
from llm_platform.plan import promql
from llm_platform.plan.scaling import MetricTrigger

ROLES = ("prefill", "decode")
# vLLM's NIXL side channel (envs.py VLLM_NIXL_SIDE_CHANNEL_PORT, default 5600; the scheduler adds the
# data-parallel rank, 0 here): where a decode pod's NixlConnector fetches the prefill pod's agent metadata
NIXL_SIDE_CHANNEL_PORT = 5600
# the decode pod's vLLM port behind the routing sidecar (llm-d-router v0.10.0 pkg/sidecar/proxy/options.go
# defaultVLLMPort "8200"; the sidecar takes the pool's port, 8000)
DECODE_VLLM_PORT = 8200


@dataclass(frozen=True)
class RolePlan:
    """One role of a disaggregated model."""

    role: str  # "prefill" or "decode"
    deployment: str  # the role's Deployment (its pods are named `<deployment>-<hash>-<id>`)
    scaled_object: str
    tensor_parallel_size: int  # = the pod's GPUs
    efa_per_pod: int  # the pod's share of its node's EFA interfaces (its GPU share of them)
    min_replicas: int
    max_replicas: int
    signal: str
    trigger: MetricTrigger

    @property
    def gpus(self) -> int:
        return self.tensor_parallel_size


@dataclass(frozen=True)
class DisaggregationPlan:
    kv_transport: str
    side_channel_port: int
    roles: tuple[RolePlan, ...]

    def role(self, name: str) -> RolePlan:
        return next(r for r in self.roles if r.role == name)

    @property
    def gpus_at_max_replicas(self) -> int:
        return sum(r.max_replicas * r.gpus for r in self.roles)


def role_pods(namespace: str, deployment: str) -> str:
    """A PromQL selector of one role's pods (the PodMonitor's `pod` label; the Deployment's pods only)."""
    return f'namespace="{namespace}",pod=~"{deployment}-[a-z0-9]+-[a-z0-9]+"'


def role_query(signal: str, namespace: str, model_name: str, deployment: str) -> tuple[str, str]:
    """The metric and the summed query a role's trigger reads (one series, for KEDA's Prometheus scaler)."""
    pods = f'{role_pods(namespace, deployment)},model_name="{model_name}"'
    if signal == "queueDepth":
        return promql.QUEUE, f"sum({promql.QUEUE}{{{pods}}})"
    if signal == "kvCacheUsage":
        return promql.KV_CACHE, f"sum({promql.KV_CACHE}{{{pods}}})"
    if signal == "runningRequests":
        return promql.RUNNING, f"sum({promql.RUNNING}{{{pods}}})"
    # ttft: the role's p90 over the throughput window times its replicas, so the HPA's per-replica average is
    # the p90 itself (AverageValue divides by the replica count)
    bucket = f"{promql.TTFT}_bucket"
    ready = f"count(count by (pod) ({promql.TTFT}_count{{{pods}}}))"
    p90 = f"histogram_quantile(0.9, sum by (le) (rate({bucket}{{{pods}}}[{promql.THROUGHPUT_WINDOW}])))"
    return promql.TTFT, f"sum({p90} * {ready})"


def resolve_disaggregation(
    model: ModelConfig, pool: GpuNodePool, namespace: str, deployment: str
) -> DisaggregationPlan | None:
    d = model.disaggregation
    if d is None:
        return None
    (efa,) = {
        i.efa_interfaces for i in pool.instances
    }  # one count per pool (config/schema/disaggregation.py)
    node_gpus = min(i.gpus for i in pool.instances)
    roles = []
    for role, spec in d.roles():
        name = f"{deployment}-{role}"
        metric, query = role_query(spec.autoscaling.signal, namespace, model.served_model_name, name)
        # 0 while none of the role's replicas is available yet (first rollout: no vLLM series exist), as the
        # aggregated model's triggers read; afterwards a missing series stays an error KEDA reports
        query = promql.until_a_replica_serves(query, namespace, name)
        roles.append(
            RolePlan(
                role=role,
                deployment=name,
                scaled_object=name,
                tensor_parallel_size=spec.tensor_parallel_size,
                efa_per_pod=efa * spec.tensor_parallel_size // node_gpus,
                min_replicas=spec.autoscaling.min_replicas,
                max_replicas=spec.autoscaling.max_replicas,
                signal=spec.autoscaling.signal,
                trigger=MetricTrigger(
                    name=f"{role}-{spec.autoscaling.signal}",
                    metric=metric,
                    query=query,
                    threshold=spec.autoscaling.target,
                ),
            )
        )
    return DisaggregationPlan(
        kv_transport=d.kv_transport, side_channel_port=NIXL_SIDE_CHANNEL_PORT, roles=tuple(roles)
    )
