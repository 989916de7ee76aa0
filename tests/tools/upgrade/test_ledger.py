"""The ledger of known breaking changes: its checks find what a candidate version breaks in a render, and a
move runs exactly the entries it crosses."""

from __future__ import annotations

import json

import pytest

from llm_platform.facts import breaking_changes
from llm_platform.facts.addons import resolve_ref
from llm_platform.tools.upgrade import checks
from llm_platform.tools.upgrade.checks import RenderView
from llm_platform.tools.upgrade.preview import run_ledger

UNSPLIT = 'rate(gen_ai_client_token_usage_sum{gen_ai_token_type="output"}[5m])'
GROUPED = "sum by (gen_ai_request_model) (rate(gen_ai_client_token_usage_sum[5m]))"


def rule(expr: str) -> dict:
    return {
        "apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
        "metadata": {"name": "gateway", "namespace": "monitoring"},
        "spec": {"groups": [{"name": "tokens", "rules": [{"record": "tokens:rate5m", "expr": expr}]}]},
    }  # fmt: skip


def test_the_ledger_check_finds_a_rule_that_shows_gen_ai_metrics_without_sum_by() -> None:
    view = RenderView([rule(UNSPLIT), rule(GROUPED)], {})
    hits = checks.gen_ai_without_sum_by(view)
    assert hits == [
        "PrometheusRule monitoring/gateway: tokens/tokens:rate5m: gen_ai_client_token_usage_sum not under `sum by (...)`"
    ]


def test_a_dashboard_panel_without_sum_by_is_found_too() -> None:
    dashboard = {
        "panels": [
            {"title": "tokens", "targets": [{"expr": UNSPLIT}]},
            {"title": "ok", "targets": [{"expr": GROUPED}]},
        ]
    }
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dash", "namespace": "monitoring"},
                  "data": {"gateway.json": json.dumps(dashboard)}}  # fmt: skip
    assert checks.gen_ai_without_sum_by(RenderView([config_map], {})) == [
        "ConfigMap monitoring/dash: gateway.json panel 'tokens': gen_ai_client_token_usage_sum not under `sum by (...)`"
    ]


@pytest.mark.parametrize(
    ("expr", "splits"),
    [
        (UNSPLIT, True),
        (GROUPED, False),
        ("sum(rate(gen_ai_client_token_usage_sum[5m]))", False),
        ("sum(rate(gen_ai_client_token_usage_sum[5m])) by (gen_ai_request_model)", False),
        ("sum without (pod) (rate(gen_ai_client_token_usage_sum[5m]))", True),
        ("sum without (gen_ai_backend) (rate(gen_ai_client_token_usage_sum[5m]))", False),
        ("histogram_quantile(0.9, rate(gen_ai_server_request_duration_bucket[5m]))", True),
        ("histogram_quantile(0.9, sum by (le) (rate(gen_ai_server_request_duration_bucket[5m])))", False),
        ('sum by (gen_ai_request_model) (rate(vllm:generation_tokens_total{gen_ai_x="y"}[5m]))', False),
    ],
)
def test_what_splits_by_backend(expr: str, splits: bool) -> None:
    assert bool(checks.splits_by_backend(expr)) is splits


def test_a_move_runs_the_entries_it_crosses_with_what_their_checks_find() -> None:
    view = RenderView([rule(UNSPLIT)], {}, {"envoy-gateway": "v1.8.3", "gateway-api": "v1.5.1"})
    found = run_ledger(view, {"ai-gateway": ("v1.1.0", "v1.2.0")})
    by_check = {entry.check: hits for entry, hits in found}
    assert {e.component for e, _ in found} == {"ai-gateway"}
    assert by_check["llm_platform.tools.upgrade.checks:gen_ai_without_sum_by"]
    assert by_check["llm_platform.tools.upgrade.checks:ai_gateway_1_2_companions"] == [
        "AI Gateway v1.2 needs envoy-gateway v1.9.0 or newer; the candidate has v1.8.3",
        "AI Gateway v1.2 needs gateway-api v1.6.0 or newer; the candidate has v1.5.1",
    ]
    assert run_ledger(view, {"ai-gateway": ("v1.2.0", "v1.2.1")}) == []  # already past it


def test_every_ledger_entry_names_its_source_and_a_check_that_exists() -> None:
    for entry in breaking_changes.LEDGER:
        assert entry.source and entry.since.startswith("v")
        if entry.check:
            assert callable(resolve_ref(entry.check))


def policy(kind: str, spec: dict) -> dict:
    return {"apiVersion": "gateway.envoyproxy.io/v1alpha1", "kind": kind,
            "metadata": {"name": "llm-gateway", "namespace": "llm-gateway"}, "spec": spec}  # fmt: skip


def test_token_limits_per_tenant_are_listed_and_request_limits_are_not() -> None:
    header = {"headers": [{"name": "x-llm-client", "type": "Exact", "value": "web"}]}
    token_cost = {"request": {"from": "Number", "number": 0},
                  "response": {"from": "Metadata", "metadata": {"key": "llm_total_token"}}}  # fmt: skip
    rules = [
        {"clientSelectors": [header], "limit": {"requests": 600, "unit": "Minute"}},
        {"clientSelectors": [header], "cost": token_cost, "limit": {"requests": 200000, "unit": "Minute"}},
    ]
    view = RenderView([policy("BackendTrafficPolicy", {"rateLimit": {"global": {"rules": rules}}})], {})
    assert checks.tenant_token_limits(view) == [
        "BackendTrafficPolicy llm-gateway/llm-gateway: x-llm-client=web: 200000 llm_total_token per Minute"
    ]


def test_envoy_gateway_1_9_checks_find_what_its_new_rules_refuse() -> None:
    view = RenderView(
        [
            policy("ClientTrafficPolicy", {"clientIPDetection": {}}),
            policy(
                "SecurityPolicy",
                {
                    "apiKeyAuth": {"extractFrom": [{"headers": ["a"], "params": ["b"]}]},
                    "targetRefs": [{"kind": "Gateway"}],
                    "mergeType": "StrategicMerge",
                },
            ),
        ],
        {
            "gateway-crds": {
                "chart": "gateway-crds-helm",
                "values": {"crds": {"gatewayAPI": {"enabled": True}}},
            }
        },
        {"gateway-api": "v1.5.1"},
    )
    assert checks.client_ip_detection_exactly_one(view)
    assert checks.api_key_extract_from(view)
    assert checks.merge_type_on_gateway(view)
    assert checks.safe_upgrades_policy_moves(view)
    assert checks.gateway_api_for_envoy_gateway_1_9(view) == [
        "Envoy Gateway v1.9 needs gateway-api v1.6.0 or newer; the candidate has v1.5.1"
    ]
    fine = RenderView(
        [policy("ClientTrafficPolicy", {"clientIPDetection": {"xForwardedFor": {"numTrustedHops": 1}}})], {}
    )
    assert checks.client_ip_detection_exactly_one(fine) == []
