"""Every generated name fits: with every name field of the stack file at the longest value the schema accepts,
every name the program sets (AWS resources' explicit names, Kubernetes objects' names, namespaces and label
values, Helm releases) is within its service's limit; and the schema's limit on cluster.name is derived from
the longest name built from it (config/names.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pytest
import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError

import llm_platform.config.schema as schema
from llm_platform.components.specs import karpenter as karpenter_spec
from llm_platform.config import names
from llm_platform.config.loader import PROJECT
from llm_platform.tools import mocks
from llm_platform.tools.render import evaluate
from tests.conftest import config_error, fixture_stack, stack_values

# explicit AWS names by resource type and input: the service's limit (config/names.py cites them); an AWS
# resource setting a name not listed here fails the test until its limit is added
AWS_LIMITS = {
    ("aws:cloudwatch/eventRule:EventRule", "name"): names.EVENTBRIDGE_RULE,
    ("aws:sqs/queue:Queue", "name"): names.SQS_QUEUE,
    ("aws:eks/cluster:Cluster", "name"): names.EKS_CLUSTER,
    ("aws:ec2/placementGroup:PlacementGroup", "name"): names.EC2_PLACEMENT_GROUP,
}
NAME_INPUTS = ("name", "namePrefix", "bucket", "bucketPrefix", "roleName", "queueName", "nodeGroupName")
# a Kubernetes kind whose name must be a DNS-1123 label; every other object's a subdomain
LABEL_NAMED = {"Namespace", "Service", "Job"}
# a StatefulSet's or CronJob's name goes into a label value with a suffix (controller-revision-hash:
# <name>-<10-char hash>; a CronJob's Jobs <name>-<8-digit time>), so it keeps 11 characters for it
SUFFIXED = {"StatefulSet": names.DNS_LABEL - 11, "CronJob": names.DNS_LABEL - 11}


def name_fields() -> list[tuple[type[BaseModel], str]]:
    """Every `name` field of the schema's blocks."""
    classes = [c for c in vars(schema).values() if isinstance(c, type) and issubclass(c, BaseModel)]
    return [(c, "name") for c in classes if "name" in c.model_fields]


def longest_accepted(model: type[BaseModel], field: str) -> int:
    """The longest value of `[a-z]+` the schema accepts for the field."""
    info = model.model_fields[field]
    adapter: TypeAdapter[Any] = TypeAdapter(Annotated[info.annotation, *info.metadata])  # type: ignore[name-defined]
    accepted = 0
    for n in range(1, 300):
        try:
            adapter.validate_python("a" * n)
        except ValidationError:
            continue
        accepted = n
    return accepted


LONGEST = {cls.__name__: longest_accepted(cls, field) for cls, field in name_fields()}


def _long(name: str, length: int) -> str:
    return (name + "-" + "x" * length)[:length]


