"""The write grants' roles and actions: what the components grant is what the pack accepts."""

from __future__ import annotations

from gpudr.contract import grants
from gpudr.core.enums import Mechanism


def test_what_the_components_grant_counts_as_a_write() -> None:
    assert grants.S3_PUT_OBJECT in grants.S3_WRITE_ACTIONS
    assert grants.GCS_OBJECT_CREATOR in grants.GCS_WRITE_ROLES
    assert grants.GCS_OBJECT_USER in grants.GCS_WRITE_ROLES
    assert grants.STORAGE_BLOB_DATA_CONTRIBUTOR in grants.AZURE_BLOB_WRITE_ROLE_IDS
    assert grants.STORAGE_BLOB_DATA_OWNER in grants.AZURE_BLOB_WRITE_ROLE_IDS


def test_a_role_definition_id_reads_back_as_its_guid() -> None:
    definition = (
        "/subscriptions/00000000-0000-0000-0000-000000000000/providers/"
        "Microsoft.Authorization/roleDefinitions/BA92F5B4-2D11-453D-A403-E96B0029C9FE"
    )
    assert grants.azure_role_guid(definition) == grants.STORAGE_BLOB_DATA_CONTRIBUTOR
    assert grants.azure_role_guid(grants.STORAGE_BLOB_DATA_OWNER) == grants.STORAGE_BLOB_DATA_OWNER


def test_s3_arns() -> None:
    assert grants.s3_bucket_arn("b") == "arn:aws:s3:::b"
    assert grants.s3_objects_arn("b") == "arn:aws:s3:::b/*"


def test_only_dual_written_classes_need_a_grant() -> None:
    assert [m for m in Mechanism if grants.needs_write_grant(m)] == [Mechanism.DUAL_WRITE]
    assert grants.needs_write_grant("dual-write")
