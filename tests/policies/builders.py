"""Compliant resources per cloud, shaped as gpudr's components register them (camelCase inputs,
numbers as floats, settings linked to their bucket by property dependencies). Tests vary one
property at a time from these."""

from __future__ import annotations

import json
from typing import Any

from gpudr.contract import grants
from gpudr.contract.tags import gcp_labels
from policies.common import (
    AKS_CLUSTER,
    AWS_KMS_KEY,
    AZ_BLOB_CONTAINER,
    AZ_BLOB_SERVICE,
    AZ_DIAGNOSTIC_SETTING,
    AZ_LOG_WORKSPACE,
    AZ_ROLE_ASSIGNMENT,
    AZ_STORAGE_ACCOUNT,
    AZ_VAULT_KEY,
    CLOUDWATCH_LOG_GROUP,
    EKS_CLUSTER,
    GCP_CRYPTO_KEY,
    GCP_LOG_BUCKET,
    GCP_LOG_EXCLUSION,
    GCP_LOG_SINK,
    GCP_PROJECT_AUDIT_CONFIG,
    GCS_BUCKET,
    GCS_IAM_MEMBER,
    IAM_ROLE_POLICY,
    S3_BUCKET,
    S3_ENCRYPTION,
    S3_LOGGING,
    S3_OBJECT_LOCK,
    S3_POLICY,
    S3_PUBLIC_ACCESS_BLOCK,
    S3_REPLICATION,
    S3_VERSIONING,
)
from tests.policies.harness import Res

SUBSCRIPTION = "00000000-0000-0000-0000-0000000000a1"
KEY_ARN = "arn:aws:kms:us-east-1:123456789012:key/mrk-0123456789"
GCP_KEY = "projects/p/locations/us-east4/keyRings/r/cryptoKeys/data"

# One checkpoint class: 2 TB every 45 min, 60% dedup, 3:1 compression, RPO 4 h, S3 RTC at an
# asserted 5 Gbps (examples/aws-two-region.yaml).
CHECKPOINTS = {
    "data-class": "checkpoints",
    "dr-role": "data-source",
    "site-role": "primary",
    "mechanism": "crr-rtc",
    "rpo-s": "14400",
    "rto-s": "14400",
    "interval-s": "2700",
    "burst-bytes": "266666666666",
    "steady-kbps": "790123",
    "steady-mbps": "790.123",
    "required-mbps": "790.123",
    "quota-mbps": "5000",
}
WEIGHTS = {
    "data-class": "weights",
    "dr-role": "data-source",
    "site-role": "primary",
    "mechanism": "dual-write",
    "rpo-s": "0",
    "rto-s": "3600",
    "interval-s": "0",
    "burst-bytes": "150000000000",
    "steady-kbps": "0",
    "publish-window-s": "3600",
}
DATASETS = {
    "data-class": "datasets",
    "dr-role": "data-source",
    "site-role": "primary",
    "mechanism": "crr-rtc",
    "rpo-s": "86400",
    "rto-s": "none",
    "interval-s": "0",
    "burst-bytes": "0",
    "steady-kbps": "92593",
    "quota-mbps": "5000",
}
# The Azure example dual-writes checkpoints (object replication has no SLA).
AZURE_CHECKPOINTS = {
    **{k: v for k, v in CHECKPOINTS.items() if k != "quota-mbps"},
    "mechanism": "dual-write",
}


def tags(facts: dict[str, str], **changes: str | None) -> dict[str, str]:
    """gpudr tags (`gpudr:<name>`) from facts, with changes (None removes a tag)."""
    merged: dict[str, str | None] = {
        **facts,
        **{k.replace("_", "-"): v for k, v in changes.items()},
    }
    out = {"gpudr:system": "llm", "gpudr:site": "use1"}
    out.update({f"gpudr:{k}": v for k, v in merged.items() if v is not None})
    return out


def labels(facts: dict[str, str], **changes: str | None) -> dict[str, str]:
    """The same as GCP labels, converted by the program's own function."""
    return gcp_labels(tags(facts, **changes))


# --- AWS ------------------------------------------------------------------------------------


