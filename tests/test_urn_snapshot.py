"""An existing stack sees no replacement: every resource keeps the URN it had before the package move, or
names that URN in an alias, and no resource of the snapshot is left without a successor (a deletion).
A resource added or removed on purpose is taken into the snapshot with `python -m tests.urn_snapshots
--write`, which keeps every moved resource's old identity (tests/urn_snapshots.py).

The fixture stacks are held to their snapshots exactly. The real stack files are a team's to edit: a model
added there registers resources no snapshot has, and a model removed leaves some without a successor, so for
them a new URN fails only where a resource of its type lost its old one (a rename without an alias)."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_platform.tools.render import evaluate
from tests.urn_snapshots import read, stacks


def _type(urn: str) -> str:
    """The resource type of `urn:pulumi:<stack>::<project>::<parent types$type>::<name>`."""
    return urn.split("::")[2].split("$")[-1]


@pytest.mark.parametrize(("kind", "stack"), list(stacks()))
def test_every_resource_keeps_its_urn_or_aliases_it(kind: str, stack: str) -> None:
    path: Path = stacks()[(kind, stack)]
    before = set(read(kind, stack))
    registered = evaluate(path).mocks.created
    claimed: set[str] = set()
    new = []
    for r in registered:
        known = {r.urn, *r.aliases} & before
        if not known:
            new.append(r.urn)
        claimed |= known
    left = before - claimed
    edited = kind == "real"  # a team's own stack file
    replaced = [u for u in new if _type(u) in {_type(old) for old in left}] if edited else new
    assert replaced == [], (
        f"{len(replaced)} resources would be created anew (no old URN, no alias): {replaced[:5]}"
    )
    if not edited:
        assert sorted(left) == [], "resources of the snapshot nothing registers any more (deleted)"
