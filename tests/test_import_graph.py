"""The whole package's import graph has no circle: read from the source with ast, so imports inside functions
and under TYPE_CHECKING count too (a circle kept alive by function-level imports is still a circle). The facts
(`llm_platform.facts`: catalogs, profiles, pins, cold start, geometry) are the floor below the schema. A new
circle fails here naming its modules."""

from __future__ import annotations

from pathlib import Path

import pytest

import llm_platform
from tests.import_graph import import_graph, import_order, package_modules

PACKAGE = "llm_platform"
ROOT = Path(llm_platform.__file__).parent


def modules() -> dict[str, Path]:
    return package_modules(PACKAGE, ROOT)


def graph() -> dict[str, set[str]]:
    return import_graph(PACKAGE, modules())


def test_the_graph_counts_function_level_and_type_only_imports() -> None:
    edges = graph()
    # llm_platform/__init__.py names its exports' modules under TYPE_CHECKING only
    assert f"{PACKAGE}.platform" in edges[PACKAGE]
    # components/specs/dashboards.py imports the cost rules inside a function
    assert f"{PACKAGE}.components.specs.costs" in edges[f"{PACKAGE}.components.specs.dashboards"]


def test_no_import_circle_in_the_package() -> None:
    assert len(import_order(PACKAGE, graph())) == len(modules())


def test_a_circle_through_a_function_level_import_would_be_found(tmp_path: Path) -> None:
    """Two modules importing each other, one of them only inside a function, form a circle."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.b import B\n\nA = 1\n")
    (pkg / "b.py").write_text("B = 2\n\n\ndef late():\n    from pkg.a import A\n\n    return A\n")
    known = package_modules("pkg", pkg)
    with pytest.raises(AssertionError, match=r"import cycle in pkg: .*pkg\.(a|b)"):
        import_order("pkg", import_graph("pkg", known))


def test_a_circle_through_a_parent_package_init_would_be_found(tmp_path: Path) -> None:
    """`from pkg.sub.x import X` runs pkg/sub/__init__.py first: if that imports a module importing back, it
    is a circle at run time although no two modules name each other (plan -> simulator.serving.lora ->
    plan.lora was one)."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from pkg.sub.y import Y\n")
    (pkg / "sub" / "x.py").write_text("X = 1\n")
    (pkg / "sub" / "y.py").write_text("from pkg.other import O\n\nY = 2\n")
    (pkg / "other.py").write_text("from pkg.sub.x import X\n\nO = 3\n")
    known = package_modules("pkg", pkg)
    with pytest.raises(AssertionError, match=r"import cycle in pkg"):
        import_order("pkg", import_graph("pkg", known))


def test_the_facts_import_nothing_above_them() -> None:
    """Catalogs, profiles, pins, cold start and geometry are the floor: they import only each other."""
    edges = graph()
    facts = {m for m in edges if m == f"{PACKAGE}.facts" or m.startswith(f"{PACKAGE}.facts.")}
    assert facts, "no facts package"
    above = {f"{m} -> {d}" for m in facts for d in edges[m] if d not in facts}
    assert above == set()
