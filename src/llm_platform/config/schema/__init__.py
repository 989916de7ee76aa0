"""The stack configuration: one pydantic schema, validated in full before any resource is registered.

YAML keys are camelCase under the `llm-platform:` namespace (`llm-platform:models`, ...); Python uses
snake_case. Every rule that needs more than one field (a model's pool, tensor parallelism against the
pool's largest instance, prod-only rules) lives in `StackConfig`'s validators, so a bad stack file fails
with the field path, the bad value and what is allowed.

One module per block of the stack file, so each stays readable on its own: `base` (the base model, RuleError,
the checked string types), `cluster`, `pools` (gpuNodePools, headroom), `adapters` (a model's LoRA adapters),
`models` (models, autoscaling), `model_cache`, `gateway`, `alerting`, `costs`, `capacity` (a pool's GPUs against
its models), `multinode` (models larger than one node against their pool), `serving` (the rules of the models,
their pools, the model cache and the gateway) and `stack` (StackConfig, ServingConfig and the rules across
blocks). No module imports the package or one that imports it back (tests/test_import_graph.py). Import from
here: every name is re-exported.
"""

from __future__ import annotations

from llm_platform.config.schema.adapters import (
    HUB_REVISION,
    HUB_SOURCE,
    MAX_ADAPTERS,
    RESERVED_LORA_FLAGS,
    S3_SOURCE,
    VLLM_MAX_LORA_RANKS,
    LoraAdapter,
    check_adapter_rank,
    check_adapter_source,
    is_s3,
    max_lora_rank,
)
from llm_platform.config.schema.alerting import AlertingConfig
from llm_platform.config.schema.base import (
    CRON,
    DNS_LABEL,
    DURATION,
    Cron,
    Duration,
    Environment,
    Problems,
    RuleError,
    RuleErrors,
    Schema,
    Timezone,
    did_you_mean,
    duration_seconds,
    plural,
)
from llm_platform.config.schema.capacity import (
    GIB,
    gpus_at_max_replicas,
    gpus_at_min_replicas,
    replica_gpus,
    served_by,
    weights_and_kv_gib,
)
from llm_platform.config.schema.cluster import (
    CLUSTER_NAME_WHY,
    MIN_KUBERNETES_MINOR,
    AddonCapacityType,
    AddonNodes,
    AmiVersions,
    ClusterConfig,
    SystemNodes,
)
from llm_platform.config.schema.costs import CostForecast, CostsConfig, ExpectedTraffic, forecast_config_hash
from llm_platform.config.schema.gateway import (
    REMOVED_GATEWAY_KEYS,
    GatewayClient,
    GatewayConfig,
    QuotaStoreConfig,
)
from llm_platform.config.schema.model_cache import FSX_THROUGHPUT, FsxConfig, ModelCacheConfig, S3BucketConfig
from llm_platform.config.schema.models import (
    PROD_MIN_REPLICAS,
    RESERVED_FLAGS,
    UNSUPPORTED_PARALLELISM,
    Autoscaling,
    ModelConfig,
    ModelGeometry,
    PrewarmWindow,
    ScalingPolicy,
    ScalingRules,
    Slo,
    check_adapters,
    refuse_unsupported_parallelism,
    replica_floor,
)
from llm_platform.config.schema.multinode import (
    check_fits_nodes,
    check_multi_node_model,
    check_multi_node_pools,
)
from llm_platform.config.schema.pools import (
    AWS_ACCOUNT_ID,
    CAPACITY_RESERVATION_ID,
    MAX_RESERVATION_TAGS,
    MAX_RESERVATION_TERMS,
    CapacityReservationTerm,
    CapacityType,
    GpuNodePool,
    Headroom,
    HeadroomWindow,
)
from llm_platform.config.schema.rollout import ModelRollout, RolloutAnalysis, RolloutCandidate
from llm_platform.config.schema.serving import ServingBlocks, check_scale_to_zero, scale_to_zero_allowed
from llm_platform.config.schema.stack import STACK_RULES, ServingConfig, StackConfig, StackRule

__all__ = [
    "AWS_ACCOUNT_ID",
    "CAPACITY_RESERVATION_ID",
    "CLUSTER_NAME_WHY",
    "CRON",
    "DNS_LABEL",
    "DURATION",
    "FSX_THROUGHPUT",
    "GIB",
    "HUB_REVISION",
    "HUB_SOURCE",
    "MAX_ADAPTERS",
    "MAX_RESERVATION_TAGS",
    "MAX_RESERVATION_TERMS",
    "MIN_KUBERNETES_MINOR",
    "PROD_MIN_REPLICAS",
    "REMOVED_GATEWAY_KEYS",
    "RESERVED_FLAGS",
    "RESERVED_LORA_FLAGS",
    "S3_SOURCE",
    "STACK_RULES",
    "UNSUPPORTED_PARALLELISM",
    "VLLM_MAX_LORA_RANKS",
    "AddonCapacityType",
    "AddonNodes",
    "AlertingConfig",
    "AmiVersions",
    "Autoscaling",
    "CapacityReservationTerm",
    "CapacityType",
    "ClusterConfig",
    "CostForecast",
    "CostsConfig",
    "Cron",
    "Duration",
    "Environment",
    "ExpectedTraffic",
    "FsxConfig",
    "GatewayClient",
    "GatewayConfig",
    "GpuNodePool",
    "Headroom",
    "HeadroomWindow",
    "LoraAdapter",
    "ModelCacheConfig",
    "ModelConfig",
    "ModelGeometry",
    "ModelRollout",
    "PrewarmWindow",
    "Problems",
    "QuotaStoreConfig",
    "RolloutAnalysis",
    "RolloutCandidate",
    "RuleError",
    "RuleErrors",
    "S3BucketConfig",
    "ScalingPolicy",
    "ScalingRules",
    "Schema",
    "ServingBlocks",
    "ServingConfig",
    "Slo",
    "StackConfig",
    "StackRule",
    "SystemNodes",
    "Timezone",
    "check_adapter_rank",
    "check_adapter_source",
    "check_adapters",
    "check_fits_nodes",
    "check_multi_node_model",
    "check_multi_node_pools",
    "check_scale_to_zero",
    "did_you_mean",
    "duration_seconds",
    "forecast_config_hash",
    "gpus_at_max_replicas",
    "gpus_at_min_replicas",
    "is_s3",
    "max_lora_rank",
    "plural",
    "refuse_unsupported_parallelism",
    "replica_floor",
    "replica_gpus",
    "scale_to_zero_allowed",
    "served_by",
    "weights_and_kv_gib",
]
