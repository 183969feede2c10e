"""data-encrypted-at-rest: good and bad encryption per cloud, one property at a time."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pulumi_policy import StackValidationArgs
from pulumi_policy.proxy import UnknownValueError

from policies.common import S3_REPLICATION
from policies.encryption_at_rest import data_encrypted_at_rest
from tests.policies.builders import (
    LOG_SINK,
    WEIGHTS,
    azure,
    deny_deletes_document,
    gcs,
    rtc_rule,
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


def sse(r: dict[str, Res]) -> dict[str, Any]:
    rule: dict[str, Any] = r["encryption"].inputs["rules"][0]
    return rule["applyServerSideEncryptionByDefault"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(lambda r: None, None, id="sse-kms-customer-key"),
        pytest.param(lambda r: sse(r).update(sseAlgorithm="aws:kms:dsse"), None, id="dsse-kms"),
        pytest.param(
            lambda r: sse(r).update(kmsMasterKeyId=UNKNOWN), None, id="key-unknown-from-this-stack"
        ),
        pytest.param(
            lambda r: r["encryption"].property_dependencies.clear(), None, id="linked-by-name"
        ),
        pytest.param(
            lambda r: sse(r).update(sseAlgorithm="AES256"), "customer-managed KMS", id="sse-s3"
        ),
        pytest.param(
            lambda r: sse(r).update(kmsMasterKeyId="alias/aws/s3"), "alias/aws/s3", id="aws-key"
        ),
        pytest.param(
            lambda r: sse(r).update(kmsMasterKeyId="arn:aws:kms:us-east-1:1:alias/aws/s3"),
            "does not use one",
            id="aws-key-arn",
        ),
        pytest.param(lambda r: sse(r).pop("kmsMasterKeyId"), "does not use one", id="no-key-id"),
        pytest.param(
            lambda r: r.pop("encryption"), "no BucketServerSideEncryptionConfiguration", id="none"
        ),
        pytest.param(
            lambda r: r["encryption"].property_dependencies.update(bucket=[r["other"].urn]),
            "no BucketServerSideEncryptionConfiguration",
            id="encrypts-another-bucket",
        ),
    ],
)
def test_s3(mutate: Mutation, expected: str | None) -> None:
    r = s3()
    r["other"] = Res("aws:s3/bucket:Bucket", "logs", {"bucket": "logs"}, protect=True)
    mutate(r)
    found = run_stack(data_encrypted_at_rest, list(r.values()))
    # The unencrypted `logs` bucket is judged too (every bucket is); here only `bucket` counts.
    check([v for v in found if v[1] != r["other"].urn], r["bucket"], expected)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(lambda r: None, None, id="cmek"),
        pytest.param(
            lambda r: r["bucket"].inputs["encryption"].update(defaultKmsKeyName=UNKNOWN),
            None,
            id="key-unknown-from-this-stack",
        ),
        pytest.param(
            lambda r: r["bucket"].inputs.pop("encryption"), "no customer-managed", id="none"
        ),
        pytest.param(
            lambda r: r["bucket"].inputs["encryption"].update(defaultKmsKeyName=""),
            "default_kms_key_name",
            id="empty-key",
        ),
    ],
)
def test_gcs(mutate: Mutation, expected: str | None) -> None:
    r = gcs()
    mutate(r)
    check(run_stack(data_encrypted_at_rest, list(r.values())), r["bucket"], expected)


def vault(r: dict[str, Res]) -> dict[str, Any]:
    return r["account"].inputs["encryption"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(lambda r: None, None, id="key-vault-key"),
        pytest.param(lambda r: vault(r).update(keySource="microsoft.keyvault"), None, id="case"),
        pytest.param(
            lambda r: vault(r)["keyVaultProperties"].update(keyVaultUri=UNKNOWN),
            None,
            id="vault-unknown-from-this-stack",
        ),
        pytest.param(
            lambda r: vault(r).update(keySource="Microsoft.Storage"),
            "Microsoft-managed",
            id="microsoft-managed",
        ),
        pytest.param(
            lambda r: vault(r).pop("keyVaultProperties"), "keyVaultProperties missing", id="no-key"
        ),
        pytest.param(lambda r: r["account"].inputs.pop("encryption"), "key_source", id="none"),
    ],
)
def test_azure(mutate: Mutation, expected: str | None) -> None:
    r = azure()
    mutate(r)
    check(run_stack(data_encrypted_at_rest, list(r.values())), r["account"], expected)


@pytest.mark.parametrize("token", ["aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2"])
def test_buckets_without_gpudr_tags_of_either_class_are_checked(token: str) -> None:
    r = s3()
    r.pop("encryption")
    r["bucket"].type = token
    r["bucket"].inputs["tags"] = {"team": "web"}
    check(run_stack(data_encrypted_at_rest, list(r.values())), r["bucket"], "customer-managed")


def test_an_exemption_in_the_pack_config_with_a_reason_exempts_that_resource_only() -> None:
    r = s3()
    r.pop("encryption")
    reason = "public website assets, no DR data (SEC-123)"
    config = {"exemptions": [{"resource": r["bucket"].name, "stack": "tes*", "reason": reason}]}
    assert run_stack(data_encrypted_at_rest, list(r.values()), config) == []
    for entry in (
        {"resource": r["bucket"].name, "reason": "short"},  # no real reason: exempts nothing
        {"resource": r["bucket"].name, "stack": "prod-*", "reason": reason},  # another stack
        {"resource": "other-bucket", "reason": reason},
    ):
        found = run_stack(data_encrypted_at_rest, list(r.values()), {"exemptions": [entry]})
        check(found, r["bucket"], "customer-managed")


def test_an_unknown_value_stops_only_its_bucket_and_is_raised_after_the_others() -> None:
    """The engine turns the raised error into its advisory "can't run during preview"
    diagnostic; the other buckets' violations are already reported."""
    unknown = s3("checkpoints")
    sse(unknown).update(kmsMasterKeyId=UNKNOWN)
    unknown["encryption"].property_dependencies.pop("rules")  # not from a key of this stack
    bad = s3("datasets")
    bad.pop("encryption")
    found: Violations = []
    with pytest.raises(UnknownValueError):
        args = StackValidationArgs(policy_resources(records([*unknown.values(), *bad.values()])))
        data_encrypted_at_rest.validate(args, collector(found))
    assert [u for _, u in found] == [bad["bucket"].urn]


