"""Every namespace the platform writes to is one that plan/naming.py defines: a name typed again in a spec or
component (a Helm release installed into "karpenter" while the Pod Identity association says "karpenter-system")
would put a controller where nothing grants it an identity or admits its traffic."""

from __future__ import annotations

from llm_platform.plan import naming
from llm_platform.tools import render
from tests.conftest import fixture_stack, load_fixture

PLATFORM_NAMESPACES = {value for key, value in vars(naming).items() if key.endswith("_NAMESPACE")}


def test_every_namespace_written_is_defined_in_naming() -> None:
    stack = "prod"  # the fixture with every component: gateway, FSx, load balancer, headroom
    rendered = render.evaluate(fixture_stack(stack))
    allowed = PLATFORM_NAMESPACES | {naming.model_namespace(m.name) for m in load_fixture(stack).models}
    used: dict[str, str] = {}
    for manifest in rendered.manifests:
        ref = f"{manifest['kind']} {manifest['metadata'].get('name')}"
        if manifest["kind"] == "Namespace":
            used[manifest["metadata"]["name"]] = ref
        elif "namespace" in manifest["metadata"]:
            used[manifest["metadata"]["namespace"]] = ref
    for release, body in rendered.helm.items():
        used[body["namespace"]] = f"Helm release {release}"
    for resource in rendered.resources:
        if resource["type"] == "aws:eks/podIdentityAssociation:PodIdentityAssociation":
            used[resource["inputs"]["namespace"]] = f"PodIdentityAssociation {resource['name']}"
    undefined = {ns: ref for ns, ref in used.items() if ns not in allowed}
    assert not undefined, f"namespaces not defined in plan/naming.py: {undefined}"
    # and every namespace naming.py defines is one the full stack writes to (none is left over)
    assert set(used) >= PLATFORM_NAMESPACES