def s3_policy_document(bucket: str) -> str:
    arn = f"arn:aws:s3:::{bucket}"
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "DenyInsecureTransport",
                    "Effect": "Deny",
                    "Principal": "*",
                    "Action": "s3:*",
                    "Resource": [arn, f"{arn}/*"],
                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                }
            ],
        }
    )


def s3(name: str = "checkpoints", facts: dict[str, str] | None = None) -> dict[str, Res]:
    """A data bucket with its split settings, as components/aws/bucket.py declares it."""
    facts = facts or CHECKPOINTS
    bucket_name = f"llm-use1-{name}-abc123"
    weights = facts.get("data-class") == "weights"
    bucket = Res(
        S3_BUCKET,
        f"{name}-bucket",
        {
            "bucket": bucket_name,
            "forceDestroy": False,
            "objectLockEnabled": weights,
            "region": "us-east-1",
            "tags": tags(facts),
        },
        protect=True,
    )
    key = Res(AWS_KMS_KEY, f"{name}-key", {"enableKeyRotation": True}, protect=True)
    out = {
        "bucket": bucket,
        "key": key,
        "encryption": Res(
            S3_ENCRYPTION,
            f"{name}-encryption",
            {
                "bucket": bucket_name,
                "rules": [
                    {
                        "applyServerSideEncryptionByDefault": {
                            "kmsMasterKeyId": KEY_ARN,
                            "sseAlgorithm": "aws:kms",
                        },
                        "bucketKeyEnabled": True,
                    }
                ],
            },
        )
        .link("bucket", bucket)
        .link("rules", key),
        "public": Res(
            S3_PUBLIC_ACCESS_BLOCK,
            f"{name}-public-access",
            {
                "bucket": bucket_name,
                "blockPublicAcls": True,
                "blockPublicPolicy": True,
                "ignorePublicAcls": True,
                "restrictPublicBuckets": True,
            },
        ).link("bucket", bucket),
        "policy": Res(
            S3_POLICY,
            f"{name}-policy",
            {"bucket": bucket_name, "policy": s3_policy_document(bucket_name)},
        )
        .link("bucket", bucket)
        .link("policy", bucket),
        "versioning": Res(
            S3_VERSIONING,
            f"{name}-versioning",
            {"bucket": bucket_name, "versioningConfiguration": {"status": "Enabled"}},
            protect=True,
        ).link("bucket", bucket),
    }
    if weights:
        out["lock"] = Res(
            S3_OBJECT_LOCK,
            f"{name}-object-lock",
            {
                "bucket": bucket_name,
                "objectLockEnabled": "Enabled",
                "rule": {"defaultRetention": {"mode": "COMPLIANCE", "days": 365.0}},
            },
            protect=True,
        ).link("bucket", bucket)
    if facts.get("mechanism") in ("crr-rtc", "crr") and facts.get("dr-role") == "data-source":
        out["replication"] = Res(
            S3_REPLICATION,
            f"{name}-replication",
            {
                "bucket": bucket_name,
                "role": "arn:aws:iam::123456789012:role/r",
                "rules": [rtc_rule()],
            },
        ).link("bucket", bucket)
    if facts.get("mechanism") == "dual-write":
        out["writer"] = s3_writer(bucket)
    return out


def s3_writer(bucket: Res) -> Res:
    """The dual writer's grant on the copy: an IAM policy on the writer's role (gpudr's
    components attach a managed policy to the role; tests/policies/test_grants.py covers
    attachments)."""
    document = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": [grants.S3_PUT_OBJECT],
                "Resource": [grants.s3_objects_arn(bucket.inputs["bucket"])],
            }
        ],
    }
    return Res(
        IAM_ROLE_POLICY,
        f"{bucket.name}-writer",
        {"role": "llm-use1-weights-writer", "policy": json.dumps(document)},
    )


def gcs_writer(bucket: Res) -> Res:
    """The dual writer's bucket IAM member on the copy (components/gcp/writer.py)."""
    return Res(
        GCS_IAM_MEMBER,
        f"{bucket.name}-writer",
        {
            "bucket": bucket.inputs["name"],
            "role": grants.GCS_OBJECT_CREATOR,
            "member": "serviceAccount:weights-writer@p.iam.gserviceaccount.com",
        },
    ).link("bucket", bucket)


