"""The `cluster` block: the EKS cluster (or an existing one), its fixed system node group, the add-on
NodePool and the pinned AMI versions."""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from llm_platform.config.names import CLUSTER_NAME_MAX, CLUSTER_NAMES, tightest
from llm_platform.config.schema.base import Duration, Problems, RuleError, Schema, _dns_label
from llm_platform.facts.cpu_catalog import CpuInstance, cpu_families, cpu_instances, cpu_sizes


def _version_text(value: Any) -> Any:
    """YAML reads `1.30` as the number 1.3: a version must be quoted to survive."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise RuleError(
            (),
            value,
            "is a number in YAML, which drops trailing zeros (1.30 becomes 1.3); write the version in quotes, "
            'e.g. kubernetesVersion: "1.30"',
        )
    return value


# The oldest Kubernetes the platform's pods run on: the vLLM pod's preStop `sleep` action (PodLifecycleSleepAction,
# beta and on by default in 1.30) and its compile-cache saver, a native sidecar (an init container with
# `restartPolicy: Always`, SidecarContainers on by default since 1.29; on an older API server the field is
# dropped and the never-ending saver would hold vLLM back forever).
MIN_KUBERNETES_MINOR = 30


def _supported_version(value: str) -> str:
    if int(value.split(".")[1]) < MIN_KUBERNETES_MINOR:
        raise RuleError(
            (),
            value,
            f"is older than 1.{MIN_KUBERNETES_MINOR}, which the platform's pods need (the vLLM pod's preStop "
            "sleep action, 1.30; its compile-cache native sidecar, 1.29); "
            f'use "1.{MIN_KUBERNETES_MINOR}" or later',
        )
    return value


# where cluster.name's limit comes from (config/names.py): the name built from it with the least room
CLUSTER_NAME_WHY = f"the longest name built from it, the {tightest(CLUSTER_NAMES).what}, allows {tightest(CLUSTER_NAMES).limit}"


class SystemNodes(Schema):
    """The fixed on-demand managed node group for what must not run on Karpenter's nodes: Karpenter itself
    (two replicas on distinct nodes) and the EKS add-ons it needs to start (CoreDNS, the VPC CNI, kube-proxy).
    Nothing autoscales it; every other add-on runs on the add-on NodePool (`addonNodes`)."""

    instance_type: str = "m6i.large"
    min: int = Field(default=2, ge=1)
    max: int = Field(default=3, ge=1)
    # root volume of each system node: images and logs (EKS' default is 20 GiB)
    disk_size_gib: int = Field(default=100, ge=40, le=16384, alias="diskSizeGiB")

    @model_validator(mode="after")
    def _bounds(self) -> SystemNodes:
        if self.min > self.max:
            raise RuleError(("min",), self.min, f"is larger than max {self.max}; allowed: 1 to {self.max}")
        return self


AddonCapacityType = Literal["spot", "on-demand"]


class AddonNodes(Schema):
    """The Karpenter CPU NodePool every platform add-on runs on (kube-prometheus-stack, KEDA, the GPU
    Operator's controllers, the gateway and endpoint pickers, loader Jobs, the LB and FSx CSI controllers).
    Karpenter sizes it to what is pending; `cpuLimit`/`memoryLimitGiB` cap the node capacity it may launch
    (platform_checks.PlanChecks refuses limits that cannot hold every add-on at its maximum with the loader
    Jobs, on the resolved plan; preflight checks the render)."""

    instance_families: list[str] = Field(default_factory=lambda: ["m7i", "m6i", "m6a"], min_length=1)
    instance_sizes: list[str] = Field(default_factory=lambda: ["large", "xlarge", "2xlarge"], min_length=1)
    # unset: on-demand in prod; spot first with on-demand fallback in dev and staging
    capacity_types: list[AddonCapacityType] | None = Field(default=None, min_length=1)
    cpu_limit: int = Field(default=32, gt=0)  # vCPUs of node capacity (NodePool limits.cpu)
    memory_limit_gib: int = Field(default=128, gt=0, alias="memoryLimitGiB")
    consolidate_after: Duration = "5m"
    # share of the pool's nodes Karpenter may disrupt at once (consolidation, drift, expiry)
    disruption_budget_percent: int = Field(default=10, ge=1, le=100)
    expire_after: Duration = "720h"
    # root volume: images, logs and the model loader Job's one-shard-at-a-time copy
    disk_size_gib: int = Field(default=100, ge=40, le=16384, alias="diskSizeGiB")

    @model_validator(mode="after")
    def _catalog(self) -> AddonNodes:
        known, sizes = cpu_families(), cpu_sizes()
        for i, family in enumerate(self.instance_families):
            if family not in known:
                raise RuleError(
                    ("instanceFamilies", i),
                    family,
                    f"is not in the CPU catalog (facts/cpu_catalog.py); allowed: {', '.join(known)}",
                )
        for i, size in enumerate(self.instance_sizes):
            if size not in sizes:
                raise RuleError(("instanceSizes", i), size, f"is not allowed; allowed: {', '.join(sizes)}")
        if not self.instances:
            raise RuleError(
                ("instanceSizes",),
                self.instance_sizes,
                f"admits no catalog instance of {', '.join(self.instance_families)}",
            )
        return self

    @property
    def instances(self) -> list[CpuInstance]:
        return cpu_instances(self.instance_families, self.instance_sizes)


class AmiVersions(Schema):
    """Pinned Karpenter AMI alias versions per AMI family (`@latest` is allowed in dev only)."""

    al2023: Annotated[str, Field(pattern=r"^(latest|v[0-9]{8})$")] = "latest"
    bottlerocket: Annotated[str, Field(pattern=r"^(latest|v[0-9]+\.[0-9]+\.[0-9]+)$")] = "latest"


class ClusterConfig(Schema):
    mode: Literal["eks", "existing"] = "eks"
    name: Annotated[str, _dns_label(CLUSTER_NAME_MAX, CLUSTER_NAME_WHY)]
    kubernetes_version: Annotated[
        str,
        BeforeValidator(_version_text),
        Field(pattern=r"^1\.[0-9]{2}$"),
        AfterValidator(_supported_version),
    ] = "1.34"
    vpc_cidr: IPv4Network = IPv4Network("10.0.0.0/16")
    availability_zones: list[str] = Field(min_length=2, max_length=3)
    system_nodes: SystemNodes = Field(default_factory=SystemNodes)
    addon_nodes: AddonNodes = Field(default_factory=AddonNodes)
    endpoint_public_access: bool = True
    public_access_cidrs: list[IPv4Network] = Field(default_factory=lambda: [IPv4Network("0.0.0.0/0")])
    admin_role_arns: list[Annotated[str, Field(pattern=r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/.+$")]] = []
    ami_versions: AmiVersions = Field(default_factory=AmiVersions)
    # failed GPU nodes are found and replaced (components/specs/gpu_health.py): Karpenter's NodeRepair and EKS
    # node auto repair on the system node group; staging and prod require it (preflight `repair`)
    node_repair: bool = True
    # existing mode: reach a cluster someone else runs; no AWS resource is created
    kubeconfig: str | None = None
    context: str | None = None

    @model_validator(mode="after")
    def _shape(self) -> ClusterConfig:
        problems = Problems()
        zones = self.availability_zones
        for i, zone in enumerate(zones):
            if zone in zones[:i]:
                problems.errors.append(
                    RuleError(("availabilityZones", i), zone, "is listed twice; allowed: distinct zones")
                )
        if self.vpc_cidr.prefixlen > 20:
            problems.errors.append(
                RuleError(("vpcCidr",), str(self.vpc_cidr), "is too small; allowed: a /16 to /20 network")
            )
        if self.mode == "existing" and not self.kubeconfig:
            problems.errors.append(
                RuleError(
                    ("kubeconfig",),
                    self.kubeconfig,
                    "is required when cluster.mode is 'existing'; allowed: the path of a kubeconfig file",
                )
            )
        problems.raise_all()
        return self
