"""What the pack must refuse, written by hand as a platform team would meet it: unsafe resources
of every guarded type, untagged and of other SDK classes (`UNSAFE`), and edits that try to
switch the pack off on gpudr's own stacks (`TAMPERS`).

Type tokens are spelt out here rather than imported from policies/, so that the same cases run
against an older pack (`python tests/policies/guard_table.py` from another checkout's root).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.policies.harness import Res

KEY_ARN = "arn:aws:kms:us-east-1:123456789012:key/mrk-0123456789"
OPEN = ["0.0.0.0/0", "::/0"]


@dataclass(frozen=True)
class Unsafe:
    """Resources as a hand-written program registers them; `target` is the unsafe one and
    `policies` every policy that must refuse it (each for its own reason)."""

    id: str
    cloud: str
    what: str
    resources: list[Res]
    policies: frozenset[str]

    @property
    def target(self) -> Res:
        return self.resources[0]


def _s3(token: str, name: str, **inputs: Any) -> Res:
    return Res(token, name, {"bucket": name, **inputs})


def _aws() -> list[Unsafe]:
    v2 = _s3("aws:s3/bucketV2:BucketV2", "scratch", forceDestroy=True, acl="public-read")
    plain = _s3("aws:s3/bucket:Bucket", "exports", forceDestroy=False)
    sse = Res(
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
        "exports-sse",
        {
            "bucket": "exports",
            "rules": [{"applyServerSideEncryptionByDefault": {"sseAlgorithm": "AES256"}}],
        },
    ).link("bucket", plain)
    source = _s3("aws:s3/bucket:Bucket", "logs", forceDestroy=False)
    replication = Res(
        "aws:s3/bucketReplicationConfig:BucketReplicationConfig",
        "logs-replication",
        {
            "bucket": "logs",
            "role": "arn:aws:iam::123456789012:role/replication",
            "rules": [
                {
                    "id": "all",
                    "status": "Enabled",
                    "destination": {"bucket": "arn:aws:s3:::logs-dr"},
                }
            ],
        },
    ).link("bucket", source)
    key = Res("aws:kms/key:Key", "data-key", {"enableKeyRotation": False})
    return [
        Unsafe(
            "aws-bucketv2-public-deletable",
            "aws",
            "BucketV2 with force_destroy, public-read ACL, no encryption, not protected",
            [v2],
            frozenset(
                {
                    "data-access-logged",
                    "data-encrypted-at-rest",
                    "no-public-access",
                    "deletion-protection",
                    "bucket-versioning",
                    "encryption-in-transit",
                }
            ),
        ),
        Unsafe(
            "aws-bucket-sse-s3",
            "aws",
            "untagged Bucket encrypted with SSE-S3 (AES256), no public access block",
            [plain, sse],
            frozenset({"data-access-logged", "data-encrypted-at-rest", "no-public-access"}),
        ),
        Unsafe(
            "aws-replication-without-rtc",
            "aws",
            "untagged bucket replicated by CRR without Replication Time Control",
            [replication, source],
            frozenset({"replication-meets-rpo"}),
        ),
        Unsafe(
            "aws-kms-no-rotation",
            "aws",
            "KMS key without rotation",
            [key],
            frozenset({"kms-key-rotation", "deletion-protection"}),
        ),
        *_aws_clusters(),
    ]


def _aws_clusters() -> list[Unsafe]:
    eks = Res(
        "aws:eks/cluster:Cluster",
        "train",
        {"vpcConfig": {"endpointPublicAccess": True, "publicAccessCidrs": OPEN}},
    )
    eks_default = Res("aws:eks/cluster:Cluster", "serve", {"vpcConfig": {"subnetIds": ["s-1"]}})
    return [
        Unsafe(
            "aws-eks-open-api",
            "aws",
            "EKS public endpoint open to 0.0.0.0/0 and ::/0",
            [eks],
            frozenset({"cluster-control-plane-logged", "kubernetes-api-not-public"}),
        ),
        Unsafe(
            "aws-eks-default-endpoint",
            "aws",
            "EKS with the default endpoint settings (public, 0.0.0.0/0)",
            [eks_default],
            frozenset({"cluster-control-plane-logged", "kubernetes-api-not-public"}),
        ),
    ]


def _gcp() -> list[Unsafe]:
    no_cmek = Res(
        "gcp:storage/bucket:Bucket",
        "features",
        {
            "name": "features",
            "location": "US-EAST4",
            "uniformBucketLevelAccess": True,
            "publicAccessPrevention": "enforced",
        },
        protect=True,
    )
    public = Res(
        "gcp:storage/bucket:Bucket",
        "share",
        {"name": "share", "location": "US", "forceDestroy": True},
    )
    everyone = Res(
        "gcp:storage/bucketIAMMember:BucketIAMMember",
        "share-public",
        {"bucket": "share", "role": "roles/storage.objectViewer", "member": "allUsers"},
    ).link("bucket", public)
    gke = Res("gcp:container/cluster:Cluster", "train", {"name": "train", "location": "us-east4"})
    key = Res("gcp:kms/cryptoKey:CryptoKey", "data", {"keyRing": "r"}, protect=True)
    return [
        Unsafe(
            "gcp-bucket-no-cmek",
            "gcp",
            "untagged GCS bucket with Google-managed encryption",
            [no_cmek],
            frozenset({"data-access-logged", "data-encrypted-at-rest"}),
        ),
        Unsafe(
            "gcp-bucket-public-deletable",
            "gcp",
            "GCS bucket granted to allUsers, no public access prevention, force_destroy",
            [public, everyone],
            frozenset(
                {
                    "data-access-logged",
                    "no-public-access",
                    "deletion-protection",
                    "data-encrypted-at-rest",
                }
            ),
        ),
        Unsafe(
            "gcp-gke-open-api",
            "gcp",
            "GKE cluster with a public endpoint and no authorized networks",
            [gke],
            frozenset({"cluster-control-plane-logged", "kubernetes-api-not-public"}),
        ),
        Unsafe(
            "gcp-key-no-rotation",
            "gcp",
            "Cloud KMS key without rotation period",
            [key],
            frozenset({"kms-key-rotation"}),
        ),
    ]


def _azure() -> list[Unsafe]:
    account = Res(
        "azure-native:storage:StorageAccount",
        "media",
        {
            "accountName": "media",
            "kind": "StorageV2",
            "allowBlobPublicAccess": True,
            "minimumTlsVersion": "TLS1_2",
            "enableHttpsTrafficOnly": True,
        },
        protect=True,
    )
    versioned = Res(
        "azure-native:storage/v20230101:StorageAccount",
        "legacy",
        {"accountName": "legacy", "minimumTlsVersion": "TLS1_0", "allowSharedKeyAccess": True},
        protect=True,
    )
    vault = Res(
        "azure-native:keyvault:Vault",
        "keys",
        {"properties": {"enableSoftDelete": True, "enablePurgeProtection": False}},
        protect=True,
    )
    aks = Res(
        "azure-native:containerservice:ManagedCluster",
        "train",
        {"apiServerAccessProfile": {"authorizedIPRanges": ["0.0.0.0/0"]}},
    )
    return [
        Unsafe(
            "azure-account-public-blob",
            "azure",
            "untagged storage account with public blob access and Microsoft-managed keys",
            [account],
            frozenset({"data-access-logged", "no-public-access", "data-encrypted-at-rest"}),
        ),
        Unsafe(
            "azure-account-api-version-tls10",
            "azure",
            "storage account through an API-version module: TLS 1.0, shared keys on",
            [versioned],
            frozenset(
                {
                    "data-access-logged",
                    "encryption-in-transit",
                    "no-public-access",
                    "data-encrypted-at-rest",
                }
            ),
        ),
        Unsafe(
            "azure-vault-no-purge-protection",
            "azure",
            "Key Vault without purge protection",
            [vault],
            frozenset({"deletion-protection"}),
        ),
        Unsafe(
            "azure-aks-open-api",
            "azure",
            "AKS authorized IP ranges 0.0.0.0/0",
            [aks],
            frozenset({"cluster-control-plane-logged", "kubernetes-api-not-public"}),
        ),
    ]


def _subtle() -> list[Unsafe]:
    """What a first review of the guard found passing: narrowed denies, inline settings,
    another account's block, IPv4-mapped ranges, second endpoints, other providers."""
    mapped = Res(
        "aws:eks/cluster:Cluster",
        "mapped",
        {"vpcConfig": {"publicAccessCidrs": ["::ffff:0.0.0.0/96"]}},
    )
    dns = Res(
        "gcp:container/cluster:Cluster",
        "dns",
        {
            "privateClusterConfig": {"enablePrivateEndpoint": True},
            "controlPlaneEndpointsConfig": {"dnsEndpointConfig": {"allowExternalTraffic": True}},
        },
    )
    return [
        *_subtle_storage(),
        Unsafe(
            "aws-eks-ipv4-mapped",
            "aws",
            "EKS public endpoint open to ::ffff:0.0.0.0/96",
            [mapped],
            frozenset({"cluster-control-plane-logged", "kubernetes-api-not-public"}),
        ),
        Unsafe(
            "aws-kms-external-key",
            "aws",
            "KMS key with imported material (cannot rotate)",
            [Res("aws:kms/externalKey:ExternalKey", "imported", {}, protect=True)],
            frozenset({"kms-key-rotation"}),
        ),
        Unsafe(
            "aws-native-bucket",
            "aws",
            "S3 bucket declared through aws-native",
            [Res("aws-native:s3:Bucket", "native", {})],
            frozenset({"guarded-class-supported"}),
        ),
        Unsafe(
            "gcp-gke-dns-endpoint",
            "gcp",
            "GKE private IP endpoint, DNS endpoint open",
            [dns],
            frozenset({"cluster-control-plane-logged", "kubernetes-api-not-public"}),
        ),
        Unsafe(
            "azure-classic-account",
            "azure",
            "storage account through the classic azure provider",
            [Res("azure:storage/account:Account", "classic", {"allowNestedItemsToBePublic": True})],
            frozenset({"guarded-class-supported"}),
        ),
    ]