def azure_writer(account: Res) -> Res:
    """The dual writer's role assignment on the account (components/azure/writer.py)."""
    role = grants.STORAGE_BLOB_DATA_CONTRIBUTOR
    return Res(
        AZ_ROLE_ASSIGNMENT,
        f"{account.name}-writer",
        {
            "scope": f"/subscriptions/{SUBSCRIPTION}/resourceGroups/g/providers/Microsoft.Storage/"
            f"storageAccounts/{account.inputs['accountName']}",
            "roleDefinitionId": f"/subscriptions/s/providers/Microsoft.Authorization/"
            f"roleDefinitions/{role}",
            "principalId": "00000000-0000-0000-0000-0000000000aa",
        },
    ).link("scope", account)


def readers(r: dict[str, Res]) -> dict[str, Res]:
    """The DR site's reader grant on a pull's source copy (components/*/cross_cloud.py), one
    per cloud: an IAM policy with s3:GetObject, objectViewer, Storage Blob Data Reader."""
    if "account" in r:
        grant = azure_writer(r["account"])
        role = grants.STORAGE_BLOB_DATA_READER
        grant.inputs["roleDefinitionId"] = (
            grant.inputs["roleDefinitionId"].rsplit("/", 1)[0] + f"/{role}"
        )
    elif r["bucket"].type == GCS_BUCKET:
        grant = gcs_writer(r["bucket"])
        grant.inputs["role"] = grants.GCS_OBJECT_VIEWER
    else:
        grant = s3_writer(r["bucket"])
        document = json.loads(grant.inputs["policy"])
        document["Statement"][0]["Action"] = [grants.S3_GET_OBJECT]
        grant.inputs["policy"] = json.dumps(document)
    grant.name = grant.name.replace("-writer", "-reader")
    return {**r, "reader": grant}


def rtc_rule(rtc: bool = True) -> dict[str, Any]:
    destination: dict[str, Any] = {
        "bucket": "arn:aws:s3:::llm-usw2-checkpoints-def456",
        "storageClass": "STANDARD",
        "metrics": {"status": "Enabled", "eventThreshold": {"minutes": 15.0}},
    }
    if rtc:
        destination["replicationTime"] = {"status": "Enabled", "time": {"minutes": 15.0}}
    return {
        "id": "checkpoints-to-usw2",
        "status": "Enabled",
        "priority": 1.0,
        "filter": {"prefix": ""},
        "deleteMarkerReplication": {"status": "Disabled"},
        "destination": destination,
    }


# --- GCP ------------------------------------------------------------------------------------


def gcs(name: str = "checkpoints", facts: dict[str, str] | None = None) -> dict[str, Res]:
    """A data bucket as components/gcp/bucket.py declares it (a dual-region turbo bucket for a
    gcs-turbo class, a locked retention for weights)."""
    facts = facts or {**CHECKPOINTS, "mechanism": "gcs-turbo", "dr-role": "data-dual-region"}
    key = Res(GCP_CRYPTO_KEY, f"{name}-key", {"rotationPeriod": "7776000s"}, protect=True)
    weights = facts.get("data-class") == "weights"
    inputs: dict[str, Any] = {
        "name": f"llm-use4-{name}-abc123",
        "location": "US-EAST4",
        "encryption": {"defaultKmsKeyName": GCP_KEY},
        "uniformBucketLevelAccess": True,
        "publicAccessPrevention": "enforced",
        "versioning": {"enabled": not weights},
        "forceDestroy": False,
        "labels": labels(facts),
    }
    if facts.get("mechanism") in ("gcs-turbo", "gcs-dual-region"):
        inputs["location"] = "US"
        inputs["customPlacementConfig"] = {"dataLocations": ["US-CENTRAL1", "US-EAST4"]}
        if facts["mechanism"] == "gcs-turbo":
            inputs["rpo"] = "ASYNC_TURBO"
    if weights:
        inputs["retentionPolicy"] = {"retentionPeriod": str(365 * 86400), "isLocked": True}
    bucket = Res(GCS_BUCKET, f"{name}-bucket", inputs, protect=True).link("encryption", key)
    out = {"bucket": bucket, "key": key}
    if facts.get("mechanism") == "dual-write":
        out["writer"] = gcs_writer(bucket)
    return out


