"""deletion-protection: protect on every data-bearing resource, never force_destroy."""

from __future__ import annotations

import pytest

from policies.common import (
    AWS_KMS_KEY,
    AZ_BLOB_CONTAINER,
    AZ_KEY_VAULT,
    AZ_STORAGE_ACCOUNT,
    AZ_VAULT_KEY,
    GCP_CRYPTO_KEY,
    GCP_KEY_RING,
    GCS_BUCKET,
    S3_BUCKET,
)
from policies.deletion_protection import deletion_protection
from tests.policies.builders import CHECKPOINTS, labels, tags
from tests.policies.harness import Res, check, run_resource

DATA_BEARING = [
    S3_BUCKET,
    GCS_BUCKET,
    AZ_STORAGE_ACCOUNT,
    AZ_BLOB_CONTAINER,
    AWS_KMS_KEY,
    GCP_CRYPTO_KEY,
    GCP_KEY_RING,
    AZ_KEY_VAULT,
    AZ_VAULT_KEY,
]


@pytest.mark.parametrize("resource_type", DATA_BEARING)
@pytest.mark.parametrize(
    ("protect", "expected"),
    [pytest.param(True, None, id="protected"), pytest.param(False, "protect=True", id="not")],
)
def test_data_bearing_types(resource_type: str, protect: bool, expected: str | None) -> None:
    props = {"properties": {"enablePurgeProtection": True}} if resource_type == AZ_KEY_VAULT else {}
    resource = Res(resource_type, "data", props, protect=protect)
    check(run_resource(deletion_protection, resource), resource, expected)


@pytest.mark.parametrize(
    ("properties", "expected"),
    [
        pytest.param({"enablePurgeProtection": True}, None, id="purge-protected"),
        pytest.param({"enablePurgeProtection": False}, "purge protection", id="off"),
        pytest.param({}, "purge protection", id="unset"),
    ],
)
def test_key_vault_purge_protection(properties: dict[str, bool], expected: str | None) -> None:
    vault = Res("azure-native:keyvault/v20230701:Vault", "v", {"properties": properties}, True)
    check(run_resource(deletion_protection, vault), vault, expected)


def test_an_untagged_bucket_v2_is_judged_and_an_exemption_needs_a_reason() -> None:
    bucket = Res("aws:s3/bucketV2:BucketV2", "site", {"forceDestroy": True})
    assert len(run_resource(deletion_protection, bucket)) == 2  # not protected, force_destroy
    exempt = {
        "exemptions": [
            {"resource": "site", "stack": "test", "reason": "static site, rebuilt from git"}
        ]
    }
    assert run_resource(deletion_protection, bucket, exempt) == []
    unexplained = {"exemptions": [{"resource": "site", "stack": "test", "reason": ""}]}
    assert len(run_resource(deletion_protection, bucket, unexplained)) == 2


@pytest.mark.parametrize(
    ("resource", "expected"),
    [
        pytest.param(
            Res("aws:ec2/vpc:Vpc", "net", {"tags": {"gpudr:dr-role": "network"}}), None, id="vpc"
        ),
        pytest.param(
            Res("aws:s3/bucketV2:BucketV2", "old", {"tags": tags(CHECKPOINTS)}),
            "not protected",
            id="any-type-tagged-as-data",
        ),
        pytest.param(
            Res("gcp:storage/bucketObject:BucketObject", "o", {"labels": labels(CHECKPOINTS)}),
            "not protected",
            id="gcp-labels-as-data",
        ),
        pytest.param(
            Res(S3_BUCKET, "b", {"forceDestroy": True}, protect=True),
            "force_destroy=False",
            id="s3-force-destroy",
        ),
        pytest.param(
            Res(GCS_BUCKET, "b", {"forceDestroy": True}, protect=True),
            "force_destroy=False",
            id="gcs-force-destroy",
        ),
        pytest.param(Res(S3_BUCKET, "b", {"forceDestroy": False}, protect=True), None, id="ok"),
    ],
)
def test_tags_and_force_destroy(resource: Res, expected: str | None) -> None:
    check(run_resource(deletion_protection, resource), resource, expected)
