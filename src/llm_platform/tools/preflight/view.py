"""What preflight reads: a stack's render with each object's identity and (transitive) dependencies.

`from_stack` evaluates the real `__main__.py` under the same mocks as `tools.render` (so it is never stale);
tests build a `RenderView` from a fixture stack and edit it to trip each check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llm_platform.config.loader import Stack, load_stack, stack_name
from llm_platform.plan import resolve
from llm_platform.plan.gateway import FlowControlPlan
from llm_platform.plan.zero import from_zero_wake_s
from llm_platform.tools import mocks as platform_mocks
from llm_platform.tools import render

HELM_RELEASE = render.HELM_RELEASE


@dataclass
class Manifest:
    key: str  # the registering resource, "type::name"
    body: dict[str, Any]

    @property
    def kind(self) -> str:
        return self.body["kind"]

    @property
    def name(self) -> str:
        return self.body["metadata"]["name"]

    @property
    def namespace(self) -> str:
        return self.body["metadata"].get("namespace", "")

    @property
    def ref(self) -> str:
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"


@dataclass
class Release:
    key: str
    name: str
    chart: str
    version: str | None
    namespace: str
    values: dict[str, Any]


@dataclass
class RenderView:
    stack: str
    environment: str
    zones: list[str]
    manifests: list[Manifest]
    releases: dict[str, Release]  # by release name
    resources: dict[str, dict[str, Any]]  # "type::name" -> plain inputs
    dependencies: dict[str, set[str]] = field(default_factory=dict)  # "type::name" -> transitive deps
    slos: dict[str, tuple[float, float]] = field(default_factory=dict)  # model -> (TTFT, ITL) seconds
    # model at minReplicas 0 behind the gateway -> its from-zero wake, seconds (plan/zero.py from_zero_wake_s)
    from_zero_wakes: dict[str, float] = field(default_factory=dict)
    # the same models -> (the picker's queue as planned, the model's maxModelLen)
    zero_queues: dict[str, tuple[FlowControlPlan, int]] = field(default_factory=dict)

    def of_kind(self, *kinds: str) -> list[Manifest]:
        return [m for m in self.manifests if m.kind in kinds]

    def of_type(self, typ: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.resources.items() if k.split("::", 1)[0] == typ}


def _key_of_urn(urn: str) -> str:
    *_, type_chain, name = urn.split("::")
    return f"{type_chain.split('$')[-1]}::{name}"


def _closure(direct: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}

    def visit(key: str, stack: frozenset[str]) -> set[str]:
        if key in out:
            return out[key]
        seen: set[str] = set()
        for dep in direct.get(key, ()):
            if dep in stack:
                continue
            seen |= {dep} | visit(dep, stack | {dep})
        out[key] = seen
        return seen

    for key in direct:
        visit(key, frozenset({key}))
    return out


def from_mocks(stack: Stack, mocks: platform_mocks.PlatformMocks) -> RenderView:
    settings = load_stack(stack)
    manifests, releases, resources, direct = [], {}, {}, {}
    for r in mocks.created:
        key = f"{r.typ}::{r.name}"
        inputs = platform_mocks.plain(r.inputs)
        resources[key] = inputs
        direct[key] = {_key_of_urn(d) for d in r.dependencies}
        if r.typ == HELM_RELEASE:
            chart = inputs["chart"].rsplit("/", 1)[-1]
            name = inputs.get("name", r.name)
            releases[name] = Release(
                key,
                name,
                chart,
                inputs.get("version"),
                inputs.get("namespace", ""),
                inputs.get("values") or {},
            )
        elif render._is_manifest(r.typ):
            manifests.append(Manifest(key, render._manifest(r)))
    at_zero = [
        (m, m.flow_control)
        for m in resolve(settings).models
        if m.flow_control is not None and m.flow_control.from_zero_hold_s is not None
    ]
    return RenderView(
        stack=stack_name(stack),
        environment=settings.environment.value,
        zones=list(settings.cluster.availability_zones),
        manifests=manifests,
        releases=releases,
        resources=resources,
        dependencies=_closure(direct),
        slos={m.name: (m.slo.ttft_seconds, m.slo.itl_seconds) for m in settings.models},
        from_zero_wakes={m.name: from_zero_wake_s(m.cold_start, m.scaling) for m, _ in at_zero},
        zero_queues={m.name: (queue, m.model.max_model_len) for m, queue in at_zero},
    )


def from_stack(stack: Stack) -> RenderView:
    """Evaluate the stack's program (a name or a stack file) under mocks (raises ConfigError on a bad stack file)."""
    evaluated = render.evaluate(stack)
    return from_mocks(stack, evaluated.mocks)
