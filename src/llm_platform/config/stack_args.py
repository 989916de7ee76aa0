"""The stack file's schema as typed args (camelCase keys, as in `Pulumi.<stack>.yaml`).

Generated from config/schema/ by `python -m llm_platform.tools.stack_args`; do not edit. The schema
validates every value; these types describe it to type checkers and to Pulumi's schema inference.
"""

from enum import StrEnum
from typing import TYPE_CHECKING, Literal, NotRequired, TypeAlias, TypedDict

from llm_platform.config.schema.base import Environment

__all__ = [
    "AddonNodesCapacityType",
    "AddonNodesCapacityTypeValue",
    "AddonNodesSettings",
    "AlertingReceiver",
    "AlertingReceiverValue",
    "AlertingSettings",
    "AmiVersionsSettings",
    "AutoscalingSettings",
    "CapacityReservationTermSettings",
    "ClusterMode",
    "ClusterModeValue",
    "ClusterSettings",
    "CostForecastSettings",
    "CostsSettings",
    "DisaggregationKvTransport",
    "DisaggregationKvTransportValue",
    "DisaggregationRoleSettings",
    "DisaggregationSettings",
    "Environment",
    "EnvironmentValue",
    "ExpectedTrafficSettings",
    "FsxDeploymentType",
    "FsxDeploymentTypeValue",
    "FsxSettings",
    "GatewayClientSettings",
    "GatewayClientTokenKind",
    "GatewayClientTokenKindValue",
    "GatewaySettings",
    "GpuNodePoolAmiFamily",
    "GpuNodePoolAmiFamilyValue",
    "GpuNodePoolCapacityType",
    "GpuNodePoolCapacityTypeValue",
    "GpuNodePoolSettings",
    "HeadroomSettings",
    "HeadroomWindowSettings",
    "KvCacheOffloadBackend",
    "KvCacheOffloadBackendValue",
    "KvCacheOffloadSettings",
    "LoraAdapterSettings",
    "ModelCacheKind",
    "ModelCacheKindValue",
    "ModelCacheSettings",
    "ModelGeometrySettings",
    "ModelRolloutSettings",
    "ModelRolloutStrategy",
    "ModelRolloutStrategyValue",
    "ModelSettings",
    "PrewarmWindowSettings",
    "QuotaStoreSettings",
    "RoleAutoscalingSettings",
    "RoleAutoscalingSignal",
    "RoleAutoscalingSignalValue",
    "RolloutAnalysisSettings",
    "RolloutCandidateSettings",
    "S3BucketSettings",
    "ScalingPolicySettings",
    "ScalingPolicyType",
    "ScalingPolicyTypeValue",
    "ScalingRulesSelectPolicy",
    "ScalingRulesSelectPolicyValue",
    "ScalingRulesSettings",
    "SloSettings",
    "SystemNodesSettings",
]


class AddonNodesCapacityType(StrEnum):
    """The values of AddonNodesSettings.capacityTypes."""

    SPOT = "spot"
    ON_DEMAND = "on-demand"


class AlertingReceiver(StrEnum):
    """The values of AlertingSettings.receiver."""

    NONE = "none"
    SLACK = "slack"
    PAGERDUTY = "pagerduty"
    WEBHOOK = "webhook"


class ClusterMode(StrEnum):
    """The values of ClusterSettings.mode."""

    EKS = "eks"
    EXISTING = "existing"


class DisaggregationKvTransport(StrEnum):
    """The values of DisaggregationSettings.kvTransport."""

    NIXL_LIBFABRIC = "nixl-libfabric"


class FsxDeploymentType(StrEnum):
    """The values of FsxSettings.deploymentType."""

    SCRATCH_2 = "SCRATCH_2"
    PERSISTENT_2 = "PERSISTENT_2"


class GatewayClientTokenKind(StrEnum):
    """The values of GatewayClientSettings.tokenKind."""

    INPUT = "input"
    OUTPUT = "output"
    TOTAL = "total"


class GpuNodePoolAmiFamily(StrEnum):
    """The values of GpuNodePoolSettings.amiFamily."""

    AL2023 = "al2023"
    BOTTLEROCKET = "bottlerocket"


class GpuNodePoolCapacityType(StrEnum):
    """The values of GpuNodePoolSettings.capacityTypes."""

    RESERVED = "reserved"
    SPOT = "spot"
    ON_DEMAND = "on-demand"


