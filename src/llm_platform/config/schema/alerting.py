"""The `alerting` block: where Alertmanager sends the platform's alerts."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from llm_platform.config.schema.base import RuleError, Schema


class AlertingConfig(Schema):
    """Where Alertmanager sends the platform's alerts. The receiver's URL (Slack incoming webhook, generic
    webhook, e.g. an SNS HTTPS subscription bridge) or PagerDuty routing key is the `alertReceiver` Pulumi
    secret; it reaches Alertmanager as a mounted Secret file, never as plain Helm values."""

    receiver: Literal["none", "slack", "pagerduty", "webhook"] = "none"
    slack_channel: Annotated[str, Field(pattern=r"^[#@]?[a-z0-9][a-z0-9._-]{0,79}$")] | None = None
    send_resolved: bool = True

    @model_validator(mode="after")
    def _receiver_fields(self) -> AlertingConfig:
        if self.receiver == "slack" and self.slack_channel is None:
            raise RuleError(
                ("slackChannel",),
                None,
                "is required by the slack receiver; allowed: a channel, e.g. '#llm-alerts'",
            )
        if self.receiver != "slack" and self.slack_channel is not None:
            raise RuleError(
                ("slackChannel",),
                self.slack_channel,
                f"is only used with receiver 'slack', not {self.receiver!r}; allowed: remove it",
            )
        return self
