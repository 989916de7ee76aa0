"""The `gpuNodePools` block: each Karpenter GPU NodePool (catalog families and sizes, capacity types, capacity
reservations) and the warm headroom its placeholder pods hold."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, model_validator

from llm_platform.config.schema.base import (
    Cron,
    Duration,
    Problems,
    RuleError,
    Schema,
    Timezone,
    _dns_label,
    did_you_mean,
)
from llm_platform.facts.catalog import GpuInstance, dedicated_families, efa_families, families, instances

# `reserved`: On-Demand Capacity Reservations and Capacity Blocks the pool's EC2NodeClass selects
CapacityType = Literal["reserved", "spot", "on-demand"]

CAPACITY_RESERVATION_ID = re.compile(r"^cr-[0-9a-z]+$")  # the EC2NodeClass CRD's pattern

AWS_ACCOUNT_ID = re.compile(r"^[0-9]{12}$")

MAX_RESERVATION_TERMS = 30  # EC2NodeClass capacityReservationSelectorTerms maxItems

MAX_RESERVATION_TAGS = 20  # maxProperties of one term's tags


class CapacityReservationTerm(Schema):
    """One EC2NodeClass `capacityReservationSelectorTerms` entry: a reservation by id, or every reservation
    carrying these tags (optionally only those owned by `ownerID`, e.g. shared from another account)."""

    id: str | None = None
    tags: dict[str, str] | None = None
    owner_id: str | None = Field(default=None, alias="ownerID")

    def problem(self) -> tuple[tuple[str, ...], object, str] | None:
        """What is wrong with this term, or None: the field (below the term), its value, and why with what is
        allowed."""
        if (self.id is None) == (self.tags is None):
            field = ("id",) if self.id is not None else ("tags",) if self.tags is not None else ()
            value = self.id if self.id is not None else self.tags
            return field, value, "needs exactly one of `id` (cr-...) or `tags` ({key: value}) in the entry"
        if self.id is not None:
            if not CAPACITY_RESERVATION_ID.match(self.id):
                return (
                    ("id",),
                    self.id,
                    ("is not a capacity reservation id; allowed: cr- then lowercase letters and digits"),
                )
            if self.owner_id is not None:
                return (
                    ("ownerID",),
                    self.owner_id,
                    (
                        "cannot be combined with id (the id already names one reservation); allowed: ownerID with "
                        "tags only"
                    ),
                )
            return None
        tags = self.tags or {}
        if not tags or len(tags) > MAX_RESERVATION_TAGS:
            return (
                ("tags",),
                tags,
                f"has {len(tags)} tags; allowed: 1 to {MAX_RESERVATION_TAGS}",
            )
        empty = next((k for k, v in tags.items() if k == "" or v == ""), None)
        if empty is not None:
            return (
                ("tags", empty),
                tags[empty],
                "is empty; allowed: non-empty keys and values ('*' matches any value)",
            )
        if self.owner_id is not None and not AWS_ACCOUNT_ID.match(self.owner_id):
            return ("ownerID",), self.owner_id, "is not allowed: an AWS account id is 12 digits"
        return None


class HeadroomWindow(Schema):
    """Warm GPUs held during a cron window (a KEDA cron trigger on the pool's placeholder Deployment)."""

    start: Cron
    end: Cron
    timezone: Timezone = "UTC"
    gpus: int = Field(ge=0)


class Headroom(Schema):
    """GPUs kept warm in a pool by low-priority placeholder pods, so a burst shorter than a cold start
    lands on a running node: `gpus` outside any window, `schedule` windows raise it."""

    gpus: int = Field(default=0, ge=0)
    schedule: list[HeadroomWindow] = []

    @property
    def peak_gpus(self) -> int:
        return max([self.gpus, *(w.gpus for w in self.schedule)])


class GpuNodePool(Schema):
    name: Annotated[str, _dns_label(40)]
    instance_families: list[str] = Field(min_length=1)
    instance_sizes: list[str] | None = None
    capacity_types: list[CapacityType] = Field(default_factory=lambda: ["on-demand"], min_length=1)
    ami_family: Literal["al2023", "bottlerocket"] = "al2023"
    gpu_limit: int = Field(gt=0)
    consolidate_after: Duration = "5m"
    expire_after: Duration = "720h"
    mig: bool = False
    headroom: Headroom | None = None
    capacity_reservations: list[CapacityReservationTerm] = []
    # multi-node replicas (config/schema/multinode.py): the one zone of the pool's nodes and its cluster placement group
    placement_zone: str | None = None

    @model_validator(mode="after")
    def _families(self) -> GpuNodePool:
        problems = Problems()
        with problems.check():
            self._check_instances()
        with problems.check():
            if len(set(self.capacity_types)) != len(self.capacity_types):
                raise RuleError(
                    ("capacityTypes",),
                    self.capacity_types,
                    "has duplicates; allowed: each of reserved, spot, on-demand at most once",
                )
        self._check_reservations(problems)
        problems.raise_all()
        return self

    def _check_instances(self) -> None:
        """Catalog families, then the instances they and the sizes admit (each rule needs the one before)."""
        known = families()
        for i, family in enumerate(self.instance_families):
            if family not in known:
                raise RuleError(
                    ("instanceFamilies", i), family,
                    f"is not a catalog instance family{did_you_mean(family, known)}; allowed: {', '.join(known)}",
                )  # fmt: skip
        dedicated = set(dedicated_families()) & set(self.instance_families)
        if dedicated and len(self.instance_families) > 1:
            raise RuleError(
                ("instanceFamilies",),
                self.instance_families,
                f"mixes {', '.join(sorted(dedicated))} with other families; allowed: "
                f"{', '.join(sorted(dedicated))} in a single-family pool of its own",
            )
        if not self.instances:
            sizes = sorted({i.size for i in instances(self.instance_families, None)})
            raise RuleError(
                ("instanceSizes",),
                self.instance_sizes,
                f"admits no catalog instance of {', '.join(self.instance_families)}; allowed: {', '.join(sizes)}",
            )
        self._every_size_sold()
        if self.mig and not dedicated:
            raise RuleError(
                ("mig",),
                True,
                f"is allowed only on pools of {', '.join(dedicated_families())}; allowed: false",
            )
        blocks_only = [i.instance_type for i in self.instances if i.reserved_only]
        if blocks_only and self.capacity_types != ["reserved"]:
            raise RuleError(
                ("capacityTypes",),
                self.capacity_types,
                f"cannot buy {', '.join(blocks_only)}: it is sold only as Capacity Blocks (no on-demand or spot); "
                "allowed: [reserved] with capacityReservations selecting the blocks",
            )

    def _every_size_sold(self) -> None:
        """Each requested size of each family is a catalog instance: the NodePool admits only the catalog's
        instance types, so a size missing from it (g6e has no 2xlarge there) would be dropped unseen."""
        have = {(i.family, i.size) for i in instances(self.instance_families)}
        for i, size in enumerate(self.instance_sizes or []):
            missing = [f"{family}.{size}" for family in self.instance_families if (family, size) not in have]
            if missing:
                allowed = "; ".join(
                    f"{family}: {', '.join(sorted({s for f, s in have if f == family}, key=_size_order))}"
                    for family in self.instance_families
                )
                raise RuleError(
                    ("instanceSizes", i), size,
                    f"is not allowed: the catalog has no {', '.join(missing)}, so the pool would never launch "
                    f"it; sizes in the catalog: {allowed}",
                )  # fmt: skip

    def _check_reservations(self, problems: Problems) -> None:
        terms = self.capacity_reservations
        if "reserved" in self.capacity_types and not terms:
            problems.errors.append(
                RuleError(
                    ("capacityTypes",),
                    self.capacity_types,
                    "includes 'reserved', which needs capacityReservations (ids or tags of the On-Demand "
                    "Capacity Reservations or Capacity Blocks to launch into)",
                )
            )
        if terms and "reserved" not in self.capacity_types:
            problems.errors.append(
                RuleError(
                    ("capacityTypes",),
                    self.capacity_types,
                    "does not include 'reserved', so Karpenter would never launch into the capacityReservations "
                    "selected; allowed: add 'reserved', or remove capacityReservations",
                )
            )
        if len(terms) > MAX_RESERVATION_TERMS:
            problems.errors.append(
                RuleError(
                    ("capacityReservations",),
                    [t.model_dump(by_alias=True, exclude_none=True) for t in terms],
                    f"has {len(terms)} terms; allowed: at most {MAX_RESERVATION_TERMS}",
                )
            )
        seen: set[str] = set()
        for i, term in enumerate(terms):
            with problems.check():
                problem = term.problem()
                if problem:
                    field, value, message = problem
                    raise RuleError(("capacityReservations", i, *field), value, message)
                if term.id in seen:
                    raise RuleError(
                        ("capacityReservations", i, "id"),
                        term.id,
                        "is listed twice; allowed: each reservation once",
                    )
            if term.id is not None:
                seen.add(term.id)

    @property
    def reservation_owner_ids(self) -> list[str]:
        """Accounts other than the cluster's whose reservations this pool may launch into (RAM-shared)."""
        return sorted({t.owner_id for t in self.capacity_reservations if t.owner_id is not None})

    @property
    def instances(self) -> list[GpuInstance]:
        """The catalog instances this pool may launch, cheapest first."""
        return instances(self.instance_families, self.instance_sizes)

    @property
    def max_gpus_per_node(self) -> int:
        return max(i.gpus for i in self.instances)


def _size_order(size: str) -> int:
    """`xlarge` 1, `2xlarge` 2, `48xlarge` 48: sizes in the order AWS lists them."""
    return int(size.removesuffix("xlarge") or 1) if size.endswith("xlarge") else 0


def check_efa_instances(at: tuple[str | int, ...], pool: GpuNodePool, needs: str) -> None:
    """Every instance type the pool admits has EFA interfaces, all of one count (one EC2NodeClass attaches one
    count): what a model whose pods talk over EFA (a multi-node replica's NCCL, a disaggregated model's KV
    transfer) asks of its pool. `needs` says what needs EFA, in the refusal."""
    without = [i.instance_type for i in pool.instances if i.efa_interfaces == 0]
    if without:
        *most, last = efa_families()
        raise RuleError(
            (*at, "nodePool"),
            pool.name,
            f"admits {', '.join(without)}, which has no EFA interface (facts/catalog.py, efa_interfaces); "
            f"{needs} needs EFA; allowed: a pool of {', '.join(most)} or {last}",
        )
    counts = {i.instance_type: i.efa_interfaces for i in pool.instances}
    if len(set(counts.values())) > 1:
        raise RuleError(
            (*at, "nodePool"),
            pool.name,
            f"admits instance types with different EFA counts ({counts}); one EC2NodeClass attaches one "
            "count, so restrict instanceSizes to one of them",
        )