class KvCacheOffloadBackend(StrEnum):
    """The values of KvCacheOffloadSettings.backend."""

    NATIVE = "native"
    LMCACHE = "lmcache"


class ModelCacheKind(StrEnum):
    """The values of ModelSettings.cache."""

    NVME = "nvme"
    FSX = "fsx"
    S3 = "s3"
    HUB = "hub"


class ModelRolloutStrategy(StrEnum):
    """The values of ModelRolloutSettings.strategy."""

    CANARY = "canary"
    BLUEGREEN = "blueGreen"


class RoleAutoscalingSignal(StrEnum):
    """The values of RoleAutoscalingSettings.signal."""

    QUEUEDEPTH = "queueDepth"
    TTFT = "ttft"
    KVCACHEUSAGE = "kvCacheUsage"
    RUNNINGREQUESTS = "runningRequests"


class ScalingPolicyType(StrEnum):
    """The values of ScalingPolicySettings.type."""

    PODS = "Pods"
    PERCENT = "Percent"


class ScalingRulesSelectPolicy(StrEnum):
    """The values of ScalingRulesSettings.selectPolicy."""

    MAX = "Max"
    MIN = "Min"
    DISABLED = "Disabled"


# A field that takes an enum takes its members or their values as plain strings (`ClusterMode.EKS` or
# "eks"). At runtime its type is the enum alone: Pulumi's schema inference reads these annotations, takes
# no unions, and publishes each enum as an enum type of the provider's schema.
if TYPE_CHECKING:
    AddonNodesCapacityTypeValue: TypeAlias = AddonNodesCapacityType | Literal["spot", "on-demand"]
    AlertingReceiverValue: TypeAlias = AlertingReceiver | Literal["none", "slack", "pagerduty", "webhook"]
    ClusterModeValue: TypeAlias = ClusterMode | Literal["eks", "existing"]
    DisaggregationKvTransportValue: TypeAlias = DisaggregationKvTransport | Literal["nixl-libfabric"]
    EnvironmentValue: TypeAlias = Environment | Literal["dev", "staging", "prod"]
    FsxDeploymentTypeValue: TypeAlias = FsxDeploymentType | Literal["SCRATCH_2", "PERSISTENT_2"]
    GatewayClientTokenKindValue: TypeAlias = GatewayClientTokenKind | Literal["input", "output", "total"]
    GpuNodePoolAmiFamilyValue: TypeAlias = GpuNodePoolAmiFamily | Literal["al2023", "bottlerocket"]
    GpuNodePoolCapacityTypeValue: TypeAlias = (
        GpuNodePoolCapacityType | Literal["reserved", "spot", "on-demand"]
    )
    KvCacheOffloadBackendValue: TypeAlias = KvCacheOffloadBackend | Literal["native", "lmcache"]
    ModelCacheKindValue: TypeAlias = ModelCacheKind | Literal["nvme", "fsx", "s3", "hub"]
    ModelRolloutStrategyValue: TypeAlias = ModelRolloutStrategy | Literal["canary", "blueGreen"]
    RoleAutoscalingSignalValue: TypeAlias = (
        RoleAutoscalingSignal | Literal["queueDepth", "ttft", "kvCacheUsage", "runningRequests"]
    )
    ScalingPolicyTypeValue: TypeAlias = ScalingPolicyType | Literal["Pods", "Percent"]
    ScalingRulesSelectPolicyValue: TypeAlias = ScalingRulesSelectPolicy | Literal["Max", "Min", "Disabled"]
else:
    AddonNodesCapacityTypeValue = AddonNodesCapacityType
    AlertingReceiverValue = AlertingReceiver
    ClusterModeValue = ClusterMode
    DisaggregationKvTransportValue = DisaggregationKvTransport
    EnvironmentValue = Environment
    FsxDeploymentTypeValue = FsxDeploymentType
    GatewayClientTokenKindValue = GatewayClientTokenKind
    GpuNodePoolAmiFamilyValue = GpuNodePoolAmiFamily
    GpuNodePoolCapacityTypeValue = GpuNodePoolCapacityType
    KvCacheOffloadBackendValue = KvCacheOffloadBackend
    ModelCacheKindValue = ModelCacheKind
    ModelRolloutStrategyValue = ModelRolloutStrategy
    RoleAutoscalingSignalValue = RoleAutoscalingSignal
    ScalingPolicyTypeValue = ScalingPolicyType
    ScalingRulesSelectPolicyValue = ScalingRulesSelectPolicy


