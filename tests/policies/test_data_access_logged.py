"""data-access-logged: S3 server access logging, Cloud Storage Data Access audit logs, Azure blob
diagnostic settings; one property at a time from what gpudr's components register, untagged
buckets and other SDK classes too."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pulumi_policy import PolicyProviderResource, StackValidationArgs
from pulumi_policy.proxy import UnknownValueError, unknown_checking_proxy

from policies.data_access_logged import data_access_logged
from tests.policies.builders import (
    LOG_SINK,
    PROJECT,
    account_id,
    azure,
    blob_diagnostics,
    deny_deletes_document,
    gcp_log_routing,
    gcs,
    gcs_audit,
    s3,
    s3_log_sink,
    s3_logging,
)
from tests.policies.harness import (
    UNKNOWN,
    Res,
    Violations,
    check,
    collector,
    policy_resources,
    records,
    run_stack,
)

Mutation = Callable[[dict[str, Res]], Any]
DATA_BUCKET = "llm-use1-checkpoints-abc123"


def aws_stack() -> dict[str, Res]:
    """A data bucket logging into the site's log sink (the sink itself is excused), whose
    SSE-S3 encryption and policy let S3 deliver."""
    data, sink = s3(), s3_log_sink()
    return {
        "bucket": data["bucket"],
        "sink": sink["bucket"],
        "sink-encryption": sink["encryption"],
        "sink-policy": sink["policy"],
        "logging": s3_logging(data["bucket"], sink["bucket"]),
    }


def refused(found: Violations) -> dict[str, str]:
    """URN -> message of each violation (one per resource)."""
    out = {urn or "": message for message, urn in found}
    assert len(out) == len(found), found
    return out


def inline(r: dict[str, Res], prop: str, block: Any) -> Res:
    """The BucketLogging replaced by the bucket's deprecated inline block; the bucket."""
    r.pop("logging")
    r["bucket"].inputs[prop] = block
    return r["bucket"]


def retype(resource: Res, token: str) -> Res:
    """The resource declared through another SDK class (its URN changes with it)."""
    resource.type = token
    return resource


INLINE = {"targetBucket": LOG_SINK, "targetPrefix": f"s3/{DATA_BUCKET}/"}
KMS_SINK = {
    "applyServerSideEncryptionByDefault": {"sseAlgorithm": "aws:kms", "kmsMasterKeyId": "k"}
}


def sink_statements(r: dict[str, Res]) -> list[dict[str, Any]]:
    return json.loads(r["sink-policy"].inputs["policy"])["Statement"]  # type: ignore[no-any-return]


def edit_grant(**changes: Any) -> Mutation:
    """The sink policy's S3ServerAccessLogsDelivery statement changed."""

    def mutate(r: dict[str, Res]) -> None:
        found = sink_statements(r)
        grant = next(st for st in found if st.get("Sid") == "S3ServerAccessLogsDelivery")
        grant.update(changes)
        r["sink-policy"].inputs["policy"] = json.dumps({"Statement": found})

    return mutate


def add_statement(statement: dict[str, Any]) -> Mutation:
    def mutate(r: dict[str, Res]) -> None:
        found = [*sink_statements(r), statement]
        r["sink-policy"].inputs["policy"] = json.dumps({"Statement": found})

    return mutate


def sink_sse(algorithm: str) -> Mutation:
    def mutate(r: dict[str, Res]) -> None:
        rule = {"applyServerSideEncryptionByDefault": {"sseAlgorithm": algorithm}}
        r["sink-encryption"].inputs["rules"] = [rule]

    return mutate


def inline_kms(r: dict[str, Res], v2: bool) -> None:
    """The sink's default encryption declared inline on the bucket, SSE-KMS."""
    r.pop("sink-encryption")
    if v2:
        retype(r["sink"], "aws:s3/bucketV2:BucketV2")
        default = {"sseAlgorithm": "aws:kms:dsse"}
        r["sink"].inputs["serverSideEncryptionConfigurations"] = [
            {"rules": [{"applyServerSideEncryptionByDefaults": [default]}]}
        ]
    else:
        r["sink"].inputs["serverSideEncryptionConfiguration"] = {"rule": KMS_SINK}


