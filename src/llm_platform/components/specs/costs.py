"""What cost allocation looks like (`costs.enabled`): OpenCost reading the stack's Prometheus and pricing
nodes from the catalogs, the recording rules that turn its allocation into each model's and each gateway
client's actual $/day and $/million tokens, the simulator's forecast per model, and the overrun alert.

Upstream facts this relies on (opencost/opencost-helm-chart charts/opencost 2.5.17, app 1.120.1):
- values `opencost.prometheus.internal.{serviceName,namespaceName,port}` make PROMETHEUS_SERVER_ENDPOINT;
  `opencost.customPricing` writes the ConfigMap `custom-pricing-model` (templates/configmap-custom-pricing.yaml)
  and mounts it at `configPath`; `opencost.metrics.serviceMonitor` scrapes the exporter (honorLabels, so
  its own `node`, `namespace`, `pod` labels stay); `opencost.nodeSelector` / `opencost.tolerations`.
- OpenCost picks its pricing provider from the first node's providerID (pkg/cloud/provider/provider.go
  getClusterProperties): on EKS the AWS pricing API, unless USE_CUSTOM_PROVIDER=true (pkg/env), which makes
  it read the custom pricing file. Its custom provider holds ONE GPU price for every GPU type
  (pkg/cloud/provider/customprovider.go NodePricing: "TODO: support multiple custom gpu types"), so the
  platform's rules price each GPU node at its own catalog price instead (`llm_platform:instance_price_...`,
  one series per instance type the pools may launch) and use OpenCost for what it does well: which pod holds
  which GPUs on which node (`container_gpu_allocation{namespace,pod,node}`, `node_gpu_count{node}`,
  `node_total_hourly_cost{node,instance_type}`; pkg/costmodel/metrics.go).
- Per-client tokens come from Envoy AI Gateway's ext_proc (`gen_ai_client_token_usage_sum{gen_ai_token_type,
  gen_ai_request_model}`, site/docs/capabilities/observability/metrics.md at v1.1.0) with the client's id
  header mapped to the `llm_client` label (`controller.metricsRequestHeaderAttributes`, specs/gateway.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from llm_platform.components.specs.alerts import VALUE
from llm_platform.components.specs.common import ADDON_NODE_LABEL, ADDON_TOLERATION, rule_manifest
from llm_platform.config.schema import CostsConfig, GpuNodePool
from llm_platform.facts.catalog import GpuInstance
from llm_platform.facts.cpu_catalog import CPU_INSTANCES
from llm_platform.plan import ModelPlan
from llm_platform.plan.addon_pods import OPENCOST_EXPORTER
from llm_platform.plan.naming import MONITORING_NAMESPACE, PROMETHEUS_RELEASE
from llm_platform.plan.promql import (
    CLIENT_COST_DAILY,
    CLIENT_COST_HOURLY,
    CLIENT_PER_MTOK,
    CLIENT_TOKENS,
    FORECAST_DAILY,
    INSTANCE_PRICE,
    MODEL_COST_DAILY,
    MODEL_COST_HOURLY,
    MODEL_PER_MTOK,
    MODEL_TOKENS,
    NODE_GPU_PRICE,
    NODE_PRICE,
    UNALLOCATED_HOURLY,
)

RELEASE = "opencost"
RULE_NAME = "llm-platform-costs"
EVALUATION_INTERVAL_S = 60  # the rule group's interval: sum_over_time of a $/h series over 1d / 60 = $ spent
PROMETHEUS_PORT = 9090
CUSTOM_PRICING_PATH = "/tmp/custom-config"  # the chart's default `customPricing.configPath`

OVERRUN_ALERT = "ModelCostOverForecast"
OVERRUN_FOR = "30m"
# vLLM's token counters (shared/reference/README.md) and AI Gateway's token histogram
PROMPT_TOKENS = "vllm:prompt_tokens_total"
GENERATION_TOKENS = "vllm:generation_tokens_total"
GATEWAY_TOKENS = "gen_ai_client_token_usage_sum"
CLIENT_LABEL = "llm_client"  # AI Gateway's metric attribute `llm.client`, as Prometheus spells it


class PricingError(ValueError):
    """No known price for the stack's region (the catalogs never borrow another region's price)."""


def cpu_ram_prices(region: str) -> tuple[float, float]:
    """($/vCPU-h, $/GiB-h): a least-squares fit of price = a*vCPUs + b*GiB over every CPU catalog instance
    with a price in `region` (c: 2 GiB per vCPU, m: 4, r: 8 make the split determined)."""
    rows = [(i.vcpus, i.memory_gib, i.on_demand_usd_per_hour(region)) for i in CPU_INSTANCES.values()]
    rows = [r for r in rows if r[2] == r[2]]  # NaN: no price in region
    if not rows:
        raise PricingError(
            f"costs.enabled: facts/cpu_catalog.py has no CPU prices for region {region!r}; "
            "OpenCost's CPU and memory prices come from it (priced: us-east-1)"
        )
    a = np.array([[v, g] for v, g, _ in rows], dtype=float)
    (cpu, ram), *_ = np.linalg.lstsq(a, np.array([p for *_, p in rows]), rcond=None)
    return float(cpu), float(ram)


def gpu_instances(pools: Sequence[GpuNodePool]) -> list[GpuInstance]:
    """Every GPU instance type the pools may launch, once each, in catalog order."""
    seen: dict[str, GpuInstance] = {}
    for pool in pools:
        for i in pool.instances:
            seen.setdefault(i.instance_type, i)
    return list(seen.values())


def instance_prices(pools: Sequence[GpuNodePool], region: str) -> dict[str, float]:
    """On-demand $/h in `region` of each GPU instance type the pools may launch (reserved-only types have
    none: their nodes are prepaid blocks and get no series)."""
    prices: dict[str, float] = {}
    for i in gpu_instances(pools):
        if i.reserved_only:
            continue
        try:
            prices[i.instance_type] = i.on_demand_usd_per_hour(region)
        except ValueError as exc:
            raise PricingError(f"costs.enabled: {exc}") from None
    return prices


def custom_pricing(pools: Sequence[GpuNodePool], region: str) -> dict[str, str]:
    """OpenCost's custom price sheet: CPU and RAM from the CPU catalog fit; its one GPU price the mean, over
    the pools' instance types, of what a GPU node costs beyond its vCPUs and memory, per GPU (OpenCost's
    own UI and allocation API use it; the platform's rules price each node at its catalog price)."""
    cpu, ram = cpu_ram_prices(region)
    prices = instance_prices(pools, region)
    by_type = {i.instance_type: i for i in gpu_instances(pools)}
    per_gpu = [
        max(0.0, (p - cpu * by_type[t].vcpus - ram * by_type[t].memory_gib) / by_type[t].gpus)
        for t, p in prices.items()
    ]
    gpu = sum(per_gpu) / len(per_gpu) if per_gpu else 0.0
    return {
        "description": f"llm-platform catalogs, {region} on-demand (facts/catalog.py, facts/cpu_catalog.py)",
        "CPU": f"{cpu:.6f}",
        "spotCPU": f"{cpu:.6f}",
        "RAM": f"{ram:.6f}",
        "spotRAM": f"{ram:.6f}",
        "GPU": f"{gpu:.6f}",
        "storage": "0.00010959",  # gp3 $0.08 per GiB-month, per GiB-hour
        "zoneNetworkEgress": "0.01",
        "regionNetworkEgress": "0.01",
        "internetNetworkEgress": "0.09",
    }