class SystemNodesSettings(TypedDict):
    """The fixed on-demand managed node group for what must not run on Karpenter's nodes: Karpenter itself (two replicas on distinct nodes) and the EKS add-ons it needs to start (CoreDNS, the VPC CNI, kube-proxy). Nothing autoscales it; every other add-on runs on the add-on NodePool (`addonNodes`)."""

    instanceType: NotRequired[str]
    """default 'm6i.large'."""
    min: NotRequired[int]
    """>= 1; default 2."""
    max: NotRequired[int]
    """>= 1; default 3."""
    diskSizeGiB: NotRequired[int]
    """>= 40; <= 16384; default 100."""


class AddonNodesSettings(TypedDict):
    """The Karpenter CPU NodePool every platform add-on runs on (kube-prometheus-stack, KEDA, the GPU Operator's controllers, the gateway and endpoint pickers, loader Jobs, the LB and FSx CSI controllers). Karpenter sizes it to what is pending; `cpuLimit`/`memoryLimitGiB` cap the node capacity it may launch (platform_checks.PlanChecks refuses limits that cannot hold every add-on at its maximum with the loader Jobs, on the resolved plan; preflight checks the render)."""

    instanceFamilies: NotRequired[list[str]]
    """at least 1 items; default ['m7i', 'm6i', 'm6a']."""
    instanceSizes: NotRequired[list[str]]
    """at least 1 items; default ['large', 'xlarge', '2xlarge']."""
    capacityTypes: NotRequired[list[AddonNodesCapacityTypeValue]]
    """one of 'spot', 'on-demand'; at least 1 items."""
    cpuLimit: NotRequired[int]
    """> 0; default 32."""
    memoryLimitGiB: NotRequired[int]
    """> 0; default 128."""
    consolidateAfter: NotRequired[str]
    """default '5m'."""
    disruptionBudgetPercent: NotRequired[int]
    """>= 1; <= 100; default 10."""
    expireAfter: NotRequired[str]
    """default '720h'."""
    diskSizeGiB: NotRequired[int]
    """>= 40; <= 16384; default 100."""


class AmiVersionsSettings(TypedDict):
    """Pinned Karpenter AMI alias versions per AMI family (`@latest` is allowed in dev only)."""

    al2023: NotRequired[str]
    """matches ^(latest|v[0-9]{8})$; default 'latest'."""
    bottlerocket: NotRequired[str]
    """matches ^(latest|v[0-9]+\\.[0-9]+\\.[0-9]+)$; default 'latest'."""


class ClusterSettings(TypedDict):
    """The stack file's ClusterConfig."""

    mode: NotRequired[ClusterModeValue]
    """one of 'eks', 'existing'; default 'eks'."""
    name: str
    kubernetesVersion: NotRequired[str]
    """matches ^1\\.[0-9]{2}$; default '1.34'."""
    vpcCidr: NotRequired[str]
    """default IPv4Network('10.0.0.0/16')."""
    availabilityZones: list[str]
    """at least 2 items; at most 3 items."""
    systemNodes: NotRequired[SystemNodesSettings]
    """default: the schema's defaults."""
    addonNodes: NotRequired[AddonNodesSettings]
    """default: the schema's defaults."""
    endpointPublicAccess: NotRequired[bool]
    """default True."""
    publicAccessCidrs: NotRequired[list[str]]
    """default [IPv4Network('0.0.0.0/0')]."""
    adminRoleArns: NotRequired[list[str]]
    amiVersions: NotRequired[AmiVersionsSettings]
    """default: the schema's defaults."""
    nodeRepair: NotRequired[bool]
    """default True."""
    kubeconfig: NotRequired[str]
    context: NotRequired[str]


class HeadroomWindowSettings(TypedDict):
    """Warm GPUs held during a cron window (a KEDA cron trigger on the pool's placeholder Deployment)."""

    start: str
    end: str
    timezone: NotRequired[str]
    """default 'UTC'."""
    gpus: int
    """>= 0."""


class HeadroomSettings(TypedDict):
    """GPUs kept warm in a pool by low-priority placeholder pods, so a burst shorter than a cold start lands on a running node: `gpus` outside any window, `schedule` windows raise it."""

    gpus: NotRequired[int]
    """>= 0; default 0."""
    schedule: NotRequired[list[HeadroomWindowSettings]]


class CapacityReservationTermSettings(TypedDict):
    """One EC2NodeClass `capacityReservationSelectorTerms` entry: a reservation by id, or every reservation carrying these tags (optionally only those owned by `ownerID`, e.g. shared from another account)."""

    id: NotRequired[str]
    tags: NotRequired[dict[str, str]]
    ownerID: NotRequired[str]