def target_named(name: str, linked: bool) -> Mutation:
    """The logging's target spelt out as `name` (still computed from the sink if linked)."""

    def mutate(r: dict[str, Res]) -> None:
        r["logging"].inputs["targetBucket"] = name
        if not linked:
            r["logging"].property_dependencies.pop("targetBucket")

    return mutate


def into_itself(r: dict[str, Res]) -> None:
    r["logging"].inputs["targetBucket"] = DATA_BUCKET
    r["logging"].property_dependencies["targetBucket"] = [r["bucket"].urn]


def component_child(r: dict[str, Res]) -> None:
    """The sink made a child of a gpudr DataBucket component (its tags say nothing)."""
    component = Res("gpudr:storage:DataBucket", "use1-weights", {})
    r["component"] = component
    r["sink"].parent = component.urn


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(lambda r: None, {}, id="logged-into-the-sink"),
        pytest.param(lambda r: r["logging"].property_dependencies.clear(), {}, id="linked-by-name"),
        pytest.param(
            lambda r: retype(r["logging"], "aws:s3/bucketLoggingV2:BucketLoggingV2"),
            {},
            id="bucket-logging-v2",
        ),
        pytest.param(lambda r: inline(r, "logging", INLINE), {}, id="inline-logging"),
        pytest.param(
            lambda r: (
                inline(r, "loggings", [INLINE]),
                retype(r["bucket"], "aws:s3/bucketV2:BucketV2"),
            ),
            {},
            id="bucketv2-inline-loggings",
        ),
        pytest.param(
            lambda r: r["logging"].inputs.update(targetBucket=UNKNOWN),
            {},
            id="target-unknown-from-this-stack",
        ),
        pytest.param(
            lambda r: r.pop("logging"),
            {"bucket": "no BucketLogging refers to it", "sink": "no BucketLogging"},
            id="none",
        ),
        pytest.param(
            lambda r: r["logging"].property_dependencies.update(bucket=[r["sink"].urn]),
            {"bucket": "no BucketLogging refers to it", "sink": "its access logs go to itself"},
            id="logging-of-another-bucket",
        ),
        # Fix 1: a target S3 delivers to, declared in the stack, other than the bucket.
        pytest.param(
            edit_grant(Resource=f"arn:aws:s3:::{LOG_SINK}/*"), {}, id="grant-on-the-whole-bucket"
        ),
        pytest.param(
            edit_grant(Resource=f"arn:aws:s3:::{LOG_SINK}/s3/{DATA_BUCKET}/*"),
            {},
            id="grant-on-the-bucket-prefix-only",
        ),
        pytest.param(edit_grant(Action=["s3:Put*"]), {}, id="grant-action-wildcard"),
        pytest.param(
            edit_grant(Principal={"Service": ["logging.s3.amazonaws.com", "x.amazonaws.com"]}),
            {},
            id="grant-to-a-list-of-services",
        ),
        pytest.param(lambda r: r.pop("sink-encryption"), {}, id="target-default-sse-s3"),
        pytest.param(
            sink_sse("aws:kms"),
            {"bucket": "encrypted by default with aws:kms"},
            id="target-sse-kms",
        ),
        pytest.param(
            sink_sse("aws:kms:dsse"),
            {"bucket": "with aws:kms:dsse, and S3 delivers"},
            id="target-dsse-kms",
        ),
        pytest.param(
            lambda r: inline_kms(r, v2=False),
            {"bucket": "encrypted by default"},
            id="target-inline-sse-kms",
        ),
        pytest.param(
            lambda r: inline_kms(r, v2=True),
            {"bucket": "aws:kms:dsse"},
            id="target-bucketv2-inline-dsse-kms",
        ),
        pytest.param(
            lambda r: r["sink-policy"].inputs.update(policy=deny_deletes_document(LOG_SINK)),
            {
                "bucket": "does not Allow logging.s3.amazonaws.com s3:PutObject on "
                f"arn:aws:s3:::{LOG_SINK}/s3/{DATA_BUCKET}/*"
            },
            id="target-policy-without-grant",
        ),
        pytest.param(
            lambda r: r.pop("sink-policy"), {"bucket": "does not Allow"}, id="target-without-policy"
        ),
        pytest.param(
            edit_grant(Resource=f"arn:aws:s3:::{LOG_SINK}/vpc-flow-logs/*"),
            {"bucket": "does not Allow"},
            id="grant-on-another-prefix",
        ),
        pytest.param(
            edit_grant(Resource=f"arn:aws:s3:::{LOG_SINK}"),
            {"bucket": "does not Allow"},
            id="grant-on-the-bucket-not-objects",
        ),
        pytest.param(
            edit_grant(Principal={"Service": "delivery.logs.amazonaws.com"}),
            {"bucket": "does not Allow"},
            id="grant-to-another-service",
        ),
        pytest.param(
            edit_grant(Action="s3:GetObject"),
            {"bucket": "does not Allow"},
            id="grant-of-another-action",
        ),
        pytest.param(
            edit_grant(Effect="Deny"), {"bucket": "does not Allow"}, id="grant-turned-deny"
        ),
        pytest.param(
            add_statement(
                {
                    "Effect": "Deny",
                    "Principal": "*",
                    "Action": "s3:PutObject",
                    "Resource": f"arn:aws:s3:::{LOG_SINK}/*",
                }
            ),
            {"bucket": "does not Allow"},
            id="delivery-denied-unconditionally",
        ),
        pytest.param(
            lambda r: inline(r, "logging", {"targetBucket": LOG_SINK}),
            {"bucket": f"on arn:aws:s3:::{LOG_SINK}/*"},
            id="inline-logging-to-the-root-without-grant",
        ),
        pytest.param(
            target_named("attacker-or-typo-bucket", linked=False),
            {
                "bucket": "'attacker-or-typo-bucket' is no bucket of this stack",
                "sink": "no BucketLogging",
            },
            id="target-not-in-the-stack",
        ),
        pytest.param(
            target_named("llm-use1-logz-abc123", linked=True),
            {"bucket": "is no bucket of this stack", "sink": "no BucketLogging"},
            id="target-typo-computed-from-the-sink",
        ),
        pytest.param(
            target_named("", linked=False),
            {"bucket": "names no target bucket", "sink": "no BucketLogging"},
            id="no-target",
        ),
        pytest.param(
            into_itself,
            {"bucket": "its access logs go to itself", "sink": "no BucketLogging"},
            id="into-itself",
        ),
        pytest.param(
            lambda r: r["sink"].inputs["tags"].update({"gpudr:data-class": "weights"}),
            {"sink": "holds data (it carries gpudr:data-class 'weights')"},
            id="sink-tagged-as-data",
        ),
        pytest.param(
            lambda r: r["sink"].inputs["tags"].update({"gpudr:dr-role": "data-replica"}),
            {"sink": "gpudr:dr-role is 'data-replica'"},
            id="sink-with-a-data-role",
        ),
        pytest.param(
            component_child,
            {"sink": "part of a gpudr:storage:DataBucket component"},
            id="sink-in-a-data-bucket-component",
        ),
        pytest.param(
            lambda r: (r.pop("logging"), r["bucket"].inputs.update(tags={"team": "web"})),
            {"bucket": "does not log data access", "sink": "does not log"},
            id="untagged",
        ),
        pytest.param(
            lambda r: (r.pop("logging"), retype(r["bucket"], "aws:s3/bucketV2:BucketV2")),
            {"bucket": "BucketV2", "sink": "does not log"},
            id="bucketv2-unlogged",
        ),
    ],
)
def test_s3(mutate: Mutation, expected: dict[str, str]) -> None:
    r = aws_stack()
    mutate(r)
    found = refused(run_stack(data_access_logged, list(r.values())))
    assert set(found) == {r[k].urn for k in expected}, found
    for key, text in expected.items():
        assert r[key].name in found[r[key].urn] and text in found[r[key].urn], found


