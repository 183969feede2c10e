"""dr-tags-verified: gpudr's tags are claims; each is checked or the stack is refused.

The replication checks recompute a data class's need from the sizing tags on its bucket, so a
tag edit could switch them off: sizing set to 0, a quota of 1e12, an RPO of `none`, the
`dr-role` removed so the bucket is no longer judged at all. This policy refuses each of those:

- in a gpudr stack (one holding gpudr's components or tags, or named in `dr_stacks`), every
  bucket and storage account carries `gpudr:dr-role`, and a gpudr data bucket component's
  bucket carries a data role;
- a data bucket's sizing tags are numbers, finite and not negative, and agree with each other:
  a class moves some data, a burst comes with an interval, RPO 0 only by dual write;
- an asserted rate quota is at most what the organisation approved (`approved_quotas`), else the
  vendor's default;
- the RPO is no weaker than the organisation's floor for its data class (`max_rpo_s`).

The bounds live in the pack's config, which the organisation sets and a stack cannot change.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from gpudr.contract import naming, tags
from gpudr.core import enums, sizing

from .common import (
    AZ_STORAGE_ACCOUNT,
    DATA_ROLES,
    GCS_BUCKET,
    PREFIX,
    S3_BUCKET,
    Stack,
    UnknownGuard,
    config_schema,
    data_class,
    default_quota_mbps,
    describe,
    exempting,
    gpudr_tag,
    is_data_bucket,
    items,
    kind,
    mbps,
    number,
    policy_config,
    seconds,
    stack_of,
)

Tag = tags.Tag
QUOTA_BOUND = sorted(sizing.QUOTA_KEYS)
# Sizing tags and whether `none` is a valid value for each.
NUMERIC_TAGS = {
    Tag.RPO_S: True,
    Tag.RTO_S: True,
    Tag.INTERVAL_S: False,
    Tag.BURST_BYTES: False,
    Tag.STEADY_KBPS: False,
    Tag.STEADY_MBPS: False,
    Tag.PUBLISH_WINDOW_S: True,
    Tag.QUOTA_MBPS: True,
}

SCHEMA = config_schema(
    approved_quotas={
        "type": "array",
        "default": [],
        "description": (
            "Rate quotas the organisation has had raised, which a stack may assert (tag "
            "gpudr:quota-mbps) above the vendor's default: each {mechanism, mbps, reason, "
            "stacks: [stack name globs], regions: [bucket regions]}; stacks and regions narrow "
            "it. Anything else is bounded by the vendor's default quota."
        ),
        "items": {
            "type": "object",
            "required": ["mechanism", "mbps", "reason"],
            "additionalProperties": False,
            "properties": {
                "mechanism": {"type": "string", "enum": QUOTA_BOUND},
                "mbps": {"type": "number", "exclusiveMinimum": 0},
                "reason": {"type": "string", "minLength": 10},
                "stacks": {"type": "array", "items": {"type": "string"}},
                "regions": {"type": "array", "items": {"type": "string"}},
            },
        },
    },
    max_rpo_s={
        "type": "object",
        "default": {},
        "additionalProperties": {"type": "number", "minimum": 0},
        "description": (
            'The weakest RPO allowed per data class, in seconds ({"checkpoints": 14400}): a '
            "data bucket of that class with a weaker RPO, or none, is refused."
        ),
    },
    default_max_rpo_s={
        "type": "number",
        "minimum": 0,
        "default": 7 * 86400,
        "description": (
            "The longest RPO a data class without its own max_rpo_s entry may state, in "
            "seconds (default 7 days): a stated RPO of years is a switch, not a target."
        ),
    },
    require_site_roles={
        "type": "boolean",
        "default": False,
        "description": (
            "Refuse a gpudr stack that no site_roles entry names: every DR stack's role is then "
            "the organisation's word, not its tags' (recommended once site_roles lists them)."
        ),
    },
    site_roles={
        "type": "object",
        "default": {},
        "additionalProperties": {"type": "string", "enum": ["primary", "dr"]},
        "description": (
            'Stack name glob -> the role of the site it deploys ({"*-use1": "primary"}): its '
            "gpudr:site-role tags must say so, and so must its data buckets' roles. Without it "
            "the roles are only checked against each other."
        ),
    },
    dr_stacks={
        "type": "array",
        "default": [],
        "items": {"type": "string"},
        "description": (
            "Stack name globs that hold DR data whatever they declare: every bucket in them "
            "must carry gpudr's tags."
        ),
    },
)


def _is_gpudr_stack(stack: Stack, config: Mapping[str, Any]) -> bool:
    if any(r.resource_type.startswith("gpudr:") for r in stack.resources):
        return True
    if any(gpudr_tag(r.resource_type, r.props, Tag.SYSTEM) for r in stack.resources):
        return True
    names = {stack_of(r.urn) for r in stack.resources}
    return any(fnmatchcase(n, g) for n in names for g in items(config.get("dr_stacks")))


# The site a copy lives at, by its role: a source at the primary, a replica or the one
# dual-region bucket at the DR site (whose stack owns it).
SITE_OF_ROLE: dict[str, str] = {
    tags.DrRole.DATA_SOURCE: "primary",
    tags.DrRole.DATA_REPLICA: "dr",
    tags.DrRole.DATA_DUAL_REGION: "dr",
}


def _site_role(stack: Stack, config: Mapping[str, Any]) -> tuple[str | None, list[str]]:
    """The stack's site role and what contradicts it: every gpudr:site-role tag in one stack
    names one site, and the pack config's `site_roles` (the organisation's) overrules tags."""
    found = {
        str(v)
        for r in stack.resources
        if (v := gpudr_tag(r.resource_type, r.props, Tag.SITE_ROLE)) is not None
    }
    problems = []
    if len(found) > 1:
        problems.append(f"its resources name {len(found)} site roles ({', '.join(sorted(found))})")
    names = {stack_of(r.urn) for r in stack.resources}
    roles = config.get("site_roles")
    declared = {
        str(role)
        for name in names
        for glob, role in (roles.items() if isinstance(roles, Mapping) else [])
        if fnmatchcase(name, str(glob))
    }
    if len(declared) > 1:
        problems.append(f"the pack config's site_roles give it {', '.join(sorted(declared))}")
    role = next(iter(declared)) if len(declared) == 1 else None
    if role is None and not declared and config.get("require_site_roles") is True:
        problems.append("no site_roles entry in the pack config names its stack")
    if role is not None and found and found != {role}:
        problems.append(
            f"the pack config's site_roles say {role}, its tags {', '.join(sorted(found))}"
        )
    return role or (next(iter(found)) if len(found) == 1 else None), problems


def _role_problem(bucket: PolicyResource, gpudr_stack: bool) -> str | None:
    role = gpudr_tag(bucket.resource_type, bucket.props, Tag.DR_ROLE)
    parent = bucket.parent.resource_type if bucket.parent is not None else None
    if parent in naming.DATA_BUCKET_COMPONENTS and role not in DATA_ROLES:
        return (
            f"is the bucket of a gpudr data class ({bucket.parent.name if bucket.parent else ''})"
            f" but its {PREFIX}dr-role is {role!r}, so no replication check judges it"
        )
    if gpudr_stack and role is None:
        return (
            f"is in a gpudr stack without {PREFIX}dr-role, so nothing shows whether it holds "
            "DR data or what its RPO is"
        )
    return None


def _numbers(bucket: PolicyResource) -> Iterator[str]:
    """Each sizing tag that is present but not a finite, non-negative number."""
    for tag, none_ok in NUMERIC_TAGS.items():
        raw = gpudr_tag(bucket.resource_type, bucket.props, tag)
        if raw is None or (none_ok and raw.strip().lower() == "none"):
            continue
        value = number(raw)
        if value is None:
            yield f"{tag.key} is {raw!r}, not a finite number"
        elif value < 0:
            yield f"{tag.key} is negative ({raw})"


# Where each mechanism's copies can be: (the bucket types of a source, of a replica, and of
# a dual-region copy). A claim elsewhere names a mechanism that cannot apply to the bucket,
# and would send the replication checks to a stack or type that never holds its settings.
ANY = (S3_BUCKET, GCS_BUCKET, AZ_STORAGE_ACCOUNT)
FITS: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    enums.Mechanism.CRR_RTC: ((S3_BUCKET,), (S3_BUCKET,), ()),
    enums.Mechanism.CRR: ((S3_BUCKET,), (S3_BUCKET,), ()),
    enums.Mechanism.GCS_TURBO: ((), (), (GCS_BUCKET,)),
    enums.Mechanism.GCS_DUAL_REGION: ((), (), (GCS_BUCKET,)),
    enums.Mechanism.AZURE_OR: ((AZ_STORAGE_ACCOUNT,), (AZ_STORAGE_ACCOUNT,), ()),
    enums.Mechanism.STS: (ANY, (GCS_BUCKET,), ()),
    enums.Mechanism.DATASYNC: (ANY, (S3_BUCKET,), ()),
    # The source is on premises: no stack holds it.
    enums.Mechanism.DATASYNC_AGENT: ((), (S3_BUCKET,), ()),
    enums.Mechanism.STS_AGENT: ((), (GCS_BUCKET,), ()),
    enums.Mechanism.STORAGE_MOVER: ((), (AZ_STORAGE_ACCOUNT,), ()),
    # From S3 into Blob: AzCopy's jobs at the Azure DR site.
    enums.Mechanism.AZCOPY: ((S3_BUCKET,), (AZ_STORAGE_ACCOUNT,), ()),
    enums.Mechanism.DUAL_WRITE: (ANY, ANY, ()),
    enums.Mechanism.NONE: (ANY, ANY, ()),
}
# FITS's tuple index of each copy's role: the order of tags.DATA_ROLES.
ROLE_INDEX: dict[str, int] = {role: i for i, role in enumerate(tags.DATA_ROLES)}


def _fits(bucket: PolicyResource, d: tags.BucketTags) -> bool:
    fits = FITS.get(d.mechanism)
    index = ROLE_INDEX.get(d.role)
    return fits is None or index is None or kind(bucket) in fits[index]


def _consistency(bucket: PolicyResource, d: tags.BucketTags) -> Iterator[str]:
    if not _fits(bucket, d):
        yield (f"mechanism {d.mechanism} cannot hold a {d.role} copy in a {bucket.resource_type}")
    if d.mechanism not in set(enums.Mechanism):
        yield f"{Tag.MECHANISM.key} {d.mechanism!r} is no mechanism gpudr knows"
    if d.data_class not in set(enums.DataClass):
        yield f"{Tag.DATA_CLASS.key} {d.data_class!r} is no data class gpudr knows"
    if d.burst_bytes == 0 and d.steady_mbps == 0:
        yield "burst-bytes and steady-kbps are both 0: the class would move no data"
    # A published model is a burst of its own: pulled, it must arrive within the RPO, with no
    # interval to repeat in (the need's window is the RPO).
    published = d.data_class == enums.DataClass.WEIGHTS and d.rpo_s is not None
    if (
        d.burst_bytes > 0
        and d.interval_s == 0
        and d.mechanism != enums.Mechanism.DUAL_WRITE
        and not published
    ):
        yield "a burst (burst-bytes > 0) with no interval-s to repeat it in"
    if d.quota_mbps is not None and d.quota_mbps <= 0:
        yield f"{Tag.QUOTA_MBPS.key} is {d.quota_mbps:g}: a quota of nothing"
    rated = (*sizing.QUOTA_KEYS, *enums.FROM_ONPREM)  # the WAN rate (_wan_bound)
    if d.quota_mbps is not None and d.mechanism not in rated:
        yield f"{Tag.QUOTA_MBPS.key} on {d.mechanism}, which no rate quota bounds"
    if d.rpo_s == 0 and d.mechanism != enums.Mechanism.DUAL_WRITE:
        yield f"RPO 0 with mechanism {d.mechanism}: only a dual write holds RPO 0"
    stated = number(gpudr_tag(bucket.resource_type, bucket.props, Tag.STEADY_MBPS))
    if stated is not None and abs(stated - d.steady_mbps) > 0.001:
        yield (
            f"{Tag.STEADY_MBPS.key} {stated:g} disagrees with {Tag.STEADY_KBPS.key} "
            f"({d.steady_mbps * 1000:g} kbps)"
        )


def _region(bucket: PolicyResource) -> str:
    found = bucket.props.get("region") or bucket.props.get("location") or ""
    return str(found).lower()


def _approved_mbps(
    bucket: PolicyResource, d: tags.BucketTags, config: Mapping[str, Any]
) -> tuple[float | None, str]:
    """The quota this bucket may assert, and where that bound comes from."""
    stack, region = stack_of(bucket.urn), _region(bucket)
    best: tuple[float | None, str] = (default_quota_mbps(d.mechanism), "the vendor's default")
    for entry in items(config.get("approved_quotas")):
        if not isinstance(entry, Mapping) or entry.get("mechanism") != d.mechanism:
            continue
        value, reason = number(entry.get("mbps")), entry.get("reason")
        if value is None or not isinstance(reason, str) or len(reason.strip()) < 10:
            continue
        stacks, regions = items(entry.get("stacks")), items(entry.get("regions"))
        if stacks and not any(fnmatchcase(stack, str(g)) for g in stacks):
            continue
        if regions and region not in {str(r).lower() for r in regions}:
            continue
        if best[0] is None or value > best[0]:
            best = (value, f"approved in the pack config ({reason})")
    return best


def _wan_bound(
    bucket: PolicyResource, d: tags.BucketTags, config: Mapping[str, Any]
) -> Iterator[str]:
    """A pull from on premises asserts the WAN bandwidth committed to DR: no vendor publishes
    it and nothing registered shows it, so only an approval in the pack config bounds it."""
    approved, _source = _approved_mbps(bucket, d, config)
    if d.quota_mbps is None:
        yield "it states no WAN rate (gpudr:quota-mbps) for its pull from on premises"
    elif approved is None or d.quota_mbps > approved:
        yield (
            f"it asserts {mbps(d.quota_mbps)} of WAN bandwidth committed to DR, but the pack "
            "config's approved_quotas approves "
            + ("none" if approved is None else mbps(approved))
            + f" for mechanism {d.mechanism} on this stack: have the network team confirm the "
            "commitment and add it there, or lower wan_committed_gbps in the plan"
        )


def _bounds(bucket: PolicyResource, d: tags.BucketTags, config: Mapping[str, Any]) -> Iterator[str]:
    if d.mechanism in enums.FROM_ONPREM:
        yield from _wan_bound(bucket, d, config)
    if d.quota_mbps is not None and d.mechanism in sizing.QUOTA_KEYS:
        approved, source = _approved_mbps(bucket, d, config)
        if approved is not None and d.quota_mbps > approved:
            yield (
                f"it asserts a {d.mechanism} quota of {mbps(d.quota_mbps)} but {source} is "
                f"{mbps(approved)}: have the quota raised with the vendor and add it to the "
                "pack config's approved_quotas, or lower quotas: in the plan"
            )
    floors = config.get("max_rpo_s")
    floor = number(floors.get(d.data_class)) if isinstance(floors, Mapping) else None
    ceiling = number(config.get("default_max_rpo_s"))
    if floor is None and ceiling is not None and d.rpo_s is not None and d.rpo_s > ceiling:
        yield (
            f"it has an RPO of {seconds(d.rpo_s)}, longer than any DR copy is allowed "
            f"({seconds(ceiling)}, default_max_rpo_s): tighten recovery in the plan, or set a "
            "floor for this class in max_rpo_s"
        )
    if floor is not None and (d.rpo_s is None or d.rpo_s > floor):
        have = "no RPO" if d.rpo_s is None else f"an RPO of {seconds(d.rpo_s)}"
        yield (
            f"it has {have}, weaker than the organisation's floor of {seconds(floor)} for "
            f"{d.data_class}: tighten recovery in the plan"
        )


@dataclass(frozen=True)
class _Site:
    """What the whole stack says about its site."""

    gpudr: bool  # a gpudr stack: every bucket must carry its dr-role
    role: str | None  # primary | dr, from the pack config or the stack's tags
    problems: list[str]


def _placement(d: tags.BucketTags, site: _Site) -> Iterator[str]:
    expected = SITE_OF_ROLE.get(d.role)
    if expected is not None and site.role is not None and site.role != expected:
        yield f"a {d.role} copy cannot live at a {site.role} site (its source is elsewhere)"


def _check(
    bucket: PolicyResource, site: _Site, config: Mapping[str, Any], report: ReportViolation
) -> None:
    role = _role_problem(bucket, site.gpudr)
    if role:
        report(f"{describe(bucket)} {role}.", bucket.urn)
    if not is_data_bucket(bucket):
        return
    d = data_class(bucket)
    if isinstance(d, str):
        return  # replication-meets-rpo names the missing tags
    problems = [*_numbers(bucket), *_consistency(bucket, d), *_bounds(bucket, d, config)]
    problems += [*site.problems, *_placement(d, site)]
    if problems:
        report(
            f"{describe(bucket)} has gpudr tags that cannot be trusted: {'; '.join(problems)}. "
            "Regenerate the stack from the plan (`gpudr generate`) rather than editing tags.",
            bucket.urn,
        )


def _validate(args: StackValidationArgs, report: ReportViolation) -> None:
    config = policy_config(SCHEMA, args)
    report = exempting(report, config)
    stack = Stack(args.resources)
    site = _Site(_is_gpudr_stack(stack, config), *_site_role(stack, config))
    guard = UnknownGuard()
    for bucket in stack.buckets():
        with guard.check():
            _check(bucket, site, config, report)
    guard.raise_first()


dr_tags_verified = StackValidationPolicy(
    name="dr-tags-verified",
    description=(
        "gpudr's tags are verified, never trusted: every bucket of a gpudr stack carries its "
        "dr-role; sizing tags are finite, non-negative and consistent; asserted quotas are "
        "within the organisation's approvals (else the vendor default); RPOs meet the "
        "organisation's floors."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    config_schema=SCHEMA,
    remediation_steps=(
        "Deploy what `gpudr generate` writes from the plan and do not edit gpudr:* tags by "
        "hand. A raised vendor quota goes in the pack config's approved_quotas (mechanism, "
        "mbps, reason, stacks, regions); the organisation's RPO floors in max_rpo_s."
    ),
    tags=["replication", "rpo", "integrity"],
)
