"""The `modelCache` block: the model bucket, and the FSx for Lustre file system a model with `cache: fsx`
loads from."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from llm_platform.config.schema.base import RuleError, Schema

# Amazon FSx for Lustre capacity rules (FSx API reference, CreateFileSystem StorageCapacity):
# SCRATCH_2, PERSISTENT_1 and PERSISTENT_2 (SSD) take 1200 GiB, 2400 GiB, then multiples of 2400 GiB.
FSX_THROUGHPUT = {"SCRATCH_2": None, "PERSISTENT_2": (125, 250, 500, 1000)}


class FsxConfig(Schema):
    storage_capacity_gib: int = Field(default=1200, alias="storageCapacityGiB")
    deployment_type: Literal["SCRATCH_2", "PERSISTENT_2"] = "PERSISTENT_2"
    per_unit_storage_throughput: int | None = 250

    @model_validator(mode="after")
    def _lustre_rules(self) -> FsxConfig:
        cap = self.storage_capacity_gib
        if cap not in (1200, 2400) and (cap <= 0 or cap % 2400):
            raise RuleError(
                ("storageCapacityGiB",),
                cap,
                "is not a capacity FSx for Lustre accepts; allowed: 1200, 2400 or a multiple of 2400",
            )
        allowed = FSX_THROUGHPUT[self.deployment_type]
        if allowed is None and self.per_unit_storage_throughput is not None:
            raise RuleError(
                ("perUnitStorageThroughput",),
                self.per_unit_storage_throughput,
                f"is not allowed for {self.deployment_type}; allowed: leave it unset",
            )
        if allowed is not None and self.per_unit_storage_throughput not in allowed:
            raise RuleError(
                ("perUnitStorageThroughput",),
                self.per_unit_storage_throughput,
                f"is not allowed for {self.deployment_type}; allowed: {', '.join(map(str, allowed))} MB/s/TiB",
            )
        return self


class S3BucketConfig(Schema):
    force_destroy: bool = False
    noncurrent_version_days: int = Field(default=30, ge=1)


class ModelCacheConfig(Schema):
    s3_bucket: S3BucketConfig = Field(default_factory=S3BucketConfig)
    fsx: FsxConfig | None = None
