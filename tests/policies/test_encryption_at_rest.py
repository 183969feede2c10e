"""data-encrypted-at-rest: good and bad encryption per cloud, one property at a time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pulumi_policy import StackValidationArgs
from pulumi_policy.proxy import UnknownValueError

from policies.encryption_at_rest import data_encrypted_at_rest
from tests.policies.builders import azure, gcs, s3
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
