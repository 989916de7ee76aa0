"""The `gateway` block: the inference gateway, its clients and their quotas, and the store of the global
rate limit's counters."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from llm_platform.config.schema.base import Problems, RuleError, Schema, _unique


class GatewayClient(Schema):
    """A caller of the gateway: its key is in the `gatewayClientKeys` Pulumi secret under this name."""

    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,62}$")]
    requests_per_minute: int = Field(gt=0)
    # quotas enforced across every Envoy replica by Envoy Gateway's global rate limit (needs
    # gateway.quotaStore); tokens as AI Gateway counts them from the response's usage (llmRequestCosts)
    requests_per_second: int | None = Field(default=None, gt=0)
    tokens_per_minute: int | None = Field(default=None, gt=0)
    tokens_per_day: int | None = Field(default=None, gt=0)
    token_kind: Literal["input", "output", "total"] = "total"

    @property
    def has_quota(self) -> bool:
        return any(
            v is not None for v in (self.requests_per_second, self.tokens_per_minute, self.tokens_per_day)
        )


class QuotaStoreConfig(Schema):
    """The store of the global rate limit's counters: a Valkey StatefulSet with a persistent volume, read and
    written by Envoy Gateway's rate limit service. With it every client's limits are global (one bucket per
    client across all Envoy replicas and routes), not per replica."""

    storage_gib: int = Field(default=4, ge=1, le=1000, alias="storageGiB")
    rate_limit_replicas: int = Field(default=2, ge=1, le=10)


# keys of the hand-written Envoy gateway that the inference gateway replaced: what to write instead
REMOVED_GATEWAY_KEYS = {
    "maxInflightPerReplica": (
        "the endpoint picker now decides when a vLLM replica is saturated from vLLM's own queue and KV "
        "cache (thresholds derived from each model's autoscaling targets); delete the key, and use "
        "gateway.maxPendingPerReplica to bound the gateway's queue"
    ),
}


class GatewayConfig(Schema):
    enabled: bool = False
    internal: bool = True
    certificate_arn: (
        Annotated[str, Field(pattern=r"^arn:aws[a-z-]*:acm:[a-z0-9-]+:[0-9]{12}:certificate/.+$")] | None
    ) = None
    replicas: int = Field(default=2, ge=1)
    # requests the gateway holds per vLLM replica (at autoscaling.maxReplicas) once the model's replicas are
    # saturated; past it, or after the queue timeout, it answers 429. 0 would mean "unbounded" to the EPP.
    max_pending_per_replica: int = Field(default=32, ge=1)
    clients: list[GatewayClient] = []
    quota_store: QuotaStoreConfig | None = None

    @model_validator(mode="before")
    @classmethod
    def _removed_keys(cls, data: object) -> object:
        if isinstance(data, dict):
            for key, instead in REMOVED_GATEWAY_KEYS.items():
                if key in data:
                    raise RuleError((key,), data[key], f"is no longer a setting: {instead}")
        return data

    @model_validator(mode="after")
    def _rules(self) -> GatewayConfig:
        problems = Problems()
        with problems.check():
            _unique(("clients",), [c.name for c in self.clients])
        if self.enabled and not self.clients:
            problems.errors.append(
                RuleError(
                    ("clients",),
                    [],
                    "is empty; an enabled gateway needs at least one client; allowed: 1 or more",
                )
            )
        if self.quota_store is None:
            for i, c in enumerate(self.clients):
                for key, value in (
                    ("requestsPerSecond", c.requests_per_second),
                    ("tokensPerMinute", c.tokens_per_minute),
                    ("tokensPerDay", c.tokens_per_day),
                ):
                    if value is not None:
                        problems.errors.append(
                            RuleError(
                                ("clients", i, key),
                                value,
                                f"(client {c.name}) is a global quota: it needs `gateway.quotaStore: {{}}` (the "
                                "store of the counters every Envoy replica shares); without it only "
                                "requestsPerMinute applies, per replica",
                            )
                        )
        if self.enabled and not self.internal and self.certificate_arn is None:
            problems.errors.append(
                RuleError(
                    ("certificateArn",),
                    None,
                    "is required by an internet-facing gateway (internal: false); allowed: an ACM certificate ARN",
                )
            )
        problems.raise_all()
        return self