def _subtle_storage() -> list[Unsafe]:
    """Buckets whose protection a first look took for granted: a narrowed TLS deny, inline
    grants and replication, another account's public access block."""
    tls = _s3("aws:s3/bucket:Bucket", "narrow", forceDestroy=False)
    deny = {
        "Effect": "Deny",
        "Principal": "*",
        "Action": "s3:*",
        "Resource": ["arn:aws:s3:::narrow", "arn:aws:s3:::narrow/*"],
        "Condition": {
            "Bool": {"aws:SecureTransport": "false"},
            "IpAddress": {"aws:SourceIp": "192.0.2.1/32"},
        },
    }
    policy = Res(
        "aws:s3/bucketPolicy:BucketPolicy",
        "narrow-policy",
        {"bucket": "narrow", "policy": json.dumps({"Statement": [deny]})},
    ).link("bucket", tls)
    inline = _s3(
        "aws:s3/bucketV2:BucketV2",
        "inline",
        grants=[
            {
                "type": "Group",
                "uri": "http://acs.amazonaws.com/groups/global/AllUsers",
                "permissions": ["READ"],
            }
        ],
        replicationConfiguration={
            "role": "arn:aws:iam::1:role/r",
            "rules": [{"status": "Enabled", "destination": {"bucket": "arn:aws:s3:::x"}}],
        },
    )
    other_account = _s3("aws:s3/bucket:Bucket", "elsewhere")
    block = Res(
        "aws:s3/accountPublicAccessBlock:AccountPublicAccessBlock",
        "other-account-block",
        {
            "accountId": "999999999999",
            "blockPublicAcls": True,
            "blockPublicPolicy": True,
            "ignorePublicAcls": True,
            "restrictPublicBuckets": True,
        },
    )
    return [
        Unsafe(
            "aws-tls-deny-narrowed",
            "aws",
            "TLS-only Deny narrowed by a second condition",
            [tls, policy],
            frozenset({"data-access-logged", "encryption-in-transit"}),
        ),
        Unsafe(
            "aws-inline-grant-and-replication",
            "aws",
            "BucketV2 with an inline AllUsers grant and inline replication without RTC",
            [inline],
            frozenset({"data-access-logged", "no-public-access", "replication-meets-rpo"}),
        ),
        Unsafe(
            "aws-other-accounts-block",
            "aws",
            "bucket whose only public access block is another account's",
            [other_account, block],
            frozenset({"data-access-logged", "no-public-access"}),
        ),
    ]