def test_a_bucket_logging_into_itself_is_refused_and_is_no_sink() -> None:
    r = aws_stack()
    for key in ("sink", "sink-encryption", "sink-policy"):
        r.pop(key)
    into_itself(r)
    found = run_stack(data_access_logged, list(r.values()))
    check(found, r["bucket"], "its access logs go to itself")


ELSEWHERE = "acme-use1-s3-access-logs"
OWNED = "platform team's log archive stack, SSE-S3, grants logging.s3 (SEC-77)"


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        pytest.param({"s3_external_log_buckets": [{"bucket": ELSEWHERE, "reason": OWNED}]}, None,
                     id="listed"),
        pytest.param(None, "is no bucket of this stack", id="no-config"),
        pytest.param({"s3_external_log_buckets": [{"bucket": ELSEWHERE, "reason": "ok"}]},
                     "is no bucket of this stack", id="no-real-reason"),
        pytest.param({"s3_external_log_buckets": [{"bucket": "acme-*", "reason": OWNED}]},
                     "is no bucket of this stack", id="no-glob"),
        pytest.param({"s3_external_log_buckets": [{"bucket": "acme-other", "reason": OWNED}]},
                     "is no bucket of this stack", id="another-bucket"),
    ],
)  # fmt: skip
def test_a_log_bucket_outside_the_stack_only_when_the_pack_config_lists_it(
    config: dict[str, Any] | None, expected: str | None
) -> None:
    r = aws_stack()
    for key in ("sink", "sink-encryption", "sink-policy"):
        r.pop(key)
    target_named(ELSEWHERE, linked=False)(r)
    check(run_stack(data_access_logged, list(r.values()), config), r["bucket"], expected)