# --- the access-log sink: SSE-S3 only for a bucket that is a sink and nothing else ------------


def sink_stack() -> dict[str, Res]:
    """A data bucket (site key) logging into the site's SSE-S3 log sink."""
    data, sink = s3(), s3_log_sink()
    return {
        **{f"data-{k}": v for k, v in data.items()},
        **sink,
        "logging": s3_logging(data["bucket"], sink["bucket"]),
    }


def statements(r: dict[str, Res]) -> list[dict[str, Any]]:
    """The statements of the sink's bucket policy (a copy: write them back as JSON)."""
    return json.loads(r["policy"].inputs["policy"])["Statement"]  # type: ignore[no-any-return]


def edit_deny(**changes: Any) -> Mutation:
    def mutate(r: dict[str, Res]) -> None:
        found = statements(r)
        found[-1].update(changes)
        found[-1] = {k: v for k, v in found[-1].items() if v is not None}
        r["policy"].inputs["policy"] = json.dumps({"Version": "2012-10-17", "Statement": found})

    return mutate


def edit_grant(**changes: Any) -> Mutation:
    """The sink policy's S3ServerAccessLogsDelivery statement changed."""

    def mutate(r: dict[str, Res]) -> None:
        found = statements(r)
        next(s for s in found if s.get("Sid") == "S3ServerAccessLogsDelivery").update(changes)
        r["policy"].inputs["policy"] = json.dumps({"Version": "2012-10-17", "Statement": found})

    return mutate


def split_deny(r: dict[str, Res]) -> None:
    found = statements(r)
    deny = found.pop()
    found += [{**deny, "Action": "s3:DeleteObject"}, {**deny, "Action": "s3:DeleteObjectVersion"}]
    r["policy"].inputs["policy"] = json.dumps({"Statement": found})


def replicated(r: dict[str, Res]) -> None:
    r["replication"] = Res(
        S3_REPLICATION,
        "logs-replication",
        {"bucket": LOG_SINK, "role": "arn:aws:iam::1:role/r", "rules": [rtc_rule()]},
    ).link("bucket", r["bucket"])


