"""The README's and docs' commands and tables, as the tests read them (tests/test_readme_commands.py parses each
command, tests/test_doc_commands.py runs each one, tests/test_doc_figures.py compares the figures)."""

from __future__ import annotations

import re
from pathlib import Path

from llm_platform.config.loader import ROOT

DOCS = (ROOT / "README.md", ROOT / "docs" / "simulator.md")
_COMMAND = re.compile(r"uv run python (-m \S+[^`#\n]*|\S+\.py[^`#\n]*)")
_OPTIONAL = re.compile(r"\[(--[^\]]+)\]")  # a synopsis' optional part, `[--holdout thu.csv]`


def text(doc: Path) -> str:
    return doc.read_text()


def commands(doc: Path | None = None) -> list[str]:
    """Every `uv run python ...` of the docs (code blocks and inline), line continuations joined, one space
    between words, as `-m module args` or `script.py args`."""
    found: set[str] = set()
    for path in DOCS if doc is None else (doc,):
        joined = text(path).replace("\\\n", " ")
        found |= {" ".join(c.split()) for c in _COMMAND.findall(joined)}
    return sorted(found)


def without_brackets(command: str) -> str:
    """A synopsis as a runnable command line: `[--json]` -> `--json` (the flags it shows as optional)."""
    return _OPTIONAL.sub(r"\1", command)


def table(doc: Path, header: str) -> list[list[str]]:
    """The rows of the Markdown table whose header line starts with `header`, as stripped cells."""
    lines = text(doc).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def block_after(doc: Path, marker: str, fence: str = "```yaml") -> str:
    """The first fenced block of kind `fence` after the line containing `marker`."""
    body = text(doc)
    start = body.index(fence, body.index(marker)) + len(fence) + 1
    return body[start : body.index("```", start)]
