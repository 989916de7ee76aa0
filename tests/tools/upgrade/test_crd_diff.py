"""The CRD comparison of an upgrade preview: each change of a CRD's schema that makes the API server refuse an
object it accepted before is reported, with the rendered objects it hits."""

from __future__ import annotations

import copy
from typing import Any

from llm_platform.tools.upgrade import crd_diff
from llm_platform.tools.upgrade.preview import refused
from llm_platform.tools.validate_render import schemas_of


def widget_crd(spec_properties: dict[str, Any], versions: tuple[str, ...] = ("v1",), required=()) -> dict:
    spec: dict[str, Any] = {"type": "object", "properties": spec_properties}
    if required:
        spec["required"] = list(required)
    schema = {"type": "object", "properties": {"metadata": {"type": "object"}, "spec": spec}}
    return {
        "kind": "CustomResourceDefinition",
        "spec": {
            "group": "example.io",
            "names": {"kind": "Widget"},
            "versions": [
                {"name": v, "served": True, "schema": {"openAPIV3Schema": schema}} for v in versions
            ],
        },
    }


OLD = {
    "size": {"type": "integer"},
    "color": {"type": "string", "enum": ["red", "green", "blue"]},
    "legacyMode": {"type": "boolean"},
    "rules": {"type": "array", "items": {"type": "object", "properties": {"path": {"type": "string"}}}},
}


def widget(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.io/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "n"},
        "spec": spec,
    }


def test_a_field_the_new_crd_removes_is_reported_with_the_objects_that_set_it() -> None:
    new = copy.deepcopy(OLD)
    del new["legacyMode"]
    new["compatMode"] = {"type": "boolean"}
    changes = crd_diff.compare(schemas_of([widget_crd(OLD)]), schemas_of([widget_crd(new)]))
    assert [(c.path, c.change) for c in changes] == [("spec.legacyMode", "removed")]
    assert "renamed? new here: compatMode" in changes[0].detail
    setting, not_setting = widget(legacyMode=True), widget(size=1)
    assert crd_diff.used_by(changes[0], [setting, not_setting]) == ["Widget n/w"]
    assert crd_diff.used_by(changes[0], [not_setting]) == []


def test_a_new_required_field_a_narrowed_enum_and_a_dropped_version_are_each_reported() -> None:
    new = copy.deepcopy(OLD)
    new["color"]["enum"] = ["red", "green"]
    new["rules"]["items"]["required"] = ["path"]
    old_schemas = schemas_of([widget_crd(OLD, versions=("v1", "v1beta1"))])
    changes = crd_diff.compare(old_schemas, schemas_of([widget_crd(new, required=("size",))]))
    found = {(c.api_version, c.path, c.change) for c in changes}
    assert found == {
        ("example.io/v1", "spec.color", "enum"),
        ("example.io/v1", "spec.rules[].path", "required"),
        ("example.io/v1", "spec.size", "required"),
        ("example.io/v1beta1", "", "version"),
    }
    by_path = {c.path: c for c in changes}
    blue, red = widget(size=1, color="blue"), widget(size=1, color="red")
    assert crd_diff.used_by(by_path["spec.color"], [blue, red]) == ["Widget n/w"]
    assert crd_diff.used_by(by_path["spec.color"], [red]) == []
    assert crd_diff.used_by(by_path["spec.size"], [widget(color="red")]) == ["Widget n/w"]
    assert crd_diff.used_by(by_path["spec.rules[].path"], [widget(size=1, rules=[{}])]) == ["Widget n/w"]


def test_an_unchanged_crd_has_no_changes() -> None:
    assert crd_diff.compare(schemas_of([widget_crd(OLD)]), schemas_of([widget_crd(copy.deepcopy(OLD))])) == []


def test_a_new_cel_rule_is_reported_on_the_objects_that_set_its_field() -> None:
    new = copy.deepcopy(OLD)
    new["rules"]["x-kubernetes-validations"] = [{"rule": "size(self) > 0", "message": "at least one rule"}]
    changes = crd_diff.compare(schemas_of([widget_crd(OLD)]), schemas_of([widget_crd(new)]))
    assert [(c.path, c.change) for c in changes] == [("spec.rules", "cel")]
    assert "at least one rule" in changes[0].detail
    assert crd_diff.used_by(changes[0], [widget(rules=[])]) == ["Widget n/w"]
    assert crd_diff.used_by(changes[0], [widget(size=1)]) == []


def test_an_enum_added_to_a_free_field_hits_only_the_objects_with_a_value_outside_it() -> None:
    new = copy.deepcopy(OLD)
    new["rules"]["items"]["properties"]["path"]["enum"] = ["/v1", "/v2"]
    changes = crd_diff.compare(schemas_of([widget_crd(OLD)]), schemas_of([widget_crd(new)]))
    assert [(c.path, c.change) for c in changes] == [("spec.rules[].path", "enum")]
    assert crd_diff.used_by(changes[0], [widget(rules=[{"path": "/v3"}])]) == ["Widget n/w"]
    assert crd_diff.used_by(changes[0], [widget(rules=[{"path": "/v1"}])]) == []


def test_the_render_is_checked_against_the_candidate_crds_and_a_field_they_refuse_is_reported() -> None:
    new = copy.deepcopy(OLD)
    del new["legacyMode"]
    pinned, candidate = schemas_of([widget_crd(OLD)]), schemas_of([widget_crd(new)])
    docs = [widget(size=1, legacyMode=True), widget(size=2)]
    found = refused(docs, pinned, candidate, "1.34")
    assert len(found) == 1 and found[0].startswith("Widget n/w: spec: Additional properties")
    assert "legacyMode" in found[0]
    assert refused([widget(size=2)], pinned, candidate, "1.34") == []
