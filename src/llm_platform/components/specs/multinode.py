"""A model larger than one node, as a LeaderWorkerSet (kubernetes-sigs/lws v0.10.0, leaderworkerset.x-k8s.io/v1):
one group per replica, `size` = the replica's nodes, one pod per node holding all its GPUs and EFA interfaces.

- vLLM's native multi-node launch (the pinned image's docs/serving/parallelism_scaling.md "Running vLLM with
  MultiProcessing"): every pod runs `vllm serve` with the same model arguments plus `--pipeline-parallel-size N
  --nnodes N --node-rank R --master-addr <leader>`; the leader (rank 0) serves the OpenAI API, the workers run
  `--headless` (entrypoints/cli/serve.py run_headless: headless multiproc workers for multi-node PP/TP).
  LWS injects LWS_LEADER_ADDRESS and LWS_WORKER_INDEX (api/leaderworkerset/v1 leaderworkerset_types.go) into
  every container; Kubernetes expands `$(VAR)` in args from the container's env.
- Only the leader carries the model's selector labels, so the Service, the gateway's InferencePool, the
  PodMonitor and the NetworkPolicy see exactly one endpoint per replica; the scale subresource's selector is the
  leaders' too (CRD `status.hpaPodSelector`), so KEDA's per-replica averages are per group.
- `restartPolicy: RecreateGroupOnPodRestart` (the CRD's default, written out): a failed rank takes its group down
  and LWS recreates it whole; a half group cannot serve.
- EFA: each pod requests every EFA interface of its node (`vpc.amazonaws.com/efa`, the EFA device plugin's
  resource); libfabric/NCCL env below; IPC_LOCK to register (pin) GPU and host memory for RDMA (vLLM's
  GPUDirect RDMA notes); no huge pages are requested (FI_EFA_USE_HUGE_PAGE=0, so a node without preallocated
  2 MiB pages still schedules the pod).
"""

from __future__ import annotations

import copy
from typing import Any

from llm_platform.components.specs import serving
from llm_platform.components.specs.common import GPU_TOLERATION, addon_placement
from llm_platform.components.specs.model_cache import CacheWiring
from llm_platform.config.schema import GpuNodePool, ModelConfig
from llm_platform.facts.addons import EFA_DEVICE_PLUGIN, LWS
from llm_platform.facts.catalog import GPU_INSTANCES
from llm_platform.plan import ModelPlan
from llm_platform.plan.naming import model_selector

LWS_API = "leaderworkerset.x-k8s.io/v1"
MASTER_PORT = 29501  # vLLM ParallelConfig.master_port's default, written out: both ranks must agree
GROUP_LABEL = "leaderworkerset.sigs.k8s.io/name"  # LWS SetNameLabelKey, on every pod of the set
WORKER_ROLE = "llm-platform/multinode-role"

# libfabric and NCCL over EFA (aws-ofi-nccl reads FI_*; the socket interfaces carry NCCL's and torch's bootstrap)
EFA_ENV = (
    ("FI_PROVIDER", "efa"),
    ("FI_EFA_USE_DEVICE_RDMA", "1"),
    ("FI_EFA_USE_HUGE_PAGE", "0"),
    ("NCCL_SOCKET_IFNAME", "eth0"),
    ("GLOO_SOCKET_IFNAME", "eth0"),
    ("NCCL_DEBUG", "WARN"),
)


def efa_requests(m: ModelConfig, pool: GpuNodePool) -> dict[str, Any]:
    """What each pod of a multi-node replica requests of its node: every EFA interface it has."""
    (count,) = {i.efa_interfaces for i in pool.instances}
    return {"vpc.amazonaws.com/efa": str(count)}


def multinode_args(m: ModelPlan, rank: str, *, headless: bool) -> list[str]:
    return [
        "--pipeline-parallel-size",
        str(m.nodes),
        "--distributed-executor-backend",
        "mp",
        "--nnodes",
        str(m.nodes),
        "--node-rank",
        rank,
        "--master-addr",
        "$(LWS_LEADER_ADDRESS)",
        "--master-port",
        str(MASTER_PORT),
        *(["--headless"] if headless else []),
    ]


def _efa_container(container: dict[str, Any], m: ModelPlan) -> None:
    efa = efa_requests(m.model, m.pool)
    container["resources"]["requests"].update(efa)
    container["resources"]["limits"].update(efa)
    container["env"] += [{"name": k, "value": v} for k, v in EFA_ENV]
    container["securityContext"]["capabilities"] = {"drop": ["ALL"], "add": ["IPC_LOCK"]}


def worker_labels(m: ModelPlan, environment: str) -> dict[str, str]:
    """A worker's labels: the model's, but not its selector (nothing routes to or scrapes a headless rank)."""
    labels = {k: v for k, v in serving.labels(m, environment).items() if k not in model_selector(m.name)}
    return {**labels, WORKER_ROLE: "worker", "llm-platform/model": m.name}


