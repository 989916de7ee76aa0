"""Reading Kubernetes objects as the policy engine hands them over, safely.

Props arrive with the engine's camelCase names. During `pulumi preview` some values are unknown (an
output of a resource not created yet): the SDK wraps props in a proxy that raises `UnknownValueError`
when such a value is read, and a policy that lets it escape is reported as "can't run during preview"
for the whole resource. `plain()` turns the proxy (or a hand-built dict in the tests) into plain data with
each unknown value replaced by `UNKNOWN`, so every rule can skip just the value it cannot judge.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from pulumi_policy.proxy import (
    UNKNOWN_ARCHIVE_VALUE,
    UNKNOWN_ARRAY_VALUE,
    UNKNOWN_ASSET_VALUE,
    UNKNOWN_BOOLEAN_VALUE,
    UNKNOWN_NUMBER_VALUE,
    UNKNOWN_OBJECT_VALUE,
    UNKNOWN_STRING_VALUE,
    UnknownValueError,
)

SENTINELS = frozenset(
    {
        UNKNOWN_ARCHIVE_VALUE,
        UNKNOWN_ARRAY_VALUE,
        UNKNOWN_ASSET_VALUE,
        UNKNOWN_BOOLEAN_VALUE,
        UNKNOWN_NUMBER_VALUE,
        UNKNOWN_OBJECT_VALUE,
        UNKNOWN_STRING_VALUE,
    }
)

# ------------------------------------------------------------------------------ resource types

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
HPA = "kubernetes:autoscaling/v2:HorizontalPodAutoscaler"
EC2_NODE_CLASSES = (
    "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass",
    "kubernetes:karpenter.k8s.aws/v1beta1:EC2NodeClass",
)
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
SECRET = "kubernetes:core/v1:Secret"

LEADER_WORKER_SET = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"

# where each workload kind keeps its pod templates (metadata + spec), the serving one first. A
# LeaderWorkerSet has two: its leader's (optional: without it the leader uses the worker template, as the
# LWS API says) and its workers'.
LWS_TEMPLATE = ("spec", "leaderWorkerTemplate")
POD_TEMPLATE_PATHS: dict[str, tuple[tuple[str, ...], ...]] = {
    DEPLOYMENT: (("spec", "template"),),
    "kubernetes:apps/v1:StatefulSet": (("spec", "template"),),
    "kubernetes:apps/v1:DaemonSet": (("spec", "template"),),
    "kubernetes:apps/v1:ReplicaSet": (("spec", "template"),),
    "kubernetes:batch/v1:Job": (("spec", "template"),),
    "kubernetes:batch/v1:CronJob": (("spec", "jobTemplate", "spec", "template"),),
    "kubernetes:core/v1:Pod": ((),),
    LEADER_WORKER_SET: ((*LWS_TEMPLATE, "leaderTemplate"), (*LWS_TEMPLATE, "workerTemplate")),
}
# kept for readers that only ask "is this a workload?"
POD_SPEC_PATHS = POD_TEMPLATE_PATHS

# ------------------------------------------------------------------------------ platform conventions

VLLM_NAME_LABEL = "app.kubernetes.io/name"
VLLM_CONTAINER = "vllm"
ENVIRONMENT_LABEL = "llm-platform/environment"
ENVIRONMENTS = ("dev", "staging", "prod")
GPU_RESOURCE = "nvidia.com/gpu"
ZONE_KEY = "topology.kubernetes.io/zone"
MAX_GPUS_PER_NODE = 8  # p4d, p4de, p5 and g5.48xlarge: the most GPUs one AWS instance has


class _Unknown:
    """A value `pulumi preview` cannot know yet."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<unknown during preview>"

    def __bool__(self) -> bool:
        return False


UNKNOWN: Any = _Unknown()


def is_unknown(value: Any) -> bool:
    return value is UNKNOWN


def plain(value: Any) -> Any:
    """Props (proxied or not) as plain dicts, lists and scalars, each unknown value replaced by UNKNOWN."""
    if isinstance(value, str):
        return UNKNOWN if value in SENTINELS else value
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key in list(value):
            try:
                out[key] = plain(value[key])
            except UnknownValueError:
                out[key] = UNKNOWN
        return out
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        items: list[Any] = []
        for i in range(len(value)):
            try:
                items.append(plain(value[i]))
            except UnknownValueError:
                items.append(UNKNOWN)
        return items
    return value


