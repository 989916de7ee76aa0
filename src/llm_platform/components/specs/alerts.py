"""Alerting rules for one served model: a `monitoring.coreos.com/v1` PrometheusRule as a plain dict.

Every expression is filtered to the model's namespace and `model_name` (`promql.selector`), or to the
model's own Deployment, ScaledObject and KEDA-made HPA, so one model's trouble never pages for another.

What the alerts watch, and where the series come from:
- vLLM's own gauges and histograms (current names, `plan.promql`): queue depth, KV-cache
  fill, TTFT and ITL against the model's SLO;
- kube-state-metrics (kube-prometheus-stack scrapes it with `honorLabels: true`, so `namespace` is the
  object's namespace): ready replicas, to notice vLLM metrics that vanished (a renamed metric after a
  vLLM upgrade leaves KEDA's query empty), and the HPA's replica ceiling;
- the KEDA operator (2.20): `keda_scaler_detail_errors_total{namespace, scaledObject, scaler,
  triggerIndex, metric, type}` and `keda_scaler_empty_upstream_responses_total{namespace,
  scaledResource, triggerName, metricName, resourceType, ignoreNullValues}`. KEDA's chart ServiceMonitor
  sets no `honorLabels`, so Prometheus renames the metric's own `namespace` to `exported_namespace`
  (and `namespace` becomes KEDA's namespace); the KEDA queries accept either form.

Annotation values are Prometheus alert templates (`{{ $value }}`, `{{ $labels.pod }}`), rendered by
Prometheus when the alert fires; nothing here goes through Helm.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llm_platform.components.specs.common import rule_manifest
from llm_platform.config.schema import ModelConfig
from llm_platform.plan import ModelPlan, promql
from llm_platform.plan.disaggregation import RolePlan, role_pods
from llm_platform.plan.naming import keda_hpa_name

# The seed articles' thresholds, on current metric names.
QUEUE_DEPTH_THRESHOLD = 10
QUEUE_DEPTH_FOR = "2m"
KV_CACHE_THRESHOLD = 0.95
KV_CACHE_FOR = "1m"
SLO_QUANTILE = 0.95
SLO_WINDOW = "5m"
SLO_FOR = "5m"
METRICS_MISSING_FOR = "5m"
KEDA_WINDOW = "5m"
KEDA_FOR = "5m"
AT_MAX_FOR = "15m"

# kube-state-metrics
DEPLOYMENT_AVAILABLE = "kube_deployment_status_replicas_available"
DEPLOYMENT_READY = "kube_deployment_status_replicas_ready"
HPA_CURRENT = "kube_horizontalpodautoscaler_status_current_replicas"
HPA_DESIRED = "kube_horizontalpodautoscaler_status_desired_replicas"
HPA_MAX = "kube_horizontalpodautoscaler_spec_max_replicas"
# KEDA operator 2.20 (pkg/metricscollector/prommetrics.go); `keda_scaler_errors_total` was removed in 2.17
KEDA_SCALER_ERRORS = "keda_scaler_detail_errors_total"
KEDA_EMPTY_RESPONSES = "keda_scaler_empty_upstream_responses_total"

VALUE = "{{ $value | humanize }}"
PERCENT = "{{ $value | humanizePercentage }}"
DURATION = "{{ $value | humanizeDuration }}"


def _num(value: float) -> str:
    return f"{value:g}"


def _keda_increase(metric: str, namespace: str, object_label: str, object_name: str) -> str:
    """increase() of a KEDA counter for one scaled object, whichever label holds its namespace."""
    window = KEDA_WINDOW
    return (
        f'increase({metric}{{exported_namespace="{namespace}",{object_label}="{object_name}"}}[{window}])'
        f' or increase({metric}{{namespace="{namespace}",{object_label}="{object_name}"}}[{window}])'
    )


def _rule(
    alert: str,
    expr: str,
    duration: str,
    severity: str,
    labels: Mapping[str, str],
    summary: str,
    description: str,
    runbook: str,
) -> dict[str, Any]:
    return {
        "alert": alert,
        "expr": expr,
        "for": duration,
        "labels": {"severity": severity, **labels},
        "annotations": {"summary": summary, "description": description, "runbook": runbook},
    }


def _slo_rule(
    alert: str,
    what: str,
    histogram: str,
    slo_seconds: float,
    namespace: str,
    model_name: str,
    labels: Mapping[str, str],
    cause: str,
    runbook: str,
) -> dict[str, Any]:
    """Fire when more than 1 - SLO_QUANTILE of the requests were slower than the SLO: the share above a
    bucket boundary is exact, where `histogram_quantile` interpolates inside vLLM's fixed buckets (it fired
    on 20 % of requests at 0.12 s against a 0.2 s SLO and missed 6 % at 0.245 s). An SLO between two
    boundaries is alerted at the next boundary up; preflight reports it as a blocker."""
    bound = promql.bucket_at_or_above(histogram, slo_seconds)
    budget = 1 - SLO_QUANTILE
    where = f"{model_name} in {namespace}"
    return _rule(
        alert,
        f"{promql.share_slower_than(histogram, bound, namespace, model_name, SLO_WINDOW)} > {_num(budget)}",
        SLO_FOR,
        "warning",
        labels,
        f"More than {budget:.0%} of {where}'s requests miss the {_num(bound)}s {what} SLO",
        f"{PERCENT} of requests over {SLO_WINDOW} had a {what} above {_num(bound)}s (SLO: "
        f"{SLO_QUANTILE:.0%} within {_num(slo_seconds)}s): {cause}",
        runbook,
    )


@dataclass(frozen=True)
class ScaledTarget:
    """What KEDA scales for a model: its Deployment (or, disaggregated, one role's), that Deployment's
    ScaledObject and the HPA KEDA makes for it, and the vLLM pods it runs (`pods`, a PromQL selector)."""

    deployment: str
    scaled_object: str
    min_replicas: int
    max_replicas: int
    max_field: str  # the stack file's field that sets max_replicas
    pods: str
    labels: Mapping[str, str]
    multi_node: bool = False
    rolled: bool = False  # an Argo Rollout's (plan/promql.py `replicas_available`)


def _scaling_rules(t: ScaledTarget, namespace: str, name: str) -> list[dict[str, Any]]:
    """The alerts on one scaled object: metrics gone while its pods are up, KEDA errors and empty queries, and
    its HPA at the ceiling."""
    where = f"{name} in {namespace}"
    kubectl = f"kubectl -n {namespace}"
    deployment, scaled_object, hpa = t.deployment, t.scaled_object, keda_hpa_name(t.scaled_object)
    rules = [
        _rule(
            "VLLMMetricsMissing",
            f"sum({promql.replicas_available(namespace, deployment, t.multi_node, t.rolled)})"
            f" > (count({promql.RUNNING}{t.pods}) or vector(0))",
            METRICS_MISSING_FOR,
            "critical",
            t.labels,
            f"vLLM metrics of {where} are missing while its pods are available",
            f"Deployment {deployment} has {VALUE} available replicas but fewer of them export "
            f"{promql.RUNNING}{t.pods}. KEDA's queries then come back empty, which with "
            "ignoreNullValues false it counts as errors, so autoscaling is blind. A vLLM upgrade that renamed metrics, a broken PodMonitor/ServiceMonitor or "
            "a NetworkPolicy blocking /metrics are the usual causes.",
            f"curl a pod's /metrics ({kubectl} port-forward deploy/{deployment} 8000) and compare the "
            "metric names with plan/promql.py; check the target in Prometheus "
            "(Status > Targets).",
        ),
        _rule(
            "VLLMKedaScalerErrors",
            f"sum by (scaledObject, scaler, triggerIndex, metric) "
            f"({_keda_increase(KEDA_SCALER_ERRORS, namespace, 'scaledObject', scaled_object)}) > 0",
            KEDA_FOR,
            "warning",
            t.labels,
            f"KEDA cannot read the scaling metric of {where}",
            f"KEDA trigger {{{{ $labels.triggerIndex }}}} ({{{{ $labels.scaler }}}}, "
            f"{{{{ $labels.metric }}}}) of ScaledObject {scaled_object} failed {VALUE} times in the "
            f"last {KEDA_WINDOW}; the HPA holds its replicas or uses the fallback.",
            f"{kubectl} describe scaledobject {scaled_object}; kubectl -n keda logs "
            "deploy/keda-operator; run the trigger query in Prometheus: it must return exactly one "
            "series.",
        ),
        _rule(
            "VLLMKedaTriggerNoData",
            f"sum by (scaledResource, triggerName, metricName) "
            f"({_keda_increase(KEDA_EMPTY_RESPONSES, namespace, 'scaledResource', scaled_object)}) > 0",
            KEDA_FOR,
            "warning",
            t.labels,
            f"A KEDA trigger query of {where} returns no data",
            f"Trigger {{{{ $labels.triggerName }}}} ({{{{ $labels.metricName }}}}) of ScaledObject "
            f"{scaled_object} got an empty result {VALUE} times in the last {KEDA_WINDOW}; with "
            "ignoreNullValues false KEDA counts it an error, not 0: the HPA gets no value for it and, "
            "after the fallback's failureThreshold, runs the fallback replicas.",
            f"{kubectl} get scaledobject {scaled_object} -o yaml: run each trigger query in "
            "Prometheus and check its metric names and label filters against what vLLM exports.",
        ),
    ]
    if t.max_replicas > t.min_replicas:  # a fixed-size model sits at its maximum by design
        hpa_sel = f'{{namespace="{namespace}",horizontalpodautoscaler="{hpa}"}}'
        rules.append(
            _rule(
                "VLLMReplicasAtMaximum",
                f"max by (horizontalpodautoscaler) ({HPA_CURRENT}{hpa_sel})"
                f" >= on (horizontalpodautoscaler) max by (horizontalpodautoscaler) ({HPA_MAX}{hpa_sel})",
                AT_MAX_FOR,
                "warning",
                t.labels,
                f"{where} has run at its replica ceiling for {AT_MAX_FOR}",
                f"HPA {hpa} has held {VALUE} replicas, its maximum (config maxReplicas "
                f"{t.max_replicas}), for {AT_MAX_FOR}: demand beyond this is queued, not served.",
                f"Raise {t.max_field} (and the GPU NodePool's gpuLimit) if queue depth or the "
                "latency SLO alerts fire too; otherwise this is a capacity-planning signal.",
            )
        )
    return rules


def alert_rules(
    model: ModelConfig,
    namespace: str,
    *,
    deployment: str,
    scaled_object: str,
    multi_node: bool = False,
    rolled: bool = False,
    roles: Sequence[RolePlan] = (),
) -> list[dict[str, Any]]:
    """The alerting rules of one model, in the PrometheusRule `rules` form. `roles`: a disaggregated model's
    (plan/disaggregation.py), whose Deployments, ScaledObjects and HPAs are per role: its scaling alerts are
    one per role, labelled `role`, and none names the aggregated Deployment it does not have.

    why long: a list of rules, each a few lines of data (expression, duration, labels, annotations) over the
    same selectors; one list reads as the alerts a user receives."""
    name = model.served_model_name
    sel = promql.selector(namespace, name)
    slo = model.slo
    hpa = keda_hpa_name(scaled_object)
    where = f"{name} in {namespace}"
    labels = {"namespace": namespace, "model_name": name}
    kubectl = f"kubectl -n {namespace}"
    scaled, ceiling = (
        f"scaledobject {scaled_object}, hpa {hpa}",
        f"maxReplicas ({model.autoscaling.max_replicas})",
    )
    if roles:
        scaled = ", ".join(
            f"scaledobject {r.scaled_object}, hpa {keda_hpa_name(r.scaled_object)}" for r in roles
        )
        ceiling = "each role's maxReplicas (" + ", ".join(f"{r.role} {r.max_replicas}" for r in roles) + ")"

    rules = [
        _rule(
            "VLLMQueueDepthHigh",
            f"{promql.queue_depth(namespace, name)} > {QUEUE_DEPTH_THRESHOLD}",
            QUEUE_DEPTH_FOR,
            "critical",
            labels,
            f"vLLM queue for {where} is above {QUEUE_DEPTH_THRESHOLD} requests",
            f"{VALUE} requests are waiting across all replicas of {where} (threshold "
            f"{QUEUE_DEPTH_THRESHOLD}, for {QUEUE_DEPTH_FOR}); the fleet cannot keep up with traffic.",
            f"Check that KEDA is scaling ({kubectl} get {scaled}), that "
            f"new pods are not Pending for GPU capacity (Karpenter NodePool limits, {kubectl} get pods), "
            f"and whether {ceiling} is reached.",
        ),
        _rule(
            "VLLMKVCacheNearlyFull",
            f"max by (pod) ({promql.KV_CACHE}{sel}) > {_num(KV_CACHE_THRESHOLD)}",
            KV_CACHE_FOR,
            "warning",
            labels,
            f"vLLM KV cache of {where} is above {KV_CACHE_THRESHOLD:.0%}",
            f"Pod {{{{ $labels.pod }}}} of {where} has {PERCENT} of its KV cache in use; new requests "
            "queue and running ones are preempted.",
            f"Look at preemptions (vllm:num_preemptions_total) and queue depth; scale out or lower "
            f"max-num-seqs / maxModelLen ({model.max_model_len}) if it persists "
            f"({kubectl} logs {{{{ $labels.pod }}}}).",
        ),
        _slo_rule(
            "VLLMTimeToFirstTokenSLO",
            "time to first token",
            promql.TTFT,
            slo.ttft_seconds,
            namespace,
            name,
            labels,
            "prompts wait in the queue or prefill is saturated.",
            "Compare with queue depth and KV-cache usage: a growing queue means scale-out is too slow "
            "or capped; a short queue with slow TTFT points at long prompts or prefill contention.",
        ),
        _slo_rule(
            "VLLMInterTokenLatencySLO",
            "inter-token latency",
            promql.ITL,
            slo.itl_seconds,
            namespace,
            name,
            labels,
            "decode batches are too large for the GPU.",
            "Check requests running per pod and KV-cache usage; lower max-num-seqs or scale out "
            "(the KV-cache trigger's target may be too high).",
        ),
    ]
    if roles:  # a disaggregated model: each role has its own Deployment, ScaledObject and HPA
        for r in roles:
            target = ScaledTarget(
                deployment=r.deployment,
                scaled_object=r.scaled_object,
                min_replicas=r.min_replicas,
                max_replicas=r.max_replicas,
                max_field=f"disaggregation.{r.role}.autoscaling.maxReplicas",
                pods=f'{{{role_pods(namespace, r.deployment)},model_name="{name}"}}',
                labels={**labels, "role": r.role},
            )
            rules += _scaling_rules(target, namespace, name)
    else:
        a = model.autoscaling
        target = ScaledTarget(
            deployment=deployment,
            scaled_object=scaled_object,
            min_replicas=a.min_replicas,
            max_replicas=a.max_replicas,
            max_field="autoscaling.maxReplicas",
            pods=sel,
            labels=labels,
            multi_node=multi_node,
            rolled=rolled,
        )
        rules += _scaling_rules(target, namespace, name)
    return rules


def prometheus_rule(m: ModelPlan, *, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The model's PrometheusRule manifest.

    `labels` are added to metadata.labels, e.g. `{"release": "<kube-prometheus-stack release>"}` when
    Prometheus' ruleSelector keeps its chart default (`ruleSelectorNilUsesHelmValues: true`).
    """
    names = m.names
    rules = alert_rules(
        m.model,
        names.namespace,
        deployment=names.deployment,
        scaled_object=names.scaled_object,
        multi_node=m.multi_node,
        rolled=m.model.rollout is not None,
        roles=m.disaggregation.roles if m.disaggregation is not None else (),
    )
    metadata_labels = {
        "app.kubernetes.io/name": "vllm",
        "app.kubernetes.io/instance": m.name,
        "app.kubernetes.io/component": "alerting",
        **(labels or {}),
    }
    return rule_manifest(
        names.prometheus_rule, names.namespace, [{"name": f"vllm.{m.name}", "rules": rules}], metadata_labels
    )
