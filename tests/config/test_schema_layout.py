"""The schema package's layout: its modules import each other without a cycle (lazy and type-only imports
count too, and no module imports the package itself, whose `__init__` imports them all), and the package
re-exports every public name they define, so `from llm_platform.config.schema import X` keeps working.
Read from the source with ast, apart from the package's `__all__`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import llm_platform.config.schema as schema
from tests.import_graph import import_graph, import_order, package_modules

PACKAGE = "llm_platform.config.schema"
ROOT = Path(schema.__file__).parent


def modules() -> dict[str, Path]:
    return package_modules(PACKAGE, ROOT)


def graph() -> dict[str, set[str]]:
    """Each module's imports of the package's modules (the package itself for `from ...schema import X`)."""
    return import_graph(PACKAGE, modules())


def test_the_import_graph_is_read_from_the_package() -> None:
    edges = graph()
    assert f"{PACKAGE}.stack" in edges[PACKAGE]
    assert f"{PACKAGE}.base" in edges[f"{PACKAGE}.pools"]


def test_no_import_cycle() -> None:
    assert len(import_order(PACKAGE, graph())) == len(modules())


def test_a_cycle_would_be_found() -> None:
    edges = graph()
    edges[f"{PACKAGE}.base"].add(PACKAGE)
    with pytest.raises(AssertionError, match="import cycle"):
        import_order(PACKAGE, edges)


def test_the_package_re_exports_every_public_name_of_its_modules() -> None:
    defined: set[str] = set()
    for name, path in modules().items():
        if name == PACKAGE:
            continue
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                defined.add(node.name)
            elif isinstance(node, ast.Assign):
                defined |= {t.id for t in node.targets if isinstance(t, ast.Name)}
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                defined.add(node.target.id)
    public = {n for n in defined if not n.startswith("_")}
    assert "StackConfig" in public and "RuleError" in public
    assert sorted(schema.__all__) == sorted(public)
    assert all(hasattr(schema, n) for n in schema.__all__)