def test_an_unknown_prefix_is_shown_only_by_a_grant_on_the_whole_bucket() -> None:
    r = aws_stack()
    r["logging"].inputs["targetPrefix"] = UNKNOWN
    with pytest.raises(UnknownValueError):
        data_access_logged.validate(
            StackValidationArgs(policy_resources(records(list(r.values())))), collector([])
        )
    edit_grant(Resource=f"arn:aws:s3:::{LOG_SINK}/*")(r)
    assert run_stack(data_access_logged, list(r.values())) == []


def gcp_stack() -> dict[str, Res]:
    r = gcs()
    r["bucket"].inputs["project"] = PROJECT
    return {**r, "audit": gcs_audit()}


def audit_types(*types: str, exempted: list[str] | None = None) -> Mutation:
    def mutate(r: dict[str, Res]) -> None:
        entries: list[dict[str, Any]] = [{"logType": t} for t in types]
        if exempted:
            entries[0]["exemptedMembers"] = exempted
        r["audit"].inputs["auditLogConfigs"] = entries

    return mutate


def split_services(r: dict[str, Res]) -> None:
    """DATA_READ for all services, DATA_WRITE for Cloud Storage: IAM unions the two."""
    audit_types("DATA_WRITE")(r)
    every = gcs_audit(service="allServices")
    every.inputs["auditLogConfigs"] = [{"logType": "DATA_READ"}, {"logType": "ADMIN_READ"}]
    r["every"] = every


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(lambda r: None, None, id="storage-data-read-write"),
        pytest.param(
            lambda r: r["audit"].inputs.update(service="allServices"), None, id="all-services"
        ),
        pytest.param(split_services, None, id="unioned-across-services"),
        pytest.param(
            lambda r: r["audit"].inputs.update(project=f"projects/{PROJECT}"),
            None,
            id="project-as-resource-name",
        ),
        pytest.param(lambda r: r.pop("audit"), "no IAMAuditConfig", id="none"),
        pytest.param(
            lambda r: r["audit"].inputs.update(project="acme-other"),
            f"no IAMAuditConfig for storage.googleapis.com in project {PROJECT}",
            id="other-project",
        ),
        pytest.param(
            lambda r: r["audit"].inputs.update(service="bigquery.googleapis.com"),
            "no IAMAuditConfig",
            id="other-service",
        ),
        pytest.param(audit_types("DATA_WRITE", "ADMIN_READ"), "DATA_READ is off", id="no-read"),
        pytest.param(audit_types("DATA_READ"), "DATA_WRITE is off", id="no-write"),
        pytest.param(
            audit_types("DATA_READ", "DATA_WRITE", exempted=["user:ops@acme.example"]),
            "user:ops@acme.example exempted",
            id="exempted-member",
        ),
        pytest.param(
            lambda r: (r.pop("audit"), r["bucket"].inputs.update(labels={"team": "web"})),
            "no IAMAuditConfig",
            id="untagged",
        ),
        pytest.param(
            lambda r: r["bucket"].inputs.pop("project"), "names no project", id="no-project"
        ),
    ],
)
def test_gcs(mutate: Mutation, expected: str | None) -> None:
    r = gcp_stack()
    mutate(r)
    check(run_stack(data_access_logged, list(r.values())), r["bucket"], expected)


