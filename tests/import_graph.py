"""A package's import graph, read from its source with ast (imports inside functions and under TYPE_CHECKING
count too; nothing is imported): the simulator's and the stack schema's layout tests read it."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path


def package_modules(package: str, root: Path) -> dict[str, Path]:
    """Every module under `root` by dotted name (a subpackage's `__init__` by the subpackage's name)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join([package, *parts])] = path
    return found


def imports(path: Path, package: str, known: dict[str, Path]) -> list[tuple[str, str | None]]:
    """(module imported, name taken from it or None) for every import of `package` in the file."""
    out: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, None) for a in node.names if a.name.startswith(package)]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(package):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                out.append((sub, None) if sub in known else (node.module, alias.name))
    return out


def import_graph(package: str, known: dict[str, Path]) -> dict[str, set[str]]:
    """Each module's imports of the package's other modules. Importing `a.b.c` runs `a.b`'s `__init__` first,
    so a module also imports the subpackages above what it imports (not the root package, whose `__init__`
    names its exports under TYPE_CHECKING and lazily, nor a package the module itself is inside)."""
    edges: dict[str, set[str]] = {}
    for name, path in known.items():
        direct = {m for m, _ in imports(path, package, known) if m in known and m != name}
        parents = {
            parent
            for m in direct
            for parent in (".".join(m.split(".")[:i]) for i in range(2, m.count(".") + 1))
            if parent in known and parent != name and not name.startswith(f"{parent}.")
        }
        edges[name] = direct | parents
    return edges


def import_order(package: str, edges: dict[str, set[str]]) -> list[str]:
    """The modules in an order that imports each after what it imports; a cycle fails, naming its modules."""
    try:
        return list(TopologicalSorter(edges).static_order())
    except CycleError as exc:
        raise AssertionError(f"import cycle in {package}: {' -> '.join(exc.args[1])}") from None