# --- Azure ----------------------------------------------------------------------------------


def azure(name: str = "checkpoints", facts: dict[str, str] | None = None) -> dict[str, Res]:
    """A data class's storage account, blob service and container, as
    components/azure/bucket.py declares them."""
    facts = facts or AZURE_CHECKPOINTS
    account_name = f"gpudr{name[:10]}0123"
    vault_key = Res(AZ_VAULT_KEY, f"{name}-vault-key", {"keyName": "data"}, protect=True)
    inputs: dict[str, Any] = {
        "accountName": account_name,
        "kind": "StorageV2",
        "minimumTlsVersion": "TLS1_2",
        "enableHttpsTrafficOnly": True,
        "allowBlobPublicAccess": False,
        "allowSharedKeyAccess": False,
        "encryption": {
            "keySource": "Microsoft.Keyvault",
            "keyVaultProperties": {
                "keyName": "data",
                "keyVaultUri": "https://gpudr-vault.vault.azure.net/",
            },
        },
        "tags": tags(facts),
    }
    if facts.get("data-class") == "weights":
        inputs["immutableStorageWithVersioning"] = {
            "enabled": True,
            "immutabilityPolicy": {
                "immutabilityPeriodSinceCreationInDays": 365.0,
                "allowProtectedAppendWrites": False,
                "state": "Locked",
            },
        }
    account = Res(AZ_STORAGE_ACCOUNT, f"{name}-account", inputs, protect=True).link(
        "encryption", vault_key
    )
    service = Res(
        AZ_BLOB_SERVICE,
        f"{name}-blob-service",
        {
            "accountName": account_name,
            "blobServicesName": "default",
            "isVersioningEnabled": True,
            "changeFeed": {"enabled": True},
        },
        protect=True,
    ).link("accountName", account)
    container = Res(
        AZ_BLOB_CONTAINER,
        f"{name}-container",
        {"accountName": account_name, "containerName": name, "publicAccess": "None"},
        protect=True,
    ).link("accountName", account)
    out = {"account": account, "key": vault_key, "service": service, "container": container}
    if facts.get("mechanism") == "dual-write":
        out["writer"] = azure_writer(account)
    return out


# --- logs: where each site's access, flow and control-plane logs go ---------------------------

LOG_SINK = "llm-use1-logs-abc123"
PUBLIC_FLAGS = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")
PROJECT = "acme-llm-prod"
WORKSPACE_ID = (
    f"/subscriptions/{SUBSCRIPTION}/resourceGroups/g/providers/"
    "Microsoft.OperationalInsights/workspaces/gpudr-llm-use1-logs"
)


def deny_deletes_document(bucket: str) -> str:
    """The log sink's policy: TLS only, and no principal deletes a log (lifecycle expires
    them; a bucket policy does not stop lifecycle)."""
    arn = f"arn:aws:s3:::{bucket}"
    document = json.loads(s3_policy_document(bucket))
    document["Statement"].append(
        {
            "Sid": "DenyLogDeletion",
            "Effect": "Deny",
            "Principal": "*",
            "Action": ["s3:DeleteObject", "s3:DeleteObjectVersion"],
            "Resource": f"{arn}/*",
        }
    )
    return json.dumps(document)


ACCOUNT = "123456789012"


def delivery_grant(bucket: str, prefix: str = "s3/") -> dict[str, Any]:
    """The statement letting S3 server access logging write under `prefix` (components/aws/
    logs.py `sink_policy`)."""
    return {
        "Sid": "S3ServerAccessLogsDelivery",
        "Effect": "Allow",
        "Principal": {"Service": "logging.s3.amazonaws.com"},
        "Action": "s3:PutObject",
        "Resource": f"arn:aws:s3:::{bucket}/{prefix}*",
        "Condition": {"StringEquals": {"aws:SourceAccount": ACCOUNT}},
    }


