"""The ledger of known breaking changes per component version: what an upgrade preview (`llm-platform
upgrade`, tools/upgrade/) checks the candidate render against.

A component is an add-on's name (facts/addons.py: `envoy-gateway`, `ai-gateway`, `keda`, ...) or the name of
the repository whose CRD files a record pins at a tag of their own (`gateway-api`,
`gateway-api-inference-extension`, `prometheus-operator`). An entry applies to a move from a version below
`since` to `since` or above. Its `check` (`module:function`, resolved with `facts.addons.resolve_ref`) takes
the candidate render (`tools.upgrade.checks.RenderView`) and returns the objects the change hits; an entry
without a check is an operator's note the preview lists. `read_at` says where its source was read: the
upstream file at the tag, or the research notes when the tag was not readable offline.

Adding an entry: the upstream source (file@tag or URL), the first version, and a check of the render where
the change touches objects the platform renders.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LEDGER", "UNREAD", "BreakingChange", "Unread"]

_CHECKS = "llm_platform.tools.upgrade.checks"
_RESEARCH = "../shared/research/serving_paths_2026.md (Anchors: Envoy AI Gateway)"
_AIGW_NOTES = "theagentrouter/agent-router site/src/pages/release-notes/v1.2.mdx"
_EG_NOTES = "envoyproxy/gateway release-notes/v1.9.0.yaml@v1.9.0 (breaking changes)"


@dataclass(frozen=True)
class BreakingChange:
    """One known breaking change of a component version."""

    component: str
    since: str
    summary: str
    source: str
    check: str | None
    read_at: str
    """`tag`: read in the upstream file at the tag; otherwise where the fact comes from instead."""


@dataclass(frozen=True)
class Unread:
    """A component version whose upstream notes could not be read at the tag: the preview says so."""

    component: str
    version: str
    why: str


LEDGER: tuple[BreakingChange, ...] = (
    BreakingChange(
        "ai-gateway",
        "v1.2.0",
        "an InferencePool without spec.endpointPickerRef is Accepted=False (the field became optional in "
        "GAIE, commit 80e21c3; AI Gateway refuses such a pool)",
        f"{_AIGW_NOTES} (via {_RESEARCH}); kubernetes-sigs/gateway-api-inference-extension commit 80e21c3",
        f"{_CHECKS}:inference_pools_without_picker",
        "research notes (tag v1.2.0 not in the stored snapshot)",
    ),
    BreakingChange(
        "ai-gateway",
        "v1.2.0",
        "per-tenant token limits are charged to the right tenant: tenants may start seeing 429s",
        f"{_AIGW_NOTES} (via {_RESEARCH})",
        f"{_CHECKS}:tenant_token_limits",
        "research notes (tag v1.2.0 not in the stored snapshot)",
    ),
    BreakingChange(
        "ai-gateway",
        "v1.2.0",
        "GenAI metrics gain a gen_ai_backend label: a panel or rule that does not aggregate them with "
        "`sum by (...)` splits into one series per backend",
        f"{_AIGW_NOTES} (via {_RESEARCH})",
        f"{_CHECKS}:gen_ai_without_sum_by",
        "research notes (tag v1.2.0 not in the stored snapshot)",
    ),
    BreakingChange(
        "ai-gateway",
        "v1.2.0",
        "AI Gateway v1.2 is built on Envoy Gateway v1.9.2, Gateway API v1.6 and GAIE v1.6: move them together",
        f"{_AIGW_NOTES} (via {_RESEARCH})",
        f"{_CHECKS}:ai_gateway_1_2_companions",
        "research notes (tag v1.2.0 not in the stored snapshot)",
    ),
    BreakingChange(
        "ai-gateway",
        "v1.2.0",
        "under `helm template`/GitOps the chart makes a new MCP seed on every render (supply existingSecret); "
        "a Helm release (what the platform installs) keeps it",
        f"{_AIGW_NOTES} (via {_RESEARCH})",
        None,
        "research notes (tag v1.2.0 not in the stored snapshot)",
    ),
    BreakingChange(
        "envoy-gateway",
        "v1.9.0",
        "Envoy Gateway v1.9 reconciles TCP/UDP routes through gateway.networking.k8s.io/v1: the Gateway API "
        "CRDs must be v1.6",
        _EG_NOTES,
        f"{_CHECKS}:gateway_api_for_envoy_gateway_1_9",
        "tag",
    ),
    BreakingChange(
        "envoy-gateway",
        "v1.9.0",
        "ClientTrafficPolicy spec.clientIPDetection needs exactly one of xForwardedFor, customHeader, "
        "directSourceIP (an empty clientIPDetection is refused by CEL)",
        _EG_NOTES,
        f"{_CHECKS}:client_ip_detection_exactly_one",
        "tag",
    ),
    BreakingChange(
        "envoy-gateway",
        "v1.9.0",
        "the Gateway API safe-upgrades ValidatingAdmissionPolicy moved from the CRD bundle into gateway-helm: "
        "with the Gateway API CRDs from gateway-crds-helm, add Helm ownership metadata to the policy and its "
        "binding before upgrading (or crds.gatewayAPI.safeUpgradePolicy.enabled=false)",
        _EG_NOTES,
        f"{_CHECKS}:safe_upgrades_policy_moves",
        "tag",
    ),
    BreakingChange(
        "envoy-gateway",
        "v1.9.0",
        "SecurityPolicy spec.apiKeyAuth.extractFrom: at least one entry, each with exactly one of headers, "
        "params, cookies",
        _EG_NOTES,
        f"{_CHECKS}:api_key_extract_from",
        "tag",
    ),
    BreakingChange(
        "envoy-gateway",
        "v1.9.0",
        "BackendTrafficPolicy and SecurityPolicy spec.mergeType only with xRoute targets (refused on a Gateway)",
        _EG_NOTES,
        f"{_CHECKS}:merge_type_on_gateway",
        "tag",
    ),
    BreakingChange(
        "envoy-gateway",
        "v1.9.0",
        "EndpointSlice field indexing is on by default (EndpointSliceIndex): the controller may need more "
        "memory; tracing client sampling defaults to 0%",
        _EG_NOTES,
        None,
        "tag",
    ),
    BreakingChange(
        "keda",
        "v2.21.0",
        "the Liiklus scaler is deprecated (upstream unmaintained), its code to be removed in a later release",
        "kedacore/keda CHANGELOG.md, Unreleased section on main @ 8b4f083 (2026-08-20, toward v2.21) (#7929)",
        f"{_CHECKS}:keda_liiklus_triggers",
        "main before the tag (v2.21.1 not in the stored snapshot; its Breaking Changes list was still a TODO)",
    ),
    BreakingChange(
        "gateway-api",
        "v1.6.0",
        "HTTPRoute sessionPersistence.idleTimeout is removed: remove it before the CRDs move to v1.6",
        _EG_NOTES + "; kubernetes-sigs/gateway-api config/crd/standard@v1.6.0",
        f"{_CHECKS}:session_persistence_idle_timeout",
        "tag",
    ),
)
"""Every known breaking change the preview checks, by component and first version."""

UNREAD: tuple[Unread, ...] = (
    Unread(
        "ai-gateway",
        "v1.2.0",
        "tag v1.2.0 is not in the stored snapshot of envoyproxy/ai-gateway (newest "
        "v1.1.0) and there is no network: entries above come from the research notes",
    ),
    Unread(
        "gateway-api-inference-extension",
        "v1.6.2",
        "tag v1.6.2 is not in the stored snapshot of "
        "kubernetes-sigs/gateway-api-inference-extension (newest v1.6.0); the research notes name no "
        "breaking change of v1.6.1 or v1.6.2 (v1.6.1 unblocked conformance, #3047)",
    ),
    Unread(
        "keda",
        "v2.21.1",
        "tag v2.21.1 is not in the stored snapshot of kedacore/keda (newest v2.20.2); its entry above comes "
        "from CHANGELOG.md's Unreleased section on main, whose Breaking Changes list was still a TODO on "
        "2026-08-20",
    ),
)
"""Candidate versions whose upstream notes the ledger could not read at the tag."""
