"""llm-platform's CrossGuard policies, importable without starting a policy pack.

`PolicyPack(...)` starts a gRPC server and never returns, so it is constructed only in policy/__main__.py;
tests import the policies from here and call `policy.validate(args, report_violation)` directly.
"""

from __future__ import annotations

from pulumi_policy import ResourceValidationPolicy, StackValidationPolicy

from .autoscaling import (
    AUTOSCALING_POLICIES,
    keda_prometheus_queries,
    prod_vllm_min_replicas,
    vllm_no_utilisation_autoscaling,
)
from .efa import EFA_POLICIES, pd_role_ports, vllm_efa_pods
from .kv_offload import KV_OFFLOAD_POLICIES, vllm_kv_offload_memory
from .nodes import NODE_POLICIES, gpu_nodes_imdsv2
from .workloads import (
    WORKLOAD_POLICIES,
    no_plaintext_secret_env,
    prod_vllm_zone_spread,
    vllm_environment_label,
    vllm_graceful_drain,
    vllm_no_hub_downloads_outside_dev,
    vllm_shm_for_tensor_parallel,
    vllm_tensor_parallel_within_node,
)

PACK_NAME = "llm-platform"

ALL_POLICIES: list[ResourceValidationPolicy | StackValidationPolicy] = [
    *AUTOSCALING_POLICIES,
    *WORKLOAD_POLICIES,
    *KV_OFFLOAD_POLICIES,
    *NODE_POLICIES,
    *EFA_POLICIES,
]

__all__ = [
    "ALL_POLICIES",
    "PACK_NAME",
    "gpu_nodes_imdsv2",
    "keda_prometheus_queries",
    "no_plaintext_secret_env",
    "pd_role_ports",
    "prod_vllm_min_replicas",
    "prod_vllm_zone_spread",
    "vllm_efa_pods",
    "vllm_environment_label",
    "vllm_graceful_drain",
    "vllm_kv_offload_memory",
    "vllm_no_hub_downloads_outside_dev",
    "vllm_no_utilisation_autoscaling",
    "vllm_shm_for_tensor_parallel",
    "vllm_tensor_parallel_within_node",
]