def _deny_deletes(name: str) -> str:
    objects = f"arn:aws:s3:::{name}/*"
    deny = {
        "Effect": "Deny",
        "Principal": "*",
        "Action": ["s3:DeleteObject", "s3:DeleteObjectVersion"],
        "Resource": objects,
    }
    return json.dumps({"Version": "2012-10-17", "Statement": [deny]})


def _posing_sink(name: str, **bucket_inputs: Any) -> list[Res]:
    """A bucket dressed as a site's access-log sink to keep SSE-S3 (AES256): another bucket's
    access logs go to it and its policy denies deletes. `[bucket, logged source, its logging,
    encryption, policy]`."""
    sink = _s3("aws:s3/bucket:Bucket", name, **bucket_inputs)
    source = _s3("aws:s3/bucket:Bucket", f"{name}-source")
    logging = (
        Res(
            "aws:s3/bucketLogging:BucketLogging",
            f"{name}-source-logs",
            {"bucket": source.inputs["bucket"], "targetBucket": name},
        )
        .link("bucket", source)
        .link("targetBucket", sink)
    )
    sse = Res(
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
        f"{name}-sse",
        {
            "bucket": name,
            "rules": [{"applyServerSideEncryptionByDefault": {"sseAlgorithm": "AES256"}}],
        },
    ).link("bucket", sink)
    policy = Res(
        "aws:s3/bucketPolicy:BucketPolicy",
        f"{name}-policy",
        {"bucket": name, "policy": _deny_deletes(name)},
    ).link("bucket", sink)
    return [sink, source, logging, sse, policy]


