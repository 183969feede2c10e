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

S3 delivers a bucket's access logs into a target bucket only when the target (Amazon S3 User
Guide, "Enabling Amazon S3 server access logging"):
- is not encrypted by default with SSE-KMS or DSSE-KMS ("Default server-side encryption with
  AWS KMS keys (SSE-KMS) is not supported for server access logging destination buckets");
- lets the logging service write: its bucket policy Allows `logging.s3.amazonaws.com`
  `s3:PutObject` on the objects under the log's `target_prefix` (or on the whole bucket), and
  no unconditional Deny refuses it. A condition on the Allow (`aws:SourceAccount`, as S3
  advises) is accepted: the pack cannot know the account. The legacy ACL grant to the Log
  Delivery group is not accepted: buckets created since April 2023 have ACLs disabled.
`delivery_gaps` says what a target lacks of these.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from pulumi_policy import PolicyResource
from pulumi_policy.proxy import UnknownValueError

from gpudr.contract.naming import DATA_BUCKET_COMPONENTS

from .common import (
    DATA_ROLES,
    S3_BUCKET,
    S3_ENCRYPTION,
    S3_LOGGING,
    S3_POLICY,
    Stack,
    ancestor_types,
    any_proven,
    depends_on,
    get,
    gpudr_tag,
    is_true,
    items,
    json_document,
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
    target (`targetBucket`, or the inline block's property); `block` holds `targetBucket` and
    `targetPrefix`."""

    holder: PolicyResource
    prop: str
    block: Mapping[str, Any]

    def target_name(self) -> str | None:
        """The target bucket's name as written, None when absent or empty. Raises when it is
        unknown during preview."""
        target = get(self.block, "targetBucket")
        return target.strip() if isinstance(target, str) and target.strip() else None

    def prefix(self) -> str:
        """Where in the target the logs go (`targetPrefix`; empty: the bucket's root). Raises
        when it is unknown during preview."""
        prefix = get(self.block, "targetPrefix")
        return prefix if isinstance(prefix, str) else ""

    def sends_to(self, bucket: PolicyResource) -> bool:
        """Whether its target is `bucket`. A target computed from other resources only is
        another bucket; a name spelt out must be `bucket`'s, dependency or not (a value
        computed from `bucket` may still name another); an unknown name counts as `bucket`
        only when computed from it."""
        linked = depends_on(self.holder, self.prop, bucket)
        if self.holder.property_dependencies.get(self.prop) and not linked:
            return False
        try:
            target = self.target_name()
            names = {bucket.props.get("bucket"), bucket.props.get("id")} - {None}
        except UnknownValueError:
            return linked
        if target is None:
            return False
        return target in names if names else linked


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


def log_targets(stack: Stack, log: AccessLogging) -> list[PolicyResource]:
    """The stack's S3 buckets `log` sends to (its own bucket, when it logs into itself)."""
    return [b for b in stack.of_type(S3_BUCKET) if log.sends_to(b)]


def sink_sources(stack: Stack, sink: PolicyResource) -> list[PolicyResource]:
    """The other buckets of the stack whose access logs go to `sink`."""
    return [
        source
        for source in stack.of_type(S3_BUCKET)
        if source.urn != sink.urn and any(log.sends_to(sink) for log in logging_of(stack, source))
    ]


# --- whether S3 can deliver access logs into a target bucket ---------------------------------

LOG_DELIVERY_SERVICE = "logging.s3.amazonaws.com"
PUT_OBJECT = "s3:PutObject"
KMS_ALGORITHMS = ("aws:kms", "aws:kms:dsse")


def delivery_gaps(stack: Stack, log: AccessLogging, target: PolicyResource) -> list[str]:
    """Why S3 cannot deliver `log`'s access logs into `target`, a bucket of the stack (empty
    when it can). Raises when a value that decides it is unknown during preview."""
    gaps = []
    algorithm = kms_default(stack, target)
    if algorithm is not None:
        gaps.append(
            f"its target {target.name} is encrypted by default with {algorithm}, and S3 "
            "delivers no server access logs to a bucket with SSE-KMS or DSSE-KMS default "
            "encryption (give the log bucket SSE-S3, AES256)"
        )
    if not grants_delivery(stack, target, log):
        gaps.append(
            f"the bucket policy of its target {target.name} does not Allow "
            f"{LOG_DELIVERY_SERVICE} {PUT_OBJECT} on {_objects_arn(target, log)}* (add the "
            f'statement {{"Effect": "Allow", "Principal": {{"Service": '
            f'"{LOG_DELIVERY_SERVICE}"}}, "Action": "{PUT_OBJECT}", "Resource": '
            f'"{_objects_arn(target, log)}*"}})'
        )
    return gaps


def undelivered(stack: Stack, sink: PolicyResource) -> list[str]:
    """Why no other bucket of the stack has its access logs delivered into `sink` (empty when
    one has). A declaration that depends on a value unknown during preview is passed over;
    when no other is delivered, that error is raised."""
    declarations = [
        log
        for source in sink_sources(stack, sink)
        for log in logging_of(stack, source)
        if log.sends_to(sink)
    ]
    if not declarations:
        return ["no other bucket of this stack sends its access logs to it"]
    if any_proven(declarations, lambda log: not delivery_gaps(stack, log, sink)):
        return []
    gaps = delivery_gaps(stack, declarations[0], sink)
    return [f"S3 cannot deliver the access logs sent to it: {'; '.join(gaps)}"]


def kms_default(stack: Stack, bucket: PolicyResource) -> str | None:
    """The SSE-KMS or DSSE-KMS algorithm of the bucket's default encryption, from its
    encryption configurations or the deprecated inline blocks (`Bucket`: one rule; `BucketV2`:
    lists); None when it has none."""
    found = [
        get(rule, "applyServerSideEncryptionByDefault", "sseAlgorithm")
        for config in stack.linked(bucket, S3_ENCRYPTION, "bucket", ("bucket", "id"))
        for rule in items(config.props.get("rules"))
    ]
    inline = get(bucket.props, "serverSideEncryptionConfiguration", "rule")
    found.append(get(inline, "applyServerSideEncryptionByDefault", "sseAlgorithm"))
    found += [
        get(default, "sseAlgorithm")
        for config in items(bucket.props.get("serverSideEncryptionConfigurations"))
        for rule in items(get(config, "rules"))
        for default in items(get(rule, "applyServerSideEncryptionByDefaults"))
    ]
    return next((a for a in found if any(same(a, k) for k in KMS_ALGORITHMS)), None)


def _objects_arn(target: PolicyResource, log: AccessLogging) -> str:
    """`arn:aws:s3:::<target>/<prefix>`: the head of every log object's ARN."""
    name = target.props.get("bucket")
    return f"arn:aws:s3:::{name if isinstance(name, str) else '<bucket>'}/{log.prefix()}"


def grants_delivery(stack: Stack, target: PolicyResource, log: AccessLogging) -> bool:
    """Whether the target's bucket policy lets the logging service put objects under the
    log's prefix: an Allow to `logging.s3.amazonaws.com` and no unconditional Deny. A prefix
    unknown during preview is shown only by a grant on the whole bucket (else it raises)."""
    name = target.props.get("bucket")
    if not isinstance(name, str) or not name.strip():
        return False
    statements = [
        statement
        for policy in stack.linked(target, S3_POLICY, "bucket", ("bucket", "id"))
        for statement in items(get(json_document(policy.props.get("policy")), "Statement"))
    ]
    try:
        objects = _objects_arn(target, log)
    except UnknownValueError:
        whole = f"arn:aws:s3:::{name}/"
        if _writable(statements, whole):
            return True
        raise
    return _writable(statements, objects)


def _writable(statements: list[Any], objects: str) -> bool:
    return any(_delivery(s, objects, "Allow") for s in statements) and not any(
        _delivery(s, objects, "Deny") for s in statements
    )


def _delivery(statement: Any, objects: str, effect: str) -> bool:
    """Whether the statement Allows (or, unconditionally, Denies) the logging service
    `s3:PutObject` on every object whose ARN starts with `objects`."""
    if not isinstance(statement, Mapping) or not same(statement.get("Effect"), effect):
        return False
    if any(statement.get(k) for k in ("NotPrincipal", "NotAction", "NotResource")):
        return False
    principal = statement.get("Principal")
    to_service = LOG_DELIVERY_SERVICE in [str(s).lower() for s in items(get(principal, "Service"))]
    if effect == "Deny":
        everyone = principal == "*" or "*" in items(get(principal, "AWS"))
        if statement.get("Condition") or not (to_service or everyone):
            return False
    elif not to_service:
        return False
    actions = [str(a).lower() for a in items(statement.get("Action"))]
    if not any(fnmatchcase(PUT_OBJECT.lower(), a) for a in actions):
        return False
    return any(_covers(str(r), objects) for r in items(statement.get("Resource")))


def _covers(pattern: str, objects: str) -> bool:
    """Whether an ARN pattern matches every ARN starting with `objects`: a literal head and
    one trailing `*` (`arn:aws:s3:::logs/*`, `arn:aws:s3:::logs/s3/*`, `*`)."""
    if not pattern.endswith("*"):
        return False
    head = pattern[:-1]
    if any(c in head for c in "*?") or "${" in head:
        return False
    return objects.startswith(head)


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
