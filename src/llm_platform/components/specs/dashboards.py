"""Grafana dashboards as plain dicts, shipped as ConfigMaps the kube-prometheus-stack Grafana sidecar loads.

The chart's sidecar (`grafana.sidecar.dashboards`, label `grafana_dashboard: "1"`, searchNamespace ALL)
picks up every ConfigMap carrying the label; each `data` key is one dashboard file.

- `vllm_dashboard()`: one model at a time, chosen with the `namespace` and `model_name` variables; the
  queries are the project's own (`plan.promql`), so the dashboard and the KEDA triggers
  agree on metric names.
- `gpu_dashboard()`: DCGM exporter metrics per node (`Hostname`) and GPU. The GPU Operator's exporter is
  scraped with `honorLabels: false`, so the pod a GPU serves shows as `exported_pod`/`exported_namespace`.

Panels use the `datasource` variable (default: the chart's `Prometheus` datasource, uid `prometheus`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from llm_platform.components.specs.alerts import DEPLOYMENT_READY, HPA_CURRENT, HPA_DESIRED, HPA_MAX
from llm_platform.components.specs.dashboard_building import _dashboard, _panel, _query_variable
from llm_platform.plan import promql
from llm_platform.plan.naming import keda_hpa_name

SIDECAR_LABEL = "grafana_dashboard"
SIDECAR_LABEL_VALUE = "1"
RATE = "$__rate_interval"

# DCGM exporter fields (dcgm-exporter default counters; GR_ENGINE_ACTIVE is a profiling field)
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
FB_USED = "DCGM_FI_DEV_FB_USED"
FB_FREE = "DCGM_FI_DEV_FB_FREE"
POWER = "DCGM_FI_DEV_POWER_USAGE"
TEMP = "DCGM_FI_DEV_GPU_TEMP"
GR_ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
XID = "DCGM_FI_DEV_XID_ERRORS"

GPU_NOTE = """\
### Why GPU utilisation is not a scaling signal

`DCGM_FI_DEV_GPU_UTIL` is the share of time *any* kernel ran on the GPU. A vLLM engine with a single
request in flight keeps a kernel running almost all the time, so it reads close to 100% at low and at
saturating load alike. GPU memory says even less: vLLM preallocates `--gpu-memory-utilization` (90% by
default) of it for the KV cache at start-up, whatever the traffic.