def _log_sinks() -> list[Unsafe]:
    """Issue 15: buckets passing as an access-log sink to keep SSE-S3 instead of the site key
    (data-encrypted-at-rest's one exception)."""
    component = Res("gpudr:storage:DataBucket", "use1-weights", {})
    in_component = _posing_sink("weights-as-logs", tags={"gpudr:dr-role": "site-logs"})
    in_component[0].parent = component.urn
    tagged = _posing_sink("datasets-as-logs", tags={"gpudr:data-class": "datasets"})
    replicated = _posing_sink("replicated-logs")
    replicated.append(
        Res(
            "aws:s3/bucketReplicationConfig:BucketReplicationConfig",
            "replicated-logs-replication",
            {
                "bucket": "replicated-logs",
                "role": "arn:aws:iam::123456789012:role/replication",
                "rules": [
                    {"id": "all", "status": "Enabled", "destination": {"bucket": "arn:aws:s3:::x"}}
                ],
            },
        ).link("bucket", replicated[0])
    )
    deletable = _posing_sink("deletable-logs")[:-1]  # no deny-delete policy
    return [
        Unsafe(
            "aws-data-bucket-posing-as-log-sink",
            "aws",
            "DataBucket's bucket re-tagged as site logs, SSE-S3, deletes denied, logs sent to it",
            [*in_component, component],
            frozenset({"data-encrypted-at-rest", "data-access-logged"}),
        ),
        Unsafe(
            "aws-data-tagged-log-sink",
            "aws",
            "bucket still tagged gpudr:data-class, SSE-S3, receiving another bucket's logs",
            tagged,
            frozenset({"data-encrypted-at-rest", "data-access-logged"}),
        ),
        Unsafe(
            "aws-replicated-log-sink",
            "aws",
            "log sink with SSE-S3 that replicates its contents elsewhere",
            replicated,
            frozenset({"data-encrypted-at-rest"}),
        ),
        Unsafe(
            "aws-deletable-log-sink",
            "aws",
            "log sink with SSE-S3 whose objects anyone allowed may delete",
            deletable,
            frozenset({"data-encrypted-at-rest"}),
        ),
    ]


def _storage_unlogged() -> list[Unsafe]:
    """Issue 15: data access logged short of what the pack requires."""
    audited = Res(
        "gcp:storage/bucket:Bucket",
        "audited",
        {"name": "audited", "project": "acme-prod", "location": "US-EAST4"},
        protect=True,
    )
    exempted = Res(
        "gcp:projects/iAMAuditConfig:IAMAuditConfig",
        "storage-audit",
        {
            "project": "acme-prod",
            "service": "storage.googleapis.com",
            "auditLogConfigs": [
                {"logType": "DATA_READ", "exemptedMembers": ["serviceAccount:etl@acme.iam"]},
                {"logType": "DATA_WRITE"},
            ],
        },
    )
    account = Res(
        "azure-native:storage/v20230101:StorageAccount",
        "blobs",
        {"accountName": "blobs", "minimumTlsVersion": "TLS1_2"},
        protect=True,
    )
    on_account = Res(
        "azure-native:insights:DiagnosticSetting",
        "blobs-logs",
        {
            "resourceUri": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Storage/"
            "storageAccounts/blobs",
            "workspaceId": "/subscriptions/s/resourceGroups/g/providers/"
            "Microsoft.OperationalInsights/workspaces/w",
            "logs": [{"categoryGroup": "allLogs", "enabled": True}],
        },
    )
    return [
        Unsafe(
            "gcp-bucket-audit-exempts-a-reader",
            "gcp",
            "GCS bucket whose project's Data Access audit logs exempt a service account",
            [audited, exempted],
            frozenset({"data-access-logged"}),
        ),
        Unsafe(
            "azure-diagnostics-on-the-account",
            "azure",
            "API-version storage account whose diagnostic setting is on the account, not its blobs",
            [account, on_account],
            frozenset({"data-access-logged"}),
        ),
    ]


def _control_planes_unlogged() -> list[Unsafe]:
    """Issue 15: clusters whose control plane logs leave out the audit trail or its context."""
    eks = Res("aws:eks/cluster:Cluster", "partial", {"enabledClusterLogTypes": ["api", "audit"]})
    gke = Res(
        "gcp:container/cluster:Cluster",
        "defaults",
        {"loggingConfig": {"enableComponents": ["SYSTEM_COMPONENTS", "WORKLOADS"]}},
    )
    aks = Res(
        "azure-native:containerservice:ManagedCluster",
        "quiet",
        {"resourceName": "quiet", "addonProfiles": {"omsagent": {"enabled": False}}},
    )
    aks_logs = Res(
        "azure-native:monitor:DiagnosticSetting",
        "quiet-logs",
        {
            "resourceUri": "/subscriptions/s/resourceGroups/g/providers/"
            "Microsoft.ContainerService/managedClusters/quiet",
            "workspaceId": "w",
            "logs": [{"category": "kube-apiserver", "enabled": True}],
        },
    ).link("resourceUri", aks)
    policies = frozenset({"cluster-control-plane-logged"})
    return [
        Unsafe("aws-eks-partial-control-plane-logs", "aws", "EKS logging api and audit only",
               [eks], policies),
        Unsafe("gcp-gke-default-logging", "gcp",
               "GKE logging system components and workloads only (the default)", [gke], policies),
        Unsafe("azure-aks-no-audit-log", "azure",
               "AKS with an API server log but no kube-audit, Container Insights off",
               [aks, aks_logs], policies),
    ]  # fmt: skip


# --- review 15: logged in name only -------------------------------------------------------------

S3_LOGGING = "aws:s3/bucketLogging:BucketLogging"
S3_SSE = "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
LOG_DELIVERY = "logging.s3.amazonaws.com"


def _delivery(name: str) -> dict[str, Any]:
    return {
        "Effect": "Allow",
        "Principal": {"Service": LOG_DELIVERY},
        "Action": "s3:PutObject",
        "Resource": f"arn:aws:s3:::{name}/*",
    }