def longest_names(stack: str, tmp_path: Path) -> Path:
    """Fixture `stack` with every name field at its longest (references renamed along; forecasts dropped:
    their hash is of the old names)."""
    doc = yaml.safe_load(fixture_stack(stack).read_text())
    config = doc["config"]
    cluster = config[f"{PROJECT}:cluster"]
    cluster["name"] = _long(cluster["name"], LONGEST["ClusterConfig"])
    pools = {p["name"]: _long(p["name"], LONGEST["GpuNodePool"]) for p in config[f"{PROJECT}:gpuNodePools"]}
    for pool in config[f"{PROJECT}:gpuNodePools"]:
        pool["name"] = pools[pool["name"]]
    for model in config.get(f"{PROJECT}:models", []):
        model["name"], model["nodePool"] = (
            _long(model["name"], LONGEST["ModelConfig"]),
            pools[model["nodePool"]],
        )
        for adapter in model.get("adapters", []):
            adapter["name"] = _long(adapter["name"], LONGEST["LoraAdapter"])
        for window in (model.get("autoscaling") or {}).get("prewarm", []):
            window["name"] = _long(window["name"], LONGEST["PrewarmWindow"])
    for client in (config.get(f"{PROJECT}:gateway") or {}).get("clients", []):
        client["name"] = _long(client["name"], LONGEST["GatewayClient"])
    if f"{PROJECT}:costs" in config:
        config[f"{PROJECT}:costs"]["forecasts"] = []
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def too_long(created: list[mocks.Registered]) -> list[str]:
    """Every name over its limit, as `<type> <input>: <name> (<length> > <limit>)`."""
    out = []

    def check(what: str, value: Any, limit: int) -> None:
        if isinstance(value, str) and len(value) > limit:
            out.append(f"{what}: {value} ({len(value)} > {limit})")

    for r in created:
        if not r.custom:
            continue
        if r.typ.startswith("aws:"):
            for key in NAME_INPUTS:
                if key in r.inputs and (r.typ, key) not in AWS_LIMITS:
                    if key == "bucket" and not r.typ.startswith("aws:s3/bucketV2"):
                        continue  # a reference to the bucket (its auto-name), not a name set here
                    out.append(f"{r.typ} {key}: {r.inputs[key]} (no limit known: add it to AWS_LIMITS)")
                elif key in r.inputs:
                    check(f"{r.typ} {key}", r.inputs[key], AWS_LIMITS[(r.typ, key)])
            continue
        if r.typ == "kubernetes:helm.sh/v3:Release":
            check(f"{r.typ} name", r.inputs.get("name"), names.HELM_RELEASE)
        kind = r.typ.rsplit(":", 1)[-1]
        for meta in _metadata(r.inputs):
            limit = SUFFIXED.get(kind, names.DNS_LABEL if kind in LABEL_NAMED else names.DNS_SUBDOMAIN)
            check(f"{r.typ} metadata.name", meta.get("name"), limit)
            check(f"{r.typ} metadata.namespace", meta.get("namespace"), names.DNS_LABEL)
            for key, value in (meta.get("labels") or {}).items():
                check(f"{r.typ} label {key}", value, names.DNS_LABEL)
    return out


def _metadata(inputs: dict[str, Any]) -> list[dict[str, Any]]:
    """The object's metadata and its pod template's (labels there become the pods')."""
    found = [inputs.get("metadata") or {}]
    template = ((inputs.get("spec") or {}).get("template") or {}).get("metadata")
    if isinstance(template, dict):
        found.append({"labels": template.get("labels")})
    return found


@pytest.mark.parametrize("stack", ["prod", "reservations", "lora", "multinode"])
def test_every_name_fits_with_every_name_field_at_its_longest(tmp_path: Path, stack: str) -> None:
    path = longest_names(stack, tmp_path)
    created = evaluate(path).mocks.created
    assert any(r.typ == "aws:cloudwatch/eventRule:EventRule" for r in created), "the names under test are set"
    assert too_long(created) == []


def test_the_check_finds_a_name_over_its_limit() -> None:
    """The property above can fail: a 68-character rule name (cluster.name at the old limit of 40) is found."""
    rule = mocks.Registered(
        "aws:cloudwatch/eventRule:EventRule",
        "r",
        {"name": names.interruption_rule_name("l" * 40, "spot-interruption")},
        "",
        "",
        "",
        True,
        [],
        [],
        [],
    )
    assert too_long([rule]) == [
        f"aws:cloudwatch/eventRule:EventRule name: {'l' * 40}-karpenter-spot-interruption (68 > 64)"
    ]


def test_the_cluster_name_limit_is_derived_from_the_longest_name_built_from_it() -> None:
    tightest = names.tightest(names.CLUSTER_NAMES)
    assert LONGEST["ClusterConfig"] == names.CLUSTER_NAME_MAX == tightest.room()
    built = [n.build("c" * names.CLUSTER_NAME_MAX) for n in names.CLUSTER_NAMES]
    assert max(len(n) - b.limit for n, b in zip(built, names.CLUSTER_NAMES, strict=True)) == 0, "one is full"
    # the rule names config/names.py derives the limit from are the rules the Karpenter spec wires
    assert set(names.INTERRUPTION_RULES) == set(karpenter_spec.INTERRUPTION_EVENTS)
    assert set(names.RESERVATION_INTERRUPTION_RULES) == set(karpenter_spec.RESERVATION_INTERRUPTION_EVENTS)


def test_a_cluster_name_one_over_the_limit_is_refused_with_why() -> None:
    values = stack_values("dev")
    values["cluster"]["name"] = "l" * (names.CLUSTER_NAME_MAX + 1)
    message = config_error(values)
    assert f"at most {names.CLUSTER_NAME_MAX} characters" in message
    assert "'<name>-karpenter-capacity-reservation-interruption', allows 64" in message
