"""Rules for the vLLM Deployment itself and for every pod the platform runs."""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
)

from .objects import (
    DEPLOYMENT,
    ENVIRONMENT_CONFIG,
    ENVIRONMENT_LABEL,
    ENVIRONMENTS,
    HELM_RELEASE,
    LEADER_WORKER_SET,
    LWS_TEMPLATE,
    MAX_GPUS_PER_NODE,
    POD_SPEC_PATHS,
    ZONE_KEY,
    as_dict,
    as_int,
    as_list,
    containers,
    dig,
    env_entries,
    env_literal,
    environment,
    flag_int,
    flag_values,
    gpu_limit,
    is_unknown,
    is_vllm_workload,
    labels,
    name_of,
    namespace_of,
    node_count,
    plain,
    pod_templates,
    stack_of_urn,
    tensor_parallel,
    tokens,
    vllm_container,
    walk,
)

VLLM_WORKLOADS = (DEPLOYMENT, "kubernetes:apps/v1:StatefulSet", LEADER_WORKER_SET)


class VllmPod(NamedTuple):
    """One vLLM pod template of a workload: where to say it is, the workload, its spec and vLLM container."""

    where: str
    props: dict[str, Any]
    spec: dict[str, Any]
    container: dict[str, Any]
    role: str | None = None  # a LeaderWorkerSet's leader or worker


def _where(args: ResourceValidationArgs, props: dict[str, Any]) -> str:
    kind = args.resource_type.rsplit(":", 1)[-1]
    name = name_of(props)
    if not isinstance(name, str):
        name = args.name
    ns = namespace_of(props)
    return f"{kind} {ns}/{name}" if isinstance(ns, str) else f"{kind} {name}"


def _vllm_pods(args: ResourceValidationArgs) -> list[VllmPod]:
    """The vLLM pod templates of a vLLM workload (a LeaderWorkerSet's leader and workers), else []."""
    if args.resource_type not in VLLM_WORKLOADS:
        return []
    props = plain(args.props)
    templates = pod_templates(args.resource_type, props)
    if not templates or not is_vllm_workload(props, templates[0].spec):
        return []
    where = _where(args, props)
    pods = []
    for t in templates:
        container = vllm_container(t.spec)
        if container is not None:
            pods.append(VllmPod(f"{where} ({t.role})" if t.role else where, props, t.spec, container, t.role))
    return pods


# ---------------------------------------------------------------------------------- tensor parallel


def _gpus_per_pod(container: dict[str, Any]) -> int | None:
    """TP x PP GPUs over --nnodes pods (one per node); None when not readable or not a whole number."""
    tp, pp = tensor_parallel(container)
    nodes = node_count(container)
    if tp is None or pp is None or not nodes or (tp * pp) % nodes:
        return None
    return tp * pp // nodes