class GpuNodePoolSettings(TypedDict):
    """The stack file's GpuNodePool."""

    name: str
    instanceFamilies: list[str]
    """at least 1 items."""
    instanceSizes: NotRequired[list[str]]
    capacityTypes: NotRequired[list[GpuNodePoolCapacityTypeValue]]
    """one of 'reserved', 'spot', 'on-demand'; at least 1 items; default ['on-demand']."""
    amiFamily: NotRequired[GpuNodePoolAmiFamilyValue]
    """one of 'al2023', 'bottlerocket'; default 'al2023'."""
    gpuLimit: int
    """> 0."""
    consolidateAfter: NotRequired[str]
    """default '5m'."""
    expireAfter: NotRequired[str]
    """default '720h'."""
    mig: NotRequired[bool]
    """default False."""
    headroom: NotRequired[HeadroomSettings]
    capacityReservations: NotRequired[list[CapacityReservationTermSettings]]
    placementZone: NotRequired[str]


class ScalingPolicySettings(TypedDict):
    """The stack file's ScalingPolicy."""

    type: ScalingPolicyTypeValue
    """one of 'Pods', 'Percent'."""
    value: int
    """> 0."""
    periodSeconds: int
    """> 0; <= 1800."""


class ScalingRulesSettings(TypedDict):
    """HPA `behavior.scaleUp` / `scaleDown`; unset fields take the Kubernetes defaults."""

    stabilizationWindowSeconds: NotRequired[int]
    """>= 0; <= 3600."""
    selectPolicy: NotRequired[ScalingRulesSelectPolicyValue]
    """one of 'Max', 'Min', 'Disabled'."""
    policies: NotRequired[list[ScalingPolicySettings]]


class PrewarmWindowSettings(TypedDict):
    """Capacity held ready before a known surge (a KEDA cron trigger)."""

    name: str
    start: str
    end: str
    timezone: NotRequired[str]
    """default 'UTC'."""
    replicas: int
    """> 0."""


class AutoscalingSettings(TypedDict):
    """The stack file's Autoscaling."""

    minReplicas: NotRequired[int]
    """>= 0; default 1."""
    maxReplicas: NotRequired[int]
    """>= 1; default 4."""
    queueDepthPerReplica: NotRequired[float]
    """> 0; default 5."""
    kvCacheUsage: NotRequired[float]
    """> 0; <= 1; default 0.8."""
    requestsPerSecondPerReplica: NotRequired[float]
    """> 0."""
    pollingInterval: NotRequired[int]
    """> 0; <= 300; default 10."""
    cooldownPeriod: NotRequired[int]
    """>= 0; default 300."""
    allowScaleToZero: NotRequired[bool]
    """default False."""
    wakeRequestsPerSecond: NotRequired[float]
    """> 0."""
    scaleUp: NotRequired[ScalingRulesSettings]
    """default: the schema's defaults."""
    scaleDown: NotRequired[ScalingRulesSettings]
    """default: the schema's defaults."""
    prewarm: NotRequired[list[PrewarmWindowSettings]]


class SloSettings(TypedDict):
    """The stack file's Slo."""

    ttftSeconds: float
    """> 0."""
    itlSeconds: float
    """> 0."""


class ModelGeometrySettings(TypedDict):
    """A model the built-in table (facts/model_profiles.py) does not know, described from its Hugging Face `config.json` and model card, so the platform (GPU fit, cold start) and the simulator can size it."""

    parameters: float
    """> 0."""
    layers: int
    """> 0."""
    kvHeads: int
    """> 0."""
    headDim: int
    """> 0."""
    weightBits: NotRequired[int]
    """one of 4, 8, 16; default 16."""
    hiddenSize: NotRequired[int]
    """>= 0; default 0."""
    vocabSize: NotRequired[int]
    """>= 0; default 0."""
    tiedEmbeddings: NotRequired[bool]
    """default False."""


class LoraAdapterSettings(TypedDict):
    """A LoRA adapter of the model (config/schema/adapters.py): served by the model's vLLM under its own name."""

    name: str
    source: str
    revision: NotRequired[str]
    rank: int
    """>= 1."""


