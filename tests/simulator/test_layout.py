"""The simulator package's layout: no import cycle between its modules (lazy imports inside functions count
too), and no module takes another's private `_name`. Read from the source with ast, nothing is imported."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import llm_platform.simulator

PACKAGE = "llm_platform.simulator"
ROOT = Path(llm_platform.simulator.__file__).parent


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join([PACKAGE, *parts])] = path
    return found


def imports(path: Path, known: dict[str, Path]) -> list[tuple[str, str | None]]:
    """(module imported, name taken from it or None) for every import of the simulator in the file."""
    out: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, None) for a in node.names if a.name.startswith(PACKAGE)]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                out.append((sub, None) if sub in known else (node.module, alias.name))
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    edges: dict[str, set[str]] = {}
    for name, path in known.items():
        edges[name] = {m for m, _ in imports(path, known) if m in known and m != name}
    return edges


def test_the_import_graph_is_read_from_the_package() -> None:
    edges = graph()
    assert f"{PACKAGE}.commands.cli" in edges[f"{PACKAGE}.__main__"]
    assert f"{PACKAGE}.day.engine" in edges[f"{PACKAGE}.search.scenarios"]


def test_no_import_cycle() -> None:
    try:
        order = list(TopologicalSorter(graph()).static_order())
    except CycleError as exc:
        raise AssertionError(f"import cycle in {PACKAGE}: {' -> '.join(exc.args[1])}") from None
    assert len(order) == len(modules())


def test_a_cycle_would_be_found() -> None:
    edges = graph()
    edges[f"{PACKAGE}.serving.replica"].add(f"{PACKAGE}.commands.cli")
    try:
        list(TopologicalSorter(edges).static_order())
    except CycleError:
        return
    raise AssertionError("an added back edge was not reported as a cycle")


def test_no_module_takes_a_private_name_of_another() -> None:
    known = modules()
    private = [
        f"{path.relative_to(ROOT)}: {module}.{name}"
        for path in known.values()
        for module, name in imports(path, known)
        if name is not None and name.startswith("_")
    ]
    assert private == []
