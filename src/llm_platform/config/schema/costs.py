"""The `costs` block: cost allocation and each model's forecast, tied by a hash to the config it was
simulated for."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any

from pydantic import Field, field_validator

from llm_platform.config.schema.base import Environment, Schema
from llm_platform.config.schema.models import ModelConfig
from llm_platform.config.schema.pools import GpuNodePool

# a model's keys added to the schema after forecasts were written: left out of the hash while unset, so a
# schema addition does not make every forecast stale
# (a path below the model block; a one-key path is a key of the model block itself)
_LATER_KEYS = (
    ("autoscaling", "wakeRequestsPerSecond"),
    ("kvCacheOffload",),
    ("disaggregation",),
    ("rollout",),
)


def forecast_config_hash(model: ModelConfig, pool: GpuNodePool, environment: Environment) -> str:
    """What a cost forecast was simulated for: the model's block, its pool's block and the environment
    (everything the simulator reads from the stack file for one model), as 12 hex digits. `simulator replay`
    prints it next to the forecast; a forecast whose hash is not the deployed config's is stale."""
    model_doc = model.model_dump(mode="json", by_alias=True)
    for *blocks, key in _LATER_KEYS:  # unset, as in every config written before them: the hash they had
        block = model_doc
        for name in blocks:
            block = block[name]
        if block.get(key) is None:
            block.pop(key, None)
    doc = {
        "environment": environment.value,
        "model": model_doc,
        "pool": pool.model_dump(mode="json", by_alias=True),
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:12]


class CostForecast(Schema):
    """One model's forecast GPU cost per day, as `simulator replay <stack> --model <model>` prints it for
    the deployed config (paste the `costs.forecasts` entry it prints): the alert's yardstick."""

    model: str
    usd_per_day: Annotated[float, Field(gt=0)]
    config_hash: Annotated[str, Field(pattern=r"^[0-9a-f]{12}$")]
    source: str = ""  # what day it was replayed on (free text, shown on the dashboard)

    @field_validator("config_hash", mode="before")
    @classmethod
    def _quoted(cls, value: Any) -> Any:
        # YAML reads an unquoted all-digit hash (or one like 12e456789012) as a number, losing its digits
        if not isinstance(value, str):
            raise ValueError('12 hex digits as a quoted string, e.g. configHash: "08c40c006c5c"')
        return value


class ExpectedTraffic(Schema):
    """The traffic day `llm-platform plan` forecasts one model's $/day and SLO misses on: the built-in seed
    day or a day of its own (a CSV or a Prometheus query_range export, its path relative to the stack file),
    its request rate times `scale`. A model without an entry is planned on the seed day at 1x, and the plan
    says so."""

    model: str
    day: Annotated[str, Field(pattern=r"^(builtin:seed-day|.+\.(csv|json))$")] = "builtin:seed-day"
    scale: Annotated[float, Field(gt=0, le=1000)] = 1.0


class CostsConfig(Schema):
    """Cost allocation: OpenCost prices the nodes from the catalogs; recording rules give each model's and
    each gateway client's actual $/day and $/million tokens; an alert fires when a model's actual cost
    exceeds its forecast by more than `forecastOverrunShare`."""

    enabled: bool = False
    forecast_overrun_share: Annotated[float, Field(gt=0, le=10)] = 0.2
    forecasts: list[CostForecast] = []
    expected_traffic: list[ExpectedTraffic] = []
