"""The llm-platform policy pack: `pulumi preview --policy-pack ./policy`.

Only this file constructs PolicyPack (which starts the analyzer's gRPC server and never returns); the
policies live in the importable package llm_platform_policies next to it, which the tests import.
The Pulumi CLI runs this directory with itself on sys.path, so the package imports by its own name.
"""

from llm_platform_policies import ALL_POLICIES, PACK_NAME
from pulumi_policy import EnforcementLevel, PolicyPack

PolicyPack(
    name=PACK_NAME,
    policies=list(ALL_POLICIES),
    enforcement_level=EnforcementLevel.MANDATORY,
    description="llm-platform: vLLM on EKS with Karpenter GPU pools and KEDA on vLLM's own metrics.",
)
