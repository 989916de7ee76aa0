"""A cluster-internal CA and one server certificate signed by it (pulumi-tls, ECDSA P-256), for the TLS
endpoints the platform serves inside the cluster (the AI Gateway webhook, the quota store)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_tls as tls

__all__ = ["ServerCertificate", "server_certificate"]


@dataclass(frozen=True)
class ServerCertificate:
    pems: pulumi.Output[dict[str, str]]
    """{ca.crt, tls.crt, tls.key}: a Pulumi secret (the keys never reach state or a render in plaintext)."""
    cert_pem: pulumi.Output[str]
    """The leaf alone (public): changes when the leaf is renewed, for a pod that reads it only at start."""


def server_certificate(
    name: str,
    *,
    ca_common_name: str,
    common_name: str,
    dns_names: list[str],
    ca_validity_hours: int,
    cert_validity_hours: int,
    renew_hours: int,
    opts: pulumi.ResourceOptions,
) -> ServerCertificate:
    """Resources `<name>-ca-key`, `-ca`, `-key`, `-csr`, `-cert`: a self-signed CA and a leaf for `dns_names`,
    each re-issued by the `pulumi up` after `renew_hours` before it expires."""
    ca_key = tls.PrivateKey(f"{name}-ca-key", algorithm="ECDSA", ecdsa_curve="P256", opts=opts)
    ca = tls.SelfSignedCert(
        f"{name}-ca",
        private_key_pem=ca_key.private_key_pem,
        is_ca_certificate=True,
        subject=tls.SelfSignedCertSubjectArgs(common_name=ca_common_name),
        validity_period_hours=ca_validity_hours,
        early_renewal_hours=renew_hours,
        allowed_uses=["cert_signing", "crl_signing", "digital_signature"],
        opts=opts,
    )
    key = tls.PrivateKey(f"{name}-key", algorithm="ECDSA", ecdsa_curve="P256", opts=opts)
    request = tls.CertRequest(
        f"{name}-csr",
        private_key_pem=key.private_key_pem,
        subject=tls.CertRequestSubjectArgs(common_name=common_name),
        dns_names=dns_names,
        opts=opts,
    )
    leaf = tls.LocallySignedCert(
        f"{name}-cert",
        cert_request_pem=request.cert_request_pem,
        ca_private_key_pem=ca_key.private_key_pem,
        ca_cert_pem=ca.cert_pem,
        validity_period_hours=cert_validity_hours,
        early_renewal_hours=renew_hours,
        allowed_uses=["digital_signature", "key_encipherment", "server_auth"],
        opts=opts,
    )
    pems = pulumi.Output.secret(
        pulumi.Output.all(ca.cert_pem, leaf.cert_pem, key.private_key_pem).apply(
            lambda p: {"ca.crt": p[0], "tls.crt": p[1], "tls.key": p[2]}
        )
    )
    return ServerCertificate(pems=pems, cert_pem=leaf.cert_pem)
