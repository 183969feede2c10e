"""The dual writer's grant on every S3 copy of a dual-written class: the source's (with its
replication) and the DR copy's (the policy the DR site's writer holds after failover), each
declared by the stack that owns the copy and attached to the role the site's writer assumes
(EKS Pod Identity): a policy attached to nothing lets nobody write. Two hand-built sites run
through the real program under the mocks: a primary in us-east-1 and its DR site in us-west-2,
weights dual-written and checkpoints replicated by S3."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest

from gpudr.app.offline.mocks import GpudrMocks, Registration
from gpudr.app.offline.run import StackRun, run_stack
from gpudr.contract.grants import S3_WRITE_ACTIONS, s3_objects_arn
from gpudr.contract.naming import cluster_name, writer_role_name
from gpudr.contract.site import (
    BucketConfig,
    Lifecycle,
    LogsConfig,
    PeerConfig,
    ReplicationTarget,
    SiteConfig,
)
from gpudr.contract.tags import DrRole, Tag

SYSTEM = "llm"
ACCOUNT = "123456789012"
POLICY = "aws:iam/policy:Policy"
SITES = {
    "use1": ("us-east-1", "10.10.0.0/16", "primary"),
    "usw2": ("us-west-2", "10.20.0.0/16", "dr"),
}
LIFECYCLE = Lifecycle(None, None, noncurrent_keep=5, noncurrent_days=30, abort_multipart_days=2)


def name(site: str, data_class: str) -> str:
    return f"{SYSTEM}-{site}-{data_class}-0a1b2c"


def other(site: str) -> str:
    return "usw2" if site == "use1" else "use1"


def bucket(site: str, data_class: str) -> BucketConfig:
    source = SITES[site][2] == "primary"
    weights = data_class == "weights"
    fields: dict[str, Any] = {
        "data_class": data_class,
        "name": name(site, data_class),
        "role": "source" if source else "replica",
        "rpo_s": 0.0 if weights else 900.0,
        "rto_s": 3600.0,
        "mechanism": "dual-write" if weights else "crr-rtc",
        "object_lock_days": 365 if weights else None,
        "lifecycle": LIFECYCLE,
        "burst_bytes": 1e12,
        "steady_gbps": 0.1,
        "required_gbps": 0.5,
        "dual_write_buckets": (name(other(site), data_class),) if weights else (),
    }
    if source and not weights:
        fields["replication"] = (
            ReplicationTarget(
                site="usw2",
                region="us-west-2",
                account=None,
                bucket=name("usw2", data_class),
                kms_alias=f"alias/gpudr/{SYSTEM}/usw2",
                mechanism="crr-rtc",
                storage_class="STANDARD",
                rule_id=f"{data_class}-to-usw2",
                latency_alarm_s=900,
            ),
        )
    if not source:
        fields["source_account"] = ACCOUNT
        fields["source_role"] = f"gpudr-{SYSTEM}-use1-replication"
    return BucketConfig(**fields)


def site_config(site: str, *, primary_cloud: str = "aws") -> SiteConfig:
    region, cidr, role = SITES[site]
    peer = other(site)
    return SiteConfig(
        system=SYSTEM,
        site=site,
        cloud="aws",
        region=region,
        role=role,
        account=ACCOUNT,
        cidr=cidr,
        azs=(f"{region}a", f"{region}b"),
        api_public_cidrs=(),
        kms_alias=f"alias/gpudr/{SYSTEM}/{site}",
        replication_role=f"gpudr-{SYSTEM}-{site}-replication",
        transit_gateway_name=f"gpudr-{SYSTEM}-{site}",
        transit_gateway_asn=64600 if site == "use1" else 64601,
        dual_write_endpoint=role == "dr",
        buckets=tuple(bucket(site, c) for c in ("checkpoints", "weights")),
        clusters=(),
        peers=(
            PeerConfig(
                site=peer,
                region=SITES[peer][0],
                role=SITES[peer][2],
                cidr=SITES[peer][1],
                account=ACCOUNT,
                transit_gateway_name=f"gpudr-{SYSTEM}-{peer}",
                cloud=primary_cloud if peer == "use1" else "aws",
            ),
        ),
        links=(),
        logs=LogsConfig(sink=f"{SYSTEM}-{site}-logs-abc123", retention_days=365),
    )


def run(cfg: SiteConfig) -> StackRun:
    config = {"aws:region": cfg.region, "gpudr:site": cfg.to_dict(), "gpudr:mode": "standby"}
    return run_stack(f"{SYSTEM}-{cfg.site}", config, GpudrMocks(default_region=cfg.region))


@cache
def site_run(site: str, primary_cloud: str = "aws") -> StackRun:
    return run(site_config(site, primary_cloud=primary_cloud))


def policies(r: StackRun) -> list[tuple[Registration, dict[str, Any]]]:
    return [(x, json.loads(x.inputs["policy"])) for x in r.resources if x.type == POLICY]


def writes(document: dict[str, Any]) -> set[str]:
    """The object ARNs a policy document lets its holder write."""
    out: set[str] = set()
    for statement in document["Statement"]:
        actions = statement["Action"]
        actions = [actions] if isinstance(actions, str) else actions
        if statement["Effect"] == "Allow" and set(actions) & set(S3_WRITE_ACTIONS):
            resources = statement["Resource"]
            out |= {resources} if isinstance(resources, str) else set(resources)
    return {r for r in out if r.endswith("/*")}


@pytest.mark.parametrize("site", ["use1", "usw2"])
def test_each_dual_written_copy_has_a_write_grant_in_its_own_stack(site: str) -> None:
    r = site_run(site)
    own = s3_objects_arn(name(site, "weights"))
    (policy, document) = next((p, d) for p, d in policies(r) if own in writes(d))
    assert policy.inputs["description"].startswith("gpudr: write weights"), policy.urn
    # the copy's key: any gpudr key of the account, through its alias
    kms = next(s for s in document["Statement"] if "kms:GenerateDataKey" in s["Action"])
    assert kms["Resource"] == f"arn:aws:kms:*:{ACCOUNT}:key/*", policy.urn
    assert {"kms:Encrypt", "kms:GenerateDataKey"} <= set(kms["Action"]), policy.urn
    # the writer writes every copy: the other S3 copy is named too
    assert s3_objects_arn(name(other(site), "weights")) in writes(document), policy.urn


def test_the_dr_copys_grant_is_the_dr_stacks_writer_and_tagged_so() -> None:
    r = site_run("usw2")
    ((policy, _),) = policies(r)
    assert policy.name == "usw2-weights-writer"
    assert policy.parent.endswith("gpudr:site:AwsSite::usw2"), policy.urn
    assert policy.inputs["name"] == f"gpudr-{SYSTEM}-usw2-weights-writer"
    tags = policy.inputs["tags"]
    assert tags[Tag.DR_ROLE.key] == DrRole.WRITER and tags[Tag.DATA_CLASS.key] == "weights"
    assert tags[Tag.SITE.key] == "usw2"


def test_the_source_grant_is_unchanged_and_declared_once() -> None:
    ((policy, _),) = policies(site_run("use1"))
    assert policy.name == "use1-replication-weights-writer", policy.urn
    assert policy.inputs["name"] == "gpudr-use1-replication-weights-writer"


@pytest.mark.parametrize("site", ["use1", "usw2"])
def test_a_replicated_class_gets_no_write_grant(site: str) -> None:
    r = site_run(site)
    checkpoints = s3_objects_arn(name(site, "checkpoints"))
    assert all(checkpoints not in writes(d) for _, d in policies(r))
    assert all("checkpoints" not in p.name for p, _ in policies(r))


def test_a_dr_copy_whose_other_copies_are_not_s3_names_only_itself() -> None:
    ((_, document),) = policies(site_run("usw2", primary_cloud="gcp"))
    assert writes(document) == {s3_objects_arn(name("usw2", "weights"))}


# --- the identity that holds the grant -------------------------------------------------------

ROLE = "aws:iam/role:Role"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"


def own_policy(r: StackRun, site: str) -> Registration:
    """The writer policy that grants this site's copy of weights."""
    own = s3_objects_arn(name(site, "weights"))
    return next(p for p, d in policies(r) if own in writes(d))


