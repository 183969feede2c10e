"""replication-meets-rpo: every data class with an RPO is replicated by a mechanism that
guarantees it, as registered, not merely "replication is on".

What each mechanism guarantees (gpudr/core/data/defaults.yaml, `mechanisms`, with sources):

- S3 CRR with Replication Time Control: 15 minutes (SLA), so RPO >= checkpoint interval + 15 min.
  Without RTC S3 guarantees no replication time at all.
- GCS dual-region with turbo replication (`rpo=ASYNC_TURBO`, only on dual-regions): 15 minutes.
  Default dual-region replication is a target, not a guarantee.
- Azure object replication (standard mode) has no SLA. Priority mode (15 min) cannot be set
  through azure-native 3.29 and its SLA is void above 1 Gbps of ingress, so it is not modelled.
- Scheduled pulls (Storage Transfer Service into GCS, DataSync into S3, from on premises too):
  RPO = repeat interval + one run's transfer time + checkpoint interval. The job lives in the DR
  site's stack, so the check runs there, on the replica bucket; the source bucket's stack has
  nothing to check.
- Storage Mover from on premises into Azure: the same sum, the interval being the Recurrence of
  the Logic App that starts the job definition with its managed identity (a job nothing starts
  has no RPO); and the uploads must have their private path (a Blob private endpoint of the
  replica account with its record in the privatelink zone), or they would not cross the
  ExpressRoute link the plan sized.
- Dual write is synchronous: RPO 0 at the writer, which infrastructure cannot show.

Where a policy finds the mechanism's settings is the stack that owns them: S3 replication and
Azure object replication in the source's stack, dual-region buckets in the DR stack (their
owner), scheduled jobs in the DR stack.
"""

from __future__ import annotations

import math
import re

from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from gpudr.contract import azcopy as azcopy_schedule
from gpudr.contract import azcopy_job, grants
from gpudr.contract.azure_onprem import (
    BLOB_GROUP,
    BLOB_PRIVATE_ZONE,
    START_JOB_ACTIONS,
    recurrence_s,
    started_jobs,
)
from gpudr.contract.site import mirrors_deletes
from gpudr.contract.stack import AZCOPY_IMAGE_KEY, IMAGE_BY_DIGEST
from gpudr.core import enums, sizing

from .common import (
    AZ_BLOB_CONTAINER,
    AZ_CONTAINER_APP_JOB,
    AZ_LOGIC_WORKFLOW,
    AZ_MOVER_ENDPOINT,
    AZ_MOVER_JOB,
    AZ_OBJECT_REPLICATION,
    AZ_PRIVATE_DNS_LINK,
    AZ_PRIVATE_DNS_ZONE,
    AZ_PRIVATE_DNS_ZONE_GROUP,
    AZ_PRIVATE_ENDPOINT,
    AZ_ROLE_ASSIGNMENT,
    AZ_ROLE_DEFINITION,
    AZ_STORAGE_ACCOUNT,
    DATASYNC_S3_LOCATION,
    DATASYNC_TASK,
    GCS_BUCKET,
    GCS_TRANSFER_JOB,
    PULLED,
    S3_BUCKET,
    S3_REPLICATION,
    DataClass,
    Stack,
    UnknownGuard,
    config_schema,
    data_class,
    default_quota_mbps,
    describe,
    duration_s,
    exempting,
    flow_of,
    get,
    items,
    kind,
    links_to,
    policy_config,
    rate_expression_s,
    same,
    seconds,
)
from .grants import read_grants, write_grants

SCHEMA = config_schema()
RTC_LAG_S = sizing.lag_floor_s("crr-rtc") or 0.0
TURBO_LAG_S = sizing.lag_floor_s("gcs-turbo") or 0.0
# Storage Transfer Service runs a job every 24 h when its schedule names no repeatInterval.
STS_DEFAULT_REPEAT_S = 86400.0
# Where each mechanism's settings are registered: (the copy's gpudr:dr-role, its type).
CHECKED_ON: dict[str, tuple[str | None, str]] = {
    "crr-rtc": ("data-source", S3_BUCKET),  # the replication configuration is the source's
    "crr": ("data-source", S3_BUCKET),
    "gcs-turbo": (None, GCS_BUCKET),  # one dual-region bucket, in the DR site's stack
    "gcs-dual-region": (None, GCS_BUCKET),
    "azure-or": ("data-source", AZ_STORAGE_ACCOUNT),  # policies owned by the primary's stack
    "sts": ("data-replica", GCS_BUCKET),  # the job lives at the DR site
    "datasync": ("data-replica", S3_BUCKET),
    # From on premises: the tasks read through agents there, asserting the WAN rate.
    "datasync-agent": ("data-replica", S3_BUCKET),
    "sts-agent": ("data-replica", GCS_BUCKET),
    # Into Azure: Storage Mover job definitions at the DR site, their agents on premises.
    "storage-mover": ("data-replica", AZ_STORAGE_ACCOUNT),
    # Into Azure from S3: AzCopy's Container Apps jobs at the DR site.
    "azcopy": ("data-replica", AZ_STORAGE_ACCOUNT),
}
# Google's predefined dual-regions (a custom dual-region lists its two data locations instead).
PREDEFINED_DUAL_REGIONS = ("ASIA1", "EUR4", "EUR5", "EUR7", "EUR8", "NAM4")


def _target(d: DataClass) -> str:
    rpo = "a DR copy (no RPO)" if d.rpo_s is None else f"its RPO of {seconds(d.rpo_s)}"
    return f"{rpo} ({d.data_class}, mechanism {d.mechanism})"


