"""The README's and docs' commands and tables, as the tests read them (tests/test_readme_commands.py parses each
command, tests/test_doc_commands.py runs each one, tests/test_doc_figures.py compares the figures).

A figure, table or snippet is looked up on whichever page holds it (the README or a page under docs/), so a
text moved between pages is still checked; a marker found on no page or on two fails, naming the pages."""

from __future__ import annotations

import re
from pathlib import Path

from llm_platform.config.loader import ROOT

README = ROOT / "README.md"
DOCS_DIR = ROOT / "docs"
DOCS = (README, *sorted(DOCS_DIR.rglob("*.md")))
_COMMAND = re.compile(r"uv run python (-m \S+[^`#\n]*|\S+\.py[^`#\n]*)")
_OPTIONAL = re.compile(r"\[(--[^\]]+)\]")  # a synopsis' optional part, `[--holdout thu.csv]`
_HEADING = re.compile(r"^(#+) (.*)$")


def text(doc: Path | None = None) -> str:
    """One page's text, or every page's (README first) when no page is named."""
    if doc is None:
        return "\n\n".join(page.read_text() for page in DOCS)
    return doc.read_text()


def flat(doc: Path | None = None) -> str:
    """The text with every run of whitespace one space: a sentence reads the same however it is wrapped."""
    return " ".join(text(doc).split())


def page_with(marker: str) -> Path:
    """The one page whose text contains `marker`."""
    pages = [page for page in DOCS if marker in page.read_text()]
    if len(pages) != 1:
        names = [str(p.relative_to(ROOT)) for p in pages]
        raise AssertionError(f"{marker!r} is on {len(pages)} pages {names}, expected exactly one")
    return pages[0]


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


def table(header: str) -> list[list[str]]:
    """The rows of the Markdown table whose header line starts with `header`, on whichever page holds it, as
    stripped cells."""
    lines = text(page_with(header)).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def block_after(marker: str, fence: str = "```yaml") -> str:
    """The first fenced block of kind `fence` after the line containing `marker`, on the page that holds it."""
    body = text(page_with(marker))
    start = body.index(fence, body.index(marker)) + len(fence) + 1
    return body[start : body.index("```", start)]


def _headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line index, level, title) of every Markdown heading outside fenced blocks."""
    found, fenced = [], False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (heading := _HEADING.match(line)):
            found.append((i, len(heading.group(1)), heading.group(2).strip()))
    return found


def section(title: str) -> str:
    """The section whose heading (any level) is `title`, up to the next heading of its level or above, on the
    one page that has such a heading."""
    found = []
    for page in DOCS:
        lines = page.read_text().splitlines()
        headings = _headings(lines)
        for n, (i, level, name) in enumerate(headings):
            if name == title:
                end = next((j for j, lv, _ in headings[n + 1 :] if lv <= level), len(lines))
                found.append("\n".join(lines[i + 1 : end]))
    if len(found) != 1:
        raise AssertionError(f"{len(found)} sections titled {title!r} in the docs, expected exactly one")
    return found[0]
