"""The ledger's checks (facts/breaking_changes.py): each reads the candidate render and returns one line per
object a known breaking change hits (empty: the render is not affected)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from packaging.version import InvalidVersion, Version


@dataclass(frozen=True)
class RenderView:
    """A stack's render as the checks read it: its Kubernetes objects, its Helm releases (release name ->
    chart, version, values) and the component versions it was rendered with."""

    manifests: list[dict[str, Any]]
    helm: dict[str, dict[str, Any]]
    versions: Mapping[str, str] = field(default_factory=dict)

    def of_kind(self, kind: str) -> Iterator[dict[str, Any]]:
        return (d for d in self.manifests if d.get("kind") == kind)


def version(text: str) -> Version | None:
    """A version string as `packaging` orders it (`v1.9.0` and `1.9.0` alike); None if it is not one."""
    try:
        return Version(text.removeprefix("v"))
    except InvalidVersion:
        return None


def name_of(doc: dict[str, Any]) -> str:
    meta = doc.get("metadata") or {}
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{doc.get('kind')} {where}{meta.get('name')}"


# ------------------------------------------------------------------------------------- AI Gateway v1.2


def inference_pools_without_picker(view: RenderView) -> list[str]:
    """InferencePools the render applies without spec.endpointPickerRef. The llm-d-router-gateway chart's pool
    names the EPP the same release deploys (`<release>-epp`, ../shared/reference/GATEWAY.md step 5), so its
    releases count only when they turn the EPP off."""
    hits = [
        f"{name_of(d)}: no spec.endpointPickerRef"
        for d in view.of_kind("InferencePool")
        if not (d.get("spec") or {}).get("endpointPickerRef")
    ]
    for release, body in sorted(view.helm.items()):
        values = body.get("values") or {}
        creates_pool = (values.get("inferencePool") or {}).get("create")
        epp_off = ((values.get("router") or {}).get("epp") or {}).get("enabled") is False
        if body.get("chart") == "llm-d-router-gateway" and creates_pool and epp_off:
            hits.append(f"helm {release}: the chart's InferencePool without its EPP")
    return hits


def tenant_token_limits(view: RenderView) -> list[str]:
    """The tenants (client selectors) whose token-cost rate limits (a cost read from AI Gateway's metadata)
    v1.2 charges to them rather than to another tenant: each may see 429s it did not see before."""
    hits = []
    for policy in view.of_kind("BackendTrafficPolicy"):
        limits = (policy.get("spec") or {}).get("rateLimit") or {}
        for scope in ("global", "local"):
            for rule in (limits.get(scope) or {}).get("rules") or []:
                response = (rule.get("cost") or {}).get("response") or {}
                if response.get("from") != "Metadata":
                    continue
                tenants = [
                    f"{h.get('name')}={h.get('value')}"
                    for selector in rule.get("clientSelectors") or []
                    for h in selector.get("headers") or []
                ]
                limit = rule.get("limit") or {}
                hits.append(
                    f"{name_of(policy)}: {', '.join(tenants) or 'every client'}: "
                    f"{limit.get('requests')} {(response.get('metadata') or {}).get('key')} per {limit.get('unit')}"
                )
    return hits


GEN_AI_METRIC = re.compile(r"\bgen_ai_[A-Za-z0-9_:]+")
SPLIT_LABEL = "gen_ai_backend"
AGGREGATORS = "sum|avg|min|max|count|group|stddev|stdvar|topk|bottomk|quantile|count_values"
_AGG_BEFORE = re.compile(rf"\b({AGGREGATORS})\s*(?:(by|without)\s*\(([^)]*)\))?\s*$")
_GROUPING_AFTER = re.compile(r"^\s*(by|without)\s*\(([^)]*)\)")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")


def _drops_label(expr: str, open_at: int, close_at: int) -> bool | None:
    """Whether the aggregation whose argument opens at `open_at` drops the split label (None: the parenthesis
    is not an aggregation's argument)."""
    before = _AGG_BEFORE.search(expr[:open_at])
    if before is None:
        return None
    clause, labels = before.group(2), before.group(3)
    if clause is None:
        after = _GROUPING_AFTER.match(expr[close_at + 1 :])
        clause, labels = (after.group(1), after.group(2)) if after else (None, None)
    listed = SPLIT_LABEL in re.split(r"[\s,]+", labels or "")
    return not listed if clause == "by" else listed if clause == "without" else True


def _matching_close(expr: str, open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(expr)):
        depth += {"(": 1, ")": -1}.get(expr[i], 0)
        if depth == 0:
            return i
    return len(expr)


def splits_by_backend(expr: str) -> list[str]:
    """The GenAI metrics of a PromQL expression no enclosing aggregation reduces below the series' own labels:
    each splits into one series per `gen_ai_backend`. Label matchers, strings and grouping lists are not
    metric names."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', expr)
    text = re.sub(r"\{[^}]*\}", lambda m: " " * len(m.group(0)), text)
    label_lists = [m.span() for m in _GROUPING.finditer(text)]
    found = []
    for match in GEN_AI_METRIC.finditer(text):
        if any(start <= match.start() < end for start, end in label_lists):
            continue
        depth, dropped = 0, False
        for i in range(match.start() - 1, -1, -1):
            char = text[i]
            if char == ")":
                depth += 1
            elif char == "(":
                if depth:
                    depth -= 1
                    continue
                if _drops_label(text, i, _matching_close(text, i)):
                    dropped = True
                    break
        if not dropped:
            found.append(match.group(0))
    return list(dict.fromkeys(found))


def _expressions(doc: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, PromQL) of a PrometheusRule's rules and of the panels of the dashboards a ConfigMap holds."""
    if doc.get("kind") == "PrometheusRule":
        for group in (doc.get("spec") or {}).get("groups") or []:
            for rule in group.get("rules") or []:
                name = rule.get("alert") or rule.get("record")
                yield f"{group.get('name')}/{name}", str(rule.get("expr", ""))
    elif doc.get("kind") == "ConfigMap":
        for key, body in (doc.get("data") or {}).items():
            if not key.endswith(".json"):
                continue
            try:
                dashboard = json.loads(body)
            except ValueError:
                continue
            for panel in _panels(dashboard):
                for target in panel.get("targets") or []:
                    if isinstance(target, dict) and target.get("expr"):
                        yield f"{key} panel {panel.get('title')!r}", str(target["expr"])


def _panels(dashboard: Any) -> Iterator[dict[str, Any]]:
    for panel in dashboard.get("panels") or [] if isinstance(dashboard, dict) else []:
        if isinstance(panel, dict):
            yield panel
            yield from _panels(panel)  # a row's collapsed panels


def gen_ai_without_sum_by(view: RenderView) -> list[str]:
    """The platform's rules and dashboard panels that show GenAI metrics without aggregating them by labels
    of their own: with v1.2's gen_ai_backend label each shows one series per backend."""
    return [
        f"{name_of(doc)}: {where}: {', '.join(metrics)} not under `sum by (...)`"
        for doc in view.manifests
        for where, expr in _expressions(doc)
        if (metrics := splits_by_backend(expr))
    ]


def ai_gateway_1_2_companions(view: RenderView) -> list[str]:
    """AI Gateway v1.2 with an Envoy Gateway below v1.9 or Gateway API CRDs below v1.6."""
    needs = {"envoy-gateway": "v1.9.0", "gateway-api": "v1.6.0", "gateway-api-inference-extension": "v1.6.0"}
    return _below(view, needs, "AI Gateway v1.2")


def _below(view: RenderView, needs: dict[str, str], who: str) -> list[str]:
    hits = []
    for component, least in needs.items():
        have = view.versions.get(component)
        parsed, wanted = version(have or ""), version(least)
        if parsed is not None and wanted is not None and parsed < wanted:
            hits.append(f"{who} needs {component} {least} or newer; the candidate has {have}")
    return hits


# ------------------------------------------------------------------------------------ Envoy Gateway v1.9


def gateway_api_for_envoy_gateway_1_9(view: RenderView) -> list[str]:
    return _below(view, {"gateway-api": "v1.6.0"}, "Envoy Gateway v1.9")


def client_ip_detection_exactly_one(view: RenderView) -> list[str]:
    modes = ("xForwardedFor", "customHeader", "directSourceIP")
    hits = []
    for policy in view.of_kind("ClientTrafficPolicy"):
        detection = (policy.get("spec") or {}).get("clientIPDetection")
        if detection is not None and sum(m in (detection or {}) for m in modes) != 1:
            hits.append(f"{name_of(policy)}: spec.clientIPDetection sets {sorted(detection or {})}")
    return hits


def safe_upgrades_policy_moves(view: RenderView) -> list[str]:
    """gateway-crds-helm releases that install the Gateway API CRDs (and so, before v1.9, the safe-upgrades
    policy): v1.9 renders the policy from gateway-helm instead."""
    hits = []
    for release, body in sorted(view.helm.items()):
        crds = ((body.get("values") or {}).get("crds") or {}).get("gatewayAPI") or {}
        if body.get("chart") == "gateway-crds-helm" and crds.get("enabled"):
            hits.append(
                f"helm {release}: installs the Gateway API CRDs; before upgrading, add Helm ownership of release "
                "`envoy-gateway` to ValidatingAdmissionPolicy(Binding) safe-upgrades.gateway.networking.k8s.io"
            )
    return hits


def api_key_extract_from(view: RenderView) -> list[str]:
    hits = []
    for policy in view.of_kind("SecurityPolicy"):
        auth = (policy.get("spec") or {}).get("apiKeyAuth")
        if auth is None:
            continue
        sources = auth.get("extractFrom") or []
        wrong = [s for s in sources if sum(bool(s.get(k)) for k in ("headers", "params", "cookies")) != 1]
        if not sources or wrong:
            hits.append(f"{name_of(policy)}: spec.apiKeyAuth.extractFrom {sources}")
    return hits


def merge_type_on_gateway(view: RenderView) -> list[str]:
    routes = {"HTTPRoute", "GRPCRoute", "TCPRoute", "UDPRoute", "TLSRoute"}
    hits = []
    for kind in ("BackendTrafficPolicy", "SecurityPolicy"):
        for policy in view.of_kind(kind):
            spec = policy.get("spec") or {}
            targets = [t.get("kind") for t in spec.get("targetRefs") or []]
            if spec.get("mergeType") and any(t not in routes for t in targets):
                hits.append(f"{name_of(policy)}: mergeType with targets {targets}")
    return hits


def session_persistence_idle_timeout(view: RenderView) -> list[str]:
    return [
        f"{name_of(route)}: rule {i} sets sessionPersistence.idleTimeout"
        for route in view.of_kind("HTTPRoute")
        for i, rule in enumerate((route.get("spec") or {}).get("rules") or [])
        if "idleTimeout" in (rule.get("sessionPersistence") or {})
    ]


# ------------------------------------------------------------------------------------------- KEDA v2.21


def keda_liiklus_triggers(view: RenderView) -> list[str]:
    return [
        f"{name_of(scaled)}: trigger {i} is liiklus"
        for scaled in view.of_kind("ScaledObject")
        for i, trigger in enumerate((scaled.get("spec") or {}).get("triggers") or [])
        if trigger.get("type") == "liiklus"
    ]