def helm_values(*, cluster_name: str, pools: Sequence[GpuNodePool], region: str) -> dict[str, Any]:
    """The exporter only (no UI), on the add-on nodes, reading kube-prometheus-stack's Prometheus."""
    return {
        "opencost": {
            "nodeSelector": dict(ADDON_NODE_LABEL),
            "tolerations": [dict(ADDON_TOLERATION)],
            "exporter": {
                "defaultClusterId": cluster_name,
                "resources": {"requests": OPENCOST_EXPORTER.as_dict(), "limits": {"memory": "1Gi"}},
                "extraEnv": {"USE_CUSTOM_PROVIDER": "true"},
            },
            "customPricing": {
                "enabled": True,
                "provider": "custom",
                "configPath": CUSTOM_PRICING_PATH,
                "costModel": custom_pricing(pools, region),
            },
            "prometheus": {
                "internal": {
                    "enabled": True,
                    "serviceName": f"{PROMETHEUS_RELEASE}-prometheus",
                    "namespaceName": MONITORING_NAMESPACE,
                    "port": PROMETHEUS_PORT,
                }
            },
            # no `release` label needed: the stack's Prometheus selects every ServiceMonitor
            # (serviceMonitorSelectorNilUsesHelmValues: false, specs/observability.py)
            "metrics": {"serviceMonitor": {"enabled": True, "namespace": MONITORING_NAMESPACE}},
            "ui": {"enabled": False},
        }
    }


# ------------------------------------------------------------------------------------------- rules


def _num(value: float) -> str:
    return f"{value:.6g}"


def _model_rules(m: ModelPlan) -> list[dict[str, Any]]:
    labels = {"model_name": m.model.served_model_name, "namespace": m.names.namespace}
    ns = f'namespace="{m.names.namespace}"'
    sel = f'{{{ns}, model_name="{m.model.served_model_name}"}}'
    out = f'{{model_name="{m.model.served_model_name}"}}'
    return [
        {
            # the GPUs the model's pods hold on each node, at that node's catalog price per GPU
            "record": MODEL_COST_HOURLY,
            "expr": f"sum(sum by (node) (container_gpu_allocation{{{ns}}}) * on (node) group_left () {NODE_GPU_PRICE})",
            "labels": labels,
        },
        {
            "record": MODEL_TOKENS,
            "expr": f"sum(rate({PROMPT_TOKENS}{sel}[5m])) + sum(rate({GENERATION_TOKENS}{sel}[5m]))",
            "labels": labels,
        },
        {
            "record": MODEL_COST_DAILY,
            "expr": f"sum_over_time({MODEL_COST_HOURLY}{out}[1d]) / {3600 // EVALUATION_INTERVAL_S}",
            "labels": labels,
        },
        {
            "record": MODEL_PER_MTOK,
            "expr": (
                f"sum({MODEL_COST_DAILY}{out}) / (sum(increase({PROMPT_TOKENS}{sel}[1d])) "
                f"+ sum(increase({GENERATION_TOKENS}{sel}[1d]))) * 1e6"
            ),
            "labels": labels,
        },
    ]


