"""data-access-logged: S3 server access logging, Cloud Storage Data Access audit logs, Azure blob
diagnostic settings; one property at a time from what gpudr's components register, untagged
buckets and other SDK classes too."""

from __future__ import annotations

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
    """A data bucket logging into the site's log sink (the sink itself is excused)."""
    data, sink = s3(), s3_log_sink()
    return {
        "bucket": data["bucket"],
        "sink": sink["bucket"],
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
        pytest.param(
            lambda r: inline(r, "logging", {"targetBucket": LOG_SINK}), {}, id="inline-logging"
        ),
        pytest.param(
            lambda r: (
                inline(r, "loggings", [{"targetBucket": LOG_SINK}]),
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
            lambda r: (
                r["logging"].property_dependencies.clear(),
                r["logging"].inputs.update(targetBucket=""),
            ),
            {"bucket": "names no target bucket", "sink": "no BucketLogging"},
            id="no-target",
        ),
        pytest.param(
            lambda r: r["logging"].property_dependencies.update(bucket=[r["sink"].urn]),
            {"bucket": "no BucketLogging refers to it"},
            id="logging-of-another-bucket",
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


def test_a_bucket_logging_into_itself_is_logged_but_is_no_sink() -> None:
    r = aws_stack()
    r.pop("sink")
    r["logging"].property_dependencies["targetBucket"] = [r["bucket"].urn]
    r["logging"].inputs["targetBucket"] = DATA_BUCKET
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
