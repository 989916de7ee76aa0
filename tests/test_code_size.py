"""Every module in src/ stays readable in one sitting: no file over 500 lines and no function or method over 80,
unless its docstring (the module's, or the function's) says why in a `why long:` line. Generated files
(config/stack_args.py) are exempt. One test per file, so a failure names the file and its offenders."""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "llm_platform"
MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 80
REASON = "why long:"
GENERATED = {PACKAGE / "config" / "stack_args.py"}


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p not in GENERATED)


def oversized(source: str) -> list[str]:
    """What in `source` is over the limits without a `why long:` reason: the file, and each function or method
    by line and qualified name."""
    tree = ast.parse(source)
    found: list[str] = []
    lines = len(source.splitlines())
    if lines > MAX_FILE_LINES and REASON not in (ast.get_docstring(tree) or ""):
        found.append(f"the file: {lines} lines (limit {MAX_FILE_LINES})")

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    length = (child.end_lineno or child.lineno) - child.lineno + 1
                    if length > MAX_FUNCTION_LINES and REASON not in (ast.get_docstring(child) or ""):
                        found.append(
                            f"line {child.lineno} {name}: {length} lines (limit {MAX_FUNCTION_LINES})"
                        )
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_file_and_functions_within_limits(path: Path) -> None:
    found = oversized(path.read_text())
    assert not found, (
        f"{path.relative_to(SRC.parent)}: over the size limits without a `{REASON}` line in its docstring: "
        + "; ".join(found)
        + ". Split it into well-named helpers or modules, or say in its docstring why it is long."
    )


def test_limits_are_enforced() -> None:
    """The check itself: a long function and a long file are caught, and a `why long:` reason lets them
    through."""
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    long_function = f"def f():\n{body}\n"
    assert oversized(long_function) == [
        f"line 1 f: {MAX_FUNCTION_LINES + 1} lines (limit {MAX_FUNCTION_LINES})"
    ]
    reasoned = f'def f():\n    """why long: one table."""\n{body}\n'
    assert oversized(reasoned) == []
    method = f"class C:\n    def m(self):\n    {body.replace(chr(10), chr(10) + '    ')}\n"
    assert oversized(method) == [f"line 2 C.m: {MAX_FUNCTION_LINES + 1} lines (limit {MAX_FUNCTION_LINES})"]
    long_file = "\n".join(f"x{i} = {i}" for i in range(MAX_FILE_LINES + 1)) + "\n"
    assert oversized(long_file) == [f"the file: {MAX_FILE_LINES + 1} lines (limit {MAX_FILE_LINES})"]
    assert oversized('"""A table.\n\nwhy long: data."""\n' + long_file) == []