def leader_worker_set(
    m: ModelPlan,
    *,
    environment: str,
    wiring: CacheWiring,
    mounts_hf_token: bool,
    priority_class: str | None = serving.SERVING_PRIORITY_CLASS,
) -> dict[str, Any]:
    """The model's LeaderWorkerSet, from the single-node Deployment's pod template (same image, cache wiring,
    secrets, probes on the leader) plus the multi-node launch and EFA."""
    deployment = serving.deployment(
        m,
        environment=environment,
        wiring=wiring,
        mounts_hf_token=mounts_hf_token,
        priority_class=priority_class,
    )
    template = deployment["spec"]["template"]
    template["spec"].pop("topologySpreadConstraints")  # one pod per node, nodes in one zone by the pool
    leader = copy.deepcopy(template)
    container = leader["spec"]["containers"][0]
    container["args"] = [*container["args"], *multinode_args(m, "0", headless=False)]
    _efa_container(container, m)
    leader["metadata"]["labels"] = {**leader["metadata"]["labels"], WORKER_ROLE: "leader"}

    worker = copy.deepcopy(template)
    worker["metadata"]["labels"] = worker_labels(m, environment)
    wcontainer = worker["spec"]["containers"][0]
    # the headless rank serves no HTTP: no ports, probes, or KV events; LWS recreates the group if it fails
    base = serving.vllm_args(m, wiring)
    kv = serving.kv_events_args(m.model)
    wcontainer["args"] = [a for a in base if a not in kv] + multinode_args(
        m, "$(LWS_WORKER_INDEX)", headless=True
    )
    for key in ("ports", "startupProbe", "readinessProbe", "livenessProbe"):
        wcontainer.pop(key, None)
    # a worker holds pipeline stages of the leader's in-flight streams: it takes SIGTERM only once the leader's
    # drain is over (the leader's preStop sleep plus its --shutdown-timeout), within the same grace period
    drain = m.drain
    wcontainer["lifecycle"] = {
        "preStop": {"sleep": {"seconds": drain.prestop_sleep_seconds + drain.shutdown_timeout_seconds}}
    }
    _efa_container(wcontainer, m)
    startup_budget = m.cold_start.startup_probe_seconds
    return {
        "apiVersion": LWS_API,
        "kind": "LeaderWorkerSet",
        "metadata": {
            "name": m.names.deployment,
            "namespace": m.names.namespace,
            "labels": serving.labels(m, environment),
            "annotations": {
                "pulumi.com/timeoutSeconds": str(startup_budget + serving.NODE_AND_WEIGHTS_SECONDS),
            },
        },
        "spec": {
            # no `replicas`: KEDA's HPA owns the count through the scale subresource
            "startupPolicy": "LeaderCreated",
            "rolloutStrategy": {"type": "RollingUpdate", "rollingUpdateConfiguration": rollout(m)},
            "leaderWorkerTemplate": {
                "size": m.nodes,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": leader,
                "workerTemplate": worker,
            },
        },
    }


def rollout(m: ModelPlan) -> dict[str, int]:
    """Surge one whole group when the pool's GPU limit has room for it with every model at maxReplicas, else
    replace one group at a time (LWS: maxUnavailable may not be 0 when maxSurge is 0)."""
    if m.pool_headroom_gpus >= m.replica_gpus:
        return {"maxSurge": 1, "maxUnavailable": 0}
    return {"maxSurge": 0, "maxUnavailable": 1}


def group_network_policy(m: ModelPlan) -> dict[str, Any]:
    """The ranks of a group reach each other (torch.distributed's store, NCCL's bootstrap, vLLM's messages;
    EFA traffic itself bypasses the kernel and so NetworkPolicy): every pod of the set from every pod of it."""
    pods = {"matchLabels": {GROUP_LABEL: m.names.deployment}}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": f"{m.name}-group", "namespace": m.names.namespace},
        "spec": {
            "podSelector": pods,
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"podSelector": pods}]}],
        },
    }


def worker_disruption_budget(m: ModelPlan) -> dict[str, Any]:
    """Evicting any rank stops its group: at most one replica's workers down at once (the leaders have the
    model's own budget)."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": f"{m.name}-workers", "namespace": m.names.namespace},
        "spec": {
            "maxUnavailable": m.nodes - 1,
            "selector": {"matchLabels": {WORKER_ROLE: "worker", "llm-platform/model": m.name}},
        },
    }


# ------------------------------------------------------------------------ controllers (Helm values)

LWS_NAMESPACE = LWS.namespace  # the chart's documented namespace (its record, llm_platform/facts/addons.py)
EFA_NAMESPACE = EFA_DEVICE_PLUGIN.namespace  # a node-critical DaemonSet like the VPC CNI


def lws_values() -> dict[str, Any]:
    """The LWS controller on the add-on nodes. Its chart (v0.10.0 values.yaml) takes the image tag from the
    release packaging (hack/push-chart.sh sets it to the tag), self-signs its webhook certificate without
    cert-manager (`enableCertManager: false`), and needs no Prometheus Operator objects here."""
    return {**addon_placement(), "enableCertManager": False, "enablePrometheus": False}


def efa_plugin_values() -> dict[str, Any]:
    """The EFA device plugin on the GPU nodes (which carry the GPU taint), on the catalog's instance types with
    EFA interfaces: the chart keeps the DaemonSet to the instance types of `supportedInstanceLabels`
    (aws/eks-charts aws-efa-k8s-device-plugin, a node affinity on `node.kubernetes.io/instance-type`), and a
    type missing from its own list (a newer family) would leave its pods' `vpc.amazonaws.com/efa` requests
    unschedulable; preflight reads the same list from the render."""
    efa_types = sorted(t for t, i in GPU_INSTANCES.items() if i.efa_interfaces > 0)
    return {
        "tolerations": [dict(GPU_TOLERATION)],
        "supportedInstanceLabels": {"keys": ["node.kubernetes.io/instance-type"], "values": efa_types},
    }