def prometheus_rule(
    models: Sequence[ModelPlan], pools: Sequence[GpuNodePool], region: str, costs: CostsConfig
) -> dict[str, Any]:
    """Recording rules (prices, per-model and per-client cost and $/Mtok), the forecasts, the alert.

    why long: one PrometheusRule's groups, each rule a few lines of data, in the order each rule reads the
    ones before it."""
    prices = [
        {"record": INSTANCE_PRICE, "expr": f"vector({_num(p)})", "labels": {"instance_type": t}}
        for t, p in instance_prices(pools, region).items()
    ]
    nodes = [
        {
            "record": NODE_PRICE,
            "expr": (
                "max by (node, instance_type) (node_total_hourly_cost) * 0 "
                f"+ on (instance_type) group_left () {INSTANCE_PRICE}"
            ),
        },
        {
            "record": NODE_GPU_PRICE,
            "expr": f"{NODE_PRICE} / on (node) group_left () (max by (node) (node_gpu_count) > 0)",
        },
    ]
    model_rules = [r for m in models for r in _model_rules(m)]
    totals = [
        {
            # GPU nodes no model pod holds: launching, loading before the pod binds, headroom, empty
            "record": UNALLOCATED_HOURLY,
            "expr": f"sum({NODE_PRICE}) - (sum({MODEL_COST_HOURLY}) or vector(0))",
        }
    ]
    tokens = f'{GATEWAY_TOKENS}{{gen_ai_token_type=~"input|output"}}'
    clients = [
        {
            "record": CLIENT_TOKENS,
            "expr": (
                f"label_replace(sum by (gen_ai_request_model, {CLIENT_LABEL}) (rate({tokens}[5m])), "
                '"model_name", "$1", "gen_ai_request_model", "(.+)")'
            ),
        },
        {
            # the model's cost shared by the clients' token shares of the model
            "record": CLIENT_COST_HOURLY,
            "expr": (
                f"{CLIENT_TOKENS} / on (model_name) group_left () sum by (model_name) ({CLIENT_TOKENS}) "
                f"* on (model_name) group_left () max by (model_name) ({MODEL_COST_HOURLY})"
            ),
        },
        {
            "record": CLIENT_COST_DAILY,
            "expr": f"sum_over_time({CLIENT_COST_HOURLY}[1d]) / {3600 // EVALUATION_INTERVAL_S}",
        },
        {
            "record": CLIENT_PER_MTOK,
            "expr": (
                f"{CLIENT_COST_DAILY} / on (model_name, {CLIENT_LABEL}) label_replace(sum by "
                f'(gen_ai_request_model, {CLIENT_LABEL}) (increase({tokens}[1d])), "model_name", "$1", '
                '"gen_ai_request_model", "(.+)") * 1e6'
            ),
        },
    ]
    served = {m.name: m.model.served_model_name for m in models}
    forecasts = [
        {
            "record": FORECAST_DAILY,
            "expr": f"vector({_num(f.usd_per_day)})",
            "labels": {"model_name": served[f.model], "config_hash": f.config_hash},
        }
        for f in costs.forecasts
    ]
    share = costs.forecast_overrun_share
    alerts = [
        {
            "alert": OVERRUN_ALERT,
            "expr": (
                f"max by (model_name) ({MODEL_COST_DAILY}) > on (model_name) "
                f"max by (model_name) ({FORECAST_DAILY}) * {_num(1 + share)}"
            ),
            "for": OVERRUN_FOR,
            "labels": {"severity": "warning"},
            "annotations": {
                "summary": f"{{{{ $labels.model_name }}}} spent more than {share:.0%} over its forecast",
                "description": (
                    f"GPU cost of the last 24 h is ${VALUE}, above the simulator's forecast for the "
                    f"deployed config by more than {share:.0%} (costs.forecastOverrunShare). Replay the day "
                    "with `simulator replay --prometheus <url>` to see which phase (capacity, cold start, "
                    "idle) the difference comes from."
                ),
            },
        }
    ]
    groups = [
        {
            "name": "llm-platform-costs",
            "interval": f"{EVALUATION_INTERVAL_S}s",
            "rules": prices + nodes + model_rules + totals + clients + forecasts,
        }
    ]
    if forecasts:
        groups.append({"name": "llm-platform-cost-alerts", "rules": alerts})
    return rule_manifest(RULE_NAME, MONITORING_NAMESPACE, groups)