# --- S3 cross-region replication (source's stack) -----------------------------------------


def _whole_bucket(rule: object) -> bool:
    """The rule covers every object: no filter, or an empty prefix and no tag. A rule scoped to
    a prefix or a tag replicates what happens to match it, which says nothing of the class."""
    scope = get(rule, "filter")
    if scope is None:
        return not get(rule, "prefix")
    if get(scope, "tag") is not None or get(scope, "and") is not None:
        return False
    return not get(scope, "prefix")


def _rtc_rule(rule: object) -> bool:
    destination = get(rule, "destination")
    return (
        same(get(rule, "status"), "Enabled")
        and _whole_bucket(rule)
        and same(get(destination, "replicationTime", "status"), "Enabled")
        and same(get(destination, "metrics", "status"), "Enabled")
    )


def _partial_job(job: PolicyResource) -> bool:
    """A pull that copies part of the bucket (object conditions) or stops (an end date)."""
    conditions = get(job.props, "transferSpec", "objectConditions")
    return bool(conditions) or get(job.props, "schedule", "scheduleEndDate") is not None


def _check_s3_crr(
    stack: Stack, bucket: PolicyResource, d: DataClass, report: ReportViolation
) -> None:
    configs = stack.linked(bucket, S3_REPLICATION, "bucket", ("bucket", "id"))
    rules = [r for c in configs for r in items(c.props.get("rules"))] + _inline_rules(bucket)
    whole = [r for r in rules if same(get(r, "status"), "Enabled") and _whole_bucket(r)]
    if d.rpo_s is None and whole:
        return  # replicated; with no RPO there is no time to guarantee
    if not any(_rtc_rule(r) for r in rules):
        if not rules:
            found = "no BucketReplicationConfig replicates it"
        elif not whole:
            found = (
                "no enabled replication rule covers the whole bucket (a prefix or tag filter "
                "replicates only what happens to match it)"
            )
        else:
            found = (
                "its replication rules have no Replication Time Control (replication_time and "
                "metrics both Enabled), and without RTC S3 guarantees no replication time"
            )
        report(
            f"{describe(bucket)} cannot meet {_target(d)}: {found}. Declare "
            "aws.s3.BucketReplicationConfig for it with an Enabled rule whose destination has "
            'replication_time={status: "Enabled", time: {minutes: 15}} and metrics={status: '
            '"Enabled", event_threshold: {minutes: 15}}.',
            bucket.urn,
        )
        return
    # The checkpoint interval; none for a dataset, whose interval-s is its refresh period.
    base = flow_of(d).base_rpo_s
    guaranteed = base + RTC_LAG_S
    if not sizing.within(d.rpo_s, guaranteed):
        report(
            f"{describe(bucket)} cannot meet {_target(d)}: S3 RTC guarantees 15 min, so the "
            f"worst case is the {seconds(base)} checkpoint interval + 15 min = "
            f"{seconds(guaranteed)}. Shorten the checkpoint interval, relax the RPO to at least "
            f"{seconds(guaranteed)}, or dual-write this class (replication: dual-write).",
            bucket.urn,
        )


# --- GCS dual-region (owner: the DR stack) --------------------------------------------------


def _check_gcs_dual_region(bucket: PolicyResource, d: DataClass, report: ReportViolation) -> None:
    locations = items(get(bucket.props, "customPlacementConfig", "dataLocations"))
    location = bucket.props.get("location")
    dual = len(locations) == 2 or (
        isinstance(location, str) and location.upper() in PREDEFINED_DUAL_REGIONS
    )
    # With no RPO a dual-region is replicated enough: turbo only guarantees a time.
    turbo = same(bucket.props.get("rpo"), "ASYNC_TURBO") or (d.rpo_s is None and dual)
    if not dual or not turbo:
        problems = []
        if not dual:
            problems.append(
                f"it is not a dual-region (location {location!r}, "
                f"{len(locations)} data location(s)); turbo replication exists only there"
            )
        if not turbo:
            problems.append(
                f"rpo is {bucket.props.get('rpo')!r}: default replication is a target "
                "(99.9% within 1 h), not a guarantee"
            )
        report(
            f"{describe(bucket)} cannot meet {_target(d)}: {'; '.join(problems)}. Set "
            "custom_placement_config.data_locations to the two regions and "
            'rpo="ASYNC_TURBO" (15-minute target).',
            bucket.urn,
        )
        return
    base = flow_of(d).base_rpo_s  # as for S3 RTC above
    guaranteed = base + TURBO_LAG_S
    if not sizing.within(d.rpo_s, guaranteed):
        report(
            f"{describe(bucket)} cannot meet {_target(d)}: turbo replication targets 15 min, so "
            f"the worst case is the {seconds(base)} checkpoint interval + 15 min = "
            f"{seconds(guaranteed)}. Shorten the checkpoint interval, relax the RPO, or "
            "dual-write this class.",
            bucket.urn,
        )


# --- scheduled pulls (owner: the DR stack) --------------------------------------------------


def _pull(stack: Stack, d: DataClass, interval_s: float, wait_s: float = 0.0) -> sizing.Schedule:
    """One run of a pull every `interval_s` into this class's replica, as the planner sizes it
    (`sizing.pull_at`): what the run copies at worst, over the asserted rate quota less the
    steady load of the stack's other classes pulled by the same service, at most one agent's
    rate where a job runs on one agent (`gpudr:agent-mbps`), after `wait_s` in the queue."""
    quota = d.quota_mbps or default_quota_mbps(d.mechanism) or 0.0
    others = sum(
        o.steady_mbps
        for b in stack.data_buckets()
        if not isinstance(o := data_class(b), str)
        and o.mechanism == d.mechanism
        and o.role == d.role
        and o.data_class != d.data_class
    )
    return sizing.pull_at(
        flow_of(d),
        int(interval_s),
        capacity_gbps=quota / 1000,
        other_steady_gbps=others / 1000,
        headroom=1.0,
        rpo_s=d.rpo_s,
        rate_cap_gbps=None if d.agent_mbps is None else d.agent_mbps / 1000,
        wait_s=wait_s,
    )


