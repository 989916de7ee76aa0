"""Run promtool from tests: check PromQL and rule files, and unit-test alerting rules.

promtool is a hard requirement (`scripts/setup`, which .ci/run runs, installs the Debian `prometheus`
package): a missing binary fails the test with the install command instead of skipping, so a CI image
without it cannot pass silently.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

INSTALL_HINT = (
    "promtool is not on PATH; run `bash scripts/setup` (installs it with apt-get or brew, as .ci/run does), "
    "or put the promtool binary of a Prometheus release on PATH"
)

# Values Grafana substitutes at query time, made concrete so promtool can parse the expression.
GRAFANA_BUILTINS = {"__rate_interval": "5m", "__interval": "1m", "__range": "1h"}
_GRAFANA_VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)")


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail(INSTALL_HINT, pytrace=False)
    return path


def run(*args: str | Path) -> str:
    """Run promtool; fail the test with its output unless it exits 0."""
    proc = subprocess.run(
        [promtool(), *map(str, args)], capture_output=True, text=True, timeout=60, check=False
    )
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        pytest.fail(
            f"promtool {' '.join(map(str, args))} failed ({proc.returncode}):\n{output}", pytrace=False
        )
    return output


def substitute_grafana_variables(expr: str, values: Mapping[str, str] | None = None) -> str:
    """`$namespace`, `${model_name}`, `$__rate_interval` ... -> concrete values promtool can parse."""
    known = {**GRAFANA_BUILTINS, **(values or {})}

    def replace(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        return known.get(name, f"grafana-{name}")

    return _GRAFANA_VARIABLE.sub(replace, expr)


def check_rule_file(spec: Mapping[str, Any], tmp_path: Path, name: str = "rules.yaml") -> str:
    """`promtool check rules` on a rule file (a PrometheusRule's `spec`: `{"groups": [...]}`)."""
    path = tmp_path / name
    path.write_text(yaml.safe_dump(dict(spec), sort_keys=False))
    return run("check", "rules", path)


def check_expressions(exprs: Iterable[str], tmp_path: Path) -> str:
    """Parse every expression with promtool, each wrapped in a throwaway recording rule."""
    rules = [{"record": f"check:expr_{i}", "expr": expr} for i, expr in enumerate(exprs)]
    assert rules, "no expressions to check"
    return check_rule_file({"groups": [{"name": "expressions", "rules": rules}]}, tmp_path, "exprs.yaml")


def unit_test_rules(
    spec: Mapping[str, Any], tests: list[dict[str, Any]], tmp_path: Path, *, evaluation_interval: str = "1m"
) -> str:
    """`promtool test rules`: the rule file plus a unit-test file of `tests` groups, in tmp_path."""
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump(dict(spec), sort_keys=False))
    test_file = tmp_path / "tests.yaml"
    test_file.write_text(
        yaml.safe_dump(
            {"rule_files": [rules.name], "evaluation_interval": evaluation_interval, "tests": tests},
            sort_keys=False,
        )
    )
    return run("test", "rules", test_file)


def expression_case(
    expr: str,
    input_series: list[dict[str, str]],
    expected: float | list[dict[str, Any]],
    *,
    eval_time: str = "3m",
    interval: str = "1m",
) -> dict[str, Any]:
    """One `promtool test rules` group: `expr` over `input_series` at `eval_time` gives `expected` (a single
    value of an aggregate without labels, or the samples themselves)."""
    samples = [{"labels": "{}", "value": expected}] if isinstance(expected, int | float) else expected
    return {
        "interval": interval,
        "input_series": input_series,
        "promql_expr_test": [{"expr": expr, "eval_time": eval_time, "exp_samples": samples}],
    }


def rule_expressions(rule: Mapping[str, Any]) -> list[str]:
    """Every PromQL expression in a PrometheusRule manifest (or its `spec`)."""
    spec = rule.get("spec", rule)
    return [str(r["expr"]) for group in spec["groups"] for r in group["rules"]]


def _panels(panels: list[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels", []))  # collapsed rows hold their panels


def dashboard_expressions(dashboard: Mapping[str, Any]) -> list[str]:
    """Every PromQL expression of a Grafana dashboard's panels (Grafana variables left in place)."""
    return [
        str(target["expr"])
        for panel in _panels(dashboard.get("panels", []))
        for target in panel.get("targets", [])
        if target.get("expr")
    ]
