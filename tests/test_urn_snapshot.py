"""An existing stack sees no replacement: every resource keeps the URN it had before the package move, or
names that URN in an alias, and no resource of the snapshot is left without a successor (a deletion).
A resource added or removed on purpose is taken into the snapshot with `python -m tests.urn_snapshots
--write`, which keeps every moved resource's old identity (tests/urn_snapshots.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_platform.tools.render import evaluate
from tests.urn_snapshots import read, stacks


@pytest.mark.parametrize(("kind", "stack"), list(stacks()))
def test_every_resource_keeps_its_urn_or_aliases_it(kind: str, stack: str) -> None:
    path: Path = stacks()[(kind, stack)]
    before = set(read(kind, stack))
    registered = evaluate(path).mocks.created
    claimed: set[str] = set()
    replaced = []
    for r in registered:
        known = {r.urn, *r.aliases} & before
        if not known:
            replaced.append(r.urn)
        claimed |= known
    assert replaced == [], (
        f"{len(replaced)} resources would be created anew (no old URN, no alias): {replaced[:5]}"
    )
    assert sorted(before - claimed) == [], "resources of the snapshot nothing registers any more (deleted)"
