"""The docs site's shape: every topic page under docs/ has the same sections in the same order, and the site's
nav (mkdocs.yml) lists every page, so `mkdocs build --strict` (.ci/run) builds all of them."""

from __future__ import annotations

import re

import pytest
import yaml

from llm_platform.config.loader import ROOT
from tests import docs

SHAPE = ["Overview", "Default configuration", "How it works", "Verify", "Limits"]
PAGES = [p for p in docs.DOCS if p.parent != ROOT and p.name != "index.md"]


def _nav_pages(nav: list) -> list[str]:
    found = []
    for entry in nav:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            found += _nav_pages(value) if isinstance(value, list) else [value]
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(docs.DOCS_DIR)))
def test_every_topic_page_has_the_five_sections_in_order(page) -> None:
    lines = page.read_text().splitlines()
    h2 = [title for _, level, title in docs._headings(lines) if level == 2]
    assert h2 == SHAPE, f"{page.relative_to(ROOT)}: its ## sections are {h2}, expected {SHAPE}"
    assert sum(1 for _, level, _ in docs._headings(lines) if level == 1) == 1, "one # title per page"


def test_the_nav_lists_every_page() -> None:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)  # no !!python tags run
    listed = sorted(_nav_pages(config["nav"]))
    on_disk = sorted(str(p.relative_to(docs.DOCS_DIR)) for p in docs.DOCS if p.parent != ROOT)
    assert listed == on_disk


def test_links_between_pages_are_relative_markdown_links() -> None:
    """A page links another page by its file (`capacity.md#...`), which GitHub and the site both resolve; a link
    to README.md or docs/... from inside docs/ resolves on neither."""
    for page in docs.DOCS:
        if page.parent == ROOT:
            continue
        bad = re.findall(r"\]\(((?:docs/|/)[^)]*|[^)]*README\.md[^)]*)\)", page.read_text())
        assert bad == [], f"{page.relative_to(ROOT)}: {bad}"


def test_the_readme_starts_with_the_two_commands_each_a_script_that_sets_itself_up() -> None:
    """The README's first commands are `scripts/plan` and `scripts/test`; each runs the idempotent set-up first,
    then its job, and `.ci/run` runs `scripts/test` (so CI proves the README's test command on a fresh machine)."""
    first_block = docs.text(docs.README).split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in first_block.splitlines()]
    assert commands == ["scripts/plan", "scripts/test"]
    for name, job in (
        ("plan", 'uv run --frozen llm-platform plan "$@"'),
        ("test", 'uv run --frozen pytest "$@"'),
    ):
        script = ROOT / "scripts" / name
        assert script.stat().st_mode & 0o111, f"scripts/{name} is not executable"
        body = script.read_text()
        assert "set -euo pipefail" in body and "bash scripts/setup" in body, name
        assert body.rstrip().endswith(job), name
        assert body.index("bash scripts/setup") < body.index(job), name
    assert "bash scripts/test" in (ROOT / ".ci" / "run").read_text()
    assert "mkdocs build --strict" in (ROOT / ".ci" / "run").read_text()


def test_the_readme_is_a_front_door() -> None:
    """About 15 KB: what the platform is, the two commands, the picture, the folders, where to change what and
    the links; a topic's text goes to its page under docs/."""
    size = len(docs.README.read_bytes())
    assert size <= 20_000, f"README.md is {size:,} bytes: move the topic text to its page under docs/"


def test_every_fenced_block_is_closed_by_a_bare_fence() -> None:
    """A block opened on one page and closed on another (text moved between pages) shows as a fence that closes
    with a language, or a page that ends inside a block."""
    for page in docs.DOCS:
        fenced = False
        for n, line in enumerate(page.read_text().splitlines(), 1):
            if line.startswith("```"):
                assert not (fenced and line.strip() != "```"), f"{page.relative_to(ROOT)}:{n}: {line}"
                fenced = not fenced
        assert not fenced, f"{page.relative_to(ROOT)} ends inside a fenced block"