def replication_destination(r: dict[str, Res], linked: bool) -> None:
    rule = r["data-replication"].inputs["rules"][0]
    rule["destination"]["bucket"] = f"arn:aws:s3:::{LOG_SINK}"
    if linked:
        rule["destination"]["bucket"] = UNKNOWN
        r["data-replication"].link("rules", r["bucket"])


def datasync_location(r: dict[str, Res]) -> None:
    r["location"] = Res(
        "aws:datasync/s3Location:S3Location",
        "logs-location",
        {"s3BucketArn": f"arn:aws:s3:::{LOG_SINK}", "subdirectory": "/"},
    )


def in_data_bucket_component(r: dict[str, Res]) -> None:
    component = Res("gpudr:storage:DataBucket", "use1-weights", {})
    r["component"] = component
    r["bucket"].parent = component.urn


def sink_tags(**changes: str) -> Mutation:
    return lambda r: (
        r["bucket"]
        .inputs["tags"]
        .update({f"gpudr:{k.replace('_', '-')}": v for k, v in changes.items()})
    )


def self_logging(r: dict[str, Res]) -> None:
    r.pop("logging")
    r["own-logging"] = s3_logging(r["bucket"], r["bucket"])


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(lambda r: None, None, id="log-sink"),
        pytest.param(
            lambda r: r["logging"].property_dependencies.clear(), None, id="logging-by-name"
        ),
        pytest.param(edit_deny(Action="s3:Delete*"), None, id="deny-wildcard"),
        pytest.param(
            edit_deny(Action="s3:*"), "S3 cannot deliver the access logs", id="deny-all-s3"
        ),
        pytest.param(edit_deny(Principal={"AWS": ["*"]}), None, id="principal-aws-star"),
        pytest.param(split_deny, None, id="deny-in-two-statements"),
        pytest.param(
            lambda r: r["bucket"].inputs["tags"].update({"gpudr:dr-role": "site-logs"}),
            None,
            id="site-logs-role",
        ),
        pytest.param(
            lambda r: r.pop("logging"),
            "no other bucket of this stack sends its access logs to it",
            id="receives-no-logs",
        ),
        pytest.param(self_logging, "no other bucket", id="logs-only-itself"),
        pytest.param(
            sink_tags(data_class="weights"),
            "it holds data (it carries gpudr:data-class 'weights')",
            id="data-class-tag",
        ),
        pytest.param(
            sink_tags(dr_role="data-replica"),
            "gpudr:dr-role is 'data-replica'",
            id="data-role",
        ),
        pytest.param(
            in_data_bucket_component,
            "part of a gpudr:storage:DataBucket component",
            id="data-bucket-component",
        ),
        pytest.param(replicated, "it replicates (logs-replication)", id="replicates"),
        pytest.param(
            lambda r: r["bucket"].inputs.update(
                replicationConfiguration={"role": "r", "rules": [rtc_rule()]}
            ),
            "it replicates (inline replication_configuration)",
            id="replicates-inline",
        ),
        pytest.param(
            lambda r: replication_destination(r, linked=False),
            "checkpoints-replication replicates into it",
            id="replication-destination",
        ),
        pytest.param(
            lambda r: replication_destination(r, linked=True),
            "replicates into it",
            id="replication-destination-from-this-stack",
        ),
        pytest.param(datasync_location, "DataSync location logs-location", id="datasync"),
        pytest.param(
            lambda r: r.pop("policy"), "does not deny s3:DeleteObject", id="no-bucket-policy"
        ),
        # Condition (a): logs sent to it that S3 can deliver (policies/logs.py).
        pytest.param(
            edit_grant(Resource=f"arn:aws:s3:::{LOG_SINK}/*"),
            None,
            id="delivery-granted-on-the-whole-bucket",
        ),
        pytest.param(
            lambda r: r["policy"].inputs.update(policy=deny_deletes_document(LOG_SINK)),
            "S3 cannot deliver the access logs sent to it: the bucket policy of its target "
            "logs-bucket does not Allow logging.s3.amazonaws.com s3:PutObject",
            id="no-delivery-grant",
        ),
        pytest.param(
            edit_grant(Resource=f"arn:aws:s3:::{LOG_SINK}/other/*"),
            "S3 cannot deliver",
            id="delivery-granted-elsewhere",
        ),
        pytest.param(
            edit_grant(Principal={"Service": "delivery.logs.amazonaws.com"}),
            "S3 cannot deliver",
            id="delivery-granted-to-another-service",
        ),
        pytest.param(edit_deny(Action="s3:DeleteObject"), "does not deny", id="versions-open"),
        pytest.param(
            edit_deny(Condition={"StringNotEquals": {"aws:PrincipalArn": "arn:aws:iam::1:r"}}),
            "does not deny",
            id="deny-with-condition",
        ),
        pytest.param(
            edit_deny(Principal={"AWS": "arn:aws:iam::1:role/ops"}),
            "does not deny",
            id="deny-one-principal",
        ),
        pytest.param(
            edit_deny(Resource="arn:aws:s3:::other/*"), "does not deny", id="deny-other-bucket"
        ),
        pytest.param(
            edit_deny(Resource=f"arn:aws:s3:::{LOG_SINK}/2024/*"),
            "does not deny",
            id="deny-one-prefix",
        ),
        pytest.param(edit_deny(Effect="Allow"), "does not deny", id="allow-not-deny"),
        pytest.param(
            edit_deny(NotPrincipal={"AWS": "arn:aws:iam::1:root"}),
            "does not deny",
            id="not-principal",
        ),
        pytest.param(
            lambda r: sse(r).update(sseAlgorithm="aws:kms"),
            "does not use one",
            id="kms-without-key-is-no-exception",
        ),
    ],
)
def test_sse_s3_only_for_an_access_log_sink(mutate: Mutation, expected: str | None) -> None:
    r = sink_stack()
    mutate(r)
    found = run_stack(data_encrypted_at_rest, list(r.values()))
    check(found, r["bucket"], expected)


