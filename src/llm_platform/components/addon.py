"""A Helm add-on installed straight from its record (llm_platform/facts/addons.py): its namespace and its charts'
releases, in order, with the values its builder makes of the stack's plan. `LlmPlatform` installs this way every
record that has no component of its own."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from llm_platform.components import child_options
from llm_platform.components.kubernetes import apply_manifest
from llm_platform.components.specs.common import namespace_manifest
from llm_platform.facts.addons import Addon, resolve_ref, version_of
from llm_platform.plan import Plan

TYPE = "llm-platform:index:HelmAddon"


@dataclass(frozen=True, kw_only=True)
class HelmAddonArgs:
    record: Addon
    plan: Plan
    """The stack's plan, which the record's values builder reads."""
    versions: Mapping[str, str] = field(default_factory=dict)
    """A caller's chart versions by add-on name (default: the records' pins)."""


class HelmAddon(pulumi.ComponentResource):
    """The record's namespace (at its Pod Security level) and one Helm release per chart, each after the one
    before (CRD charts come first)."""

    release: k8s.helm.v3.Release
    """The main chart's release (the last): what an add-on that comes after this one waits for."""

    def __init__(self, name: str, args: HelmAddonArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        record = args.record
        values: dict[str, Any] = resolve_ref(record.values)(args.plan) if record.values else {}
        super().__init__(TYPE, name, None, opts)
        previous: pulumi.Resource = apply_manifest(
            f"{name}-ns", namespace_manifest(record.namespace, record.pod_security), child_options(self, opts)
        )
        for chart in record.charts:
            repo = k8s.helm.v3.RepositoryOptsArgs(repo=chart.repo) if chart.repo else None
            previous = k8s.helm.v3.Release(
                f"{name}-release" if chart is record.chart else f"{name}-{chart.release}",
                name=chart.release,
                chart=chart.chart,
                version=version_of(record, chart, args.versions),
                repository_opts=repo,
                namespace=record.namespace,
                values=values if chart is record.chart else {},
                opts=child_options(self, opts, previous),
            )
        assert isinstance(previous, k8s.helm.v3.Release)  # a record has at least one chart
        self.release = previous
        self.register_outputs({"release": self.release.name})