def _log_bucket(name: str, algorithm: str = "AES256", grant: bool = True) -> list[Res]:
    """`[bucket, its default encryption, its policy]`: deletes denied, log delivery allowed
    on the whole bucket unless `grant` is False."""
    bucket = _s3("aws:s3/bucket:Bucket", name)
    default = {
        "sseAlgorithm": algorithm,
        **({"kmsMasterKeyId": KEY_ARN} if "kms" in algorithm else {}),
    }
    sse = Res(
        S3_SSE,
        f"{name}-sse",
        {"bucket": name, "rules": [{"applyServerSideEncryptionByDefault": default}]},
    )
    statements = json.loads(_deny_deletes(name))["Statement"] + ([_delivery(name)] if grant else [])
    policy = Res(
        "aws:s3/bucketPolicy:BucketPolicy",
        f"{name}-policy",
        {"bucket": name, "policy": json.dumps({"Statement": statements})},
    )
    return [bucket, sse.link("bucket", bucket), policy.link("bucket", bucket)]  # fmt: skip


def _logs_into(source: Res, target: str, linked: Res | None = None) -> Res:
    """`source`'s access logs sent to bucket name `target` (computed from `linked`, if given)."""
    name = source.inputs["bucket"]
    inputs = {"bucket": name, "targetBucket": target, "targetPrefix": f"{name}/"}
    logging = Res(S3_LOGGING, f"{name}-access-logs", inputs).link("bucket", source)
    return logging.link("targetBucket", linked) if linked is not None else logging


def _access_logs_undelivered() -> list[Unsafe]:
    """S3 buckets whose server access logging is declared but delivers nowhere."""
    typo = _s3("aws:s3/bucket:Bucket", "orders")
    itself = _s3("aws:s3/bucket:Bucket", "invoices")
    kms_source, kms_sink = (
        _s3("aws:s3/bucket:Bucket", "ledger"),
        _log_bucket("ledger-logs", "aws:kms"),
    )
    bare_source, bare_sink = (
        _s3("aws:s3/bucket:Bucket", "exports-2"),
        _log_bucket("exports-2-logs", grant=False),
    )
    data_source = _s3("aws:s3/bucket:Bucket", "features-2")
    hand_written = _log_bucket("hand-written-datasets", grant=False)  # untagged, holds data
    policies = frozenset({"data-access-logged"})
    return [
        Unsafe("aws-access-logs-to-a-bucket-not-in-the-stack", "aws",
               "access logs sent to a bucket name no bucket of the stack has (a typo)",
               [typo, _logs_into(typo, "attacker-or-typo-bucket")], policies),
        Unsafe("aws-access-logs-into-itself", "aws", "bucket logging its access into itself",
               [itself, _logs_into(itself, "invoices", itself)], policies),
        Unsafe("aws-access-logs-to-an-sse-kms-bucket", "aws",
               "access logs sent to an SSE-KMS bucket (S3 delivers none there)",
               [kms_source, *kms_sink, _logs_into(kms_source, "ledger-logs", kms_sink[0])],
               policies),
        Unsafe("aws-access-logs-without-delivery-grant", "aws",
               "access logs sent to a bucket whose policy lets no logging.s3.amazonaws.com write",
               [bare_source, *bare_sink, _logs_into(bare_source, "exports-2-logs", bare_sink[0])],
               policies),
        Unsafe("aws-sse-s3-bucket-posing-as-undelivered-sink", "aws",
               "untagged SSE-S3 bucket kept as a 'log sink' that no access log can reach",
               [*hand_written, data_source, _logs_into(data_source, "hand-written-datasets",
                                                       hand_written[0])],
               frozenset({"data-encrypted-at-rest"})),
    ]  # fmt: skip


def _eks_log_groups() -> list[Unsafe]:
    """EKS clusters whose control-plane logs land in a group EKS creates: no key, no expiry."""
    logs = {
        "enabledClusterLogTypes": ["api", "audit", "authenticator", "controllerManager",
                                   "scheduler"],
        "encryptionConfig": {"provider": {"keyArn": KEY_ARN}, "resources": ["secrets"]},
        "vpcConfig": {"endpointPublicAccess": False, "endpointPrivateAccess": True},
    }  # fmt: skip
    bare = Res("aws:eks/cluster:Cluster", "research", {"name": "research", **logs})
    weak = Res("aws:eks/cluster:Cluster", "tuning", {"name": "tuning", **logs})
    group = Res(
        "aws:cloudwatch/logGroup:LogGroup", "tuning-logs", {"name": "/aws/eks/tuning/cluster"}
    )
    other = Res("aws:eks/cluster:Cluster", "serving", {"name": "serving", **logs})
    misnamed = Res(
        "aws:cloudwatch/logGroup:LogGroup",
        "serving-logs",
        {"name": "/aws/eks/serving-cluster/cluster", "kmsKeyId": KEY_ARN, "retentionInDays": 365},
    )
    policies = frozenset({"cluster-control-plane-logged"})
    return [
        Unsafe("aws-eks-no-control-plane-log-group", "aws",
               "EKS logging every type, its log group left to EKS (no key, kept forever)",
               [bare], policies),
        Unsafe("aws-eks-log-group-unencrypted-forever", "aws",
               "EKS log group declared without kms_key_id or retention_in_days", [weak, group],
               policies),
        Unsafe("aws-eks-log-group-of-another-name", "aws",
               "EKS log group declared under a name EKS does not write to", [other, misnamed],
               policies),
    ]  # fmt: skip


