"""Pulumi mocks that stand in for AWS and the Kubernetes API, shared by the offline render and the tests.

They answer like the real providers would for what the program reads back (ARNs, names, the EKS
cluster's kubeconfig and OIDC outputs, a Helm release's status), and they record every registration with
its parent, so the render can write the exact inputs `pulumi up` would send.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
import runpy
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockMonitor

from llm_platform.config.loader import ROOT

STACK_TYPE = "pulumi:pulumi:Stack"
ACCOUNT = "111122223333"
REGION = "us-east-1"

FAKE_KUBECONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "current-context": "mock",
    "clusters": [{"name": "mock", "cluster": {"server": "https://MOCK.gr7.us-east-1.eks.amazonaws.com"}}],
    "contexts": [{"name": "mock", "context": {"cluster": "mock", "user": "mock"}}],
    "users": [{"name": "mock", "user": {"token": "mock"}}],
}


@dataclass(frozen=True)
class AliasSpec:
    """One alias as the program sent it: a whole URN, or the parts that differ from the resource's own
    (empty: the same as its own; `parent` a URN; `no_parent`: it had none)."""

    urn: str = ""
    name: str = ""
    type: str = ""
    parent: str = ""
    no_parent: bool = False


@dataclass
class Registered:
    typ: str
    name: str
    inputs: dict[str, Any]
    provider: str
    parent_urn: str
    urn: str
    custom: bool
    dependencies: list[str]
    aliases: list[str]
    alias_specs: list[AliasSpec]

    def depends_on(self, typ: str, name: str | None = None) -> bool:
        """Whether this registration waits for a resource of `typ` (and `name`), as the engine would."""
        return any(
            d.split("::")[-2].split("$")[-1] == typ and (name is None or d.split("::")[-1] == name)
            for d in self.dependencies
        )

    @property
    def k8s_provider(self) -> str:
        return self.provider.split("::")[-2] if self.provider else ""


class PlatformMocks(pulumi.runtime.Mocks):
    def __init__(self) -> None:
        self.created: list[Registered] = []
        # (type, name) -> (urn, parent urn, dependencies, alias urns, alias specs) of a registration in flight
        self.pending: dict[tuple[str, str], tuple[str, str, list[str], list[str], list[AliasSpec]]] = {}

    def by_type(self, typ: str) -> list[Registered]:
        return [r for r in self.created if r.typ == typ]

    def named(self, name: str, typ: str | None = None) -> Registered:
        return next(r for r in self.created if r.name == name and (typ is None or r.typ == typ))

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        pending = self.pending.pop((args.typ, args.name), ("", "", [], [], []))
        urn, parent, dependencies, aliases, specs = pending
        inputs = dict(args.inputs)
        provider = args.provider or ""
        custom = bool(args.custom)
        self.created.append(
            Registered(
                args.typ, args.name, inputs, provider, parent, urn, custom, dependencies, aliases, specs
            )
        )
        return _physical_id(args.typ, args.name), _outputs(args.typ, args.name, dict(args.inputs))

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        if args.token == "aws:index/getCallerIdentity:getCallerIdentity":
            return {"accountId": ACCOUNT, "arn": f"arn:aws:iam::{ACCOUNT}:user/ci", "userId": "AIDAMOCK"}, []
        if args.token == "aws:index/getRegion:getRegion":
            return {"name": REGION, "region": REGION, "id": REGION}, []
        if args.token == "aws:index/getPartition:getPartition":
            return {"partition": "aws", "dnsSuffix": "amazonaws.com", "id": "aws"}, []
        return {}, []


class RecordingMonitor(MockMonitor):
    """The SDK's mock monitor, plus each registration's URN as the engine builds it, its parent, dependencies
    and alias URNs (MockResourceArgs lacks them).

    The SDK's mock builds a child's URN from its parent's last type only; the engine (sdk/go/common/resource
    urn.go, NewURN) prefixes the parent's whole qualified type chain, and none for a child of the stack.
    Aliases arrive as specs, which the engine resolves against the stack's state: each spec to a URN, and the
    old URN a parent was matched through to one of each child's (a child of a renamed or moved component
    keeps its identity; a name derived from the parent's is renamed with it). Without a state the mock
    records every URN a resource could take over (`aliases`: its own specs', and for each of its parent's,
    the SDK's inherited ones, as `pulumi.runtime.resource.all_aliases` builds them for an engine without
    alias specs) and the specs themselves (`alias_specs`), for a test that resolves them as the engine
    does against a recorded state (tests/urn_snapshots.py).
    """

    def __init__(self, mocks: PlatformMocks) -> None:
        super().__init__(mocks)
        self._recording = mocks
        self._aliases_of: dict[str, list[str]] = {}

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        qualified = parent.split("::")[2] if parent else ""
        if qualified and qualified != STACK_TYPE:
            type_ = f"{qualified}${type_}"
        return "urn:pulumi:" + "::".join([pulumi.get_stack(), pulumi.get_project(), type_, name])

    @staticmethod
    def _specs(request: Any) -> list[AliasSpec]:
        specs = []
        for alias in request.aliases:
            if alias.urn:
                specs.append(AliasSpec(urn=alias.urn))
                continue
            spec = alias.spec
            specs.append(AliasSpec("", spec.name, spec.type, spec.parentUrn, bool(spec.noParent)))
        return specs

    def _alias_urns(self, request: Any, specs: list[AliasSpec]) -> list[str]:
        own = [
            spec.urn
            or self.make_urn(
                "" if spec.no_parent else (spec.parent or request.parent),
                spec.type or request.type,
                spec.name or request.name,
            )
            for spec in specs
        ]
        parent_name = request.parent.split("::")[-1] if request.parent else ""
        inherited = []
        for parent_alias in self._aliases_of.get(request.parent, []):
            for own_urn in [self.make_urn(request.parent, request.type, request.name), *own]:
                name, typ = own_urn.split("::")[-1], own_urn.split("::")[2].split("$")[-1]
                if parent_name and name.startswith(parent_name):
                    name = parent_alias.split("::")[-1] + name[len(parent_name) :]
                inherited.append(self.make_urn(parent_alias, typ, name))
        return list(dict.fromkeys([*own, *inherited]))

    def RegisterResource(self, request):  # gRPC method name, as the SDK spells it
        urn = self.make_urn(request.parent, request.type, request.name)
        specs = self._specs(request)
        aliases = self._alias_urns(request, specs)
        self._aliases_of[urn] = aliases
        self._recording.pending[(request.type, request.name)] = (
            urn,
            request.parent,
            list(request.dependencies),
            aliases,
            specs,
        )
        return super().RegisterResource(request)


# AWS id prefixes, so ids the program passes on (security groups in an EC2NodeClass, a file system in a
# PersistentVolume) look like the real thing and pass the same schema checks
_ID_PREFIX = {
    "aws:ec2/securityGroup:SecurityGroup": "sg-",
    "aws:ec2/subnet:Subnet": "subnet-",
    "aws:ec2/vpc:Vpc": "vpc-",
    "aws:fsx/lustreFileSystem:LustreFileSystem": "fs-",
}


def _physical_id(typ: str, name: str) -> str:
    prefix = _ID_PREFIX.get(typ)
    if prefix is None:
        return f"{name}-id"
    return prefix + hashlib.sha256(f"{typ}::{name}".encode()).hexdigest()[:17]


def _outputs(typ: str, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    state = dict(inputs)
    if typ == "eks:index:Cluster":
        issuer = f"oidc.eks.{REGION}.amazonaws.com/id/MOCK"
        state |= {
            "kubeconfigJson": json.dumps(FAKE_KUBECONFIG),
            "kubeconfig": FAKE_KUBECONFIG,
            "oidcIssuer": issuer,
            "oidcProviderUrl": f"https://{issuer}",
            "oidcProviderArn": f"arn:aws:iam::{ACCOUNT}:oidc-provider/{issuer}",
            "clusterSecurityGroupId": "sg-0cluster",
            "nodeSecurityGroupId": "sg-0node",
        }
    elif typ == "kubernetes:helm.sh/v3:Release":
        state["status"] = {
            "name": inputs.get("name", name),
            "namespace": inputs.get("namespace", "default"),
            "status": "deployed",
        }
    elif typ in _TLS_OUTPUTS:
        state |= {key: _mock_pem(label, typ, name) for key, label in _TLS_OUTPUTS[typ].items()}
    elif typ.startswith("aws:"):
        service = typ.split(":")[1].split("/")[0]
        physical = inputs.get("name") or name
        state.setdefault("name", physical)
        state.setdefault(
            "arn", f"arn:aws:{service}:{REGION}:{ACCOUNT}:{typ.split(':')[-1].lower()}/{physical}"
        )
        if typ == "aws:sqs/queue:Queue":
            state["url"] = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{physical}"
            state["arn"] = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{physical}"
        if typ == "aws:iam/role:Role":
            state["arn"] = f"arn:aws:iam::{ACCOUNT}:role/{physical}"
        if typ == "aws:s3/bucket:Bucket":
            state.setdefault("bucket", inputs.get("bucket") or f"{name}-mock")
            state["arn"] = f"arn:aws:s3:::{state['bucket']}"
        if typ == "aws:fsx/lustreFileSystem:LustreFileSystem":
            state |= {"dnsName": f"fs-mock.fsx.{REGION}.amazonaws.com", "mountName": "mockmnt"}
    return state


# what pulumi-tls computes and the program reads back: PEM blocks, each unique to its resource, that say
# they are mocks (the provider marks the private keys secret, and so does the program)
_TLS_OUTPUTS = {
    "tls:index/privateKey:PrivateKey": {"privateKeyPem": "PRIVATE KEY", "publicKeyPem": "PUBLIC KEY"},
    "tls:index/selfSignedCert:SelfSignedCert": {"certPem": "CERTIFICATE"},
    "tls:index/certRequest:CertRequest": {"certRequestPem": "CERTIFICATE REQUEST"},
    "tls:index/locallySignedCert:LocallySignedCert": {"certPem": "CERTIFICATE"},
}


def _mock_pem(label: str, typ: str, name: str) -> str:
    body = hashlib.sha256(f"{typ}::{name}".encode()).hexdigest()
    return f"-----BEGIN {label}-----\nMOCK{body}\n-----END {label}-----\n"


EVALUATION_RECURSION_LIMIT = 5000


class ImmediateExecutor(ThreadPoolExecutor):
    """Run mock-monitor RPCs inline: no worker threads, no stray per-thread event loops."""

    def __init__(self) -> None:
        super().__init__(max_workers=1)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:  # type: ignore[override]
        fut: Future[Any] = Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - hand every error to the awaiter, like the pool does
            fut.set_exception(exc)
        return fut


def install(
    stack: str, config: dict[str, str], secret_keys: list[str], project: str = "llm-platform"
) -> tuple[PlatformMocks, asyncio.AbstractEventLoop]:
    """Fresh event loop, mocks and config for one evaluation of a program of `project`."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    loop.set_default_executor(ImmediateExecutor())
    mocks = PlatformMocks()
    pulumi.runtime.set_mocks(
        mocks, project=project, stack=stack, preview=False, monitor=RecordingMonitor(mocks)
    )
    pulumi.runtime.set_all_config(config, secret_keys)
    return mocks, loop