def _queue_wait_s(stack: Stack, bucket: PolicyResource, d: DataClass) -> float:
    """How long a DataSync run from on premises may wait for the other classes' runs: an agent
    runs one task at a time and every task uses every agent, so at worst each other class's
    run (at its task's declared interval) goes first. A class whose schedule cannot be read
    adds nothing here: its own replica is refused for it."""
    if d.mechanism not in enums.ONE_TASK_PER_AGENT:
        return 0.0
    wait = 0.0
    for other in stack.data_buckets():
        o = data_class(other)
        if other.urn == bucket.urn or isinstance(o, str):
            continue
        if o.mechanism != d.mechanism or o.role != d.role or o.data_class == d.data_class:
            continue
        intervals = [i for _, i in _datasync_schedules(stack, other) if i is not None]
        if intervals:
            wait += _pull(stack, o, min(intervals)).transfer_s
    return wait


def _sts_schedules(
    stack: Stack, bucket: PolicyResource
) -> list[tuple[PolicyResource, float | None]]:
    """(job, repeat interval) of each enabled Transfer job writing into the bucket; the
    interval is None for a job with no schedule (it runs only when started by hand)."""
    out: list[tuple[PolicyResource, float | None]] = []
    for job in stack.of_type(GCS_TRANSFER_JOB):
        sink = links_to(
            job,
            "transferSpec",
            bucket,
            ("name", "id"),
            value_of=lambda j: get(j.props, "transferSpec", "gcsDataSink", "bucketName"),
        )
        source = get(job.props, "transferSpec", "gcsDataSource", "bucketName")
        if not sink or (source is not None and source == bucket.props.get("name")):
            continue  # the bucket is this job's source (a pull out of it), not its sink
        if same(job.props.get("status"), "DISABLED") or same(job.props.get("status"), "DELETED"):
            continue
        if _partial_job(job):
            continue  # copies part of the bucket, or stops: not this class's pull
        schedule = job.props.get("schedule")
        if schedule is None:
            out.append((job, None))
            continue
        repeat = get(schedule, "repeatInterval")
        out.append((job, STS_DEFAULT_REPEAT_S if repeat is None else duration_s(repeat)))
    return out


def _datasync_schedules(
    stack: Stack, bucket: PolicyResource
) -> list[tuple[PolicyResource, float | None]]:
    """(task, rate interval) of each enabled DataSync task whose destination is the bucket;
    None for a task with no schedule or a cron schedule."""
    arn = f"arn:aws:s3:::{bucket.props.get('bucket')}"
    locations = [
        loc
        for loc in stack.of_type(DATASYNC_S3_LOCATION)
        if links_to(loc, "s3BucketArn", bucket, ("arn",)) or loc.props.get("s3BucketArn") == arn
    ]
    out: list[tuple[PolicyResource, float | None]] = []
    for task in stack.of_type(DATASYNC_TASK):
        if not any(
            links_to(task, "destinationLocationArn", loc, ("arn", "id")) for loc in locations
        ):
            continue
        if same(get(task.props, "schedule", "status"), "DISABLED"):
            continue
        if items(task.props.get("includes")) or items(task.props.get("excludes")):
            continue  # a filtered task copies part of the bucket: not this class's pull
        out.append((task, rate_expression_s(get(task.props, "schedule", "scheduleExpression"))))
    return out


def _job_env(job: PolicyResource) -> tuple[dict[str, object], object]:
    """The first container's environment (name -> value) and command of a Container Apps job."""
    container = next(iter(items(get(job.props, "template", "containers"))), None)
    env = {
        str(get(e, "name")): get(e, "value")
        for e in items(get(container, "env"))
        if get(e, "name") is not None
    }
    return env, get(container, "command")


def _azcopy_destinations(stack: Stack, account: PolicyResource) -> set[str]:
    """The URLs of this account's containers, as an AzCopy job's destination names them."""
    name = str(account.props.get("accountName") or "")
    return {
        azcopy_job.blob_destination(name, str(c.props.get("containerName") or ""))
        for c in stack.linked(account, AZ_BLOB_CONTAINER, "accountName", ("accountName",))
    }


