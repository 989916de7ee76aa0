"""Every checkov suppression is listed and justified in src/llm_platform/tools/checkov.yaml, resource-scoped ones included."""

from __future__ import annotations

import re

import pytest

from llm_platform.config.loader import ROOT
from llm_platform.tools.render import evaluate
from tests.conftest import fixture_stack

CONFIG = (ROOT / "src/llm_platform/tools/checkov.yaml").read_text()
ANNOTATION = re.compile(r"^checkov\.io/skip\d+$")


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_resource_scoped_skips_are_listed_with_a_reason(stack: str) -> None:
    for manifest in evaluate(fixture_stack(stack)).manifests:
        annotations = (manifest["metadata"].get("annotations") or {}) | (
            ((manifest.get("spec") or {}).get("template") or {}).get("metadata", {}).get("annotations") or {}
        )
        for key, value in annotations.items():
            if not ANNOTATION.match(key):
                continue
            check, _, reason = value.partition("=")
            assert len(reason.split()) >= 4, (
                f"{manifest['kind']}/{manifest['metadata']['name']}: {key} has no reason"
            )
            listed = f"resource: {manifest['kind']} " in CONFIG and f"check {check}" in CONFIG
            assert listed, f"{manifest['kind']} {check} must be listed in src/llm_platform/tools/checkov.yaml"