class KvCacheOffloadSettings(TypedDict):
    """A CPU tier of `cpuGiBPerReplica` GiB per replica (all its tensor-parallel ranks together, vLLM's `kv_offloading_size`), read by `native` (vLLM's OffloadingConnector) or `lmcache` (LMCacheConnectorV1)."""

    backend: NotRequired[KvCacheOffloadBackendValue]
    """one of 'native', 'lmcache'; default 'native'."""
    cpuGiBPerReplica: float
    """> 0; <= 4096."""


class RoleAutoscalingSettings(TypedDict):
    """One role's KEDA ScaledObject: its replica bounds and the one vLLM signal it scales on, per replica (queueDepth: requests waiting; ttft: p90 seconds; kvCacheUsage: fill 0..1; runningRequests: sequences)."""

    minReplicas: NotRequired[int]
    """>= 1; default 1."""
    maxReplicas: NotRequired[int]
    """>= 1; default 2."""
    signal: RoleAutoscalingSignalValue
    """one of 'queueDepth', 'ttft', 'kvCacheUsage', 'runningRequests'."""
    target: float
    """> 0."""


class DisaggregationRoleSettings(TypedDict):
    """The stack file's DisaggregationRole."""

    tensorParallelSize: NotRequired[int]
    """default 1."""
    autoscaling: RoleAutoscalingSettings


class DisaggregationSettings(TypedDict):
    """The stack file's Disaggregation."""

    kvTransport: NotRequired[DisaggregationKvTransportValue]
    """one of 'nixl-libfabric'; default 'nixl-libfabric'."""
    prefill: DisaggregationRoleSettings
    decode: DisaggregationRoleSettings


class RolloutAnalysisSettings(TypedDict):
    """What the canary must hold at every analysis run; unset latencies default to the model's `slo`."""

    ttftP95Seconds: NotRequired[float]
    """> 0."""
    itlP95Seconds: NotRequired[float]
    """> 0."""
    maxErrorRate: NotRequired[float]
    """>= 0; < 1; default 0.01."""
    maxThrottleRate: NotRequired[float]
    """>= 0; < 1; default 0.05."""
    failureLimit: NotRequired[int]
    """>= 0; <= 10; default 1."""
    intervalSeconds: NotRequired[int]
    """>= 30; <= 600; default 60."""


class RolloutCandidateSettings(TypedDict):
    """The version to roll out: what differs from the model's own `image` and `extraArgs`."""

    image: NotRequired[str]
    extraArgs: NotRequired[list[str]]


class ModelRolloutSettings(TypedDict):
    """The stack file's ModelRollout."""

    strategy: NotRequired[ModelRolloutStrategyValue]
    """one of 'canary', 'blueGreen'; default 'canary'."""
    steps: NotRequired[list[int]]
    stepSeconds: NotRequired[int]
    """>= 60; <= 86400; default 600."""
    analysis: NotRequired[RolloutAnalysisSettings]
    """default: the schema's defaults."""
    candidate: NotRequired[RolloutCandidateSettings]


class ModelSettings(TypedDict):
    """The stack file's ModelConfig."""

    name: str
    huggingFaceId: str
    """matches ^[A-Za-z0-9][\\w.-]*/[\\w.-]+$."""
    image: NotRequired[str]
    """default 'vllm/vllm-openai:v0.30.0'."""
    nodePool: str
    tensorParallelSize: NotRequired[int]
    """default 1."""
    pipelineParallelSize: NotRequired[int]
    """>= 1; <= 16; default 1."""
    maxModelLen: int
    """>= 1."""
    gpuMemoryUtilization: NotRequired[float]
    """> 0; < 1; default 0.9."""
    cache: ModelCacheKindValue
    """one of 'nvme', 'fsx', 's3', 'hub'."""
    needsHfToken: NotRequired[bool]
    """default False."""
    extraArgs: NotRequired[list[str]]
    autoscaling: NotRequired[AutoscalingSettings]
    """default: the schema's defaults."""
    slo: SloSettings
    precisePrefixRouting: NotRequired[bool]
    """default False."""
    geometry: NotRequired[ModelGeometrySettings]
    adapters: NotRequired[list[LoraAdapterSettings]]
    """at most 63 items."""
    adapterSlots: NotRequired[int]
    """>= 1."""
    kvCacheOffload: NotRequired[KvCacheOffloadSettings]
    disaggregation: NotRequired[DisaggregationSettings]
    rollout: NotRequired[ModelRolloutSettings]


class S3BucketSettings(TypedDict):
    """The stack file's S3BucketConfig."""

    forceDestroy: NotRequired[bool]
    """default False."""
    noncurrentVersionDays: NotRequired[int]
    """>= 1; default 30."""