def log_sink_document(bucket: str) -> str:
    """The log sink's policy as gpudr writes it: TLS only, S3 server access logs delivered
    under `s3/`, and no principal deletes a log (the Deny stays the last statement)."""
    document = json.loads(deny_deletes_document(bucket))
    document["Statement"].insert(-1, delivery_grant(bucket))
    return json.dumps(document)


def s3_log_sink(name: str = "logs") -> dict[str, Res]:
    """A site's S3 access-log bucket: SSE-S3 (the only encryption S3 delivers access logs
    to), versioned, not public, log delivery allowed under `s3/`, deletes denied; untagged as
    data, in no DataBucket component."""
    bucket = Res(
        S3_BUCKET,
        f"{name}-bucket",
        {
            "bucket": LOG_SINK,
            "forceDestroy": False,
            "tags": {"gpudr:system": "llm", "gpudr:site": "use1", "gpudr:dr-role": "site-logs"},
        },
        protect=True,
    )
    return {
        "bucket": bucket,
        "encryption": Res(
            S3_ENCRYPTION,
            f"{name}-encryption",
            {
                "bucket": LOG_SINK,
                "rules": [{"applyServerSideEncryptionByDefault": {"sseAlgorithm": "AES256"}}],
            },
        ).link("bucket", bucket),
        "public": Res(
            S3_PUBLIC_ACCESS_BLOCK,
            f"{name}-public-access",
            {"bucket": LOG_SINK, **dict.fromkeys(PUBLIC_FLAGS, True)},
        ).link("bucket", bucket),
        "policy": Res(
            S3_POLICY,
            f"{name}-policy",
            {"bucket": LOG_SINK, "policy": log_sink_document(LOG_SINK)},
        )
        .link("bucket", bucket)
        .link("policy", bucket),
        "versioning": Res(
            S3_VERSIONING,
            f"{name}-versioning",
            {"bucket": LOG_SINK, "versioningConfiguration": {"status": "Enabled"}},
        ).link("bucket", bucket),
    }


def s3_logging(bucket: Res, sink: Res) -> Res:
    """`bucket`'s server access logs into `sink` under `s3/<bucket>/`, both passed as
    Outputs."""
    return (
        Res(
            S3_LOGGING,
            f"{bucket.name}-access-logs",
            {
                "bucket": bucket.inputs["bucket"],
                "targetBucket": sink.inputs["bucket"],
                "targetPrefix": f"s3/{bucket.inputs['bucket']}/",
            },
        )
        .link("bucket", bucket)
        .link("targetBucket", sink)
    )


def gcs_audit(project: str = PROJECT, service: str = "storage.googleapis.com") -> Res:
    """Cloud Storage Data Access audit logs in a project."""
    return Res(
        GCP_PROJECT_AUDIT_CONFIG,
        f"{project}-{service.split('.')[0]}-audit",
        {
            "project": project,
            "service": service,
            "auditLogConfigs": [{"logType": "DATA_READ"}, {"logType": "DATA_WRITE"}],
        },
    )


def workspace() -> Res:
    return Res(
        AZ_LOG_WORKSPACE,
        "logs-workspace",
        {"workspaceName": "gpudr-llm-use1-logs", "retentionInDays": 90.0},
        protect=True,
    )


def diagnostics(name: str, target: Res, uri: str, categories: list[str]) -> Res:
    """A diagnostic setting on `target` (resource_uri computed from it) into the workspace."""
    return Res(
        AZ_DIAGNOSTIC_SETTING,
        name,
        {
            "name": "gpudr-logs",
            "resourceUri": uri,
            "workspaceId": WORKSPACE_ID,
            "logs": [{"category": c, "enabled": True} for c in categories],
        },
    ).link("resourceUri", target)


def account_id(account: Res) -> str:
    return (
        f"/subscriptions/{SUBSCRIPTION}/resourceGroups/g/providers/Microsoft.Storage/"
        f"storageAccounts/{account.inputs['accountName']}"
    )


def blob_diagnostics(r: dict[str, Res]) -> Res:
    """The blob access logs of an account built by `azure()`: on its blob service."""
    return diagnostics(
        f"{r['account'].name}-blob-logs",
        r["service"],
        f"{account_id(r['account'])}/blobServices/default",
        ["StorageRead", "StorageWrite", "StorageDelete"],
    )


