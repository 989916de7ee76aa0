"""The team's program under the platform's mocks: only the public API and `llm_platform.testing`."""

from collections import Counter

import pytest
from team import Team, deploy

from llm_platform.testing import PlatformMocks, evaluate, plain


def team(prefix: str) -> Team:
    return Team(
        prefix=prefix,
        cluster_name="shared",
        kubeconfig="{}",
        node_role_name="shared-karpenter-node",
        prometheus_url="http://prometheus-operated.observability.svc:9090",
        prometheus_namespace="observability",
        prometheus_release="shared-prometheus",
        deployer_role_arn=f"arn:aws:iam::111122223333:role/{prefix}-deployer",
    )


@pytest.fixture(scope="module")
def two_teams() -> PlatformMocks:
    """Ours and a neighbour's, with the same pool and model names, on one cluster."""

    def program() -> None:
        deploy(team("search"), api_key="test-only-secret")
        deploy(team("support"), api_key="test-only-secret")

    return evaluate(program)


def kubernetes(recorded: PlatformMocks) -> list[tuple[str, str, str]]:
    return [
        (r.typ.rsplit(":", 1)[-1], r.inputs["metadata"].get("namespace") or "", r.inputs["metadata"]["name"])
        for r in recorded.created
        if r.typ.startswith("kubernetes:") and r.custom and "metadata" in r.inputs
    ]


def test_no_object_is_written_by_both_teams(two_teams: PlatformMocks) -> None:
    written = kubernetes(two_teams)
    assert [key for key, n in Counter(written).items() if n > 1] == []
    cluster_wide = sorted(name for kind, ns, name in written if not ns)
    assert all(name.startswith(("search-", "support-")) for name in cluster_wide), cluster_wide


def test_every_resource_goes_through_its_teams_providers(two_teams: PlatformMocks) -> None:
    for r in two_teams.created:
        if r.custom and not r.typ.startswith("pulumi:providers:"):
            prefix = r.name.split("-")[0]
            package = r.typ.split(":")[0]
            assert r.k8s_provider == f"{prefix}-{'k8s' if package == 'kubernetes' else 'aws'}", r.name
    roles = [r for r in two_teams.by_type("aws:iam/role:Role")]
    assert roles  # the s3 model's own Pod Identity role, on the team's assume-role provider


def test_the_models_are_scaled_on_the_teams_prometheus(two_teams: PlatformMocks) -> None:
    scaled = two_teams.by_type("kubernetes:keda.sh/v1alpha1:ScaledObject")
    models = [s for s in scaled if "-model-" in s.inputs["metadata"]["namespace"]]
    assert len(models) == 4
    for s in models:
        addresses = {
            t["metadata"]["serverAddress"] for t in s.inputs["spec"]["triggers"] if t["type"] == "prometheus"
        }
        assert addresses == {"http://prometheus-operated.observability.svc:9090"}
    for typ in ("PodMonitor", "PrometheusRule"):
        for r in two_teams.by_type(f"kubernetes:monitoring.coreos.com/v1:{typ}"):
            assert r.inputs["metadata"]["labels"]["release"] == "shared-prometheus"


def test_the_api_key_is_a_secret_everywhere(two_teams: PlatformMocks) -> None:
    secrets = two_teams.by_type("kubernetes:core/v1:Secret")
    assert secrets
    assert "test-only-secret" not in str([plain(s.inputs) for s in secrets])
