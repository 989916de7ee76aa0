"""Issue #49 item 9: `cluster.addonNodes.cpuLimit` below what the add-on pool holds at its peak passed the schema
and was caught only by preflight, with no file or line. The stack is now refused before any resource, at the
field's own line, with the add-ons' need, the limit and the least limit allowed; the floor is the pool's peak
(every all-day pod, each model's pickers at its maxReplicas and every loader Job), packed as preflight packs the
render, so the two agree."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from llm_platform.config import loader
from llm_platform.config.errors import ConfigError
from llm_platform.config.loader import ROOT, load_stack
from llm_platform.plan import resolve
from llm_platform.plan.addon_pods import addon_pool_peak, loader_job_pods
from llm_platform.platform_checks import PlanChecks
from llm_platform.tools import mocks as platform_mocks
from llm_platform.tools import render
from llm_platform.tools.preflight.run import run as preflight_run
from llm_platform.tools.preflight.view import from_mocks
from tests.conftest import FIXTURE_STACKS, fixture_stack


def _gateway_fixture_with(folder: Path, name: str, **addon_nodes: int) -> Path:
    """The gateway fixture (3 Envoy replicas, two models with pickers and loader Jobs) with `addonNodes`."""
    raw = yaml.safe_load(fixture_stack("gateway").read_text())
    raw["config"]["llm-platform:cluster"]["addonNodes"] = addon_nodes
    path = folder / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def _line_of(path: Path, key: str) -> int:
    return next(
        i for i, line in enumerate(path.read_text().splitlines(), 1) if line.strip().startswith(f"{key}:")
    )


def _checked(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_stack(path, checks=PlanChecks(path.stem).checks)
    return str(info.value)


def test_a_cpu_limit_below_the_addons_peak_is_refused_at_its_line_with_the_minimum(tmp_path: Path) -> None:
    path = _gateway_fixture_with(tmp_path, "low", cpuLimit=2)
    (problem,) = _checked(path).splitlines()
    assert problem.startswith(f"{path}:{_line_of(path, 'cpuLimit')}: cluster.addonNodes.cpuLimit: 2 vCPUs ")
    # the need (requests, node capacity) and what is allowed
    assert "25 pods requesting 8500m CPU" in problem and "5 x m6i.large, 10 vCPUs" in problem
    assert problem.endswith("allowed: at least 10")


def test_the_least_limit_it_names_passes_and_one_less_does_not(tmp_path: Path) -> None:
    load_stack(_gateway_fixture_with(tmp_path, "ten", cpuLimit=10), checks=PlanChecks("ten").checks)
    assert "allowed: at least 10" in _checked(_gateway_fixture_with(tmp_path, "nine", cpuLimit=9))


def test_a_memory_limit_below_the_peak_is_refused_with_the_cpu_one_in_one_run(tmp_path: Path) -> None:
    path = _gateway_fixture_with(tmp_path, "both", cpuLimit=4, memoryLimitGiB=8)
    cpu, memory = _checked(path).splitlines()
    assert cpu.startswith(f"{path}:{_line_of(path, 'cpuLimit')}: cluster.addonNodes.cpuLimit: 4 ")
    assert memory.startswith(
        f"{path}:{_line_of(path, 'memoryLimitGiB')}: cluster.addonNodes.memoryLimitGiB: 8 "
    )
    assert memory.endswith("allowed: at least 40")


def test_the_check_command_refuses_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from llm_platform.cli import check

    assert check.main([str(_gateway_fixture_with(tmp_path, "cli", cpuLimit=2))]) == 1
    assert "cluster.addonNodes.cpuLimit: 2 vCPUs" in capsys.readouterr().out


def test_the_program_refuses_it_before_any_resource_at_the_stack_files_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pulumi preview` on a stack file Pulumi.<stack>.yaml: LlmPlatform's check names its line, and resolves
    the plan once (the children's plan is the one the check resolved)."""
    path = _gateway_fixture_with(tmp_path, "lowpool", cpuLimit=2)
    monkeypatch.setattr(loader, "ROOT", tmp_path)  # where Pulumi.<stack>.yaml is read from
    config, secret_keys = render.stack_config(path)
    m, loop = platform_mocks.install("lowpool", config, secret_keys)
    try:
        with pytest.raises(ConfigError) as info:
            platform_mocks.run_main()
    finally:
        platform_mocks.uninstall(loop)
    assert f"{path}:{_line_of(path, 'cpuLimit')}: cluster.addonNodes.cpuLimit: 2 vCPUs" in str(info.value)
    assert m.created == []


@pytest.mark.parametrize(
    "path",
    sorted(ROOT.glob("Pulumi.*.yaml")) + sorted(FIXTURE_STACKS.glob("Pulumi.*.yaml")),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_every_stack_and_fixture_holds_its_addon_pool(path: Path) -> None:
    load_stack(path, checks=PlanChecks(path.stem).checks)


@pytest.mark.parametrize("name", ["gateway", "prod"])
def test_the_floor_is_preflights_packing_of_the_render_loader_jobs_included(name: str) -> None:
    """The plan's peak is what preflight's `ceilings` check packs from the render (Jobs at their parallelism
    beside the all-day pods), so a limit the schema lets through never fails preflight's ceiling."""
    path = fixture_stack(name)
    plan = resolve(load_stack(path), name)
    peak = addon_pool_peak(plan)
    assert peak is not None and loader_job_pods(plan), "both fixtures load weights into S3"
    view = from_mocks(path, render.evaluate(path).mocks)
    (ceiling,) = [f for f in preflight_run(view) if f.check == "ceilings" and f.object == "NodePool addons"]
    numbers = re.search(
        r"^(\d+) pods .* request (\d+)m CPU .*\), (\d+) vCPUs and ([\d.]+) GiB", ceiling.message
    )
    assert numbers is not None, ceiling.message
    assert numbers.groups() == (str(peak.pods), str(peak.cpu_millis), str(peak.vcpus), f"{peak.memory_gib:g}")
