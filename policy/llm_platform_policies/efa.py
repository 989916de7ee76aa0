"""Rules for every vLLM pod that requests EFA (a multi-node LeaderWorkerSet, a disaggregated model's prefill and
decode Deployments): what one resource shows of whether NCCL and NIXL will really use EFA.

- The image carries libfabric, aws-ofi-nccl and NIXL: its repository is one of `efaImages` (default llm-d's AWS
  build, the platform's facts/versions.py EFA_VLLM_IMAGE); the stock vLLM image is not known to.
- The vLLM container adds IPC_LOCK (RDMA registers, that is pins, GPU and host memory).
- NCCL's socket interfaces leave out the EKS Pod Identity link `pod-id-link0`: set as an exclusion list naming
  it, or as an inclusion list without it (aws-samples/aws-do-eks PR #54: when EFA initialisation fails, NCCL's
  TCP fallback otherwise takes `pod-id-link0` and hangs).

`pd-role-ports` (a stack rule) checks the NetworkPolicies between a disaggregated model's roles; the zones of
the roles need the NodePools' requirements, which the preflight reads (llm_platform/tools/preflight/
disaggregation.py).
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from .objects import (
    DEPLOYMENT,
    LEADER_WORKER_SET,
    as_dict,
    as_list,
    dig,
    env_literal,
    is_unknown,
    is_vllm_workload,
    name_of,
    namespace_of,
    plain,
    pod_templates,
    vllm_container,
)

EFA = "vpc.amazonaws.com/efa"
POD_IDENTITY_LINK = "pod-id-link0"
# the image repositories known to carry the EFA userspace, aws-ofi-nccl and NIXL (llm-platform's
# facts/versions.py EFA_IMAGES; the pack runs without the package, so the default is repeated here)
DEFAULT_EFA_IMAGES = ["ghcr.io/llm-d/llm-d-aws"]


def _repository(image: str) -> str:
    image = image.split("@", 1)[0]
    head, _, tag = image.rpartition(":")
    return head if head and "/" not in tag else image


def _requests_efa(container: dict[str, Any]) -> bool:
    value = dig(container, "resources", "requests", EFA)
    if value is None or is_unknown(value):
        value = dig(container, "resources", "limits", EFA)
    try:
        return value is not None and not is_unknown(value) and int(str(value)) > 0
    except ValueError:
        return False


def efa_problems(container: dict[str, Any], allowed_images: list[str]) -> list[str]:
    """What keeps an EFA-requesting vLLM container off EFA, one sentence each."""
    out = []
    image = container.get("image")
    if isinstance(image, str) and _repository(image) not in allowed_images:
        out.append(
            f"image {image} is not known to carry libfabric, aws-ofi-nccl and NIXL (allowed repositories: "
            f"{', '.join(allowed_images)}); without them NCCL and NIXL fall back to TCP without an error"
        )
    added = dig(container, "securityContext", "capabilities", "add")
    if not is_unknown(added) and "IPC_LOCK" not in as_list(added):
        out.append("the container does not add the IPC_LOCK capability EFA's memory registration needs")
    ifname = env_literal(container, "NCCL_SOCKET_IFNAME")
    if not is_unknown(ifname):
        names = [] if ifname is None else str(ifname).removeprefix("^").split(",")
        excluding = isinstance(ifname, str) and ifname.startswith("^")
        if (
            ifname is None
            or (excluding and POD_IDENTITY_LINK not in names)
            or (not excluding and POD_IDENTITY_LINK in names)
        ):
            out.append(
                f"NCCL_SOCKET_IFNAME {ifname!r} does not keep NCCL off the EKS Pod Identity link "
                f"{POD_IDENTITY_LINK}; set it to ^lo,docker,veth,eni,{POD_IDENTITY_LINK} (or name eth0)"
            )
    return out


def _validate_efa_pods(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    if args.resource_type not in (DEPLOYMENT, LEADER_WORKER_SET):
        return
    props = plain(args.props)
    templates = pod_templates(args.resource_type, props)
    if not templates or not is_vllm_workload(props, templates[0].spec):
        return
    allowed = (args.get_config() or {}).get("efaImages") or DEFAULT_EFA_IMAGES
    kind = args.resource_type.rsplit(":", 1)[-1]
    where = f"{kind} {namespace_of(props)}/{name_of(props)}"
    for t in templates:
        container = vllm_container(t.spec)
        if container is None or not _requests_efa(container):
            continue
        for problem in efa_problems(container, list(allowed)):
            report_violation(
                f"{where}{f' ({t.role})' if t.role else ''}: requests {EFA}, but {problem}.", None
            )


vllm_efa_pods = ResourceValidationPolicy(
    name="vllm-efa-pods",
    description="vLLM pods that request EFA run an image with the EFA libraries, add IPC_LOCK and keep NCCL "
    "off the Pod Identity link.",
    validate=_validate_efa_pods,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=PolicyConfigSchema(
        properties={
            "efaImages": {"type": "array", "items": {"type": "string"}, "default": DEFAULT_EFA_IMAGES}
        }
    ),
    remediation_steps="Leave the model's image unset (the platform picks its EFA image), or name an image "
    "built with the AWS EFA installer and NIXL and add its repository to efaImages.",
)


# ---------------------------------------------------------------------------------- P/D role ports

ROLE_LABEL = "llm-d.ai/role"
INSTANCE_LABEL = "app.kubernetes.io/instance"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
SIDE_CHANNEL_ENV = "VLLM_NIXL_SIDE_CHANNEL_PORT"


def _matches(selector: Any, pod_labels: dict[str, Any]) -> bool:
    wanted = dig(selector, "matchLabels") or {}
    return isinstance(wanted, dict) and all(pod_labels.get(k) == v for k, v in wanted.items())


def admits(policies: list[dict[str, Any]], pods: dict[str, Any], peers: dict[str, Any], port: int) -> bool:
    """Some NetworkPolicy selecting `pods` admits same-namespace `peers` on `port` (unknowns admit)."""
    for p in policies:
        spec = as_dict(p.get("spec"))
        if not _matches(spec.get("podSelector") or {}, pods):
            continue
        for rule in as_list(spec.get("ingress")):
            rule = as_dict(rule)
            ports = [x.get("port") for x in as_list(rule.get("ports")) if isinstance(x, dict)]
            sources = as_list(rule.get("from"))
            peer_ok = not sources or any(
                isinstance(f, dict)
                and "podSelector" in f
                and "namespaceSelector" not in f
                and _matches(f["podSelector"], peers)
                for f in sources
            )
            if peer_ok and (not ports or port in ports or any(is_unknown(x) for x in ports)):
                return True
    return False


def role_port_problems(deployments: list[dict[str, Any]], policies: list[dict[str, Any]]) -> list[str]:
    """One namespace's P/D roles against its NetworkPolicies: the decode pods reach the prefill pods' vLLM
    port, and each role reaches the other on its NIXL side-channel port."""
    roles: dict[str, dict[str, dict[str, Any]]] = {}
    for d in deployments:
        pod_labels = as_dict(dig(d, "spec", "template", "metadata", "labels"))
        role = pod_labels.get(ROLE_LABEL)
        if isinstance(role, str):
            roles.setdefault(str(pod_labels.get(INSTANCE_LABEL)), {})[role] = d
    out = []
    for model, found in sorted(roles.items()):
        prefill, decode = found.get("prefill"), found.get("decode")
        if prefill is None or decode is None:
            continue
        labels_of = {r: as_dict(dig(d, "spec", "template", "metadata", "labels")) for r, d in found.items()}
        vllm = {
            r: vllm_container(as_dict(dig(d, "spec", "template", "spec"))) or {} for r, d in found.items()
        }
        http = next(
            (
                x.get("containerPort")
                for x in as_list(vllm["prefill"].get("ports"))
                if dig(x, "name") == "http"
            ),
            None,
        )
        if isinstance(http, int) and not admits(policies, labels_of["prefill"], labels_of["decode"], http):
            out.append(
                f"model {model}: no NetworkPolicy admits its decode pods on the prefill pods' port {http}"
            )
        for role, other in (("prefill", "decode"), ("decode", "prefill")):
            raw = env_literal(vllm[role], SIDE_CHANNEL_ENV)
            if raw is None or is_unknown(raw):
                continue
            port = int(str(raw))
            if not admits(policies, labels_of[role], labels_of[other], port):
                out.append(
                    f"model {model}: no NetworkPolicy admits its {other} pods on the {role} pods' NIXL "
                    f"side-channel port {port}"
                )
    return out


def _validate_role_ports(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    by_namespace: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for r in args.resources:
        if r.resource_type not in (DEPLOYMENT, NETWORK_POLICY):
            continue
        props = plain(r.props)
        ns = namespace_of(props)
        deployments, policies = by_namespace.setdefault(str(ns), ([], []))
        (deployments if r.resource_type == DEPLOYMENT else policies).append(props)
    for deployments, policies in by_namespace.values():
        for problem in role_port_problems(deployments, policies):
            report_violation(f"{problem}: the KV transfer between the roles cannot start.", None)


pd_role_ports = StackValidationPolicy(
    name="pd-role-ports",
    description="A disaggregated model's NetworkPolicies admit the decode pods on the prefill port and each "
    "role on the other's NIXL side-channel port.",
    validate=_validate_role_ports,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    remediation_steps="Admit the model's pods to each other on VLLM_NIXL_SIDE_CHANNEL_PORT and the decode pods "
    "to the prefill pods' vLLM port (llm-platform renders both: <model>-kv-side-channel, "
    "<model>-prefill-from-decode).",
)

EFA_POLICIES = [vllm_efa_pods, pd_role_ports]