# --- Fix 3: an exclusion of Data Access entries needs a sink keeping them ---------------------

FLOWS = f'logName="projects/{PROJECT}/logs/compute.googleapis.com%2Fvpc_flows"'
# gpudr's filter for a site with clusters and no bucket: Admin Activity, never Data Access.
ACTIVITY = (
    '(resource.type="k8s_cluster" AND '
    f'logName="projects/{PROJECT}/logs/cloudaudit.googleapis.com%2Factivity")'
)


def routed_stack() -> dict[str, Res]:
    """gcp_stack() with the site's log bucket, the sink routing the Data Access entries into
    it and the exclusion on _Default (components/gcp/logs.py)."""
    return {**gcp_stack(), **gcp_log_routing()}


def sink_props(**changes: Any) -> Mutation:
    return lambda r: r["sink"].inputs.update(changes)


def default_sink(**inputs: Any) -> Mutation:
    """The project's _Default sink managed by the stack, its exclusions or filter set."""

    def mutate(r: dict[str, Res]) -> None:
        r.pop("exclusion")
        r["default"] = Res(
            "gcp:logging/projectSink:ProjectSink",
            "default-sink",
            {
                "name": "_Default",
                "project": PROJECT,
                "destination": f"logging.googleapis.com/projects/{PROJECT}/locations/global/"
                "buckets/_Default",
                **inputs,
            },
        )

    return mutate


def no_route(r: dict[str, Res]) -> None:
    r.pop("sink")


EXCLUDE_DATA_ACCESS = [
    {"name": "drop-reads", "filter": 'LOG_ID("cloudaudit.googleapis.com/data_access")'}
]


