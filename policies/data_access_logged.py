"""data-access-logged: every read, write and delete of stored data leaves a record.

Without data access logs, a leak of checkpoints or weights, or a deletion that DR then copies,
cannot be traced to who did it or bounded in time. Every bucket and storage account is judged,
gpudr-tagged or not, whichever SDK class declares it:

- S3 (`Bucket`, `BucketV2`): server access logging, declared as `aws.s3.BucketLogging` (or
  `BucketLoggingV2`) or inline (`logging` / `loggings`), into a target S3 can deliver to
  (policies/logs.py): another bucket of this stack (not the bucket itself), not encrypted by
  default with SSE-KMS or DSSE-KMS, whose bucket policy Allows `logging.s3.amazonaws.com`
  `s3:PutObject` under the log's `target_prefix` (or on the whole bucket). A target named by a
  plain string must be the `bucket` of a bucket of the stack: a typo'd or foreign name is
  refused. An organisation whose buckets log into a log bucket declared in another stack (S3
  requires it in the same account and region) lists that bucket's exact name in this policy's
  `s3_external_log_buckets` config, with a reason saying who owns it and that it meets the
  above: the pack cannot see it. A site's log sink is excused only when other buckets of the
  stack log into it and it holds no data of its own: logging a sink into itself or another
  sink gains nothing. Security Hub S3.9.
- Cloud Storage: Data Access audit logs, `gcp.projects.IAMAuditConfig` for
  `storage.googleapis.com` or `allServices` in the bucket's project with `DATA_READ` and
  `DATA_WRITE` and no exempted members (the configs of both services are unioned, as IAM does).
  CIS GCP Foundations 2.1. An organisation that enables them at the organization or folder
  level lists the projects in this policy's `gcs_audit_logs_inherited` config, with a reason:
  a project-level config would then duplicate, or fight with, the organisation's IAM policy.
- Cloud Storage, the entries kept: what may drop Data Access entries (a
  `gcp.logging.ProjectExclusion` or an entry of a `ProjectSink`'s `exclusions` whose filter
  mentions `data_access`, `gcs_bucket`, `storage.googleapis.com` or the audit logs as a whole,
  `cloudaudit.googleapis.com` not narrowed to `activity`, `system_event` or `policy`; the
  `_Default` sink disabled, or its own filter naming `data_access`) needs a `ProjectSink` in
  the same project that routes them to a log bucket of this stack: enabled, its filter empty or
  mentioning `data_access` with no negation (`NOT`, `!=`, `-term`: the pack does not parse the
  Logging query language, so it takes no negated filter as proof), none of its own exclusions
  dropping them, and a destination `logging.googleapis.com/projects/<p>/locations/<l>/buckets/
  <id>` naming a `gcp.logging.ProjectBucketConfig` of the stack with `cmek_settings` and
  `retention_days`. Otherwise the exclusion is refused: it drops the only copy. Folder and
  organization exclusions are not seen by a project's stack.
- Azure storage accounts (any API-version module): a diagnostic setting
  (`azure-native.monitor.DiagnosticSetting`, or its `insights` alias) on the account's
  `/blobServices/default` with `StorageRead`, `StorageWrite` and `StorageDelete` enabled (or
  the `allLogs` category group) and a destination (Log Analytics workspace, storage account or
  event hub). CIS Azure Foundations, storage logging for the blob service. `FileStorage`
  accounts have no blob service and are not judged here.

A value unknown during preview is treated as elsewhere in the pack: a link whose value is
unknown and that no property dependency shows is no link; a setting whose value decides the
verdict and is unknown makes the check "can't run" (the engine's advisory) until it is known.
A `resource_uri` computed from the account's id cannot show which sub-resource it names before
the account exists: pass the `storage.BlobServiceProperties` resource's `id` instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
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
from pulumi_policy.proxy import UnknownValueError

from gpudr.contract.logs import BLOB_LOG_CATEGORIES, GCS_AUDIT_SERVICE, GCS_DATA_ACCESS_TYPES

from .common import (
    AZ_BLOB_SERVICE,
    AZ_DIAGNOSTIC_SETTING,
    AZ_STORAGE_ACCOUNT,
    GCP_CRYPTO_KEY,
    GCP_LOG_BUCKET,
    GCP_LOG_EXCLUSION,
    GCP_LOG_SINK,
    GCP_PROJECT_AUDIT_CONFIG,
    GCS_BUCKET,
    S3_BUCKET,
    Stack,
    UnknownGuard,
    any_proven,
    approval,
    config_schema,
    depends_on,
    depends_on_type,
    describe,
    exempting,
    get,
    is_true,
    items,
    kind,
    links_to,
    names_enough,
    number,
    policy_config,
    same,
)
from .logs import (
    AccessLogging,
    data_marks,
    delivery_gaps,
    enabled_categories,
    has_destination,
    log_targets,
    logging_of,
    sink_sources,
)

INHERITED = {
    "type": "array",
    "default": [],
    "description": (
        "GCP projects whose Cloud Storage Data Access audit logs (DATA_READ and DATA_WRITE, no "
        "exempted members) the organisation enables at the organization or folder level, so "
        "that their stacks need no projects.IAMAuditConfig: each {project: a project id, or a "
        "glob with at least 3 literal characters; reason: where it is set and by whom (at "
        "least 10 characters)}."
    ),
    "items": {
        "type": "object",
        "required": ["project", "reason"],
        "additionalProperties": False,
        "properties": {
            "project": {"type": "string", "minLength": 1},
            "reason": {"type": "string", "minLength": 10},
        },
    },
}
EXTERNAL_LOG_BUCKETS = {
    "type": "array",
    "default": [],
    "description": (
        "S3 buckets outside the stack that buckets of the stack may send their server access "
        "logs to (a log bucket per account and region declared in another stack), which the "
        "pack cannot check: each {bucket: its exact name; reason: who owns it, and that it is "
        "not SSE-KMS and its policy lets logging.s3.amazonaws.com put objects (at least 10 "
        "characters)}."
    ),
    "items": {
        "type": "object",
        "required": ["bucket", "reason"],
        "additionalProperties": False,
        "properties": {
            "bucket": {"type": "string", "minLength": 3},
            "reason": {"type": "string", "minLength": 10},
        },
    },
}
SCHEMA = config_schema(
    gcs_audit_logs_inherited=INHERITED, s3_external_log_buckets=EXTERNAL_LOG_BUCKETS
)

GCS_SERVICES = (GCS_AUDIT_SERVICE, "allServices")
_BLOB_SERVICE_URI = re.compile(
    r"/providers/Microsoft\.Storage/storageAccounts/([^/]+)/blobServices/default$", re.I
)


# --- S3 ---------------------------------------------------------------------------------------


def _external(config: Mapping[str, Any], name: str) -> str | None:
    """The reason the pack config gives for `name` being a log bucket outside the stack."""
    return approval(config, "s3_external_log_buckets", lambda e: e.get("bucket") == name)


def _log_gaps(
    stack: Stack, bucket: PolicyResource, log: AccessLogging, config: Mapping[str, Any]
) -> list[str]:
    """Why this declaration leaves the bucket's access unlogged (empty when S3 delivers)."""
    targets = log_targets(stack, log)
    others = [t for t in targets if t.urn != bucket.urn]
    if targets and not others:
        return [
            "its access logs go to itself (each delivery would be logged in turn, and "
            "whoever may delete its objects may delete their trail)"
        ]
    if others:
        return [gap for target in others for gap in delivery_gaps(stack, log, target)]
    name = log.target_name()  # unknown with no link to a bucket of the stack: can't run
    if name is None:
        return ["its logging names no target bucket"]
    if _external(config, name) is not None:
        return []
    return [
        f"its logging target {name!r} is no bucket of this stack (a typo, or a bucket "
        "declared elsewhere whose encryption and policy the pack cannot check: name the "
        "site's log bucket of this stack, or list the bucket in this policy's "
        "s3_external_log_buckets config with a reason)"
    ]


