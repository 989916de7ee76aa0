"""The names the platform builds from the stack file's name fields, and the limits of the services that take
them: the schema's longest allowed value of a field is derived here, from the longest name built from it.

Only names set explicitly need a rule: an auto-named resource (Pulumi's logical name plus a random suffix) is
cut to its service's limit by the provider. Limits, as the services document them:
- EventBridge rule Name 1-64 (EventBridge API Reference, PutRule: "Maximum length of 64");
- SQS QueueName 1-80 (SQS API Reference, CreateQueue: "A queue name can have up to 80 characters");
- EKS cluster name 1-100 (EKS API Reference, CreateCluster: "The name must be unique ... 1-100 characters");
- EC2 placement group name up to 255 (EC2 API Reference, CreatePlacementGroup GroupName: "Constraints: Up to 255
  ASCII characters");
- Kubernetes (kubernetes.io, "Object Names and IDs"): a namespace, a Service and a label value are DNS-1123
  labels (63), most objects' names DNS-1123 subdomains (253); a Helm release name is at most 53 (helm
  pkg/chartutil/validate_name.go maxReleaseNameLen).
tests/config/test_names.py evaluates the program with every name field at its longest and checks every name it
sets against these limits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

EVENTBRIDGE_RULE = 64
SQS_QUEUE = 80
EKS_CLUSTER = 100
EC2_PLACEMENT_GROUP = 255
DNS_LABEL = 63
DNS_SUBDOMAIN = 253
HELM_RELEASE = 53

# the EventBridge rules that feed Karpenter's interruption queue, by the event they match (their patterns:
# components/specs/karpenter_iam.py); the last only with capacity reservations
INTERRUPTION_RULES = ("health", "spot-interruption", "rebalance", "state-change")
RESERVATION_INTERRUPTION_RULES = ("capacity-reservation-interruption",)


def interruption_queue_name(cluster_name: str) -> str:
    return f"{cluster_name}-karpenter"


def interruption_rule_name(cluster_name: str, event: str) -> str:
    return f"{cluster_name}-karpenter-{event}"


@dataclass(frozen=True)
class BuiltName:
    """A name built from a field's value, and the limit of the service that takes it."""

    what: str
    limit: int
    build: Callable[[str], str]

    def room(self) -> int:
        """The longest field value whose built name fits the limit."""
        return self.limit - len(self.build(""))


def _rule(event: str) -> BuiltName:
    return BuiltName(
        f"EventBridge rule {interruption_rule_name('<name>', event)!r}",
        EVENTBRIDGE_RULE,
        lambda name: interruption_rule_name(name, event),
    )


# every name the platform sets from cluster.name
CLUSTER_NAMES = (
    BuiltName("EKS cluster", EKS_CLUSTER, lambda name: name),
    BuiltName(f"SQS queue {interruption_queue_name('<name>')!r}", SQS_QUEUE, interruption_queue_name),
    *(_rule(event) for event in INTERRUPTION_RULES + RESERVATION_INTERRUPTION_RULES),
)


def tightest(names: tuple[BuiltName, ...]) -> BuiltName:
    """The built name that leaves a field the least room: the one its schema limit is derived from."""
    return min(names, key=BuiltName.room)


# the longest cluster.name every name built from it fits: 20, from the EventBridge rule
# '<name>-karpenter-capacity-reservation-interruption' (44 characters besides the name, 64 allowed)
CLUSTER_NAME_MAX = tightest(CLUSTER_NAMES).room()