@pytest.mark.parametrize(
    ("mutate", "holder", "expected"),
    [
        pytest.param(lambda r: None, "exclusion", None, id="routed-then-excluded"),
        pytest.param(lambda r: r.pop("exclusion"), "sink", None, id="no-exclusion"),
        pytest.param(lambda r: (no_route(r), r["exclusion"].inputs.update(filter=FLOWS)),
                     "exclusion", None, id="exclusion-of-other-logs"),
        pytest.param(lambda r: (no_route(r), r["exclusion"].inputs.update(filter=ACTIVITY)),
                     "exclusion", None, id="exclusion-of-admin-activity"),
        pytest.param(
            lambda r: (no_route(r), r["exclusion"].inputs.update(
                filter='logName:"cloudaudit.googleapis.com"')),
            "exclusion", "its filter may match them", id="exclusion-of-every-audit-log",
        ),
        pytest.param(
            lambda r: (no_route(r), r["exclusion"].inputs.update(
                filter=f"{ACTIVITY} OR protoPayload.serviceName=\"storage.googleapis.com\"")),
            "exclusion", "its filter may match them", id="exclusion-of-the-storage-service",
        ),
        pytest.param(lambda r: (no_route(r), r["exclusion"].inputs.update(disabled=True)),
                     "exclusion", None, id="exclusion-disabled"),
        pytest.param(sink_props(filter=None), "exclusion", None, id="sink-routing-everything"),
        pytest.param(lambda r: r["sink"].property_dependencies.clear(), "exclusion", None,
                     id="destination-spelt-out"),
        pytest.param(sink_props(destination=UNKNOWN), "exclusion", None,
                     id="destination-unknown-from-the-log-bucket"),
        pytest.param(lambda r: r["log-bucket"].inputs["cmekSettings"].update(kmsKeyName=UNKNOWN),
                     "exclusion", None, id="key-unknown-from-this-stack"),
        pytest.param(
            default_sink(filter='NOT LOG_ID("cloudaudit.googleapis.com/activity")'),
            "default", None, id="default-sink-default-filter",
        ),
        pytest.param(no_route, "exclusion",
                     f"no ProjectSink in project {PROJECT} has a filter naming data_access",
                     id="excluded-never-routed"),
        pytest.param(sink_props(filter=FLOWS), "exclusion", "no ProjectSink",
                     id="sink-of-other-logs"),
        pytest.param(sink_props(project="acme-other"), "exclusion", "no ProjectSink",
                     id="sink-in-another-project"),
        pytest.param(sink_props(disabled=True), "exclusion", "no ProjectSink",
                     id="sink-disabled"),
        pytest.param(sink_props(filter='NOT LOG_ID("cloudaudit.googleapis.com/data_access")'),
                     "exclusion", "negates a term", id="sink-negating-data-access"),
        pytest.param(
            lambda r: (r["sink"].property_dependencies.clear(),
                       r["sink"].inputs.update(destination="storage.googleapis.com/archive")),
            "exclusion", "its destination is no logging.googleapis.com", id="sink-to-a-gcs-bucket",
        ),
        pytest.param(lambda r: r.pop("log-bucket"), "exclusion", "its destination is no",
                     id="log-bucket-outside-the-stack"),
        pytest.param(lambda r: r["log-bucket"].inputs.pop("cmekSettings"), "exclusion",
                     "has no cmek_settings.kms_key_name", id="log-bucket-without-cmek"),
        pytest.param(lambda r: r["log-bucket"].inputs.pop("retentionDays"), "exclusion",
                     "no retention_days", id="log-bucket-without-retention"),
        pytest.param(
            lambda r: (no_route(r),
                       r["exclusion"].inputs.update(filter='resource.type="gcs_bucket"')),
            "exclusion", "its filter may match them", id="exclusion-of-every-gcs-entry",
        ),
        pytest.param(lambda r: (no_route(r), r["exclusion"].inputs.pop("project")), "exclusion",
                     "names no project", id="exclusion-without-project"),
        pytest.param(lambda r: (no_route(r), default_sink(exclusions=EXCLUDE_DATA_ACCESS)(r)),
                     "default", "its exclusion 'drop-reads' may match them",
                     id="default-sink-exclusion"),
        pytest.param(lambda r: (no_route(r), default_sink(disabled=True)(r)), "default",
                     "the _Default sink, disabled", id="default-sink-disabled"),
        pytest.param(
            lambda r: (no_route(r), default_sink(
                filter='NOT LOG_ID("cloudaudit.googleapis.com/data_access")')(r)),
            "default", "its filter naming data_access", id="default-sink-filtering-them-out",
        ),
    ],
)  # fmt: skip
def test_gcs_data_access_exclusions(mutate: Mutation, holder: str, expected: str | None) -> None:
    r = routed_stack()
    mutate(r)
    check(run_stack(data_access_logged, list(r.values())), r[holder], expected)