DATA_ACCESS = 'logName:"cloudaudit.googleapis.com%2Fdata_access"'


def _gcs_audited(project: str) -> list[Res]:
    """A GCS bucket whose project's Data Access audit logs are on (data-access-logged's
    bucket check passes): what follows drops the entries they write."""
    inputs = {"name": f"{project}-data", "project": project}
    bucket = Res("gcp:storage/bucket:Bucket", f"{project}-data", inputs)
    audit = Res(
        "gcp:projects/iAMAuditConfig:IAMAuditConfig",
        f"{project}-storage-audit",
        {
            "project": project,
            "service": "storage.googleapis.com",
            "auditLogConfigs": [{"logType": "DATA_READ"}, {"logType": "DATA_WRITE"}],
        },
    )
    return [bucket, audit]


def _sink(project: str, filter_: str, destination: str) -> Res:
    return Res(
        "gcp:logging/projectSink:ProjectSink",
        f"{project}-sink",
        {"name": "audit", "project": project, "filter": filter_, "destination": destination},
    )


def _gcs_data_access_dropped() -> list[Unsafe]:
    """GCS Data Access entries written, then dropped before any sink keeps them."""

    def exclusion(project: str) -> Res:
        inputs = {"name": "drop", "project": project, "filter": DATA_ACCESS}
        return Res("gcp:logging/projectExclusion:ProjectExclusion", f"{project}-drop", inputs)

    weak_bucket = Res(
        "gcp:logging/projectBucketConfig:ProjectBucketConfig",
        "acme-weak-logs",
        {"project": "acme-weak", "location": "global", "bucketId": "audit"},
    )
    weak_destination = "logging.googleapis.com/projects/acme-weak/locations/global/buckets/audit"
    weak_sink = _sink("acme-weak", DATA_ACCESS, weak_destination).link("destination", weak_bucket)
    negated = _sink("acme-neg", f"NOT {DATA_ACCESS}", "logging.googleapis.com/projects/acme-neg/x")
    default = Res(
        "gcp:logging/projectSink:ProjectSink",
        "acme-default-sink",
        {
            "name": "_Default",
            "project": "acme-default",
            "destination": "logging.googleapis.com/projects/acme-default/locations/global/"
            "buckets/_Default",
            "exclusions": [{"name": "drop-reads", "filter": DATA_ACCESS}],
        },
    )
    policies = frozenset({"data-access-logged"})
    return [
        Unsafe("gcp-data-access-excluded-unrouted", "gcp",
               "exclusion dropping GCS Data Access entries that no sink routes",
               [exclusion("acme-drop"), *_gcs_audited("acme-drop")], policies),
        Unsafe("gcp-data-access-routed-to-a-weak-log-bucket", "gcp",
               "Data Access entries excluded, routed to a log bucket without CMEK or retention",
               [exclusion("acme-weak"), weak_sink, weak_bucket, *_gcs_audited("acme-weak")],
               policies),
        Unsafe("gcp-data-access-sink-negated", "gcp",
               "Data Access entries excluded, the only sink naming them filters them out",
               [exclusion("acme-neg"), negated, *_gcs_audited("acme-neg")], policies),
        Unsafe("gcp-default-sink-excludes-data-access", "gcp",
               "the _Default sink excluding Data Access entries, no sink routing them",
               [default, *_gcs_audited("acme-default")], policies),
    ]  # fmt: skip


UNSAFE = [
    *_aws(),
    *_gcp(),
    *_azure(),
    *_subtle(),
    *_log_sinks(),
    *_storage_unlogged(),
    *_control_planes_unlogged(),
    *_access_logs_undelivered(),
    *_eks_log_groups(),
    *_gcs_data_access_dropped(),
]


# --- tampering with gpudr's own stacks ---------------------------------------------------------

Records = list[dict[str, Any]]
DATA_ROLES = ("data-source", "data-replica", "data-dual-region")
BUCKETS = (
    "aws:s3/bucket:Bucket",
    "gcp:storage/bucket:Bucket",
    "azure-native:storage:StorageAccount",
)
REPLICATION = (
    "aws:s3/bucketReplicationConfig:BucketReplicationConfig",
    "azure-native:storage:ObjectReplicationPolicy",
    "gcp:storage/transferJob:TransferJob",
    "aws:datasync/task:Task",
)
SIZING = ("burst-bytes", "steady-kbps", "steady-mbps", "required-mbps", "interval-s")


def _labels(record: dict[str, Any]) -> tuple[dict[str, Any], str, Callable[[str], str]]:
    """The record's tags or labels, their key prefix and the value encoder."""
    if record["type"].startswith("gcp:"):
        return record["inputs"].setdefault("labels", {}), "gpudr-", lambda v: v.replace(".", "-")
    return record["inputs"].setdefault("tags", {}), "gpudr:", lambda v: v


