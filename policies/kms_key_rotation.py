"""kms-key-rotation: the keys that encrypt DR data rotate on their own.

AWS KMS rotates a key once `enable_key_rotation` is on (every `rotation_period_in_days`, 365 by
default, 90 at least); Cloud KMS rotates by `rotation_period`; a Key Vault key rotates only
under a rotation policy with a "rotate" lifetime action. Rotation keeps old versions, so
nothing encrypted becomes unreadable: there is no reason to leave it off.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
)

from .common import (
    AWS_KMS_EXTERNAL_KEY,
    AWS_KMS_KEY,
    AZ_MANAGED_HSM_KEY,
    AZ_VAULT_KEY,
    GCP_CRYPTO_KEY,
    canonical_type,
    config_number,
    config_schema,
    duration_s,
    exempting,
    get,
    is_true,
    items,
    number,
    policy_config,
    same,
)

DAY = 86400.0

SCHEMA = config_schema(
    max_rotation_days={
        "type": "number",
        "minimum": 1,
        "default": 90,
        "description": "Cloud KMS and Key Vault keys rotate at least this often (days).",
    },
    aws_max_rotation_days={
        "type": "number",
        "minimum": 90,
        "default": 365,
        "description": (
            "AWS KMS keys with rotation_period_in_days set rotate at least this often "
            "(AWS accepts 90-2560; its default period is 365)."
        ),
    },
)


def _azure_rotation_s(props: Any) -> float | None:
    """Seconds between automatic rotations under the key's rotation policy, or None."""
    policy = get(props, "properties", "rotationPolicy")
    expiry = duration_s(get(policy, "attributes", "expiryTime"))
    periods = []
    for action in items(get(policy, "lifetimeActions")):
        if not same(get(action, "action", "type"), "rotate"):
            continue
        after_create = duration_s(get(action, "trigger", "timeAfterCreate"))
        before_expiry = duration_s(get(action, "trigger", "timeBeforeExpiry"))
        if after_create is not None:
            periods.append(after_create)
        elif before_expiry is not None and expiry is not None:
            periods.append(expiry - before_expiry)
    return min(periods) if periods else None


def _validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
    config = policy_config(SCHEMA, args)
    report = exempting(report, config, args.urn)
    max_days = config_number(config, "max_rotation_days")
    props = args.props
    where = f"{args.name} ({args.resource_type})"
    resource_type = canonical_type(args.resource_type)
    if resource_type == AWS_KMS_KEY:
        spec = props.get("customerMasterKeySpec") or props.get("keySpec")
        if spec not in (None, "SYMMETRIC_DEFAULT"):
            return  # AWS rotates only symmetric encryption keys
        if not is_true(props.get("enableKeyRotation")):
            report(
                f"{where} does not rotate: set enable_key_rotation=True on the aws.kms.Key "
                "(optionally rotation_period_in_days, 90-2560).",
                None,
            )
            return
        aws_max = config_number(config, "aws_max_rotation_days")
        period = number(props.get("rotationPeriodInDays"))
        if period is not None and period > aws_max:
            report(
                f"{where} rotates every {period:g} days, more than the {aws_max:g} allowed: "
                f"set rotation_period_in_days to {aws_max:g} or less.",
                None,
            )
    elif resource_type == GCP_CRYPTO_KEY:
        purpose = props.get("purpose")
        if purpose not in (None, "ENCRYPT_DECRYPT"):
            return  # Cloud KMS rotates only symmetric encryption keys automatically
        period_s = duration_s(props.get("rotationPeriod"))
        if period_s is None or period_s > max_days * DAY:
            have = "no rotation_period" if period_s is None else f"{period_s / DAY:g} days"
            report(
                f"{where} rotates with {have}; the limit is {max_days:g} days: set "
                f'rotation_period="{int(max_days * DAY)}s" on the gcp.kms.CryptoKey.',
                None,
            )
    elif resource_type == AWS_KMS_EXTERNAL_KEY:
        # Imported key material never rotates on its own: rotation is a manual re-import.
        report(
            f"{where} holds imported key material, which AWS KMS cannot rotate: use an "
            "aws.kms.Key with enable_key_rotation=True, or exempt it in the pack config with "
            "the manual rotation procedure as the reason.",
            None,
        )
    elif resource_type in (AZ_VAULT_KEY, AZ_MANAGED_HSM_KEY):
        period_s = _azure_rotation_s(props)
        if period_s is None or period_s > max_days * DAY:
            have = (
                "no rotation policy with a rotate action"
                if period_s is None
                else f"a rotation every {period_s / DAY:g} days"
            )
            report(
                f"{where} has {have}; the limit is {max_days:g} days: set "
                "properties.rotation_policy.lifetime_actions to "
                f'[{{action: {{type: "rotate"}}, trigger: {{time_after_create: '
                f'"P{int(max_days)}D"}}}}] with an attributes.expiry_time longer than that.',
                None,
            )


kms_key_rotation = ResourceValidationPolicy(
    name="kms-key-rotation",
    description=(
        "KMS keys rotate automatically: AWS KMS keys have enable_key_rotation, Cloud KMS "
        "CryptoKeys a rotation_period and Key Vault keys a rotation policy, within "
        "max_rotation_days (default 90) on GCP and Azure."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=SCHEMA,
    remediation_steps=(
        "AWS: aws.kms.Key(enable_key_rotation=True). GCP: gcp.kms.CryptoKey(rotation_period="
        '"7776000s") (90 days). Azure: keyvault.Key(properties={rotation_policy: '
        '{lifetime_actions: [{action: {type: "rotate"}, trigger: {time_after_create: "P90D"}}], '
        'attributes: {expiry_time: "P2Y"}}}). Raise max_rotation_days in the pack config only '
        "if your key management standard allows longer."
    ),
    tags=["encryption", "key-management"],
)
