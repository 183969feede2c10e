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
    eks = Res(
        "aws:eks/cluster:Cluster",
        "train",
        {"vpcConfig": {"endpointPublicAccess": True, "publicAccessCidrs": OPEN}},
    )
    eks_default = Res("aws:eks/cluster:Cluster", "serve", {"vpcConfig": {"subnetIds": ["s-1"]}})
    return [
        Unsafe(
            "aws-bucketv2-public-deletable",
            "aws",
            "BucketV2 with force_destroy, public-read ACL, no encryption, not protected",
            [v2],
            frozenset(
                {
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
            frozenset({"data-encrypted-at-rest", "no-public-access"}),
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
        Unsafe(
            "aws-eks-open-api",
            "aws",
            "EKS public endpoint open to 0.0.0.0/0 and ::/0",
            [eks],
            frozenset({"kubernetes-api-not-public"}),
        ),
        Unsafe(
            "aws-eks-default-endpoint",
            "aws",
            "EKS with the default endpoint settings (public, 0.0.0.0/0)",
            [eks_default],
            frozenset({"kubernetes-api-not-public"}),
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
            frozenset({"data-encrypted-at-rest"}),
        ),
        Unsafe(
            "gcp-bucket-public-deletable",
            "gcp",
            "GCS bucket granted to allUsers, no public access prevention, force_destroy",
            [public, everyone],
            frozenset({"no-public-access", "deletion-protection", "data-encrypted-at-rest"}),
        ),
        Unsafe(
            "gcp-gke-open-api",
            "gcp",
            "GKE cluster with a public endpoint and no authorized networks",
            [gke],
            frozenset({"kubernetes-api-not-public"}),
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
            frozenset({"no-public-access", "data-encrypted-at-rest"}),
        ),
        Unsafe(
            "azure-account-api-version-tls10",
            "azure",
            "storage account through an API-version module: TLS 1.0, shared keys on",
            [versioned],
            frozenset({"encryption-in-transit", "no-public-access", "data-encrypted-at-rest"}),
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
            frozenset({"kubernetes-api-not-public"}),
        ),
    ]


def _subtle() -> list[Unsafe]:
    """What a first review of the guard found passing: narrowed denies, inline settings,
    another account's block, IPv4-mapped ranges, second endpoints, other providers."""
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
        Unsafe(
            "aws-tls-deny-narrowed",
            "aws",
            "TLS-only Deny narrowed by a second condition",
            [tls, policy],
            frozenset({"encryption-in-transit"}),
        ),
        Unsafe(
            "aws-inline-grant-and-replication",
            "aws",
            "BucketV2 with an inline AllUsers grant and inline replication without RTC",
            [inline],
            frozenset({"no-public-access", "replication-meets-rpo"}),
        ),
        Unsafe(
            "aws-other-accounts-block",
            "aws",
            "bucket whose only public access block is another account's",
            [other_account, block],
            frozenset({"no-public-access"}),
        ),
        Unsafe(
            "aws-eks-ipv4-mapped",
            "aws",
            "EKS public endpoint open to ::ffff:0.0.0.0/96",
            [mapped],
            frozenset({"kubernetes-api-not-public"}),
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
            frozenset({"kubernetes-api-not-public"}),
        ),
        Unsafe(
            "azure-classic-account",
            "azure",
            "storage account through the classic azure provider",
            [Res("azure:storage/account:Account", "classic", {"allowNestedItemsToBePublic": True})],
            frozenset({"guarded-class-supported"}),
        ),
    ]


UNSAFE = [*_aws(), *_gcp(), *_azure(), *_subtle()]


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
}
# Not a tamper the pack must refuse (a BucketV2 is as safe as a Bucket): it must change nothing.
TRANSFORMS = {**TAMPERS, "retyped-only": retyped_only}


def changes(records: Records, tamper: str) -> bool:
    """Whether the tamper changes anything in this stack (a stack with no replication of its
    own has nothing to scope)."""
    return tampered(records, tamper) != json.loads(json.dumps(records))


def tampered(records: Records, tamper: str) -> Records:
    return TRANSFORMS[tamper](json.loads(json.dumps(copy.deepcopy(records))))
