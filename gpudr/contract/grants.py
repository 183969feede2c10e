"""Write grants on a data class's copies: the roles and actions that let an identity write
objects into a copy, written once.

A dual-written class (`mechanism: dual-write`) has one copy per site and no replication
between them: the writer (the model registry's publish job) writes every copy itself before it
reports success. That claim holds only if the writer may write each copy, so the stack that
owns a copy declares a write grant on it:

- AWS: an IAM policy allowing `s3:PutObject` on the copy's objects (`s3_objects_arn`)
  (components/aws/replication.py `writer_policy`);
- GCP: a writer service account and a bucket IAM member with `GCS_OBJECT_CREATOR` (or
  `GCS_OBJECT_USER` for a class the writer also deletes from) on the copy
  (components/gcp/writer.py);
- Azure: a writer managed identity and a role assignment of `STORAGE_BLOB_DATA_CONTRIBUTOR`
  scoped to the copy's storage account (components/azure/writer.py).

The writers are those components; the reader is the policy pack, which refuses a copy tagged
`gpudr:mechanism=dual-write` unless its stack declares a grant on it with one of the write
roles or actions below (`GCS_WRITE_ROLES`, `AZURE_BLOB_WRITE_ROLE_IDS`, `S3_WRITE_ACTIONS`):
what the components grant is always among them.

Standard library only: the Pulumi program and the policy pack read this module.
"""

from __future__ import annotations

from gpudr.contract.tags import DrRole
from gpudr.core.enums import PULLED, Mechanism

# --- AWS: IAM actions (IAM compares them case-insensitively) --------------------------------

S3_PUT_OBJECT = "s3:PutObject"
# The actions that let an identity create an object in a bucket.
S3_WRITE_ACTIONS = (S3_PUT_OBJECT, "s3:*")


def s3_bucket_arn(bucket: str) -> str:
    """An S3 bucket's ARN (what `s3:ListBucket` is granted on)."""
    return f"arn:aws:s3:::{bucket}"


def s3_objects_arn(bucket: str) -> str:
    """Every object of an S3 bucket: the resource a write grant names."""
    return f"{s3_bucket_arn(bucket)}/*"


# --- GCP: predefined Cloud Storage roles --------------------------------------------------------

# Create objects, nothing else (no read, overwrite or delete): enough for a class whose
# objects are never rewritten, such as weights under a locked retention policy.
GCS_OBJECT_CREATOR = "roles/storage.objectCreator"
# Create, read, list and delete objects: a class whose writer also removes old objects.
GCS_OBJECT_USER = "roles/storage.objectUser"
# The roles that let a member create objects in a bucket.
GCS_WRITE_ROLES = (
    GCS_OBJECT_CREATOR,
    GCS_OBJECT_USER,
    "roles/storage.objectAdmin",
    "roles/storage.admin",
)

# --- Azure: built-in role definition GUIDs (the same in every subscription and tenant) -----

# Read, write and delete blobs and containers: what a dual writer needs on an account.
STORAGE_BLOB_DATA_CONTRIBUTOR = "ba92f5b4-2d11-453d-a403-e96b0029c9fe"
STORAGE_BLOB_DATA_OWNER = "b7e6dc6d-f1e8-4753-8033-0f276bb0955b"
# The roles that let a principal write blobs in a storage account, by GUID.
AZURE_BLOB_WRITE_ROLE_IDS = {
    STORAGE_BLOB_DATA_CONTRIBUTOR: "Storage Blob Data Contributor",
    STORAGE_BLOB_DATA_OWNER: "Storage Blob Data Owner",
}


def azure_role_guid(role_definition_id: str) -> str:
    """The GUID of a role definition id
    (`/subscriptions/<sub>/providers/Microsoft.Authorization/roleDefinitions/<guid>`), lower
    case, as `AZURE_BLOB_WRITE_ROLE_IDS` keys it."""
    return role_definition_id.rstrip("/").rsplit("/", 1)[-1].lower()


def needs_write_grant(mechanism: str) -> bool:
    """Whether every copy of a class with this mechanism needs a write grant declared by the
    stack that owns it: a dual-written class, whose writer writes each copy itself."""
    return mechanism == Mechanism.DUAL_WRITE


# --- reads: what a scheduled pull's reader needs on the source copy --------------------------
#
# A class pulled on a schedule (Storage Transfer Service into GCS, DataSync into S3) is copied
# by the DR site's job, which reads the source with an identity the source's stack grants:
# AWS an IAM policy allowing s3:GetObject (components/aws/cross_cloud.py), GCP a bucket IAM
# member with objectViewer (components/gcp/cross_cloud.py), Azure Storage Blob Data Reader on
# the account (components/azure/cross_cloud.py). The pack refuses a source copy that claims a
# pull while its stack lets nobody read it.

S3_GET_OBJECT = "s3:GetObject"
S3_READ_ACTIONS = (S3_GET_OBJECT, "s3:*")
GCS_OBJECT_VIEWER = "roles/storage.objectViewer"
GCS_READ_ROLES = (
    GCS_OBJECT_VIEWER,
    GCS_OBJECT_USER,
    "roles/storage.objectAdmin",
    "roles/storage.admin",
)
# Read and list blobs and containers, nothing else: no write, no delete, no key or SAS access.
STORAGE_BLOB_DATA_READER = "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1"
AZURE_BLOB_READ_ROLE_IDS = {
    STORAGE_BLOB_DATA_READER: "Storage Blob Data Reader",
    **AZURE_BLOB_WRITE_ROLE_IDS,
}


def needs_read_grant(mechanism: str, dr_role: str) -> bool:
    """Whether this copy needs a read grant declared by its stack: the source of a pull."""
    return mechanism in PULLED and dr_role == DrRole.DATA_SOURCE