def run(program: Callable[[], object]) -> None:
    """Evaluate `program` once under the installed mocks; `pulumi.runtime.test` waits until every output
    has resolved, so everything the program registers is recorded."""

    @pulumi.runtime.test
    def evaluate() -> None:
        program()

    # The inline executor runs each RPC's `_sync_await` (pulumi.runtime.mocks) on the program's own loop, which
    # pumps it re-entrantly: registrations nest about 11 frames per level, ~730 deep for a five-model stack,
    # near Python's default limit of 1000. The engine's RPCs run on threads and do not nest.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, EVALUATION_RECURSION_LIMIT))
    try:
        _on_a_fresh_stack(evaluate)
    finally:
        sys.setrecursionlimit(limit)


def _on_a_fresh_stack(evaluate: Callable[[], None]) -> None:
    """Run `evaluate` on a thread of its own, with this thread's event loop and context (the SDK's settings are
    context variables), and raise what it raised. The SDK records each registration's call stack down to the
    thread's first frame (`pulumi.runtime.resource._get_stack_trace`): on a fresh thread that is the program's
    own frames, as under `pulumi up`, not also the caller's (a test runner's ~50 frames, a fifth of an
    evaluation's time)."""
    loop = asyncio.get_event_loop_policy().get_event_loop()
    context = contextvars.copy_context()
    raised: list[BaseException] = []

    def target() -> None:
        asyncio.set_event_loop(loop)
        try:
            context.run(evaluate)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            raised.append(exc)

    thread = threading.Thread(target=target, name="pulumi-program")
    thread.start()
    thread.join()
    if raised:
        raise raised[0]


def run_main() -> None:
    """Evaluate the project's __main__.py once under the installed mocks."""
    run(lambda: runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__"))


def uninstall(loop: asyncio.AbstractEventLoop) -> None:
    loop.close()
    asyncio.set_event_loop(None)


def plain(value: Any, mask: str = "[secret]") -> Any:
    """An input tree as plain data: every Pulumi secret replaced by `mask` (leaves keep their shape) and
    every resource reference written as `type::name`."""
    if rpc.is_rpc_secret(value):
        return _mask_all(rpc.unwrap_rpc_secret(value), mask)
    if isinstance(value, pulumi.Resource):
        return f"{value.pulumi_resource_type}::{value.pulumi_resource_name}"
    if isinstance(value, dict):
        return {k: plain(v, mask) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v, mask) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)  # the wire format carries every number as a double; Kubernetes wants integers
    return value


def _mask_all(value: Any, mask: str) -> Any:
    if isinstance(value, dict):
        return {k: _mask_all(v, mask) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_all(v, mask) for v in value]
    return mask
