"""The simulator package's layout: no import cycle between its modules (lazy imports inside functions count
too), no module takes another's private `_name`, and none reaches above the plan (components, tools, the
program). Read from the source with ast, nothing is imported."""

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


# The simulator reads the plan and its own code: never the components, the program's render, the mocks or
# preflight (nor anything else under tools/), which would make its lowest floor the whole Pulumi program.
ABOVE = ("llm_platform.components", "llm_platform.tools", "llm_platform.platform", "llm_platform.provider")


def _above(module: str) -> bool:
    return any(module == a or module.startswith(f"{a}.") for a in ABOVE)


def _reach(edges: dict[str, set[str]], start: str) -> set[str]:
    """Every module `start` imports, directly or through others."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in edges[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def whole_graph() -> dict[str, set[str]]:
    root = ROOT.parent
    return import_graph("llm_platform", package_modules("llm_platform", root))


def test_the_simulator_imports_nothing_above_the_plan() -> None:
    """Directly or through any module it imports (counting function-level imports)."""
    edges = whole_graph()
    found = {f"{m} -> {d}" for m in modules() for d in _reach(edges, m) if _above(d)}
    assert found == set()


def test_a_simulator_module_importing_a_component_would_be_found() -> None:
    edges = whole_graph()
    edges[f"{PACKAGE}.serving.replica"].add("llm_platform.components.specs.costs")
    assert any(_above(d) for d in _reach(edges, f"{PACKAGE}.day.engine"))
