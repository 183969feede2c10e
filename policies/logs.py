"""Where logs go: S3 server access logging in a stack (which bucket logs to which, which bucket
is a site's log sink) and what an Azure diagnostic setting enables and sends where. A helper,
not a policy: data-access-logged, data-encrypted-at-rest and cluster-control-plane-logged use
it.

A bucket's access logging is an `aws.s3.BucketLogging` (or the deprecated `BucketLoggingV2`)
whose `bucket` names it, or the deprecated inline block on the bucket (`logging` on `Bucket`,
`loggings` on `BucketV2`); each names its `target_bucket` by bucket name. A program that passes
the target bucket's Output records a property dependency on it, which decides the link; a plain
name must equal the target's `bucket`.

A log sink is a bucket that other buckets of the stack send their access logs to and that holds
no data of its own: no gpudr data tags, not part of a gpudr DataBucket component (its tags can
be edited; the component type in its URN cannot, short of renaming the resource).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pulumi_policy import PolicyResource
from pulumi_policy.proxy import UnknownValueError

from gpudr.contract.naming import DATA_BUCKET_COMPONENTS

from .common import (
    DATA_ROLES,
    S3_BUCKET,
    S3_LOGGING,
    Stack,
    ancestor_types,
    depends_on,
    get,
    gpudr_tag,
    is_true,
    items,
    same,
    tag_is,
)

# The deprecated inline blocks: a single block on `Bucket`, a list on `BucketV2`.
INLINE = ("logging", "loggings")
ALL_LOGS = "allLogs"  # the diagnostic category group holding every log category of a resource
DESTINATIONS = ("workspaceId", "storageAccountId", "eventHubAuthorizationRuleId")


@dataclass(frozen=True)
class AccessLogging:
    """One declaration of a bucket's access logging: `holder` is the BucketLogging resource, or
    the bucket itself for an inline block; `prop` the property whose dependencies name the
    target (`targetBucket`, or the inline block's property); `block` holds `targetBucket`."""

    holder: PolicyResource
    prop: str
    block: Mapping[str, Any]

    def has_target(self) -> bool:
        """Whether it names a target bucket: a resource's Output, or a non-empty name. A name
        unknown during preview with no dependency raises (which bucket cannot be shown)."""
        if self.holder.property_dependencies.get(self.prop):
            return True
        target = get(self.block, "targetBucket")
        return isinstance(target, str) and bool(target.strip())

    def sends_to(self, bucket: PolicyResource) -> bool:
        """Whether its target is `bucket`. An unknown name with no dependency on `bucket`
        counts as another bucket: a value computed from `bucket` would record it."""
        if self.holder.property_dependencies.get(self.prop):
            return depends_on(self.holder, self.prop, bucket)
        try:
            target = get(self.block, "targetBucket")
            name = bucket.props.get("bucket")
        except UnknownValueError:
            return False
        return isinstance(target, str) and bool(target) and target == name


def logging_of(stack: Stack, bucket: PolicyResource) -> list[AccessLogging]:
    """Every declaration of the bucket's access logging, inline or a BucketLogging."""
    out = [
        AccessLogging(bucket, prop, block)
        for prop in INLINE
        for block in items(bucket.props.get(prop))
        if isinstance(block, Mapping)
    ]
    out += [
        AccessLogging(config, "targetBucket", config.props)
        for config in stack.linked(bucket, S3_LOGGING, "bucket", ("bucket", "id"))
    ]
    return out


def logged(stack: Stack, bucket: PolicyResource) -> bool:
    """Whether the bucket's access logs go to a target bucket."""
    return any(log.has_target() for log in logging_of(stack, bucket))


def sink_sources(stack: Stack, sink: PolicyResource) -> list[PolicyResource]:
    """The other buckets of the stack whose access logs go to `sink`."""
    return [
        source
        for source in stack.of_type(S3_BUCKET)
        if source.urn != sink.urn and any(log.sends_to(sink) for log in logging_of(stack, source))
    ]


def data_marks(bucket: PolicyResource) -> list[str]:
    """What shows the bucket holds a data class's copy: a gpudr data tag, or a gpudr
    DataBucket component among its parents. Empty for a bucket that shows none."""
    marks = []
    data_class = gpudr_tag(bucket.resource_type, bucket.props, "data-class")
    if data_class is not None:
        marks.append(f"it carries gpudr:data-class {data_class!r}")
    if tag_is(bucket.resource_type, bucket.props, "dr-role", *DATA_ROLES):
        role = gpudr_tag(bucket.resource_type, bucket.props, "dr-role")
        marks.append(f"its gpudr:dr-role is {role!r}")
    components = sorted(ancestor_types(bucket) & set(DATA_BUCKET_COMPONENTS))
    if components:
        marks.append(f"it is part of a {components[0]} component")
    return marks


# --- Azure diagnostic settings ----------------------------------------------------------------


def enabled_categories(setting: PolicyResource) -> set[str]:
    """The log categories a diagnostic setting enables, lower-cased; `*` for `allLogs`."""
    out = set()
    for log in items(setting.props.get("logs")):
        if not is_true(get(log, "enabled")):
            continue
        category = get(log, "category")
        if isinstance(category, str):
            out.add(category.lower())
        if same(get(log, "categoryGroup"), ALL_LOGS):
            out.add("*")
    return out


def has_destination(setting: PolicyResource) -> bool:
    """Whether the setting sends its logs somewhere: a Log Analytics workspace, a storage
    account or an event hub, given as a resource's Output or a non-empty id."""
    for prop in DESTINATIONS:
        if setting.property_dependencies.get(prop):
            return True
        value = setting.props.get(prop)
        if isinstance(value, str) and value.strip():
            return True
    return False