def holders(r: StackRun, policy: Registration) -> list[Registration]:
    """The roles a policy reaches: attached by a RolePolicyAttachment whose policyArn is the
    policy's own ARN output (recorded as a property dependency, as the policy pack reads it)."""
    attached = [
        a
        for a in r.resources
        if a.type == ATTACHMENT and policy.urn in a.property_dependencies.get("policyArn", [])
    ]
    return [
        role
        for a in attached
        for role in r.resources
        if role.type == ROLE and role.urn in a.property_dependencies.get("role", [])
    ]


@pytest.mark.parametrize("site", ["use1", "usw2"])
def test_each_copys_write_grant_reaches_a_role_the_sites_pods_assume(site: str) -> None:
    r = site_run(site)
    policy = own_policy(r, site)
    (role,) = holders(r, policy)
    assert role.inputs["name"] == writer_role_name(SYSTEM, site, "weights")
    assert role.parent == policy.parent, role.urn
    tags = role.inputs["tags"]
    assert tags[Tag.DR_ROLE.key] == DrRole.WRITER and tags[Tag.DATA_CLASS.key] == "weights"
    assert tags[Tag.SITE.key] == site
    # EKS Pod Identity's trust, kept to pods of this site's own clusters
    (statement,) = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
    assert statement["Effect"] == "Allow"
    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert sorted(statement["Action"]) == ["sts:AssumeRole", "sts:TagSession"]
    clusters = statement["Condition"]["StringLike"]["aws:RequestTag/eks-cluster-name"]
    assert clusters == cluster_name(SYSTEM, site, "*")


@pytest.mark.parametrize("site", ["use1", "usw2"])
def test_the_attachment_names_the_writer_policy_by_its_arn(site: str) -> None:
    r = site_run(site)
    policy = own_policy(r, site)
    (attachment,) = (a for a in r.resources if a.type == ATTACHMENT and "writer" in a.name)
    assert attachment.property_dependencies["policyArn"] == [policy.urn]
    assert attachment.inputs["policyArn"] == policy.outputs["arn"]
    assert attachment.name == f"{policy.name}-attachment" and attachment.parent == policy.parent


@pytest.mark.parametrize("site", ["use1", "usw2"])
def test_the_stack_exports_the_writers_role(site: str) -> None:
    r = site_run(site)
    (role,) = holders(r, own_policy(r, site))
    assert r.outputs["writer_role_arns"] == {"weights": role.outputs["arn"]}


@pytest.mark.parametrize("site", ["use1", "usw2"])
def test_a_replicated_class_gets_no_writer_role(site: str) -> None:
    roles = [x for x in site_run(site).resources if x.type == ROLE]
    assert [x.name for x in roles if "writer" in x.name] == [
        "use1-replication-weights-writer-role" if site == "use1" else "usw2-weights-writer-role"
    ]
