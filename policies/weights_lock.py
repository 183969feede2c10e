"""weights-immutability-locked (advisory): Azure weights accounts' immutability is Locked.

An unlocked account-level immutability policy still blocks deletes and overwrites, but an
account owner can shorten or disable it. Azure creates the policy only Unlocked (or Disabled):
locking is a second, irreversible step that gpudr takes with `gpudr:lock_weights` once the first
deployment succeeded. Until then every preview reports it here, advisory, so that the first
deployment is not blocked by a state it cannot avoid. Raise this policy to mandatory in the
pack config once your weights accounts are locked.

(S3 compliance mode and a locked GCS retention are locked from the start; immutable-weights,
mandatory, checks them and everything else about Azure weights.)
"""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
)

from .common import (
    AZ_STORAGE_ACCOUNT,
    DATA_ROLES,
    canonical_type,
    config_schema,
    exempting,
    get,
    gpudr_tag,
    is_true,
    policy_config,
    same,
    tag_is,
)

SCHEMA = config_schema()


def _validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
    report = exempting(report, policy_config(SCHEMA, args), args.urn)
    if canonical_type(args.resource_type) != AZ_STORAGE_ACCOUNT:
        return
    props = args.props
    if not tag_is(args.resource_type, props, "dr-role", *DATA_ROLES):
        return
    if gpudr_tag(args.resource_type, props, "data-class") != "weights":
        return
    immutable = props.get("immutableStorageWithVersioning")
    if not is_true(get(immutable, "enabled")):
        return  # no immutability at all: immutable-weights (mandatory) reports it
    state = get(immutable, "immutabilityPolicy", "state")
    if same(state, "Locked"):
        return
    if tag_is(args.resource_type, props, "lock", "governance"):
        report(
            f"{args.name} ({args.resource_type}) holds model weights under an immutability "
            f"policy that is {state or 'Unlocked'}, on purpose: the plan declares a trial "
            "(data.weights.lock: governance), whose accounts must stay deletable, and gpudr "
            "refuses to lock them. Before production: data.weights.lock: compliance in the "
            "plan, `gpudr generate`, `pulumi up`, then `pulumi config set gpudr:lock_weights "
            "true` and `pulumi up`.",
            None,
        )
        return
    report(
        f"{args.name} ({args.resource_type}) holds model weights under an immutability policy "
        f"that is {state or 'Unlocked'}: an account owner can still shorten or disable it. "
        "gpudr creates it unlocked (Azure allows nothing else) and locks it in a second step, "
        "irreversible: `pulumi config set gpudr:lock_weights true` on this stack, then "
        "`pulumi up`.",
        None,
    )


weights_immutability_locked = ResourceValidationPolicy(
    name="weights-immutability-locked",
    description=(
        "Azure weights storage accounts have their version-level immutability policy Locked, "
        "so that nobody can shorten or disable it."
    ),
    validate=_validate,
    config_schema=SCHEMA,
    enforcement_level=EnforcementLevel.ADVISORY,
    severity=Severity.HIGH,
    remediation_steps=(
        "After the first successful `pulumi up` of the stack: `pulumi config set "
        "gpudr:lock_weights true` and `pulumi up` again (the lock cannot be undone). Then set "
        "this policy's enforcementLevel to mandatory in the pack config."
    ),
    tags=["data-protection", "immutability"],
)
