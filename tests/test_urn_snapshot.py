"""An existing stack sees no replacement: on `pulumi up`, every resource of its state is taken over by a
resource the program registers, through its own URN or an alias, as the engine resolves them
(tests/urn_snapshots.py `takeover`), and no resource of the snapshot is left without a successor (a
deletion). Two generations of state are held to it: a stack deployed before the package move, and one
deployed by the package before its components took the `llm-platform:index:<Name>` type tokens.
A resource added or removed on purpose is taken into the snapshots with `python -m tests.urn_snapshots
--write`, which keeps every moved resource's old identity.

The fixture stacks are held to their snapshots exactly. The real stack files are a team's to edit: a model
added there registers resources no snapshot has, and a model removed leaves some without a successor, so for
them a new URN fails only where a resource of its type lost its old one (a rename without an alias)."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_platform.tools.mocks import AliasSpec, Registered
from llm_platform.tools.render import evaluate
from tests.urn_snapshots import GENERATIONS, DuplicateClaim, read, stacks, takeover


def _type(urn: str) -> str:
    """The resource type of `urn:pulumi:<stack>::<project>::<parent types$type>::<name>`."""
    return urn.split("::")[2].split("$")[-1]


@pytest.mark.parametrize(("kind", "stack"), list(stacks()))
def test_every_resource_of_an_existing_stack_is_taken_over(kind: str, stack: str) -> None:
    path: Path = stacks()[(kind, stack)]
    registered = evaluate(path).mocks.created
    for generation in GENERATIONS:
        before = set(read(generation, kind, stack))
        taken = takeover(registered, before)
        new = [r.urn for r in registered if r.urn not in taken]
        left = before - set(taken.values())
        edited = kind == "real"  # a team's own stack file
        replaced = [u for u in new if _type(u) in {_type(old) for old in left}] if edited else new
        assert replaced == [], (
            f"{generation}: {len(replaced)} resources would be created anew (no old URN, no alias): "
            f"{replaced[:5]}"
        )
        if not edited:
            assert sorted(left) == [], f"{generation}: resources of the state nothing registers any more"


# ------------------------------------------------------------------------- the engine's rules, as `takeover` has them

STACK = "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev"


def _registered(urn: str, parent: str = "", *specs: AliasSpec) -> Registered:
    name, typ = urn.split("::")[-1], _type(urn)
    return Registered(typ, name, {}, "", parent, urn, False, [], [], list(specs))


def test_a_childs_old_urn_comes_only_from_the_alias_its_parent_was_matched_through() -> None:
    """A component renamed from `p:a:Old` to `p:index:New` carries `Alias(type_=...)`; its child, with no
    alias of its own, takes over its URN under the old type chain, the engine's inherited child alias."""
    parent = _registered("urn:pulumi:dev::p::p:index:New::c", STACK, AliasSpec(type="p:a:Old"))
    child = _registered("urn:pulumi:dev::p::p:index:New$k:Pod::c-pod", parent.urn)
    olds = {"urn:pulumi:dev::p::p:a:Old::c", "urn:pulumi:dev::p::p:a:Old$k:Pod::c-pod"}
    assert takeover([parent, child], olds) == {
        parent.urn: "urn:pulumi:dev::p::p:a:Old::c",
        child.urn: "urn:pulumi:dev::p::p:a:Old$k:Pod::c-pod",
    }
    # the parent found under its own URN: nothing passes to the child, whose old URN is then left behind
    assert takeover([parent, child], {parent.urn, *olds} - {"urn:pulumi:dev::p::p:a:Old::c"}) == {
        parent.urn: parent.urn
    }


def test_two_aliases_of_one_resource_are_not_joined() -> None:
    """`Alias(parent=ROOT)` and `Alias(type_=old)` are two URNs, neither the old top-level URN of the old
    type: only one alias carrying both reaches it."""
    top = _registered("urn:pulumi:dev::p::p:index:Platform::x", STACK)
    moved = "urn:pulumi:dev::p::p:index:Platform$p:index:New::c"
    old = "urn:pulumi:dev::p::p:a:Old::c"
    apart = _registered(moved, top.urn, AliasSpec(no_parent=True), AliasSpec(type="p:a:Old"))
    assert takeover([top, apart], {old}) == {}
    joined = _registered(moved, top.urn, AliasSpec(type="p:a:Old", no_parent=True))
    assert takeover([top, joined], {old}) == {moved: old}


def test_an_old_urn_claimed_twice_is_refused() -> None:
    old = "urn:pulumi:dev::p::p:a:Old::c"
    one = _registered("urn:pulumi:dev::p::p:index:New::c", STACK, AliasSpec(type="p:a:Old"))
    two = _registered("urn:pulumi:dev::p::p:index:Other::c", STACK, AliasSpec(urn=old))
    with pytest.raises(DuplicateClaim):
        takeover([one, two], {old})