def test_a_sink_excluding_them_is_no_route_and_is_refused_as_an_exclusion() -> None:
    r = routed_stack()
    sink_props(exclusions=EXCLUDE_DATA_ACCESS)(r)
    found = refused(run_stack(data_access_logged, list(r.values())))
    assert set(found) == {r["exclusion"].urn, r["sink"].urn}, found
    assert "its own exclusion 'drop-reads' may drop them" in found[r["exclusion"].urn]
    assert "its exclusion 'drop-reads' may match them" in found[r["sink"].urn]


def test_an_exclusion_with_an_unknown_filter_cannot_be_judged_before_it_is_known() -> None:
    r = routed_stack()
    r.pop("sink")
    r["exclusion"].inputs["filter"] = UNKNOWN
    with pytest.raises(UnknownValueError):
        data_access_logged.validate(
            StackValidationArgs(policy_resources(records(list(r.values())))), collector([])
        )


@pytest.mark.parametrize(
    ("entry", "inherited"),
    [
        pytest.param({"project": PROJECT, "reason": "org policy ORG-7 sets them"}, True, id="id"),
        pytest.param(
            {"project": "acme-*", "reason": "org policy ORG-7 sets them"}, True, id="glob"
        ),
        pytest.param({"project": "*", "reason": "org policy ORG-7 sets them"}, False, id="any"),
        pytest.param({"project": "a*", "reason": "org policy ORG-7"}, False, id="1-literal"),
        pytest.param({"project": PROJECT, "reason": "trust me"}, False, id="no-real-reason"),
        pytest.param({"project": "acme-other", "reason": "org policy ORG-7"}, False, id="other"),
    ],
)
def test_audit_logs_set_above_the_project(entry: dict[str, str], inherited: bool) -> None:
    r = gcp_stack()
    r.pop("audit")
    found = run_stack(data_access_logged, list(r.values()), {"gcs_audit_logs_inherited": [entry]})
    check(found, r["bucket"], None if inherited else "no IAMAuditConfig")


@pytest.mark.parametrize(("project", "expected"), [(PROJECT, None), ("acme-other", "no IAM")])
def test_a_bucket_without_project_is_in_its_providers(project: str, expected: str | None) -> None:
    r = gcp_stack()
    r["bucket"].inputs.pop("project")
    resources = policy_resources(records(list(r.values())))
    bucket = next(x for x in resources if x.urn == r["bucket"].urn)
    bucket.provider = PolicyProviderResource(
        "pulumi:providers:gcp",
        unknown_checking_proxy({"project": project}),
        "urn:pulumi:test::gpudr::pulumi:providers:gcp::default",
        "default",
    )
    found: Violations = []
    data_access_logged.validate(StackValidationArgs(resources), collector(found))
    check(found, r["bucket"], expected)


def azure_stack() -> dict[str, Res]:
    r = azure()
    return {**r, "diagnostics": blob_diagnostics(r)}


def logs(r: dict[str, Res]) -> list[dict[str, Any]]:
    return r["diagnostics"].inputs["logs"]  # type: ignore[no-any-return]


def on_account(r: dict[str, Res], uri: str) -> None:
    """resource_uri computed from the account's id instead of the blob service."""
    r["diagnostics"].property_dependencies["resourceUri"] = [r["account"].urn]
    r["diagnostics"].inputs["resourceUri"] = uri