def dig(obj: Any, *path: str | int, default: Any = None) -> Any:
    """obj[path0][path1]...; `default` when a key is missing or a step is not a dict/list; UNKNOWN when a
    step is unknown."""
    current = obj
    for key in path:
        if is_unknown(current):
            return UNKNOWN
        if isinstance(key, int):
            if not isinstance(current, list) or not -len(current) <= key < len(current):
                return default
            current = current[key]
        else:
            if not isinstance(current, dict) or key not in current:
                return default
            current = current[key]
    return current


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_int(value: Any) -> int | None:
    """A count from a number or a numeric string ("8", 8, 8.0); None when unknown or not a whole number."""
    if is_unknown(value) or isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    if isinstance(value, str) and re.fullmatch(r"\s*[0-9]+\s*", value):
        return int(value)
    return None


# ------------------------------------------------------------------------------ workloads


def labels(obj: dict[str, Any]) -> dict[str, Any]:
    return as_dict(dig(obj, "metadata", "labels"))


def name_of(obj: dict[str, Any]) -> Any:
    return dig(obj, "metadata", "name")


def namespace_of(obj: dict[str, Any]) -> Any:
    ns = dig(obj, "metadata", "namespace")
    return "default" if ns is None else ns


class PodTemplate(NamedTuple):
    """One pod template of a workload; role is "leader"/"worker" in a LeaderWorkerSet, else None."""

    role: str | None
    labels: dict[str, Any]
    spec: dict[str, Any]


def pod_templates(resource_type: str, props: dict[str, Any]) -> list[PodTemplate]:
    """The workload's pod templates, the serving one first; [] for what is no workload."""
    out: list[PodTemplate] = []
    for path in POD_TEMPLATE_PATHS.get(resource_type, ()):
        template = dig(props, *path) if path else props
        role = path[-1].removesuffix("Template") if resource_type == LEADER_WORKER_SET else None
        if role == "leader" and template is None:
            template = dig(props, *LWS_TEMPLATE, "workerTemplate")  # the LWS default
        if isinstance(template, dict) and isinstance(template.get("spec"), dict):
            out.append(PodTemplate(role, as_dict(dig(template, "metadata", "labels")), template["spec"]))
    return out


def pod_spec(resource_type: str, props: dict[str, Any]) -> dict[str, Any] | None:
    """The serving pod template's spec (a LeaderWorkerSet's leader)."""
    found = pod_templates(resource_type, props)
    return found[0].spec if found else None


def pod_template_labels(props: dict[str, Any]) -> dict[str, Any]:
    """Labels of the pod templates a workload of any kind may have, merged (the serving one wins)."""
    merged: dict[str, Any] = {}
    for path in reversed([p for paths in POD_TEMPLATE_PATHS.values() for p in paths if p]):
        merged.update(as_dict(dig(props, *path, "metadata", "labels")))
    return merged


def containers(spec: dict[str, Any], *, init: bool = True) -> list[dict[str, Any]]:
    found = [c for c in as_list(spec.get("containers")) if isinstance(c, dict)]
    if init:
        found += [c for c in as_list(spec.get("initContainers")) if isinstance(c, dict)]
    return found


def is_vllm_workload(props: dict[str, Any], spec: dict[str, Any] | None) -> bool:
    """The platform's convention: label app.kubernetes.io/name=vllm (object or pod template) or a
    container named `vllm`."""
    if (
        labels(props).get(VLLM_NAME_LABEL) == "vllm"
        or pod_template_labels(props).get(VLLM_NAME_LABEL) == "vllm"
    ):
        return True
    return spec is not None and any(c.get("name") == VLLM_CONTAINER for c in containers(spec, init=False))


def vllm_container(spec: dict[str, Any]) -> dict[str, Any] | None:
    """The container running the vLLM server: the one named `vllm`, else the first whose image is vLLM's,
    else the only one."""
    main = containers(spec, init=False)
    for c in main:
        if c.get("name") == VLLM_CONTAINER:
            return c
    for c in main:
        image = c.get("image")
        if isinstance(image, str) and "vllm" in image:
            return c
    return main[0] if len(main) == 1 else None


def tokens(container: dict[str, Any]) -> list[str]:
    """command + args as one token list; a shell string (`sh -c "vllm serve ..."`) is split like a shell would.
    Unknown elements are dropped."""
    out: list[str] = []
    for part in as_list(container.get("command")) + as_list(container.get("args")):
        if not isinstance(part, str):
            continue
        if any(ch.isspace() for ch in part):
            try:
                out += shlex.split(part)
            except ValueError:
                out += part.split()
        else:
            out.append(part)
    return out


