"""The simulator package's layout: no import cycle between its modules (lazy imports inside functions count
too), and no module takes another's private `_name`. Read from the source with ast, nothing is imported."""

from __future__ import annotations

from pathlib import Path

import pytest

import llm_platform.simulator
from tests.import_graph import import_graph, import_order, imports, package_modules

PACKAGE = "llm_platform.simulator"
ROOT = Path(llm_platform.simulator.__file__).parent


def modules() -> dict[str, Path]:
    return package_modules(PACKAGE, ROOT)


def graph() -> dict[str, set[str]]:
    return import_graph(PACKAGE, modules())


def test_the_import_graph_is_read_from_the_package() -> None:
    edges = graph()
    assert f"{PACKAGE}.commands.cli" in edges[f"{PACKAGE}.__main__"]
    assert f"{PACKAGE}.day.engine" in edges[f"{PACKAGE}.search.scenarios"]


def test_no_import_cycle() -> None:
    assert len(import_order(PACKAGE, graph())) == len(modules())


def test_a_cycle_would_be_found() -> None:
    edges = graph()
    edges[f"{PACKAGE}.serving.replica"].add(f"{PACKAGE}.commands.cli")
    with pytest.raises(AssertionError, match="import cycle"):
        import_order(PACKAGE, edges)


def test_no_module_takes_a_private_name_of_another() -> None:
    known = modules()
    private = [
        f"{path.relative_to(ROOT)}: {module}.{name}"
        for path in known.values()
        for module, name in imports(path, PACKAGE, known)
        if name is not None and name.startswith("_")
    ]
    assert private == []