def aks(name: str = "train") -> dict[str, Res]:
    """An AKS cluster with Container Insights and its audit logs, as components/azure do."""
    cluster = Res(
        AKS_CLUSTER,
        f"{name}-cluster",
        {
            "resourceName": f"gpudr-llm-{name}",
            "addonProfiles": {
                "omsagent": {
                    "enabled": True,
                    "config": {"logAnalyticsWorkspaceResourceID": WORKSPACE_ID},
                }
            },
        },
    )
    uri = (
        f"/subscriptions/{SUBSCRIPTION}/resourceGroups/g/providers/"
        f"Microsoft.ContainerService/managedClusters/gpudr-llm-{name}"
    )
    setting = diagnostics(f"{name}-control-plane-logs", cluster, uri, ["kube-audit-admin", "guard"])
    return {"cluster": cluster, "diagnostics": setting}


EKS_LOG_TYPES = ["api", "audit", "authenticator", "controllerManager", "scheduler"]


def eks(name: str = "train") -> dict[str, Res]:
    """An EKS cluster logging its control plane into the log group EKS writes to, declared
    with the site's key and a retention (components/aws/gpu_cluster.py)."""
    cluster_name = f"llm-use1-{name}"
    key = Res(AWS_KMS_KEY, f"{name}-key", {"enableKeyRotation": True}, protect=True)
    group = Res(
        CLOUDWATCH_LOG_GROUP,
        f"{name}-control-plane-logs",
        {
            "name": f"/aws/eks/{cluster_name}/cluster",
            "kmsKeyId": KEY_ARN,
            "retentionInDays": 365.0,
            "region": "us-east-1",
        },
    ).link("kmsKeyId", key)
    cluster = Res(
        EKS_CLUSTER,
        f"{name}-eks",
        {
            "name": cluster_name,
            "enabledClusterLogTypes": list(EKS_LOG_TYPES),
            "region": "us-east-1",
            "encryptionConfig": {"provider": {"keyArn": KEY_ARN}, "resources": ["secrets"]},
        },
    ).link("encryptionConfig", key)
    cluster.dependencies.append(group.urn)
    return {"cluster": cluster, "group": group, "key": key}


DATA_ACCESS_FILTER = (
    f'(logName="projects/{PROJECT}/logs/cloudaudit.googleapis.com%2Fdata_access" AND '
    'resource.type="gcs_bucket" AND resource.labels.bucket_name="llm-use4-checkpoints-abc123")'
)


def gcp_log_routing(project: str = PROJECT) -> dict[str, Res]:
    """A site's Cloud Logging bucket (CMEK, retention), the sink routing its buckets' Data
    Access entries into it, and the exclusion keeping them out of _Default
    (components/gcp/logs.py)."""
    key = Res(GCP_CRYPTO_KEY, "logs-key", {"rotationPeriod": "7776000s"}, protect=True)
    bucket = Res(
        GCP_LOG_BUCKET,
        "logs-bucket",
        {
            "project": project,
            "location": "us-east4",
            "bucketId": "gpudr-llm-use4-logs",
            "retentionDays": 365.0,
            "cmekSettings": {"kmsKeyName": GCP_KEY},
        },
        protect=True,
    ).link("cmekSettings", key)
    sink = Res(
        GCP_LOG_SINK,
        "logs-sink",
        {
            "name": "gpudr-llm-use4-logs",
            "project": project,
            "destination": f"logging.googleapis.com/projects/{project}/locations/us-east4/"
            "buckets/gpudr-llm-use4-logs",
            "filter": DATA_ACCESS_FILTER,
        },
    ).link("destination", bucket)
    exclusion = Res(
        GCP_LOG_EXCLUSION,
        "logs-default-exclusion",
        {"name": "gpudr-llm-use4-logs-routed", "project": project, "filter": DATA_ACCESS_FILTER},
    )
    exclusion.dependencies.append(sink.urn)
    return {"log-key": key, "log-bucket": bucket, "sink": sink, "exclusion": exclusion}