def _tag(record: dict[str, Any], name: str) -> str | None:
    found, prefix, _ = _labels(record)
    value = found.get(prefix + name)
    return None if value is None else str(value)


def _data_buckets(records: Records) -> list[dict[str, Any]]:
    return [r for r in records if r["type"] in BUCKETS and _tag(r, "dr-role") in DATA_ROLES]


def _set(record: dict[str, Any], name: str, value: str) -> None:
    found, prefix, encode = _labels(record)
    found[prefix + name] = encode(value)


def quota_inflated(records: Records) -> Records:
    for r in _data_buckets(records):
        _set(r, "quota-mbps", "1000000000000")
    return records


def sizing_zeroed(records: Records) -> Records:
    for r in _data_buckets(records):
        for name in SIZING:
            _set(r, name, "0")
    return records


GRANTS = (
    "aws:iam/policy:Policy",
    "aws:iam/rolePolicy:RolePolicy",
    "gcp:storage/bucketIAMMember:BucketIAMMember",
    "azure-native:authorization:RoleAssignment",
)


def relabelled_dual_write(records: Records) -> Records:
    """Every class claims dual write; every replication, pull and write grant is deleted."""
    for r in _data_buckets(records):
        _set(r, "mechanism", "dual-write")
        _set(r, "rpo-s", "0")
        r["inputs"].pop("customPlacementConfig", None)  # a dual-region bucket made single
        r["inputs"].pop("rpo", None)
    return [r for r in records if r["type"] not in (*REPLICATION, *GRANTS)]


def relabelled_pull(records: Records) -> Records:
    """Every class claims a scheduled pull (whose job lives in another stack); every
    replication, pull and grant is deleted."""
    for r in _data_buckets(records):
        _set(r, "mechanism", "sts")
        r["inputs"].pop("customPlacementConfig", None)
        r["inputs"].pop("rpo", None)
    return [r for r in records if r["type"] not in (*REPLICATION, *GRANTS)]


def rpo_none(records: Records) -> Records:
    """No RPO anywhere (`rpo-s=none`), every replication, pull and grant deleted."""
    for r in _data_buckets(records):
        _set(r, "rpo-s", "none")
        r["inputs"].pop("customPlacementConfig", None)
    return [r for r in records if r["type"] not in (*REPLICATION, *GRANTS)]


SWAP = {
    "data-source": "data-replica",
    "data-replica": "data-source",
    "primary": "dr",
    "dr": "primary",
}


def roles_swapped(records: Records) -> Records:
    """Every copy and every resource claims the other site's role (a source posing as a replica
    skips the push checks, which run on the source), replication and grants deleted."""
    for r in records:
        found, prefix, _ = _labels(r)
        for name in ("dr-role", "site-role"):
            value = found.get(prefix + name)
            if value in SWAP:
                found[prefix + name] = SWAP[value]
    return [r for r in records if r["type"] not in (*REPLICATION, *GRANTS)]


def replication_scoped(records: Records) -> Records:
    """Replication that copies nothing: S3 rules and Azure object replication filtered to a
    prefix nobody writes, Storage Transfer jobs with a prefix condition, DataSync tasks that
    exclude everything. A stack that holds none of these is left as it is."""
    nothing = "no-such-prefix/"
    for r in records:
        inputs = r["inputs"]
        if r["type"] == REPLICATION[0]:
            for rule in inputs.get("rules") or []:
                rule["filter"] = {"prefix": nothing}
        elif r["type"] == REPLICATION[1]:
            for rule in inputs.get("rules") or []:
                rule["filters"] = {"prefixMatch": [nothing]}
        elif r["type"] == REPLICATION[2]:
            inputs.setdefault("transferSpec", {})["objectConditions"] = {
                "includePrefixes": [nothing]
            }
        elif r["type"] == REPLICATION[3]:
            inputs["excludes"] = {"filterType": "SIMPLE_PATTERN", "value": "*"}
    return records


def tags_stripped(records: Records) -> Records:
    for r in _data_buckets(records):
        found, prefix, _ = _labels(r)
        del found[prefix + "dr-role"]
    return records


def retyped(records: Records) -> Records:
    """The sizing edit, with the buckets re-typed (`retyped_only`)."""
    return retyped_only(sizing_zeroed(records))


def retyped_only(records: Records) -> Records:
    """S3 buckets re-typed as BucketV2, Azure accounts through an API-version module, URNs
    and dependencies kept consistent."""
    renames = {
        "aws:s3/bucket:Bucket": "aws:s3/bucketV2:BucketV2",
        "azure-native:storage:StorageAccount": "azure-native:storage/v20230101:StorageAccount",
    }
    moved: dict[str, str] = {}
    for r in records:
        if r["type"] in renames:
            new = renames[r["type"]]
            moved[r["urn"]] = r["urn"].replace(f"::{r['type']}::", f"::{new}::")
            r["type"], r["urn"] = new, moved[r["urn"]]
    for r in records:
        r["dependencies"] = [moved.get(d, d) for d in r.get("dependencies") or []]
        r["property_dependencies"] = {
            k: [moved.get(d, d) for d in v]
            for k, v in (r.get("property_dependencies") or {}).items()
        }
        if r.get("parent") in moved:
            r["parent"] = moved[r["parent"]]
    return records