def _validate_tensor_parallel(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for pod in _vllm_pods(args):
        _check_parallelism(args, pod, report_violation)


def _check_parallelism(args: ResourceValidationArgs, pod: VllmPod, report_violation: ReportViolation) -> None:
    where, container = pod.where, pod.container
    tp, pp = tensor_parallel(container)
    nodes = node_count(container)
    if tp is None or pp is None or nodes is None:
        return  # set at run time (e.g. `$(TP)`): nothing to judge
    total = tp * pp
    if nodes > 1 and args.resource_type != LEADER_WORKER_SET:
        report_violation(
            f"{where}: --nnodes {nodes} spreads one model over {nodes} pods, but a "
            f"{args.resource_type.rsplit(':', 1)[-1]}'s pods start, fail and scale one by one, so the group "
            "never forms reliably; run a multi-node vLLM as a LeaderWorkerSet (one group per replica).",
            None,
        )
        return
    if args.resource_type == LEADER_WORKER_SET:
        raw_size = dig(pod.props, *LWS_TEMPLATE, "size")
        size = 1 if raw_size is None else as_int(raw_size)  # the API's default group size is 1
        if size is not None and size != nodes:
            report_violation(
                f"{where}: the LeaderWorkerSet's group size is {size} but vLLM is told --nnodes {nodes}; "
                "the group never forms (vLLM waits for ranks that do not exist, or ranks join no group). "
                "Set leaderWorkerTemplate.size to --nnodes.",
                None,
            )
    if total % nodes:
        report_violation(
            f"{where}: --tensor-parallel-size {tp} x --pipeline-parallel-size {pp} = {total} GPUs do not divide "
            f"over --nnodes {nodes}; each node must hold the same number of the model's GPUs.",
            None,
        )
        return
    needed = total // nodes
    if tp > MAX_GPUS_PER_NODE or needed > MAX_GPUS_PER_NODE:
        report_violation(
            f"{where}: --tensor-parallel-size {tp} (x pipeline-parallel {pp}"
            + (f" over {nodes} nodes" if nodes > 1 else "")
            + f") needs {needed} GPUs in one pod, "
            f"more than the {MAX_GPUS_PER_NODE} GPUs of the largest AWS GPU instance; tensor parallelism "
            "must stay within one node (NVLink). Use a smaller tensor-parallel size or a multi-node setup "
            "built for it (pipeline stages on a LeaderWorkerSet).",
            None,
        )
    limit = gpu_limit(container)
    if is_unknown(limit):
        return
    if limit is None:
        report_violation(
            f"{where}: the vLLM container has no nvidia.com/gpu limit; set it to the GPUs each pod serves "
            f"({needed}) so the scheduler places all of them on one node.",
            None,
        )
    elif limit != needed:
        report_violation(
            f"{where}: nvidia.com/gpu limit {limit} does not match --tensor-parallel-size {tp}"
            + (f" x --pipeline-parallel-size {pp}" if pp != 1 else "")
            + (f" / --nnodes {nodes}" if nodes != 1 else "")
            + f" = {needed}; vLLM shards the model over exactly that many GPUs of each node "
            "(fewer fails at start-up, more leaves GPUs idle).",
            None,
        )


vllm_tensor_parallel_within_node = ResourceValidationPolicy(
    name="vllm-tensor-parallel-within-node",
    description=(
        "A vLLM pod's nvidia.com/gpu limit equals its tensor-parallel x pipeline-parallel size over --nnodes, "
        "at most 8 (one node); more than one node only as a LeaderWorkerSet whose group size is --nnodes."
    ),
    validate=_validate_tensor_parallel,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    remediation_steps=(
        "Set the vLLM container's nvidia.com/gpu limit to TP x PP / --nnodes (<= 8); run --nnodes > 1 as a "
        "LeaderWorkerSet with leaderWorkerTemplate.size = --nnodes."
    ),
)


# ---------------------------------------------------------------------------------- /dev/shm


def _validate_shm(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for pod in _vllm_pods(args):
        _check_shm(pod, report_violation)


def _check_shm(pod: VllmPod, report_violation: ReportViolation) -> None:
    spec, container = pod.spec, pod.container
    needed = _gpus_per_pod(container)
    if needed is None or needed <= 1:
        return
    memory_volumes: set[str] = set()
    for volume in as_list(spec.get("volumes")):
        if not isinstance(volume, dict):
            continue
        medium = dig(volume, "emptyDir", "medium")
        if is_unknown(medium) or is_unknown(volume.get("name")):
            return  # can't tell during preview
        if medium == "Memory" and isinstance(volume.get("name"), str):
            memory_volumes.add(volume["name"])
    mounts = [m for m in as_list(container.get("volumeMounts")) if isinstance(m, dict)]
    if any(is_unknown(m.get("mountPath")) or is_unknown(m.get("name")) for m in mounts):
        return
    shm = [m for m in mounts if m.get("mountPath") == "/dev/shm"]
    where = pod.where
    if not shm:
        report_violation(
            f"{where}: tensor-parallel over {needed} GPUs but nothing is mounted at /dev/shm; NCCL uses shared "
            "memory between the GPU workers and the container default of 64 MiB crashes or hangs them. Mount "
            "an emptyDir with medium: Memory (and a sizeLimit) at /dev/shm in the vLLM container.",
            None,
        )
    elif not any(m.get("name") in memory_volumes for m in shm):
        report_violation(
            f"{where}: /dev/shm is mounted from a volume that is not an emptyDir with medium: Memory; use a "
            "memory-backed emptyDir so NCCL's shared-memory transport works.",
            None,
        )


vllm_shm_for_tensor_parallel = ResourceValidationPolicy(
    name="vllm-shm-for-tensor-parallel",
    description="A vLLM pod with tensor-parallel > 1 mounts a memory-medium emptyDir at /dev/shm.",
    validate=_validate_shm,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    remediation_steps="Add volume {name: shm, emptyDir: {medium: Memory, sizeLimit: ...}} mounted at /dev/shm.",
)


# ---------------------------------------------------------------------------------- Hugging Face Hub

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
MODEL_FLAGS = ("--model", "--tokenizer")
MODEL_ENV = ("MODEL", "MODEL_ID", "MODEL_NAME", "HF_MODEL_ID", "VLLM_MODEL")
TRUTHY = {"1", "true", "yes", "on"}
HUB_DOWNLOAD = re.compile(r"\b(huggingface-cli\s+download|hf\s+download|snapshot_download|hf_hub_download)\b")


def _is_hub_id(ref: str) -> bool:
    return bool(HUB_ID.match(ref)) and not ref.startswith(("./", "../")) and "://" not in ref


def _model_refs(container: dict[str, Any]) -> list[str]:
    """What the vLLM server loads: `vllm serve <model>`, `--model`, `--tokenizer`, or a MODEL-like env var."""
    toks = tokens(container)
    refs = list(flag_values(toks, *MODEL_FLAGS))
    for i, tok in enumerate(toks):
        if tok == "serve" and i + 1 < len(toks) and not toks[i + 1].startswith("-"):
            refs.append(toks[i + 1])
    args = [a for a in as_list(container.get("args")) if isinstance(a, str)]
    command = [a for a in as_list(container.get("command")) if isinstance(a, str)]
    if args and not command and not args[0].startswith("-") and " " not in args[0] and args[0] != "serve":
        refs.append(args[0])  # the image's entrypoint is `vllm serve`: the first arg is the model
    for name in MODEL_ENV:
        value = env_literal(container, name)
        if isinstance(value, str) and value:
            refs.append(value)
    return refs


def _validate_no_hub(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for pod in _vllm_pods(args):
        env = environment(args.get_config(), args.urn, pod.props)
        if env != "dev":
            _check_no_hub(pod, env or "a stack that is not dev", report_violation)


def _check_no_hub(pod: VllmPod, label: str, report_violation: ReportViolation) -> None:
    where, spec, container = pod.where, pod.spec, pod.container
    offline = env_literal(container, "HF_HUB_OFFLINE")
    if not is_unknown(offline):
        hub_refs = [r for r in _model_refs(container) if _is_hub_id(r)]
        if hub_refs and not (isinstance(offline, str) and offline.strip().lower() in TRUTHY):
            report_violation(
                f"{where}: in {label} the model {hub_refs[0]!r} is a Hugging Face Hub id and HF_HUB_OFFLINE is "
                "not 1, so every new replica downloads the weights from the Hub (slow scale-out, rate limits, "
                "an outside dependency on the serving path). Serve from the model cache (a local path, "
                "s3:// or FSx) or set HF_HUB_OFFLINE=1 with a pre-filled HF cache.",
                None,
            )
    for c in containers(spec):
        script = " ".join(tokens(c))
        if HUB_DOWNLOAD.search(script):
            report_violation(
                f"{where}: container {c.get('name')!r} downloads from the Hugging Face Hub at start-up in "
                f"{label}; copy the weights from the model cache (S3/FSx) instead.",
                None,
            )


vllm_no_hub_downloads_outside_dev = ResourceValidationPolicy(
    name="vllm-no-hub-downloads-outside-dev",
    description="Outside dev, vLLM pods load weights from the model cache, never from the Hugging Face Hub.",
    validate=_validate_no_hub,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=PolicyConfigSchema(properties=ENVIRONMENT_CONFIG),
    remediation_steps="Use cache: nvme, fsx or s3 for the model, or set HF_HUB_OFFLINE=1 with a pre-filled cache.",
)


# ---------------------------------------------------------------------------------- prod zone spread


def _validate_zone_spread(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    # a LeaderWorkerSet's group stays in one zone by design (EFA and its placement group are zonal: the
    # pool's placementZone); its replicas are whole groups, which this rule does not judge
    pods = [] if args.resource_type == LEADER_WORKER_SET else _vllm_pods(args)
    if not pods:
        return
    props, spec = pods[0].props, pods[0].spec
    if environment(args.get_config(), args.urn, props) != "prod":
        return
    constraints = spec.get("topologySpreadConstraints")
    if is_unknown(constraints):
        return
    keys = [c.get("topologyKey") for c in as_list(constraints) if isinstance(c, dict)]
    if any(is_unknown(k) for k in keys):
        return
    if ZONE_KEY not in keys:
        report_violation(
            f"{_where(args, props)}: a prod vLLM Deployment needs a topologySpreadConstraint on {ZONE_KEY} so "
            "its replicas (and the GPU nodes Karpenter starts for them) land in different availability zones; "
            "one zone outage or spot reclaim must not take the model down.",
            None,
        )


prod_vllm_zone_spread = ResourceValidationPolicy(
    name="prod-vllm-zone-spread",
    description="Prod vLLM Deployments spread their replicas across availability zones.",
    validate=_validate_zone_spread,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=PolicyConfigSchema(properties=ENVIRONMENT_CONFIG),
    remediation_steps=f"Add topologySpreadConstraints: [{{maxSkew: 1, topologyKey: {ZONE_KEY}, ...}}].",
)


# ---------------------------------------------------------------------------------- graceful drain

SLEEP = re.compile(r"(?:^|[\s;&|(])sleep\s+([0-9]+)(?:s\b|\b)")


def _prestop_seconds(container: dict[str, Any]) -> int | None:
    """Seconds the preStop hook holds the pod before SIGTERM; None when it can't be read."""
    pre_stop = dig(container, "lifecycle", "preStop")
    if pre_stop is None:
        return 0
    if is_unknown(pre_stop) or not isinstance(pre_stop, dict):
        return None
    if "sleep" in pre_stop:
        return as_int(dig(pre_stop, "sleep", "seconds"))
    command = dig(pre_stop, "exec", "command")
    if command is not None:
        if is_unknown(command):
            return None
        parts = [p for p in as_list(command) if isinstance(p, str)]
        return sum(int(m) for m in SLEEP.findall(" ".join(parts)))
    return 0  # httpGet / tcpSocket: no fixed duration


def _validate_drain(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for pod in _vllm_pods(args):
        _check_drain(pod, report_violation)


def _check_drain(pod: VllmPod, report_violation: ReportViolation) -> None:
    spec, container = pod.spec, pod.container
    raw_grace = spec.get("terminationGracePeriodSeconds")
    if is_unknown(raw_grace):
        return
    grace = 30 if raw_grace is None else as_int(raw_grace)
    pre_stop = _prestop_seconds(container)
    # a worker serves no request: its preStop waits out the leader's drain, and then it stops at once
    drain = 0 if pod.role == "worker" else flag_int(tokens(container), 0, "--shutdown-timeout")
    if grace is None or pre_stop is None or drain is None:
        return
    if grace <= pre_stop + drain:
        report_violation(
            f"{pod.where}: terminationGracePeriodSeconds {grace}"
            + (" (the default)" if raw_grace is None else "")
            + f" is not longer than the preStop sleep ({pre_stop}s) plus vLLM's --shutdown-timeout drain "
            f"({drain}s); the kubelet kills the server mid-drain and in-flight requests fail. Set it to at "
            f"least {pre_stop + drain + 10}.",
            None,
        )


vllm_graceful_drain = ResourceValidationPolicy(
    name="vllm-graceful-drain",
    description="terminationGracePeriodSeconds is longer than the preStop sleep plus vLLM's --shutdown-timeout.",
    validate=_validate_drain,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.MEDIUM,
    remediation_steps="Raise terminationGracePeriodSeconds above preStop sleep + --shutdown-timeout.",
)


# ---------------------------------------------------------------------------------- environment label


def _validate_environment_label(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    pods = _vllm_pods(args)
    if not pods:
        return
    props = pods[0].props
    value = labels(props).get(ENVIRONMENT_LABEL)
    if is_unknown(value):
        return
    where = _where(args, props)
    if value not in ENVIRONMENTS:
        report_violation(
            f"{where}: label {ENVIRONMENT_LABEL} is {value!r}; the platform's policies read the stack "
            f"environment from it. Set it to one of {', '.join(ENVIRONMENTS)}.",
            None,
        )
        return
    stack = stack_of_urn(args.urn)
    stack_env = environment({}, args.urn) if stack else None
    if stack_env is not None and stack_env != value:
        report_violation(
            f"{where}: label {ENVIRONMENT_LABEL}={value} but the stack is {stack!r} ({stack_env}); a wrong "
            "label would exempt the Deployment from its environment's rules.",
            None,
        )


vllm_environment_label = ResourceValidationPolicy(
    name="vllm-environment-label",
    description=f"vLLM Deployments carry the {ENVIRONMENT_LABEL} label, matching the stack.",
    validate=_validate_environment_label,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.MEDIUM,
    remediation_steps=f"Add metadata.labels['{ENVIRONMENT_LABEL}'] = the stack environment.",
)


# ---------------------------------------------------------------------------------- plaintext secrets

SECRET_WORDS = {"TOKEN", "KEY", "APIKEY", "PASSWORD", "PASSWD", "SECRET", "CREDENTIAL", "CREDENTIALS"}
# names that hold where a secret is, not the secret itself
NOT_SECRET_SUFFIXES = {"FILE", "PATH", "DIR", "ID", "NAME", "ARN", "HEADER", "REF"}
SECRET_FLAGS = ("--api-key", "--hf-token")
ENV_EXPANSION = re.compile(r"^\$\([A-Za-z_][A-Za-z0-9_]*\)$")


def looks_secret(name: str, allowed: frozenset[str] = frozenset()) -> bool:
    if name in allowed:
        return False
    parts = [p for p in re.split(r"[^A-Za-z0-9]+", name.upper()) if p]
    if not parts or parts[-1] in NOT_SECRET_SUFFIXES:
        return False
    return any(p in SECRET_WORDS for p in parts)


def _env_problems(container: dict[str, Any], allowed: frozenset[str]) -> list[str]:
    problems: list[str] = []
    for entry in env_entries(container):
        name = entry.get("name")
        if not isinstance(name, str) or not looks_secret(name, allowed):
            continue
        value_from = entry.get("valueFrom")
        if is_unknown(value_from):
            continue
        if value_from is not None:
            if dig(value_from, "secretKeyRef") is None:
                problems.append(
                    f"env {name} comes from {', '.join(as_dict(value_from)) or 'valueFrom'}, not a Secret"
                )
            continue
        value = entry.get("value")
        if is_unknown(value) or value in (None, ""):
            continue
        problems.append(f"env {name} has a literal value")
    toks = tokens(container)
    for flag in SECRET_FLAGS:
        for value in flag_values(toks, flag):
            if not ENV_EXPANSION.match(value):
                problems.append(f"{flag} is given literally on the command line")
    return problems


def _helm_env_problems(values: Any, allowed: frozenset[str]) -> list[str]:
    """Chart values: `env`-like lists of {name, value} and `env` maps of NAME: value."""
    problems: list[str] = []
    for node in walk(values):
        if not isinstance(node, dict):
            continue
        for key, item in node.items():
            if not (isinstance(key, str) and key.lower().endswith(("env", "envvars"))):
                continue
            if isinstance(item, list):
                for entry in item:
                    if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                        name, value = entry["name"], entry.get("value")
                        if looks_secret(name, allowed) and isinstance(value, str) and value:
                            problems.append(f"values {key}: {name} has a literal value")
            elif isinstance(item, dict):
                for name, value in item.items():
                    if (
                        isinstance(name, str)
                        and looks_secret(name, allowed)
                        and isinstance(value, str)
                        and value
                    ):
                        problems.append(f"values {key}.{name} has a literal value")
    return problems


def _validate_secret_env(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    config = args.get_config()
    allowed = frozenset(n for n in as_list(plain(config.get("allowedNames", []))) if isinstance(n, str))
    props = plain(args.props)
    if args.resource_type == HELM_RELEASE:
        problems = _helm_env_problems(props.get("values"), allowed)
        where = f"Helm release {props.get('name') if isinstance(props.get('name'), str) else args.name}"
    elif args.resource_type in POD_SPEC_PATHS:
        where = _where(args, props)
        problems = []
        for template in pod_templates(args.resource_type, props):
            role = f"{template.role} " if template.role else ""
            for c in containers(template.spec):
                problems += [f"{role}container {c.get('name')!r}: {p}" for p in _env_problems(c, allowed)]
    else:
        return
    for problem in problems:
        report_violation(
            f"{where}: {problem}. Secrets in a pod spec are readable by anyone who can read the Deployment; "
            "use env valueFrom.secretKeyRef (for vLLM: VLLM_API_KEY / HF_TOKEN from a Secret, and "
            "`--api-key $(VLLM_API_KEY)` if the flag is used).",
            None,
        )


no_plaintext_secret_env = ResourceValidationPolicy(
    name="no-plaintext-secret-env",
    description="Env vars named like TOKEN/KEY/PASSWORD/SECRET come from a Secret (valueFrom.secretKeyRef).",
    validate=_validate_secret_env,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    config_schema=PolicyConfigSchema(
        properties={"allowedNames": {"type": "array", "items": {"type": "string"}, "default": []}}
    ),
    remediation_steps="Create a kubernetes Secret and reference it with env[].valueFrom.secretKeyRef.",
)


WORKLOAD_POLICIES = [
    vllm_tensor_parallel_within_node,
    vllm_shm_for_tensor_parallel,
    vllm_no_hub_downloads_outside_dev,
    prod_vllm_zone_spread,
    vllm_graceful_drain,
    vllm_environment_label,
    no_plaintext_secret_env,
]

__all__ = [
    "WORKLOAD_POLICIES",
    "looks_secret",
    "no_plaintext_secret_env",
    "prod_vllm_zone_spread",
    "vllm_environment_label",
    "vllm_graceful_drain",
    "vllm_no_hub_downloads_outside_dev",
    "vllm_shm_for_tensor_parallel",
    "vllm_tensor_parallel_within_node",
]