def _check_s3(
    stack: Stack, bucket: PolicyResource, config: Mapping[str, Any], report: ReportViolation
) -> None:
    sources = sink_sources(stack, bucket)
    marks = data_marks(bucket) if sources else []
    if sources and not marks:
        return  # the site's log sink: what it would log is the logs' own delivery
    logs = logging_of(stack, bucket)
    if any_proven(logs, lambda log: not _log_gaps(stack, bucket, log, config)):
        return
    if sources:
        found = (
            f"it receives the access logs of {sources[0].name} but holds data ({marks[0]}), "
            "so its own access is logged too"
        )
    elif logs:
        found = "; ".join(_log_gaps(stack, bucket, logs[0], config))
    else:
        found = "no BucketLogging refers to it"
    report(
        f"{describe(bucket)} does not log data access: {found}. Declare "
        "aws.s3.BucketLogging(bucket=<bucket>.id, target_bucket=<the site's log bucket>.id, "
        'target_prefix="s3/<bucket>/") into a log bucket of this stack with SSE-S3 (AES256) '
        "default encryption whose bucket policy Allows logging.s3.amazonaws.com s3:PutObject "
        "under that prefix.",
        bucket.urn,
    )


# --- Cloud Storage ----------------------------------------------------------------------------


def _project_id(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    return value.strip().removeprefix("projects/")


def _project_of(resource: PolicyResource) -> str | None:
    """The resource's project: its own `project`, else its provider's (the provider default)."""
    own = _project_id(resource.props.get("project"))
    if own is not None or resource.provider is None:
        return own
    return _project_id(resource.provider.props.get("project"))


def _inherited(config: Mapping[str, Any], project: str) -> str | None:
    """The reason the pack config gives for the project's audit logs being set above it."""

    def matches(entry: Mapping[str, Any]) -> bool:
        pattern = entry.get("project")
        return names_enough(pattern) and fnmatchcase(
            project, str(pattern).removeprefix("projects/")
        )

    return approval(config, "gcs_audit_logs_inherited", matches)


def _covers(audit: PolicyResource, project: str) -> bool:
    """Whether the audit config is for Cloud Storage (or all services) in `project`."""
    return _project_id(audit.props.get("project")) == project and any(
        audit.props.get("service") == s for s in GCS_SERVICES
    )


def _audit_gaps(audits: list[PolicyResource]) -> list[str]:
    """What the audit configs for a project leave unlogged (IAM unions them)."""
    logged_types: set[str] = set()
    exempted: list[str] = []
    for audit in audits:
        for entry in items(audit.props.get("auditLogConfigs")):
            log_type = get(entry, "logType")
            if log_type not in GCS_DATA_ACCESS_TYPES:
                continue
            logged_types.add(log_type)
            exempted += [str(m) for m in items(get(entry, "exemptedMembers"))]
    gaps = [f"{t} is off" for t in GCS_DATA_ACCESS_TYPES if t not in logged_types]
    if exempted:
        gaps.append(f"{', '.join(sorted(set(exempted)))} exempted")
    return gaps


def _check_gcs(
    stack: Stack, bucket: PolicyResource, config: Mapping[str, Any], report: ReportViolation
) -> None:
    project = _project_of(bucket)
    if project is not None and _inherited(config, project):
        return
    if project is None:
        found = "it names no project (set project=), so no audit config can be matched"
    else:
        audits, unknown = [], None
        for audit in stack.of_type(GCP_PROJECT_AUDIT_CONFIG):
            try:
                if _covers(audit, project):
                    audits.append(audit)
            except UnknownValueError as error:  # its project or service: decided below
                unknown = unknown or error
        gaps = _audit_gaps(audits)
        if not gaps:
            return
        if unknown is not None:
            raise unknown  # that config may close the gaps once its values are known
        found = (
            f"in project {project} {'; '.join(gaps)}"
            if audits
            else f"no IAMAuditConfig for storage.googleapis.com in project {project}"
        )
    report(
        f"{describe(bucket)} does not log data access (Data Access audit logs): {found}. "
        "Declare gcp.projects.IAMAuditConfig(project=<project>, "
        'service="storage.googleapis.com", audit_log_configs=[{log_type: "DATA_READ"}, '
        '{log_type: "DATA_WRITE"}]) with no exempted members, or, when the organisation sets '
        "them at the organization or folder level, list the project in this policy's "
        "gcs_audit_logs_inherited config.",
        bucket.urn,
    )


# --- Cloud Storage: exclusions that drop the Data Access entries ------------------------------

DATA_ACCESS = "data_access"
# What in a filter may select Cloud Storage Data Access entries: their log, the audit logs as a
# whole (`cloudaudit.googleapis.com` not narrowed to Admin Activity, System Event or Policy
# Denied, which no exclusion drops from _Required), the bucket's resource type, the service.
_MAY_SELECT_DATA_ACCESS = re.compile(
    r"data_access|gcs_bucket|storage\.googleapis\.com"
    r"|cloudaudit\.googleapis\.com(?!(?:%2F|/)(?:activity|system_event|policy)\b)",
    re.I,
)
DEFAULT_SINK = "_Default"
_NEGATION = re.compile(r"\bNOT\b|!=|!~|(?:^|[\s(])-[A-Za-z_]")
_LOG_BUCKET = re.compile(
    r"^logging\.googleapis\.com/projects/([^/]+)/locations/([^/]+)/buckets/([^/]+)$"
)


def _may_select_data_access(value: Any) -> bool:
    return isinstance(value, str) and _MAY_SELECT_DATA_ACCESS.search(value) is not None


def _names_data_access(value: Any) -> bool:
    return isinstance(value, str) and DATA_ACCESS in value.lower()


def _own_exclusions(sink: PolicyResource) -> list[str]:
    """The names of the sink's enabled exclusions that may drop Data Access entries."""
    return [
        str(get(entry, "name"))
        for entry in items(sink.props.get("exclusions"))
        if not is_true(get(entry, "disabled")) and _may_select_data_access(get(entry, "filter"))
    ]


def _dropped_by(resource: PolicyResource) -> str | None:
    """How an exclusion, or a sink's exclusions, may drop Data Access entries; None if not."""
    props = resource.props
    if kind(resource) == GCP_LOG_EXCLUSION:
        if is_true(props.get("disabled")) or not _may_select_data_access(props.get("filter")):
            return None
        return "its filter may match them"
    how = [f"its exclusion {name!r} may match them" for name in _own_exclusions(resource)]
    if props.get("name") == DEFAULT_SINK:
        if is_true(props.get("disabled")):
            how.append("it is the _Default sink, disabled")
        elif _names_data_access(props.get("filter")):
            how.append("it is the _Default sink, its filter naming data_access")
    return "; ".join(how) or None


def _routes_data_access(sink: PolicyResource, project: str) -> bool:
    """Whether the sink, in `project` and enabled, routes Data Access entries: no filter (every
    entry), or one that names `data_access`."""
    if _project_of(sink) != project or is_true(sink.props.get("disabled")):
        return False
    found = sink.props.get("filter")
    return (
        found is None or (isinstance(found, str) and not found.strip()) or _names_data_access(found)
    )


def _log_buckets(stack: Stack, sink: PolicyResource) -> list[PolicyResource]:
    """The ProjectBucketConfigs of the stack the sink writes to: its destination computed from
    one (unknown during preview), or `logging.googleapis.com/projects/<p>/locations/<l>/
    buckets/<id>` naming one."""
    configs = stack.of_type(GCP_LOG_BUCKET)
    try:
        destination = sink.props.get("destination")
    except UnknownValueError:
        return [c for c in configs if depends_on(sink, "destination", c)]
    match = _LOG_BUCKET.match(destination.strip()) if isinstance(destination, str) else None
    if match is None:
        return []
    project, location, bucket_id = match.groups()
    return [
        c
        for c in configs
        if c.props.get("bucketId") == bucket_id
        and same(c.props.get("location"), location)
        and _project_of(c) == project
    ]


def _log_bucket_gaps(config: PolicyResource) -> list[str]:
    gaps = []
    try:
        key = get(config.props, "cmekSettings", "kmsKeyName")
        keyed = isinstance(key, str) and bool(key.strip())
    except UnknownValueError:
        if not depends_on_type(config, "cmekSettings", GCP_CRYPTO_KEY):
            raise
        keyed = True
    if not keyed:
        gaps.append("no cmek_settings.kms_key_name (Google-managed encryption)")
    days = number(config.props.get("retentionDays"))
    if days is None or days <= 0:
        gaps.append("no retention_days (30 days by default, whatever the plan keeps)")
    return gaps


def _sink_gaps(stack: Stack, sink: PolicyResource) -> list[str]:
    """What keeps a sink that names data_access from being proof that it routes the entries
    into a CMEK log bucket with a retention (empty when it is)."""
    gaps = []
    found = sink.props.get("filter")
    if isinstance(found, str) and _NEGATION.search(found):
        gaps.append("its filter negates a term (NOT, !=, -term), which the pack cannot follow")
    gaps += [f"its own exclusion {name!r} may drop them" for name in _own_exclusions(sink)]
    buckets = _log_buckets(stack, sink)
    if not buckets:
        gaps.append(
            "its destination is no logging.googleapis.com/projects/<p>/locations/<l>/buckets/"
            "<id> of a ProjectBucketConfig of this stack"
        )
    elif not any_proven(buckets, lambda b: not _log_bucket_gaps(b)):
        missing = "; ".join(_log_bucket_gaps(buckets[0]))
        gaps.append(f"its log bucket {buckets[0].name} has {missing}")
    return gaps


def _check_exclusion(stack: Stack, holder: PolicyResource, report: ReportViolation) -> None:
    how = _dropped_by(holder)
    if how is None:
        return
    project = _project_of(holder)
    if project is None:
        found = "it names no project (set project=), so no sink can be shown to route them"
    else:
        sinks = stack.of_type(GCP_LOG_SINK)
        if any_proven(
            sinks, lambda s: _routes_data_access(s, project) and not _sink_gaps(stack, s)
        ):
            return
        routes = [s for s in sinks if _routes_data_access(s, project)]
        found = (
            f"sink {routes[0].name} names them but {'; '.join(_sink_gaps(stack, routes[0]))}"
            if routes
            else f"no ProjectSink in project {project} has a filter naming data_access"
        )
    report(
        f"{describe(holder)} drops Cloud Storage Data Access audit entries ({how}), their only "
        f"copy unless a sink routes them elsewhere: {found}. Route them first: "
        "gcp.logging.ProjectSink(project=<project>, filter=<a filter matching "
        'logName:"cloudaudit.googleapis.com%2Fdata_access">, destination="logging.googleapis.'
        'com/projects/<project>/locations/<region>/buckets/<id>") into a '
        "gcp.logging.ProjectBucketConfig with cmek_settings and retention_days; or remove the "
        "exclusion.",
        holder.urn,
    )


# --- Azure ------------------------------------------------------------------------------------


def _on_blob_service(stack: Stack, setting: PolicyResource, account: PolicyResource) -> bool:
    """Whether the diagnostic setting's `resourceUri` is the account's `/blobServices/default`:
    a BlobServiceProperties of the account (its id is that URI), or the URI itself. A URI
    computed from the account and unknown during preview raises: which sub-resource it names
    cannot be shown."""
    prop = "resourceUri"
    if setting.property_dependencies.get(prop):
        services = [
            s
            for s in stack.of_type(AZ_BLOB_SERVICE)
            if links_to(s, "accountName", account, ("accountName",))
        ]
        via_service = any(depends_on(setting, prop, s) for s in services)
        if not via_service and not depends_on(setting, prop, account):
            return False
        try:
            uri = setting.props.get(prop)
        except UnknownValueError:
            if via_service:
                return True
            raise
        return isinstance(uri, str) and _BLOB_SERVICE_URI.search(uri.strip()) is not None
    uri = setting.props.get(prop)
    match = _BLOB_SERVICE_URI.search(uri.strip()) if isinstance(uri, str) else None
    name = account.props.get("accountName")
    return match is not None and isinstance(name, str) and same(match.group(1), name)


def _blob_gaps(setting: PolicyResource) -> list[str]:
    enabled = enabled_categories(setting)
    gaps = [c for c in BLOB_LOG_CATEGORIES if "*" not in enabled and c.lower() not in enabled]
    gaps = [f"{', '.join(gaps)} off"] if gaps else []
    if not has_destination(setting):
        gaps.append("no destination (workspace_id, storage_account_id or event hub)")
    return gaps


def _check_azure(stack: Stack, account: PolicyResource, report: ReportViolation) -> None:
    if same(account.props.get("kind"), "FileStorage"):
        return  # file shares only: no blob service to log
    settings = stack.of_type(AZ_DIAGNOSTIC_SETTING)

    def complete(setting: PolicyResource) -> bool:
        return _on_blob_service(stack, setting, account) and not _blob_gaps(setting)

    if any_proven(settings, complete):
        return
    linked = [s for s in settings if _on_blob_service(stack, s, account)]
    found = (
        f"its diagnostic setting {linked[0].name} has {'; '.join(_blob_gaps(linked[0]))}"
        if linked
        else "no DiagnosticSetting has its /blobServices/default as resource_uri"
    )
    report(
        f"{describe(account)} does not log blob access: {found}. Declare "
        "azure_native.monitor.DiagnosticSetting(resource_uri=<the account's "
        "storage.BlobServiceProperties>.id, logs=[{category: c, enabled: True} for c in "
        "StorageRead, StorageWrite, StorageDelete], workspace_id=<the site's Log Analytics "
        "workspace id>).",
        account.urn,
    )


def _validate(args: StackValidationArgs, report: ReportViolation) -> None:
    config = policy_config(SCHEMA, args)
    report = exempting(report, config)
    stack = Stack(args.resources)
    guard = UnknownGuard()
    for bucket in stack.buckets():
        with guard.check():
            if kind(bucket) == S3_BUCKET:
                _check_s3(stack, bucket, config, report)
            elif kind(bucket) == GCS_BUCKET:
                _check_gcs(stack, bucket, config, report)
            elif kind(bucket) == AZ_STORAGE_ACCOUNT:
                _check_azure(stack, bucket, report)
    for holder in stack.of_type(GCP_LOG_EXCLUSION, GCP_LOG_SINK):
        with guard.check():
            _check_exclusion(stack, holder, report)
    guard.raise_first()


data_access_logged = StackValidationPolicy(
    name="data-access-logged",
    description=(
        "Every bucket and storage account, tagged or not, logs data access: S3 server access "
        "logging to another bucket of the stack that S3 can deliver to (not SSE-KMS, its "
        "policy allowing logging.s3.amazonaws.com; a log sink holding no data is excused); "
        "Cloud Storage Data Access audit logs (DATA_READ, DATA_WRITE) in the bucket's "
        "project, and no exclusion dropping them unless a sink keeps them in a CMEK log "
        "bucket with a retention; a diagnostic "
        "setting on each Azure account's blob service with StorageRead, StorageWrite and "
        "StorageDelete sent to a destination."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=SCHEMA,
    remediation_steps=(
        "AWS: aws.s3.BucketLogging(bucket=<bucket>.id, target_bucket=<the site's log "
        'bucket>.id, target_prefix="s3/<bucket>/") for every bucket but the log bucket '
        "itself; the log bucket SSE-S3 (AES256), its policy allowing logging.s3.amazonaws.com "
        "s3:PutObject under the prefix (a log bucket of another stack: list it in "
        "s3_external_log_buckets). GCP: "
        'gcp.projects.IAMAuditConfig(project=<project>, service="storage.googleapis.com", '
        "audit_log_configs=[DATA_READ, DATA_WRITE]) in each bucket's project, or list the "
        "project in gcs_audit_logs_inherited when the organisation enables them above it; an "
        "exclusion of data_access entries only with a ProjectSink routing them to a "
        "ProjectBucketConfig with cmek_settings and retention_days. "
        "Azure: azure_native.monitor.DiagnosticSetting on <BlobServiceProperties>.id with "
        "StorageRead, StorageWrite, StorageDelete and the site's workspace. gpudr's "
        "components declare these with each site's log sink."
    ),
    tags=["logging", "data-protection"],
)