def test_a_refused_sink_names_every_reason() -> None:
    r = sink_stack()
    r.pop("logging")
    r.pop("policy")
    sink_tags(data_class="weights")(r)
    found = run_stack(data_encrypted_at_rest, list(r.values()))
    check(found, r["bucket"], "SSE-S3 (AES256) is accepted only for an access-log sink")
    message = found[0][0]
    for reason in ("no other bucket", "holds data", "does not deny"):
        assert reason in message, message


def test_a_data_bucket_posing_as_log_sink_keeps_its_key_requirement() -> None:
    """A weights bucket re-tagged as the site's logs, its tags stripped, SSE-S3, given a
    deny-delete policy and another bucket's access logs: still a DataBucket's child."""
    r = sink_stack()
    weights = s3("weights", WEIGHTS)
    weights["bucket"].inputs["tags"] = {"gpudr:dr-role": "site-logs"}
    component = Res("gpudr:storage:DataBucket", "use1-weights", {})
    weights["bucket"].parent = component.urn
    weights["encryption"].inputs["rules"] = [
        {"applyServerSideEncryptionByDefault": {"sseAlgorithm": "AES256"}}
    ]
    weights["encryption"].property_dependencies.pop("rules")
    name = weights["bucket"].inputs["bucket"]
    weights["policy"].inputs["policy"] = deny_deletes_document(name)
    r["logging"].inputs["targetBucket"] = name
    r["logging"].property_dependencies["targetBucket"] = [weights["bucket"].urn]
    resources = [*r.values(), *weights.values(), component]
    # The real sink, left with no bucket logging into it, is refused too; here only the weights.
    found = [v for v in run_stack(data_encrypted_at_rest, resources) if v[1] != r["bucket"].urn]
    check(found, weights["bucket"], "part of a gpudr:storage:DataBucket component")


def test_an_unknown_policy_decides_the_exception_only_when_nothing_else_refuses() -> None:
    r = sink_stack()
    r["policy"].inputs["policy"] = UNKNOWN  # the document holds the bucket's ARN: unknown
    with pytest.raises(UnknownValueError):
        args = StackValidationArgs(policy_resources(records(list(r.values()))))
        data_encrypted_at_rest.validate(args, collector([]))
    sink_tags(data_class="datasets")(r)
    found = run_stack(data_encrypted_at_rest, list(r.values()))
    check(found, r["bucket"], "holds data")
