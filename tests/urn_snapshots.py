"""URN snapshots: the state of an existing stack, as the URNs of its resources, for each fixture and real stack.

A URN is a resource's identity in Pulumi state: a program that registers a resource under another URN
(a new parent, a renamed type or name) replaces it on the next `pulumi up` unless an alias names the old
URN. Two generations of stacks exist, each with its snapshots in tests/fixtures/urns/:

- `<kind>-<stack>.txt`: a stack deployed before the code moved into one package (every component at the
  stack's top level, module type tokens such as `llm-platform:autoscaling:Keda`);
- `module-tokens/<kind>-<stack>.txt`: a stack deployed by the package before its components took the
  `llm-platform:index:<Name>` tokens (the components under `LlmPlatform`, with module tokens).

`takeover` decides, as the engine does, which old URN each registered resource takes over, so the test
compares every evaluation with both generations.

    uv run python -m tests.urn_snapshots --write   # take them again after adding or removing a resource
"""

from __future__ import annotations

import argparse
from pathlib import Path

from llm_platform.tools import mocks as platform_mocks
from llm_platform.tools.render import evaluate

SNAPSHOTS = Path(__file__).resolve().parent / "fixtures" / "urns"
# generation -> the folder of its snapshots
GENERATIONS = {"before-package": SNAPSHOTS, "module-tokens": SNAPSHOTS / "module-tokens"}
STACK_TYPE = "pulumi:pulumi:Stack"


class DuplicateClaim(AssertionError):
    """Two resources claim one old URN: the engine refuses the deployment (GetDuplicateResourceAliasError)."""


def _urn(like: str, parent: str, typ: str, name: str) -> str:
    """resource.NewURN: the parent's qualified type chain, then `typ` (none for a child of the stack)."""
    stack, project = like.split("::")[0].removeprefix("urn:pulumi:"), like.split("::")[1]
    chain = parent.split("::")[2] if parent else ""
    qualified = f"{chain}${typ}" if chain and chain != STACK_TYPE else typ
    return f"urn:pulumi:{stack}::{project}::{qualified}::{name}"


def _inherited(typ: str, name: str, parent_name: str, parent_old: str) -> str:
    """step_generator.go inheritedChildAlias: the child under its parent's old URN; a name derived from the
    parent's (`<parent>-details`) renamed with it."""
    if name.startswith(parent_name):
        name = parent_old.split("::")[-1] + name[len(parent_name) :]
    return _urn(parent_old, parent_old, typ, name)


def engine_aliases(r: platform_mocks.Registered, matched: dict[str, str]) -> list[str]:
    """step_generator.go generateAliases: each alias spec collapsed to a URN (an explicit parent replaced by
    the old URN it was matched through), then, when the parent was matched through an alias, the resource
    and each of its aliases under that old URN. `matched`: new URN -> the old URN an alias matched."""
    own = []
    for spec in r.alias_specs:
        if spec.urn:
            own.append(spec.urn)
            continue
        parent = matched.get(spec.parent, spec.parent) if spec.parent else r.parent_urn
        if spec.no_parent or (parent and parent.split("::")[2].split("$")[-1] == STACK_TYPE):
            parent = ""
        own.append(_urn(r.urn, parent, spec.type or r.typ, spec.name or r.name))
    found = list(own)
    parent_old = matched.get(r.parent_urn)
    if parent_old:
        parent_name = r.parent_urn.split("::")[-1]
        found.append(_inherited(r.typ, r.name, parent_name, parent_old))
        for alias in own:
            found.append(
                _inherited(
                    alias.split("::")[2].split("$")[-1], alias.split("::")[-1], parent_name, parent_old
                )
            )
    return list(dict.fromkeys(found))


def takeover(created: list[platform_mocks.Registered], olds: set[str]) -> dict[str, str]:
    """new URN -> the URN of `olds` (a stack's state) it takes over, as the engine decides on `pulumi up`
    (pulumi pkg/resource/deploy/step_generator.go, generateSteps): in registration order, the resource's own
    URN first, then its aliases; an old URN claimed twice is an error. A resource absent here is created."""
    matched: dict[str, str] = {}
    taken: dict[str, str] = {}
    for r in created:
        for candidate in [r.urn, *engine_aliases(r, matched)]:
            if candidate not in olds:
                continue
            if candidate in taken.values():
                raise DuplicateClaim(f"{r.urn} and another resource both claim {candidate}")
            taken[r.urn] = candidate
            if candidate != r.urn:
                matched[r.urn] = candidate
            break
    return taken


def snapshot_file(generation: str, kind: str, stack: str) -> Path:
    return GENERATIONS[generation] / f"{kind}-{stack}.txt"


def read(generation: str, kind: str, stack: str) -> list[str]:
    return snapshot_file(generation, kind, stack).read_text().splitlines()


def stacks() -> dict[tuple[str, str], Path]:
    root = Path(__file__).resolve().parents[1]
    fixtures = {
        ("fixture", p.stem.removeprefix("Pulumi.")): p for p in (root / "tests/fixtures/stacks").iterdir()
    }
    real = {("real", name): root / f"Pulumi.{name}.yaml" for name in ("dev", "staging", "prod")}
    return dict(sorted((fixtures | real).items()))


def snapshot(created: list[platform_mocks.Registered], olds: set[str]) -> list[str]:
    """The state after `pulumi up` on a stack holding `olds`, with each moved resource still named by the
    old URN it took over: taken again after a deliberate addition or removal, a snapshot keeps holding every
    moved resource to its alias."""
    taken = takeover(created, olds)
    return sorted(taken.get(r.urn, r.urn) for r in created)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--write", action="store_true", help="write the snapshots")
    if not parser.parse_args().write:
        parser.error("nothing to do: pass --write")
    for (kind, stack), path in stacks().items():
        created = evaluate(path).mocks.created
        for generation in GENERATIONS:
            file = snapshot_file(generation, kind, stack)
            file.parent.mkdir(parents=True, exist_ok=True)
            olds = set(file.read_text().splitlines()) if file.exists() else set()
            file.write_text("\n".join(snapshot(created, olds)) + "\n")
        print(f"{kind} {stack}: {len(created)} URNs")


if __name__ == "__main__":
    main()