The platform therefore scales on vLLM's own demand signals: requests waiting
(`vllm:num_requests_waiting`) and KV-cache usage (`vllm:kv_cache_usage_perc`), read by KEDA. Use this
dashboard for hardware health and capacity: XID errors, temperature, power, and how busy the compute
engines really are (`DCGM_FI_PROF_GR_ENGINE_ACTIVE`).
"""


# ------------------------------------------------------------------------------------------------ vLLM


def vllm_dashboard(
    *, deployment: str = "$model_name", scaled_object: str = "$model_name", roles: bool = False
) -> dict[str, Any]:
    """The per-model vLLM dashboard.

    why long: a list of panels, each a few lines of data (title, queries, unit, place) over the same
    selectors, in the order Grafana shows them.

    `deployment` and `scaled_object` say how the serving component names a model's Deployment and
    ScaledObject, as Grafana templates over `$model_name` (e.g. `"vllm-$model_name"`). `roles`: the stack
    serves a disaggregated model, whose Deployments and ScaledObjects are per role (`<name>-prefill`,
    `<name>-decode`, plan/disaggregation.py): a panel shows each role's replicas, which the aggregated
    panel's `deployment="<name>"` never matches.
    """
    ns, model = "$namespace", "$model_name"
    sel = promql.selector(ns, model)

    def quantiles(histogram: str) -> list[tuple[str, str]]:
        return [
            (promql.latency_quantile(histogram, q, ns, model, RATE), f"P{round(q * 100)}")
            for q in (0.5, 0.95, 0.99)
        ]

    hpa = f'{{namespace="{ns}",horizontalpodautoscaler="{keda_hpa_name(scaled_object)}"}}'
    panels = [
        _panel(
            "Time to first token",
            quantiles(promql.TTFT),
            unit="s",
            description="P50/P95/P99 of vllm:time_to_first_token_seconds: queueing plus prefill.",
        ),
        _panel(
            "Inter-token latency",
            quantiles(promql.ITL),
            unit="s",
            description="P50/P95/P99 of vllm:inter_token_latency_seconds: the decode step time users feel.",
        ),
        _panel(
            "End-to-end request latency",
            quantiles(promql.E2E),
            unit="s",
            description="P50/P95/P99 of vllm:e2e_request_latency_seconds.",
        ),
        _panel(
            "Requests waiting",
            [
                (promql.queue_depth(ns, model), "all replicas (KEDA trigger)"),
                (f"sum by (pod) ({promql.QUEUE}{sel})", "{{pod}}"),
            ],
            unit="short",
            description="vllm:num_requests_waiting; the total is the query KEDA scales on.",
        ),
        _panel(
            "Requests running",
            [
                (f"sum({promql.RUNNING}{sel})", "all replicas"),
                (f"sum by (pod) ({promql.RUNNING}{sel})", "{{pod}}"),
            ],
            unit="short",
            description="vllm:num_requests_running: requests in the running batch.",
        ),
        _panel(
            "KV-cache usage",
            [
                (f"max by (pod) ({promql.KV_CACHE}{sel})", "{{pod}}"),
                (f"avg({promql.KV_CACHE}{sel})", "average (KEDA trigger / replicas)"),
            ],
            unit="percentunit",
            description="vllm:kv_cache_usage_perc (0..1) per pod; above 95% requests queue and get preempted.",
        ),
        _panel(
            "Requests completed per second",
            [
                (promql.served_throughput(ns, model), "all replicas (served-throughput trigger)"),
                (
                    f"{promql.served_throughput(ns, model)} / count({promql.RUNNING}{sel})",
                    "per replica (vs requestsPerSecondPerReplica)",
                ),
            ],
            unit="reqps",
            description=(
                "rate(vllm:request_success_total) over the served-throughput trigger's window; per replica, "
                "what KEDA compares with requestsPerSecondPerReplica when that trigger is on."
            ),
        ),
        _panel(
            "Tokens per second",
            [
                (f"sum(rate({promql.PROMPT_TOKENS}{sel}[{RATE}]))", "prompt"),
                (f"sum(rate({promql.GENERATION_TOKENS}{sel}[{RATE}]))", "generation"),
            ],
            unit="short",
            description="Prompt (prefill) and generated (decode) tokens per second across replicas.",
        ),
        _panel(
            "Preemptions",
            [(f"sum by (pod) (rate({promql.PREEMPTIONS}{sel}[{RATE}]))", "{{pod}}")],
            unit="short",
            description="vllm:num_preemptions_total per second: requests evicted for lack of KV cache.",
        ),
        _panel(
            "Replicas: desired vs ready",
            [
                (f"max({HPA_DESIRED}{hpa})", "desired (HPA)"),
                (f"max({HPA_CURRENT}{hpa})", "current (HPA)"),
                (
                    f'max({DEPLOYMENT_READY}{{namespace="{ns}",deployment="{deployment}"}})',
                    "ready (Deployment)",
                ),
                # a multi-node model's replicas: its Ready leader pods (kube-state-metrics reports no
                # LeaderWorkerSet); empty for a Deployment, whose pod names never match
                (f"sum({promql.replicas_available(ns, deployment, multi_node=True)})", "ready (groups)"),
                (f"max({HPA_MAX}{hpa})", "maximum"),
            ],
            unit="short",
            width=24,
            description="kube-state-metrics: what KEDA's HPA wants against pods that passed readiness (a "
            "multi-node model: Ready leaders, one per group); the gap is node provisioning, image pull and "
            "weight loading.",
        ),
    ]
    if roles:
        panels.append(_roles_panel(ns, deployment, scaled_object))
    variables = [
        _query_variable("namespace", "Namespace", f"label_values({promql.RUNNING}, namespace)"),
        _query_variable(
            "model_name", "Model", f'label_values({promql.RUNNING}{{namespace="{ns}"}}, model_name)'
        ),
    ]
    return _dashboard(
        "llm-platform-vllm",
        "vLLM serving",
        "Latency against SLO, queue, KV cache, throughput and replicas of one served model.",
        variables,
        panels,
    )


def _roles_panel(ns: str, deployment: str, scaled_object: str) -> dict[str, Any]:
    """A disaggregated model's replicas per role: each role's HPA (KEDA's, per role ScaledObject) against its
    Deployment's ready pods; empty for an aggregated model, whose names carry no role suffix."""
    role_deployments = f'namespace="{ns}",deployment=~"{deployment}-(prefill|decode)"'
    role_hpas = f'namespace="{ns}",horizontalpodautoscaler=~"{keda_hpa_name(scaled_object)}-(prefill|decode)"'
    return _panel(
        "Replicas per role (disaggregated models)",
        [
            (
                f"max by (horizontalpodautoscaler) ({HPA_DESIRED}{{{role_hpas}}})",
                "desired {{horizontalpodautoscaler}}",
            ),
            (f"max by (deployment) ({DEPLOYMENT_READY}{{{role_deployments}}})", "ready {{deployment}}"),
            (
                f"max by (horizontalpodautoscaler) ({HPA_MAX}{{{role_hpas}}})",
                "maximum {{horizontalpodautoscaler}}",
            ),
        ],
        unit="short",
        width=24,
        description="A prefill/decode model's roles scale apart (each its own KEDA ScaledObject and signal): "
        "what each role's HPA wants, its Deployment's ready pods and its ceiling.",
    )


# ------------------------------------------------------------------------------------------------- GPU


def gpu_dashboard() -> dict[str, Any]:
    """DCGM exporter metrics per node (`Hostname`) and GPU."""
    sel = '{Hostname=~"$Hostname"}'
    legend = "{{Hostname}} GPU {{gpu}}"
    panels = [
        {
            "type": "text",
            "title": "Read me: GPU utilisation is not a scaling signal",
            "options": {"mode": "markdown", "content": GPU_NOTE},
            "gridPos": {"w": 24, "h": 7},
        },
        _panel(
            "GPU utilisation",
            [(f"{GPU_UTIL}{sel}", legend)],
            unit="percent",
            description="DCGM_FI_DEV_GPU_UTIL: time any kernel ran; near 100% under any vLLM load.",
        ),
        _panel(
            "Graphics engine active",
            [(f"{GR_ENGINE_ACTIVE}{sel}", legend)],
            unit="percentunit",
            description="DCGM_FI_PROF_GR_ENGINE_ACTIVE: fraction of time the compute engine was busy.",
        ),
        _panel(
            "Framebuffer memory used",
            [(f"{FB_USED}{sel} / ({FB_USED}{sel} + {FB_FREE}{sel})", legend)],
            unit="percentunit",
            description="DCGM_FI_DEV_FB_USED / (USED + FREE); vLLM preallocates it at start-up.",
        ),
        _panel(
            "Framebuffer memory used (MiB)",
            [(f"{FB_USED}{sel}", legend)],
            unit="decmbytes",
            description="DCGM_FI_DEV_FB_USED in MiB.",
        ),
        _panel(
            "Power draw",
            [(f"{POWER}{sel}", legend)],
            unit="watt",
            description="DCGM_FI_DEV_POWER_USAGE.",
        ),
        _panel(
            "GPU temperature",
            [(f"{TEMP}{sel}", legend)],
            unit="celsius",
            description="DCGM_FI_DEV_GPU_TEMP.",
        ),
        _panel(
            "XID errors in range",
            [(f"max by (Hostname, gpu) (max_over_time({XID}{sel}[$__range])) > 0", legend)],
            kind="table",
            instant=True,
            unit="none",
            width=24,
            min_value=None,
            description="Last XID error code per GPU (DCGM_FI_DEV_XID_ERRORS); any row is a driver or "
            "hardware fault to investigate (e.g. 48 double-bit ECC, 79 fallen off the bus).",
        ),
    ]
    variables = [_query_variable("Hostname", "Node", f"label_values({GPU_UTIL}, Hostname)", multi=True)]
    return _dashboard(
        "llm-platform-gpu",
        "GPU nodes (DCGM)",
        "GPU health and utilisation per node and GPU from the DCGM exporter.",
        variables,
        panels,
    )


def cost_dashboard() -> dict[str, Any]:
    """Forecast vs actual GPU cost per model and day, $/million tokens per model and per gateway client
    (the `llm_platform:*` series of specs/costs.py; `costs.enabled`)."""
    from llm_platform.components.specs import costs

    sel = '{model_name=~"$model_name"}'
    daily = f"max by (model_name) ({costs.MODEL_COST_DAILY}{sel})"
    forecast = f"max by (model_name) ({costs.FORECAST_DAILY}{sel})"
    panels = [
        _panel(
            "Actual vs forecast GPU cost, last 24 h",
            [(daily, "{{model_name}} actual"), (forecast, "{{model_name}} forecast")],
            unit="currencyUSD",
            description=f"{costs.MODEL_COST_DAILY}: the GPUs the model's pods held (OpenCost allocation) at "
            f"their node's catalog price, summed over 24 h; {costs.FORECAST_DAILY}: the simulator's forecast "
            "for the deployed config (costs.forecasts). The overrun alert fires above forecast x "
            "(1 + costs.forecastOverrunShare).",
            width=24,
        ),
        _panel(
            "Actual / forecast per day",
            [(f"{daily} / on (model_name) {forecast}", "{{model_name}}")],
            kind="table",
            instant=True,
            unit="percentunit",
            description="Each model's actual 24 h cost as a share of its forecast (1 = on forecast).",
        ),
        _panel(
            "GPU cost per hour",
            [
                (f"max by (model_name) ({costs.MODEL_COST_HOURLY}{sel})", "{{model_name}}"),
                (f"{costs.UNALLOCATED_HOURLY}", "GPU nodes no model pod holds"),
            ],
            unit="currencyUSD",
            description="Now: each model's GPUs at catalog price, and GPU nodes held by no model pod "
            "(launching, loading before the pod binds, headroom placeholders, empty).",
        ),
        _panel(
            "$ per million tokens (24 h), per model",
            [(f"max by (model_name) ({costs.MODEL_PER_MTOK}{sel})", "{{model_name}}")],
            unit="currencyUSD",
            description="24 h GPU cost / (vLLM prompt + generation tokens over 24 h) x 1e6.",
        ),
        _panel(
            "$ per day, per client",
            [(f"{costs.CLIENT_COST_DAILY}{sel}", f"{{{{model_name}}}} {{{{{costs.CLIENT_LABEL}}}}}")],
            unit="currencyUSD",
            description="Each model's cost shared by its gateway clients' token shares (AI Gateway's "
            f"gen_ai_client_token_usage with the x-llm-client header as `{costs.CLIENT_LABEL}`).",
        ),
        _panel(
            "$ per million tokens (24 h), per client",
            [(f"{costs.CLIENT_PER_MTOK}{sel}", f"{{{{model_name}}}} {{{{{costs.CLIENT_LABEL}}}}}")],
            unit="currencyUSD",
            description="A client's 24 h cost / its input + output tokens over 24 h x 1e6.",
        ),
    ]
    variables = [
        _query_variable(
            "model_name", "Model", f"label_values({costs.MODEL_COST_HOURLY}, model_name)", multi=True
        )
    ]
    board = _dashboard(
        "llm-platform-costs",
        "LLM cost: forecast vs actual",
        "Actual GPU cost per model and client from OpenCost's allocation at catalog prices, next to the "
        "simulator's forecast for the deployed config.",
        variables,
        panels,
    )
    board["time"] = {"from": "now-7d", "to": "now"}
    return board


# ------------------------------------------------------------------------------------------- shipping


# --------------------------------------------------------------------------------------- GPU headroom

HEADROOM_NOTE = """\
**Warm GPU headroom.** Placeholder pods (`headroom-<pool>`, priority below every vLLM pod) hold GPUs on
running nodes. A replica that finds no free GPU preempts one and starts on its node in about a warm-node
start instead of a new node's minutes; the evicted placeholder turns Pending until Karpenter has launched a
node for it. Pending placeholders for longer than a node launch mean the buffer is not refilling: the pool's
`gpuLimit` is reached (the models hold it) or EC2 has no capacity of the pool's instances.
"""


HEADROOM_DASHBOARD = "llm-platform-headroom"


def headroom_dashboard(namespace: str, *, uid: str = HEADROOM_DASHBOARD, team: str = "") -> dict[str, Any]:
    """`uid` and `team`: a team's own board on a shared cluster's Grafana (its title names the team)."""
    """The headroom buffer per pool: warm GPUs held, placeholders wanted, running and pending."""
    deployment = f'namespace="{namespace}", deployment=~"headroom-$pool"'
    pods = f'namespace="{namespace}", pod=~"headroom-$pool-.*"'

    running = f'(kube_pod_status_phase{{{pods}, phase="Running"}} == 1)'
    gpus = f'kube_pod_container_resource_requests{{{pods}, resource="nvidia_com_gpu"}}'
    panels = [
        {
            "type": "text",
            "title": "Read me",
            "options": {"mode": "markdown", "content": HEADROOM_NOTE},
            "gridPos": {"w": 24, "h": 5},
        },
        _panel(
            "Warm GPUs held by placeholders",
            [(f"sum({gpus} * on (namespace, pod) group_left () {running})", "warm GPUs")],
            unit="none",
            description="GPUs of Running placeholders: what the next replicas can take at once.",
            width=8,
        ),
        _panel(
            "Placeholders: wanted vs running",
            [
                (
                    f"sum by (deployment) (kube_deployment_spec_replicas{{{deployment}}})",
                    "{{deployment}} wanted",
                ),
                (
                    f"sum by (deployment) (kube_deployment_status_replicas_available{{{deployment}}})",
                    "{{deployment}} running",
                ),
            ],
            unit="none",
            description="Wanted follows the schedule (KEDA cron); running drops when replicas preempt them.",
            width=8,
        ),
        _panel(
            "Placeholder pods by phase",
            [
                (
                    f'sum by (phase) (kube_pod_status_phase{{{pods}, phase=~"Pending|Running"}} == 1)',
                    "{{phase}}",
                )
            ],
            unit="none",
            description="Pending placeholders were preempted by replicas (or never placed) and wait for a node.",
            width=8,
        ),
    ]
    variables = [
        _query_variable(
            "pool",
            "GPU pool",
            f'label_values(kube_deployment_spec_replicas{{namespace="{namespace}"}}, deployment)',
            multi=True,
        )
    ]
    variables[0]["regex"] = "/headroom-(.*)/"
    return _dashboard(
        uid,
        f"LLM platform / GPU headroom ({team})" if team else "LLM platform / GPU headroom",
        "The warm GPU buffer per pool: warm GPUs, placeholders wanted, running and pending.",
        variables,
        panels,
    )


def dashboard_configmap(
    name: str, namespace: str, dashboard: Mapping[str, Any], *, labels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """A v1 ConfigMap the Grafana sidecar loads: label `grafana_dashboard: "1"`, the JSON in `data`."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                SIDECAR_LABEL: SIDECAR_LABEL_VALUE,
                "app.kubernetes.io/component": "dashboard",
                **(labels or {}),
            },
        },
        "data": {f"{name}.json": json.dumps(dashboard, indent=2, sort_keys=True)},
    }