def _flag_name(token: str) -> str:
    name = token.split("=", 1)[0]
    return name.replace("_", "-") if name.startswith("--") else name


def flag_values(toks: list[str], *names: str) -> list[str]:
    """Every value given to a flag, as `--flag value` or `--flag=value`; vLLM also accepts `--flag_name`."""
    wanted = set(names)
    values: list[str] = []
    for i, tok in enumerate(toks):
        if not tok.startswith("-"):
            continue
        if _flag_name(tok) not in wanted:
            continue
        if "=" in tok:
            values.append(tok.split("=", 1)[1])
        elif i + 1 < len(toks):
            values.append(toks[i + 1])
    return values


def flag_int(toks: list[str], default: int, *names: str) -> int | None:
    """The last integer value of a flag (argparse keeps the last), `default` when absent, None when not a
    number (e.g. `$(TP)` expanded at run time)."""
    values = flag_values(toks, *names)
    if not values:
        return default
    return as_int(values[-1])


def env_entries(container: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in as_list(container.get("env")) if isinstance(e, dict)]


def env_literal(container: dict[str, Any], name: str) -> Any:
    """The literal value of an env var; None when absent; UNKNOWN when set from valueFrom or unknown."""
    for entry in env_entries(container):
        if entry.get("name") != name:
            continue
        if "valueFrom" in entry:
            return UNKNOWN
        return entry.get("value", "")
    return None


def tensor_parallel(container: dict[str, Any]) -> tuple[int | None, int | None]:
    """(tensor-parallel size, pipeline-parallel size) of a vLLM container; None when not readable."""
    toks = tokens(container)
    tp = flag_int(toks, 1, "--tensor-parallel-size", "-tp")
    pp = flag_int(toks, 1, "--pipeline-parallel-size", "-pp")
    return tp, pp


def node_count(container: dict[str, Any]) -> int | None:
    """vLLM's --nnodes: how many pods (one per node) share the model's TP x PP GPUs; None when not readable."""
    return flag_int(tokens(container), 1, "--nnodes")


def gpu_limit(container: dict[str, Any]) -> Any:
    """The container's nvidia.com/gpu limit as an int; None when absent; UNKNOWN when not known."""
    raw = dig(container, "resources", "limits", GPU_RESOURCE)
    if raw is None:
        raw = dig(container, "resources", "requests", GPU_RESOURCE)
    if raw is None:
        return None
    value = as_int(raw)
    return UNKNOWN if value is None else value


# ------------------------------------------------------------------------------ environment


def _environment_of_stack(stack: str) -> str | None:
    for env in ENVIRONMENTS:
        if stack == env or stack.startswith(f"{env}-") or stack.endswith(f"-{env}"):
            return env
    return None


def stack_of_urn(urn: str) -> str | None:
    """`urn:pulumi:<stack>::<project>::<type>::<name>` -> stack."""
    parts = urn.split("::")
    if not parts or not parts[0].startswith("urn:pulumi:"):
        return None
    return parts[0][len("urn:pulumi:") :] or None


def environment(config: Mapping[str, Any], urn: str, *objects: dict[str, Any]) -> str | None:
    """The stack environment a resource belongs to: the policy config `environment` (set per stack with
    policyPackConfigs), else the first `llm-platform/environment` label found on `objects`, else the stack
    name in the URN (what `pulumi.get_stack()` returns). None when nothing says."""
    configured = config.get("environment") if isinstance(config, Mapping) else None
    if isinstance(configured, str) and configured in ENVIRONMENTS:
        return configured
    for obj in objects:
        for source in (labels(obj), pod_template_labels(obj)):
            value = source.get(ENVIRONMENT_LABEL)
            if isinstance(value, str) and value in ENVIRONMENTS:
                return value
    stack = stack_of_urn(urn)
    return _environment_of_stack(stack) if stack else None


ENVIRONMENT_CONFIG = {"environment": {"type": "string", "enum": list(ENVIRONMENTS)}}


def walk(value: Any) -> Iterator[Any]:
    """Every dict and list inside value, depth first."""
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from walk(item)
    elif isinstance(value, list):
        yield value
        for item in value:
            yield from walk(item)
