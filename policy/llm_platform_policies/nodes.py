"""Rules for the GPU nodes Karpenter launches."""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
)

from .objects import EC2_NODE_CLASSES, as_int, dig, is_unknown, name_of, plain


def _validate_imdsv2(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    if args.resource_type not in EC2_NODE_CLASSES:
        return
    props = plain(args.props)
    name = name_of(props) if isinstance(name_of(props), str) else args.name
    where = f"EC2NodeClass {name}"
    options = dig(props, "spec", "metadataOptions")
    if is_unknown(options):
        return
    if not isinstance(options, dict):
        report_violation(
            f"{where}: spec.metadataOptions is not set; state httpTokens: required and "
            "httpPutResponseHopLimit: 1 explicitly so a default change or an old example cannot open IMDSv1 "
            "(pods on GPU nodes could otherwise read the node role's credentials).",
            None,
        )
        return
    if options.get("httpEndpoint") == "disabled":
        return  # no instance metadata at all
    tokens = options.get("httpTokens")
    if not is_unknown(tokens) and tokens != "required":
        report_violation(
            f"{where}: metadataOptions.httpTokens is {tokens!r}; set it to 'required' (IMDSv2 only), so an "
            "SSRF in a model server or a pod cannot fetch the node role's credentials with a plain GET.",
            None,
        )
    raw_hops = options.get("httpPutResponseHopLimit")
    if is_unknown(raw_hops):
        return
    hops = as_int(raw_hops)
    if hops != 1:
        report_violation(
            f"{where}: metadataOptions.httpPutResponseHopLimit is {raw_hops!r}; set it to 1 so containers "
            "(one network hop away) cannot reach the node's instance metadata; pods get AWS access through "
            "EKS Pod Identity instead.",
            None,
        )


gpu_nodes_imdsv2 = ResourceValidationPolicy(
    name="gpu-nodes-imdsv2",
    description="Karpenter EC2NodeClasses require IMDSv2 with a hop limit of 1.",
    validate=_validate_imdsv2,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    remediation_steps="spec.metadataOptions: {httpEndpoint: enabled, httpTokens: required, "
    "httpPutResponseHopLimit: 1}",
)

NODE_POLICIES = [gpu_nodes_imdsv2]
