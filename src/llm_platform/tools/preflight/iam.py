"""Does each controller's policy cover its upstream reference policy at the pinned version?

The references live in `iam_reference/<controller>.json`: the upstream statements (actions, resources) with
their source URL, the actions this platform deliberately does not grant (`not_needed`, each with the reason),
the actions AWS authorises only on `*` (`unscoped_only`: scoped to an ARN they are always denied) and the
resource type an action acts on (`resource_types`: granted on other ARNs it is always denied).
"""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path
from typing import Any

from llm_platform.tools.preflight.findings import Finding
from llm_platform.tools.preflight.view import RenderView

CHECK = "iam"
REFERENCES = Path(__file__).parent / "iam_reference"


def references() -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(REFERENCES.glob("*.json"))]


def _listify(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value or [])


def granted(policy: dict[str, Any]) -> dict[str, list[str]]:
    """action pattern -> resources it is allowed on."""
    out: dict[str, list[str]] = {}
    for s in policy.get("Statement") or []:
        if s.get("Effect") != "Allow":
            continue
        for action in _listify(s.get("Action")):
            out.setdefault(action, []).extend(_listify(s.get("Resource")))
    return out


def _resources_for(action: str, grants: dict[str, list[str]]) -> list[str] | None:
    found = [r for pattern, rs in grants.items() if fnmatch.fnmatchcase(action, pattern) for r in rs]
    return found or None


def _policies_of(view: RenderView, ref: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]] | None:
    """(inline policies, managed policy ARNs) of the role bound to the controller's service account."""
    identity = ref["identity"]
    role_names: list[str] = []
    for key, assoc in view.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation").items():
        if (
            assoc.get("namespace") == identity.get("namespace")
            and assoc.get("serviceAccount") == identity["serviceAccount"]
        ):
            role_names.append(key.split("::", 1)[1])
    for addon in view.of_type("aws:eks/addon:Addon").values():
        if addon.get("addonName") != identity.get("addon"):
            continue
        for assoc in addon.get("podIdentityAssociations") or []:
            if assoc.get("serviceAccount") == identity["serviceAccount"]:
                role_names.append(str(assoc["roleArn"]).rsplit("/", 1)[-1])
    if not role_names:
        return None
    inline = [
        json.loads(p["policy"])
        for key, p in view.of_type("aws:iam/rolePolicy:RolePolicy").items()
        if key.split("::", 1)[1] in role_names and isinstance(p.get("policy"), str)
    ]
    managed = [
        a["policyArn"]
        for a in view.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment").values()
        if str(a.get("role")) in role_names
    ]
    return inline, managed


def iam(view: RenderView) -> list[Finding]:
    out = []
    for ref in references():
        found = _policies_of(view, ref)
        if found is None:
            continue  # the stack does not run this controller
        inline, managed = found
        obj = f"IAM {ref['controller']}"
        if ref.get("managed_policy"):
            if ref["managed_policy"] not in managed:
                out.append(Finding("blocker", CHECK, obj, "policy_arn",
                                   f"upstream ({ref['source']}) attaches {ref['managed_policy']}; the role has {managed or 'none'}"))  # fmt: skip
            continue
        grants: dict[str, list[str]] = {}
        for policy in inline:
            for action, resources in granted(policy).items():
                grants.setdefault(action, []).extend(resources)
        upstream = sorted({a for s in ref["statements"] for a in s["actions"]})
        missing = [
            a for a in upstream if _resources_for(a, grants) is None and a not in ref.get("not_needed", {})
        ]
        if missing:
            out.append(Finding("blocker", CHECK, obj, "Statement[].Action",
                               f"{len(missing)} of {len(upstream)} actions of the upstream {ref['version']} policy are "
                               f"not granted: {', '.join(missing)} (source: {ref['source']})"))  # fmt: skip
        for action in ref.get("unscoped_only", []):
            resources = _resources_for(action, grants)
            if resources is not None and "*" not in resources:
                out.append(Finding("blocker", CHECK, obj, "Statement[].Resource",
                                   f"{action} supports no resource-level permission (upstream grants it on *); "
                                   f"granted only on {', '.join(resources)}, every call is denied"))  # fmt: skip
        for action, types in ref.get("resource_types", {}).items():
            resources = _resources_for(action, grants)
            if resources is None or "*" in resources or "*" in types:
                continue
            if not any(t in r for r in resources for t in types):
                out.append(Finding("blocker", CHECK, obj, "Statement[].Resource",
                                   f"{action} acts on {' or '.join(types)} ARNs; granted only on "
                                   f"{', '.join(resources)}, every call is denied"))  # fmt: skip
    return out