def _number(value: object) -> float | None:
    """A registered integer or float setting, or None (a string, a bool, missing)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _session_s(env: dict[str, object]) -> int | None:
    """The AWS session a run asks STS for (the job's GPUDR_SESSION_SECONDS, which the
    entrypoint passes as DurationSeconds), or None when it is not a whole number of seconds."""
    value = env.get(azcopy_job.ENV_SESSION_S)
    return int(value) if isinstance(value, str) and value.isdigit() else None


def _mirrors_deletes(d: DataClass) -> bool:
    """Whether the class's pull mirrors the source's deletes (the contract's rule)."""
    return mirrors_deletes(d.data_class)


def _azcopy_problems(job: PolicyResource, d: DataClass, env: dict[str, object]) -> list[str]:
    """Why a job writing this replica is not the class's pull, as gpudr declares it."""
    _, command = _job_env(job)
    config = job.props.get("configuration")
    problems = []
    if not same(get(config, "triggerType"), "Schedule"):
        problems.append(f"its trigger is {get(config, 'triggerType')!r}, not a Schedule")
    identity = job.props.get("identity")
    if "userassigned" not in str(get(identity, "type") or "").lower().replace(" ", "") or not (
        items(get(identity, "userAssignedIdentities"))
    ):
        problems.append("it runs as no user-assigned identity (it could sign in nowhere)")
    elif not env.get(azcopy_job.ENV_CLIENT_ID):
        problems.append(f"its environment names no identity ({azcopy_job.ENV_CLIENT_ID})")
    if d.source_bucket is None:
        problems.append("the replica does not name its source (tag gpudr:source-bucket)")
    elif env.get(azcopy_job.ENV_SOURCE) != d.source_bucket:
        problems.append(
            f"it reads {env.get(azcopy_job.ENV_SOURCE)!r}, not the class's source bucket "
            f"{d.source_bucket!r}"
        )
    # One container, no init container: anything else in the template runs as the same
    # identity, with its AWS session and its write grant on the replica.
    containers = items(get(job.props, "template", "containers"))
    init = items(get(job.props, "template", "initContainers"))
    if len(containers) != 1 or init:
        problems.append(
            f"its template runs {len(containers)} container(s) and {len(init)} init "
            "container(s), not gpudr's one AzCopy container (remove the others: they would "
            "run as the job's identity)"
        )
    image = get(next(iter(containers), None), "image")
    if not isinstance(image, str) or not IMAGE_BY_DIGEST.fullmatch(image):
        problems.append(
            f"its image {image!r} is not pinned by digest (a tag can be moved to another "
            f"image): set {AZCOPY_IMAGE_KEY} to <registry>/<repository>@sha256:<64 hex>"
        )
    if list(items(command)) != list(azcopy_job.COMMAND):
        problems.append(f"it runs {command!r}, not gpudr's AzCopy entrypoint")
    session = env.get(azcopy_job.ENV_SESSION_S)
    if _session_s(env) != enums.AWS_MAX_SESSION_S:
        problems.append(
            f"its {azcopy_job.ENV_SESSION_S} is {session!r}, not the plan's "
            f"{enums.AWS_MAX_SESSION_S} (a run must be able to last the "
            f"{seconds(enums.AWS_MAX_SESSION_S)} session the plan sized; set it to "
            f"{enums.AWS_MAX_SESSION_S})"
        )
    mirror = "true" if _mirrors_deletes(d) else "false"
    if env.get(azcopy_job.ENV_MIRROR_DELETES) != mirror:
        why = (
            "checkpoints mirror the source's deletes, or the replica keeps every checkpoint"
            if _mirrors_deletes(d)
            else f"a {d.data_class} replica must not lose what the source deletes"
        )
        problems.append(
            f"its {azcopy_job.ENV_MIRROR_DELETES} is "
            f"{env.get(azcopy_job.ENV_MIRROR_DELETES)!r}, not {mirror!r} ({why}; set it to "
            f"{mirror!r})"
        )
    trigger = get(config, "scheduleTriggerConfig")
    for field in ("parallelism", "replicaCompletionCount"):
        value = get(trigger, field)
        if value is not None and _number(value) != 1:
            problems.append(
                f"its {field} is {value!r}, not 1: two replicas would copy the same objects"
            )
    retries = _number(get(config, "replicaRetryLimit"))
    if retries is None or not retries.is_integer() or retries < 0:
        problems.append(
            f"its replicaRetryLimit is {get(config, 'replicaRetryLimit')!r}, not a whole "
            "number of retries (set it: "
            "ARM documents no default, so how long a failing run lasts is unknown)"
        )
    return problems


def _overlap(job: PolicyResource, interval_s: float, limit_s: float) -> str | None:
    """Why a run and its retries may still be going when the next run starts, or outlast the
    run limit (the next run, the AWS session): each retry is a new replica given the whole
    replicaTimeout, and a cron schedule starts the next execution whether or not this one
    ended. None when both fit, or when the timeout is not a number (refused with the run)."""
    config = job.props.get("configuration")
    timeout = _number(get(config, "replicaTimeout"))
    retries = _number(get(config, "replicaRetryLimit"))
    if timeout is None or retries is None:
        return None
    worst = timeout * (1 + retries)
    if worst <= interval_s and timeout <= limit_s:
        return None
    return (
        f"its replicaTimeout {timeout:g} s x (1 + replicaRetryLimit {retries:g}) = "
        f"{seconds(worst)} against {seconds(interval_s)} between runs and a run limit of "
        f"{seconds(limit_s)}: a run and its retries could still be copying when the next run "
        "starts. Keep replicaTimeout x (1 + replicaRetryLimit) within the interval and "
        "replicaTimeout within the run limit (replicaRetryLimit 0: the next run copies what "
        "a failed one left)"
    )


def _azcopy_schedules(
    stack: Stack, account: PolicyResource, d: DataClass, report: ReportViolation
) -> tuple[list[tuple[PolicyResource, float | None]], bool]:
    """(job, cron interval) of each AzCopy job writing a container of this account that is the
    class's pull as gpudr declares it; every other job writing here is refused, and so is a
    job whose run outlasts what it is allowed (its replica timeout, its AWS session, the next
    run) or whose retries may overlap the next run. The interval is None for a schedule that
    never fires or that gpudr cannot read; and whether any job was refused."""
    destinations = _azcopy_destinations(stack, account)
    out: list[tuple[PolicyResource, float | None]] = []
    refused = False
    for job in stack.of_type(AZ_CONTAINER_APP_JOB):
        env, _ = _job_env(job)
        if env.get(azcopy_job.ENV_DESTINATION) not in destinations:
            continue
        problems = _azcopy_problems(job, d, env)
        if problems:
            report(
                f"{describe(job)} writes into {describe(account)} but is not its "
                f"{d.data_class} pull: {'; '.join(problems)}. Regenerate the stack "
                "(components/azure/azcopy.py declares the job).",
                job.urn,
            )
            refused = True
            continue
        config = job.props.get("configuration")
        cron = get(config, "scheduleTriggerConfig", "cronExpression")
        interval = azcopy_schedule.cron_interval_s(str(cron)) if cron is not None else None
        if interval is not None:
            # The shorter of the session the job asks for and the longest one AWS grants.
            session = min(_session_s(env) or 0, sizing.max_run_s(d.mechanism) or math.inf)
            limit = sizing.run_limit_s(session, interval)
            run = _pull(stack, d, interval).transfer_s
            timeout = get(config, "replicaTimeout")
            if run > limit or _number(timeout) is None or timeout < run:
                # On the replica, as every pull's RPO verdict is: the class is what is not met.
                report(
                    f"{describe(account)} cannot meet {_target(d)}: its AzCopy job "
                    f"{job.name} cannot copy one run in time: a "
                    f"run takes {seconds(run)} at the asserted rate, its replica timeout is "
                    f"{timeout!r} s, and a run must end within {seconds(limit)} (the next run "
                    f"or the {seconds(session)} AWS session its presigned S3 "
                    "URLs are signed with). Raise quotas.azcopy_gbps to a measured rate, "
                    "shorten the schedule or set replica_timeout to the run (gpudr generate).",
                    account.urn,
                )
                refused = True
                continue
            # After the run's verdict, which the planner gives too: the class is not met
            # whatever the retries; a run that fits must still not overlap the next one.
            overlap = _overlap(job, interval, limit)
            if overlap is not None:
                report(
                    f"{describe(job)} writes into {describe(account)} but is not its "
                    f"{d.data_class} pull: {overlap}. Regenerate the stack "
                    "(components/azure/azcopy.py declares the job).",
                    job.urn,
                )
                refused = True
                continue
        out.append((job, interval))
    return out, refused


def _check_pull(
    stack: Stack, bucket: PolicyResource, d: DataClass, report: ReportViolation
) -> None:
    if d.mechanism in ("sts", "sts-agent"):
        jobs, kind = _sts_schedules(stack, bucket), "Storage Transfer Service job"
        fix = (
            "Declare gcp.storage.TransferJob with transfer_spec.gcs_data_sink.bucket_name = this "
            'bucket and schedule.repeat_interval (e.g. "3600s")'
        )
    elif d.mechanism == "storage-mover":
        jobs, kind = _mover_schedules(stack, bucket, d), "Storage Mover schedule (Logic App)"
        fix = (
            "Declare azure-native logic.Workflow (state Enabled) with a Recurrence trigger and an "
            "HTTP action POSTing the job definition's startJob with its managed identity, as "
            "gpudr's components/azure/onprem.py does (regenerate the stack)"
        )
    elif d.mechanism == "azcopy":
        jobs, refused = _azcopy_schedules(stack, bucket, d, report)
        if refused and not jobs:
            return  # each job writing here was refused by name, with why
        kind = "AzCopy job"
        fix = (
            "Set gpudr:azcopy_identity_id, _client_id, _principal_id, _tenant_id (from the AWS "
            "primary's transfer_credentials output) and gpudr:azcopy_image (by digest) on this "
            "stack, which declares no job until then (the runbook's checklist), or declare an "
            "azure-native app.Job with a Schedule trigger running gpudr's AzCopy entrypoint "
            "into a container of this account"
        )
    elif d.mechanism == "datasync-agent":
        # gpudr's DR stack declares these tasks only once the agents on premises are activated
        # (fail closed): what is missing is the activation, not a resource to write by hand.
        jobs, kind = _datasync_schedules(stack, bucket), "DataSync task"
        fix = (
            "Activate the on-premises DataSync agents against this stack's DataSync endpoint "
            "and set each one's ARN in gpudr:datasync_agent_arns (pulumi config set --path "
            "'gpudr:datasync_agent_arns.<agent>' <arn>; the runbook's checklist), then pulumi up "
            'declares the aws.datasync.Task on schedule "rate(N hours)"'
        )
    else:
        jobs, kind = _datasync_schedules(stack, bucket), "DataSync task"
        fix = (
            "Declare aws.datasync.Task with destination_location_arn = an aws.datasync.S3Location "
            'of this bucket and schedule.schedule_expression "rate(N hours)"'
        )
    if not jobs:
        report(
            f"{describe(bucket)} cannot meet {_target(d)}: no enabled {kind} in this stack "
            f"pulls the whole source into it (a filtered job, or one with an end date, does not "
            f"count). {fix} so that interval + one run + checkpoint interval stays "
            "within the RPO.",
            bucket.urn,
        )
        return
    worst: list[tuple[float, PolicyResource, float, float]] = []
    wait = _queue_wait_s(stack, bucket, d)
    for job, interval in jobs:
        if interval is None:
            continue
        pull = _pull(stack, d, interval, wait)
        worst.append((pull.estimated_rpo_s, job, interval, pull.transfer_s))
    if not worst:
        report(
            f"{describe(bucket)} cannot meet {_target(d)}: its {kind} {jobs[0][0].name} has no "
            f"repeating schedule gpudr can read. {fix}.",
            bucket.urn,
        )
        return
    total, job, interval, run = min(worst, key=lambda w: w[0])
    if not sizing.within(d.rpo_s, total):
        queued = f" after up to {seconds(wait)} behind the other classes' runs" if wait else ""
        report(
            f"{describe(bucket)} cannot meet {_target(d)}: its {kind} {job.name} runs every "
            f"{seconds(interval)}, a run takes {seconds(run)} at the asserted rate{queued}, plus "
            f"the {seconds(flow_of(d).base_rpo_s)} checkpoint interval: {seconds(total)}. "
            "Shorten the schedule (gpudr generate sizes it from the RPO), raise the asserted rate "
            "(quotas in the plan), or relax the RPO.",
            bucket.urn,
        )


# --- the policy -----------------------------------------------------------------------------


WRITE_GRANTS = (
    "an IAM policy allowing s3:PutObject on its objects, attached to the writer's role, a bucket "
    "IAM member with roles/storage.objectCreator, or a Storage Blob Data Contributor role "
    "assignment on the account"
)
READ_GRANTS = (
    "an IAM policy allowing s3:GetObject on its objects on the reader's role, a bucket IAM "
    "member with roles/storage.objectViewer, or Storage Blob Data Reader on the account"
)


def _unbacked(stack: Stack, bucket: PolicyResource, d: DataClass) -> str | None:
    """What the stack lacks to back the copy's claim, when the claim has no settings of its
    own to inspect: a dual write (RPO 0 at the writer, which no setting can show, so the
    writer's grant on this copy is what the stack can show) or the source of a pull (the job
    runs at the DR site, so the reader's grant is). Also a copy replicated by nothing."""
    if grants.needs_write_grant(d.mechanism) and not write_grants(stack, bucket):
        return (
            f"claims {_target(d)}, but this stack grants no identity write access to it, so "
            f"nothing shows a second copy is written: declare the writer's grant on this copy "
            f"(gpudr's components do: {WRITE_GRANTS}), or replicate this class (replication: "
            "in the plan)"
        )
    if d.mechanism not in CHECKED_ON and not grants.needs_write_grant(d.mechanism):
        what = "nothing" if d.mechanism == "none" else f"unknown mechanism {d.mechanism!r}"
        return (
            f"has {_target(d)} but is replicated by {what}: choose a replication mechanism "
            "for this data class in the plan (replication:) and regenerate the stack"
        )
    if grants.needs_read_grant(d.mechanism, d.role) and not read_grants(stack, bucket):
        return (
            f"claims {_target(d)}, but this stack lets no identity read it, so no scheduled "
            f"pull can copy it: declare the DR site's reader grant on this copy (gpudr's "
            f"components do: {READ_GRANTS}), or replicate this class another way"
        )
    return None


def _check_azure_or(
    stack: Stack, bucket: PolicyResource, d: DataClass, report: ReportViolation
) -> None:
    if d.rpo_s is not None:
        report(
            f"{describe(bucket)} cannot meet {_target(d)}: Azure object replication "
            "(standard mode) has no replication-time SLA, and priority mode (15 min) cannot "
            "be set through azure-native and is void above 1 Gbps of ingress. Dual-write "
            "this class (replication: dual-write), or relax its RPO to none.",
            bucket.urn,
        )
    elif not any(
        any(not get(rule, "filters") for rule in items(policy.props.get("rules")))
        for policy in stack.linked(bucket, AZ_OBJECT_REPLICATION, "accountName", ("accountName",))
    ):
        report(
            f"{describe(bucket)} claims {_target(d)}, but no ObjectReplicationPolicy of this "
            "stack replicates it whole (a rule with filters copies only what matches them): "
            "declare the policy pair (gpudr's "
            "components/azure/replication.py does) or regenerate the stack.",
            bucket.urn,
        )


def _storage_mover_jobs(
    stack: Stack, account: PolicyResource, data_class: str
) -> list[PolicyResource]:
    """The job definitions that write the whole of a container of this account: through a
    Blob container target endpoint of the account, from the root of the container, with an
    agent, reading the class's directory (`sourceSubpath`, the class's name: gpudr's layout)
    of an NFS mount endpoint of the stack."""
    name = account.props.get("accountName")
    sources = {
        get(e.props, "endpointName")
        for e in stack.of_type(AZ_MOVER_ENDPOINT)
        if same(get(e.props, "properties", "endpointType"), "NfsMount")
    }
    targets = {
        get(e.props, "endpointName")
        for e in stack.of_type(AZ_MOVER_ENDPOINT)
        if same(get(e.props, "properties", "endpointType"), "AzureStorageBlobContainer")
        and str(get(e.props, "properties", "storageAccountResourceId") or "").rsplit("/", 1)[-1]
        == name
    }
    return [
        j
        for j in stack.of_type(AZ_MOVER_JOB)
        if get(j.props, "targetName") in targets
        and get(j.props, "agentName")
        and not get(j.props, "targetSubpath")
        and get(j.props, "sourceName") in sources
        and get(j.props, "sourceSubpath") == data_class
    ]


_START_JOB = re.compile(
    r"/resourceGroups/([^/]+)/providers/Microsoft\.StorageMover/storageMovers/([^/]+)"
    r"/projects/([^/]+)/jobDefinitions/([^/?]+)/startJob\?",
    re.IGNORECASE,
)


def _job_key(job: PolicyResource) -> tuple[str, ...]:
    """A job definition as an ARM path names it (names are case-insensitive there)."""
    keys = ("resourceGroupName", "storageMoverName", "projectName", "jobDefinitionName")
    return tuple(str(job.props.get(k) or "").lower() for k in keys)


def _mover_schedules(
    stack: Stack, account: PolicyResource, d: DataClass
) -> list[tuple[PolicyResource, float | None]]:
    """(workflow, recurrence interval) of each enabled Logic App that starts, with its managed
    identity allowed to (`_may_start`), a job definition writing this class into a container
    of this account; None for one whose trigger gpudr cannot read as a plain recurrence."""
    jobs = _storage_mover_jobs(stack, account, d.data_class)
    out: list[tuple[PolicyResource, float | None]] = []
    for flow in stack.of_type(AZ_LOGIC_WORKFLOW):
        state = flow.props.get("state")
        if state is not None and not same(state, "Enabled"):
            continue  # a disabled (or suspended) workflow starts nothing
        definition = flow.props.get("definition")
        targets = {
            tuple(g.lower() for g in m.groups())
            for uri in started_jobs(definition)
            if (m := _START_JOB.search(uri))
        }
        started = [j for j in jobs if _job_key(j) in targets]
        if started and any(_may_start(stack, flow, j) for j in started):
            out.append((flow, recurrence_s(definition)))
    return out


def _may_start(stack: Stack, flow: PolicyResource, job: PolicyResource) -> bool:
    """Whether a role assignment lets the workflow's identity start the job: on the job (its
    id), to the workflow's principal, of a role definition of the stack whose actions include
    startJob. Without it every start is refused (403) and the job never runs."""
    roles = [
        r
        for r in stack.of_type(AZ_ROLE_DEFINITION)
        if any(
            START_JOB_ACTIONS[-1] in items(get(p, "actions"))
            for p in items(r.props.get("permissions"))
        )
    ]
    return any(
        links_to(a, "scope", job, ("id",))
        and links_to(a, "principalId", flow, ())
        and any(links_to(a, "roleDefinitionId", r, ("id",)) for r in roles)
        for a in stack.of_type(AZ_ROLE_ASSIGNMENT)
    )


def _names_account(endpoint: PolicyResource, account: PolicyResource) -> bool:
    """An endpoint's connection whose value is known names this account (its id ends in the
    account's name): the property dependency alone would pass an Output of this account
    edited into another account's id."""
    name = str(account.props.get("accountName") or "").lower()
    for c in items(endpoint.props.get("privateLinkServiceConnections")):
        value = get(c, "privateLinkServiceId")
        if isinstance(value, str) and value and value.rsplit("/", 1)[-1].lower() != name:
            return False
    return True


def _private_path(stack: Stack, account: PolicyResource) -> str | None:
    """Why the agents' uploads to this account would not take the private path the WAN sizing
    assumes (ExpressRoute private peering reaches private addresses only), or None: a Blob
    private endpoint of the account, its A record kept in the privatelink zone by a zone
    group, and that zone linked to a virtual network."""
    endpoints = [
        e
        for e in stack.of_type(AZ_PRIVATE_ENDPOINT)
        if _names_account(e, account)
        and links_to(
            e,
            "privateLinkServiceConnections",
            account,
            ("id",),
            value_of=lambda r: next(
                (
                    get(c, "privateLinkServiceId")
                    for c in items(r.props.get("privateLinkServiceConnections"))
                ),
                None,
            ),
        )
        and any(
            BLOB_GROUP in items(get(c, "groupIds"))
            for c in items(e.props.get("privateLinkServiceConnections"))
        )
    ]
    if not endpoints:
        return "no Blob private endpoint of this account is declared"
    zones = [
        z
        for z in stack.of_type(AZ_PRIVATE_DNS_ZONE)
        if same(z.props.get("privateZoneName"), BLOB_PRIVATE_ZONE)
    ]
    linked = [
        z
        for z in zones
        if any(
            links_to(link, "privateZoneName", z, ("privateZoneName", "name"))
            for link in stack.of_type(AZ_PRIVATE_DNS_LINK)
        )
    ]
    if not linked:
        return f"no {BLOB_PRIVATE_ZONE} zone linked to a virtual network is declared"
    kept = any(
        links_to(group, "privateEndpointName", e, ("privateEndpointName", "name"))
        and any(links_to(group, "privateDnsZoneConfigs", z, ("id",)) for z in linked)
        for group in stack.of_type(AZ_PRIVATE_DNS_ZONE_GROUP)
        for e in endpoints
    )
    if not kept:
        return f"its private endpoint has no zone group keeping its record in {BLOB_PRIVATE_ZONE}"
    return None


def _check_storage_mover(
    stack: Stack, bucket: PolicyResource, d: DataClass, report: ReportViolation
) -> None:
    """A job definition of this stack writes the account with an agent assigned, the uploads
    have their private path over the link the plan sized, and a Logic App starts the job often
    enough for the RPO (the pulls' common check)."""
    if not _storage_mover_jobs(stack, bucket, d.data_class):
        report(
            f"{describe(bucket)} cannot meet {_target(d)}: no Storage Mover job definition of "
            "this stack, with an agent assigned, writes a container of it from the source. "
            "Register the agents on premises and set gpudr:storage_mover_agents (the stack "
            "declares no job until then), or declare storagemover.JobDefinition with "
            "target_name = a Blob container endpoint of this account.",
            bucket.urn,
        )
        return
    if d.agent_mbps is None:
        report(
            f"{describe(bucket)} cannot meet {_target(d)}: it does not state one agent's rate "
            "(tag gpudr:agent-mbps), which bounds each Storage Mover run (a job runs on one "
            "agent); regenerate the stack with `gpudr generate`.",
            bucket.urn,
        )
        return
    why = _private_path(stack, bucket)
    if why is not None:
        report(
            f"{describe(bucket)} cannot meet {_target(d)}: {why}, so the Storage Mover agents "
            "would upload over the internet, not the ExpressRoute link the plan sized. Declare "
            "the private path (gpudr's components/azure/private_blob.py; regenerate the stack).",
            bucket.urn,
        )
        return
    _check_pull(stack, bucket, d, report)


def _check(stack: Stack, bucket: PolicyResource, report: ReportViolation) -> None:
    d = data_class(bucket)
    if isinstance(d, str):
        report(d, bucket.urn)
        return
    # No RPO (`none`) skips no check: the mechanism's settings must exist all the same, only
    # the time comparisons pass (`sizing.within` of no target). Else `rpo-s=none` would be a
    # switch that turns replication checking off.
    unbacked = _unbacked(stack, bucket, d)
    if unbacked is not None:
        report(f"{describe(bucket)} {unbacked}.", bucket.urn)
        return
    if grants.needs_write_grant(d.mechanism):
        return  # backed by the writer's grant, above: no replication settings to inspect
    role, resource_type = CHECKED_ON[d.mechanism]
    if role not in (None, d.role) or kind(bucket) != resource_type:
        # The other copy of the class, or a stack that does not hold the mechanism: e.g. the
        # source of a scheduled pull (the job lives in the DR site's stack, checked there).
        return
    if d.mechanism in ("crr-rtc", "crr"):
        _check_s3_crr(stack, bucket, d, report)
    elif d.mechanism in ("gcs-turbo", "gcs-dual-region"):
        _check_gcs_dual_region(bucket, d, report)
    elif d.mechanism == "azure-or":
        _check_azure_or(stack, bucket, d, report)
    elif d.mechanism == "storage-mover":
        _check_storage_mover(stack, bucket, d, report)
    elif d.mechanism in PULLED:
        _check_pull(stack, bucket, d, report)


def _inline_rules(bucket: PolicyResource) -> list[object]:
    """Replication rules declared on the bucket itself (the deprecated inline
    `replication_configuration` of `Bucket` / `BucketV2`)."""
    return [
        r
        for c in items(bucket.props.get("replicationConfiguration"))
        for r in items(get(c, "rules"))
    ]


def _slow_rules(rules: list[object]) -> list[str]:
    """The enabled rules without Replication Time Control, by id (or position)."""
    return [
        str(get(rule, "id") or f"#{i}")
        for i, rule in enumerate(rules)
        if same(get(rule, "status"), "Enabled") and not _rtc_rule(rule)
    ]


def _check_untagged_replication(stack: Stack, report: ReportViolation) -> None:
    """S3 replication out of a bucket gpudr does not size: with no RPO to compare, only a
    time guarantee (RTC) makes it a DR copy anyone can count on."""
    sized = {b.urn for b in stack.data_buckets()}
    for config in stack.of_type(S3_REPLICATION):
        sources = [
            b for b in stack.of_type(S3_BUCKET) if links_to(config, "bucket", b, ("bucket", "id"))
        ]
        if any(b.urn in sized for b in sources):
            continue  # judged against its RPO above
        slow = _slow_rules(items(config.props.get("rules")))
        if slow:
            report(
                f"{describe(config)} replicates with no time guarantee (rules "
                f"{', '.join(map(str, slow))} lack Replication Time Control): no RPO can be "
                'shown for that copy. Set destination.replication_time={status: "Enabled", '
                'time: {minutes: 15}} and metrics={status: "Enabled", event_threshold: '
                "{minutes: 15}} on each rule, or exempt it in the pack config with a reason.",
                config.urn,
            )
    for bucket in stack.of_type(S3_BUCKET):
        slow = _slow_rules(_inline_rules(bucket)) if bucket.urn not in sized else []
        if slow:
            report(
                f"{describe(bucket)} replicates (inline replication_configuration) with no "
                f"time guarantee (rules {', '.join(slow)} lack Replication Time Control): no "
                "RPO can be shown for that copy. Declare aws.s3.BucketReplicationConfig with "
                "replication_time and metrics Enabled, or exempt it in the pack config.",
                bucket.urn,
            )


def _validate(args: StackValidationArgs, report: ReportViolation) -> None:
    report = exempting(report, policy_config(SCHEMA, args))
    stack = Stack(args.resources)
    guard = UnknownGuard()
    for bucket in stack.data_buckets():
        with guard.check():
            _check(stack, bucket, report)
    with guard.check():
        _check_untagged_replication(stack, report)
    guard.raise_first()


replication_meets_rpo = StackValidationPolicy(
    name="replication-meets-rpo",
    description=(
        "Each data class with an RPO is replicated by a mechanism whose guaranteed worst case "
        "fits it: S3 CRR with Replication Time Control, GCS dual-region with turbo replication, "
        "a scheduled pull whose interval plus run time fits, or a dual write. Replication with "
        "no time guarantee (S3 CRR without RTC, default dual-region, Azure object replication) "
        "does not meet an RPO."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    config_schema=SCHEMA,
    remediation_steps=(
        "Let `gpudr plan` pick the mechanism (replication: auto) and `gpudr generate` size it, "
        "then deploy what components/ declares. By hand: S3 replication rules need "
        "replication_time and metrics Enabled (15 min); GCS buckets need a dual-region with "
        'rpo="ASYNC_TURBO"; scheduled pulls need a repeat interval such that interval + run '
        "time + checkpoint interval <= RPO; Azure needs dual write for a finite RPO."
    ),
    tags=["replication", "rpo"],
)