class FsxSettings(TypedDict):
    """The stack file's FsxConfig."""

    storageCapacityGiB: NotRequired[int]
    """default 1200."""
    deploymentType: NotRequired[FsxDeploymentTypeValue]
    """one of 'SCRATCH_2', 'PERSISTENT_2'; default 'PERSISTENT_2'."""
    perUnitStorageThroughput: NotRequired[int]
    """default 250."""


class ModelCacheSettings(TypedDict):
    """The stack file's ModelCacheConfig."""

    s3Bucket: NotRequired[S3BucketSettings]
    """default: the schema's defaults."""
    fsx: NotRequired[FsxSettings]


class GatewayClientSettings(TypedDict):
    """A caller of the gateway: its key is in the `gatewayClientKeys` Pulumi secret under this name."""

    name: str
    """matches ^[a-z][a-z0-9-]{0,62}$."""
    requestsPerMinute: int
    """> 0."""
    requestsPerSecond: NotRequired[int]
    """> 0."""
    tokensPerMinute: NotRequired[int]
    """> 0."""
    tokensPerDay: NotRequired[int]
    """> 0."""
    tokenKind: NotRequired[GatewayClientTokenKindValue]
    """one of 'input', 'output', 'total'; default 'total'."""


class QuotaStoreSettings(TypedDict):
    """The store of the global rate limit's counters: a Valkey StatefulSet with a persistent volume, read and written by Envoy Gateway's rate limit service. With it every client's limits are global (one bucket per client across all Envoy replicas and routes), not per replica."""

    storageGiB: NotRequired[int]
    """>= 1; <= 1000; default 4."""
    rateLimitReplicas: NotRequired[int]
    """>= 1; <= 10; default 2."""


class GatewaySettings(TypedDict):
    """The stack file's GatewayConfig."""

    enabled: NotRequired[bool]
    """default False."""
    internal: NotRequired[bool]
    """default True."""
    certificateArn: NotRequired[str]
    replicas: NotRequired[int]
    """>= 1; default 2."""
    maxPendingPerReplica: NotRequired[int]
    """>= 1; default 32."""
    clients: NotRequired[list[GatewayClientSettings]]
    quotaStore: NotRequired[QuotaStoreSettings]


class AlertingSettings(TypedDict):
    """Where Alertmanager sends the platform's alerts. The receiver's URL (Slack incoming webhook, generic webhook, e.g. an SNS HTTPS subscription bridge) or PagerDuty routing key is the `alertReceiver` Pulumi secret; it reaches Alertmanager as a mounted Secret file, never as plain Helm values."""

    receiver: NotRequired[AlertingReceiverValue]
    """one of 'none', 'slack', 'pagerduty', 'webhook'; default 'none'."""
    slackChannel: NotRequired[str]
    sendResolved: NotRequired[bool]
    """default True."""


class CostForecastSettings(TypedDict):
    """One model's forecast GPU cost per day, as `simulator replay <stack> --model <model>` prints it for the deployed config (paste the `costs.forecasts` entry it prints): the alert's yardstick."""

    model: str
    usdPerDay: float
    """> 0."""
    configHash: str
    """matches ^[0-9a-f]{12}$."""
    source: NotRequired[str]
    """default ''."""


class ExpectedTrafficSettings(TypedDict):
    """The traffic day `llm-platform plan` forecasts one model's $/day and SLO misses on: the built-in seed day or a day of its own (a CSV or a Prometheus query_range export, its path relative to the stack file), its request rate times `scale`. A model without an entry is planned on the seed day at 1x, and the plan says so."""

    model: str
    day: NotRequired[str]
    """matches ^(builtin:seed-day|.+\\.(csv|json))$; default 'builtin:seed-day'."""
    scale: NotRequired[float]
    """> 0; <= 1000; default 1.0."""


class CostsSettings(TypedDict):
    """Cost allocation: OpenCost prices the nodes from the catalogs; recording rules give each model's and each gateway client's actual $/day and $/million tokens; an alert fires when a model's actual cost exceeds its forecast by more than `forecastOverrunShare`."""

    enabled: NotRequired[bool]
    """default False."""
    forecastOverrunShare: NotRequired[float]
    """> 0; <= 10; default 0.2."""
    forecasts: NotRequired[list[CostForecastSettings]]
    expectedTraffic: NotRequired[list[ExpectedTrafficSettings]]