def destination(r: dict[str, Res], prop: str) -> None:
    r["diagnostics"].inputs.pop("workspaceId")
    r["diagnostics"].inputs[prop] = "/subscriptions/s/resourceGroups/g/providers/x/y/z"


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(lambda r: None, None, id="on-the-blob-service"),
        pytest.param(
            lambda r: r["diagnostics"].property_dependencies.clear(), None, id="uri-spelt-out"
        ),
        pytest.param(
            lambda r: on_account(r, f"{account_id(r['account'])}/blobServices/default"),
            None,
            id="uri-from-the-account-id",
        ),
        pytest.param(
            lambda r: r["diagnostics"].inputs.update(resourceUri=UNKNOWN),
            None,
            id="unknown-blob-service-id",
        ),
        pytest.param(
            lambda r: r["diagnostics"].inputs.update(
                logs=[{"categoryGroup": "allLogs", "enabled": True}]
            ),
            None,
            id="all-logs-group",
        ),
        pytest.param(lambda r: destination(r, "storageAccountId"), None, id="to-storage"),
        pytest.param(
            lambda r: destination(r, "eventHubAuthorizationRuleId"), None, id="to-event-hub"
        ),
        pytest.param(
            lambda r: retype(r["diagnostics"], "azure-native:insights:DiagnosticSetting"),
            None,
            id="insights-alias",
        ),
        pytest.param(
            lambda r: retype(
                r["diagnostics"], "azure-native:monitor/v20210501preview:DiagnosticSetting"
            ),
            None,
            id="api-version-module",
        ),
        pytest.param(
            lambda r: on_account(r, account_id(r["account"])),
            "no DiagnosticSetting has its /blobServices/default",
            id="on-the-account-itself",
        ),
        pytest.param(
            lambda r: (
                r["diagnostics"].property_dependencies.clear(),
                r["diagnostics"].inputs.update(
                    resourceUri=account_id(r["account"]).replace("gpudr", "other")
                    + "/blobServices/default"
                ),
            ),
            "no DiagnosticSetting",
            id="another-accounts-uri",
        ),
        pytest.param(lambda r: logs(r).pop(), "StorageDelete off", id="no-delete-logs"),
        pytest.param(
            lambda r: logs(r)[0].update(enabled=False), "StorageRead off", id="read-disabled"
        ),
        pytest.param(
            lambda r: r["diagnostics"].inputs.pop("workspaceId"),
            "no destination",
            id="no-destination",
        ),
        pytest.param(lambda r: r.pop("diagnostics"), "no DiagnosticSetting", id="none"),
        pytest.param(
            lambda r: (r.pop("diagnostics"), r["account"].inputs.update(tags={"team": "web"})),
            "does not log blob access",
            id="untagged",
        ),
        pytest.param(
            lambda r: (
                r.pop("diagnostics"),
                retype(r["account"], "azure-native:storage/v20230101:StorageAccount"),
            ),
            "storage/v20230101",
            id="account-api-version-module",
        ),
    ],
)
def test_azure(mutate: Mutation, expected: str | None) -> None:
    r = azure_stack()
    mutate(r)
    check(run_stack(data_access_logged, list(r.values())), r["account"], expected)


def test_a_file_storage_account_has_no_blob_service_to_log() -> None:
    r = azure()
    r["account"].inputs["kind"] = "FileStorage"
    assert run_stack(data_access_logged, list(r.values())) == []


def test_unknown_values_that_decide_are_raised_after_the_other_violations() -> None:
    aws = aws_stack()
    aws["logging"].property_dependencies.pop("targetBucket")
    aws["logging"].inputs["targetBucket"] = UNKNOWN  # from no resource of this stack
    az = azure_stack()
    on_account(az, UNKNOWN)  # which sub-resource of the account: not known before it exists
    bare = gcp_stack()
    bare.pop("audit")
    found: Violations = []
    resources = [*aws.values(), *az.values(), *bare.values()]
    with pytest.raises(UnknownValueError):
        args = StackValidationArgs(policy_resources(records(resources)))
        data_access_logged.validate(args, collector(found))
    # The sink receives logs only through the unknown target: it is reported as unlogged.
    assert {u for _, u in found} == {bare["bucket"].urn, aws["sink"].urn}


def test_an_exemption_in_the_pack_config_exempts_that_bucket_only() -> None:
    r = aws_stack()
    r.pop("logging")
    reason = "scratch bucket, no DR data (SEC-321)"
    config = {"exemptions": [{"resource": r["bucket"].name, "stack": "test", "reason": reason}]}
    found = run_stack(data_access_logged, list(r.values()), config)
    assert [u for _, u in found] == [r["sink"].urn]