LOGGING = (
    "aws:s3/bucketLogging:BucketLogging",
    "aws:s3/bucketLoggingV2:BucketLoggingV2",
    "gcp:projects/iAMAuditConfig:IAMAuditConfig",
    "azure-native:monitor:DiagnosticSetting",
)
S3_ENCRYPTION = (
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration"
)


def access_logging_removed(records: Records) -> Records:
    """Every access log, audit config and diagnostic setting deleted, inline logging too."""
    for r in records:
        r["inputs"].pop("logging", None)
        r["inputs"].pop("loggings", None)
    return [r for r in records if r["type"] not in LOGGING]


def posing_as_log_sink(records: Records) -> Records:
    """Every S3 data bucket dressed as the site's access-log sink to keep SSE-S3 (AES256)
    instead of the site key: data tags replaced by the sink's role, its encryption switched to
    AES256. Its URN still names the DataBucket component it belongs to."""
    urns = {r["urn"] for r in _data_buckets(records) if r["type"] == BUCKETS[0]}
    for r in records:
        if r["urn"] in urns:
            found, prefix, _ = _labels(r)
            for key in [k for k in found if k.startswith(prefix)]:
                if key not in (prefix + "system", prefix + "site", prefix + "site-role"):
                    del found[key]
            found[prefix + "dr-role"] = "site-logs"
        elif (
            r["type"] == S3_ENCRYPTION
            and set((r.get("property_dependencies") or {}).get("bucket") or []) & urns
        ):
            r["inputs"]["rules"] = [
                {"applyServerSideEncryptionByDefault": {"sseAlgorithm": "AES256"}}
            ]
            r["property_dependencies"].pop("rules", None)
    return records


def delivery_grant_removed(records: Records) -> Records:
    """The log sink's statement letting logging.s3.amazonaws.com write removed: every bucket
    still declares its logging, none is delivered."""
    for r in records:
        if r["type"] != "aws:s3/bucketPolicy:BucketPolicy":
            continue
        document = json.loads(r["inputs"]["policy"])
        kept = [
            s
            for s in document["Statement"]
            if LOG_DELIVERY not in json.dumps(s.get("Principal", ""))
        ]
        if len(kept) != len(document["Statement"]):
            r["inputs"]["policy"] = json.dumps({**document, "Statement": kept})
    return records


def control_plane_log_groups_removed(records: Records) -> Records:
    """The EKS clusters' log groups deleted: EKS would create them with no key and no expiry."""
    return [
        r
        for r in records
        if not (
            r["type"] == "aws:cloudwatch/logGroup:LogGroup"
            and str(r["inputs"].get("name", "")).startswith("/aws/eks/")
        )
    ]


def log_routing_sink_removed(records: Records) -> Records:
    """The GCP site's sink deleted, the exclusion on _Default kept: the entries it routed,
    Data Access included, are dropped."""
    return [r for r in records if r["type"] != "gcp:logging/projectSink:ProjectSink"]


def log_keys_and_retention_removed(records: Records) -> Records:
    """The control-plane log groups and the GCP log bucket stripped of key and retention."""
    for r in records:
        if r["type"] == "aws:cloudwatch/logGroup:LogGroup":
            for key in ("kmsKeyId", "retentionInDays"):
                r["inputs"].pop(key, None)
        elif r["type"] == "gcp:logging/projectBucketConfig:ProjectBucketConfig":
            for key in ("cmekSettings", "retentionDays"):
                r["inputs"].pop(key, None)
    return records


TAMPERS: dict[str, Callable[[Records], Records]] = {
    "quota-inflated": quota_inflated,
    "sizing-zeroed": sizing_zeroed,
    "relabelled-dual-write-replication-removed": relabelled_dual_write,
    "relabelled-pull-replication-removed": relabelled_pull,
    "rpo-none-replication-removed": rpo_none,
    "replication-scoped-to-nothing": replication_scoped,
    "roles-swapped-replication-removed": roles_swapped,
    "dr-role-stripped": tags_stripped,
    "retyped-and-zeroed": retyped,
    "access-logging-removed": access_logging_removed,
    "data-bucket-posing-as-log-sink": posing_as_log_sink,
    "log-delivery-grant-removed": delivery_grant_removed,
    "control-plane-log-groups-removed": control_plane_log_groups_removed,
    "log-routing-sink-removed": log_routing_sink_removed,
    "log-keys-and-retention-removed": log_keys_and_retention_removed,
}
# Not a tamper the pack must refuse (a BucketV2 is as safe as a Bucket): it must change nothing.
TRANSFORMS = {**TAMPERS, "retyped-only": retyped_only}


def changes(records: Records, tamper: str) -> bool:
    """Whether the tamper changes anything in this stack (a stack with no replication of its
    own has nothing to scope)."""
    return tampered(records, tamper) != json.loads(json.dumps(records))


def tampered(records: Records, tamper: str) -> Records:
    return TRANSFORMS[tamper](json.loads(json.dumps(copy.deepcopy(records))))
