"""The AWS drill probe (boto3) against moto's S3, STS, IAM, EKS and Auto Scaling on loopback,
with IAM enforced: checksums as S3 records them, a replica that is missing, bytes that differ
from their checksum, an object the reader may not read, capacity, and whole drills (`run_drill`)
with each stage's status, duration and measurements.

What moto 5.2.5 does not do, and so these tests cannot show against it:
- GetObjectAttributes never returns ObjectParts: a multipart upload with COMPOSITE per-part
  checksums comes back without its parts, and the probe (rightly) cannot verify it. Per-part
  verification and the paging of parts are tested with botocore's Stubber instead.
- It accepts any checksum a client sends (S3 answers BadDigest), and records a single PUT's
  checksum without ChecksumType (S3 says FULL_OBJECT).
- Without the optional `crc32c` package it computes CRC32C as CRC32: a checksum moto computes
  itself (a FULL_OBJECT CRC32C multipart upload) is wrong; ones the client sends are kept.
- A trust policy's principal must be the caller's exact ARN (the account's root does not
  cover its users, as the drill stack's real trust policy relies on); IAM changes take effect
  at once (no propagation: the retries are driven by changing the trust policy mid-test).
- An EKS node group's Auto Scaling group is only a name: the tests create it in Auto Scaling.
  Node groups are always ACTIVE with no health issues; instances are InService at once.
- Signed GETs without a body fail its IAM signature check (see emulators_aws).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError
from botocore.response import StreamingBody
from botocore.stub import Stubber

from components.aws.drill import reader_policy
from gpudr.app.drill import checksums
from gpudr.app.drill.orchestrate import Deps, run_drill
from gpudr.app.drill.probes import AccessDenied, NotFound, ObjectInfo, ProbeError, probe_for
from gpudr.app.drill.probes import aws as aws_probe
from gpudr.app.drill.probes.aws import ASSUME_ATTEMPTS, ASSUME_DELAY_S, AwsProbe
from gpudr.app.drill.verify import verify
from gpudr.build.drill import DrillSetup, build_drill
from gpudr.contract.drill import reader_name
from gpudr.contract.site import BucketConfig
from gpudr.core.design import Design, design
from gpudr.core.spec import load_plan
from gpudr.docs.runbook import build_runbook
from tests.conftest import EXAMPLE
from tests.gpudr.app.drill.emulators_aws import ACCOUNT, MotoAws, moto_aws, moto_server
from tests.gpudr.app.drill.fakes import Clock, FakeStacks

# Each module starts its emulator: `make e2e` runs these, the fast unit loop does not.
pytestmark = pytest.mark.emulator

_ = (moto_aws, moto_server)  # the fixtures, found by pytest in this module's namespace
START = datetime(2025, 1, 31, 3, 12, tzinfo=UTC)
MIB = 1 << 20
KEY_ARN = f"arn:aws:kms:us-west-2:{ACCOUNT}:key/dr"


@cache
def plan_design() -> Design:
    return design(load_plan(EXAMPLE))


@cache
def drill_setup(at: datetime = START) -> DrillSetup:
    return build_drill(plan_design(), "usw2", at)


def bucket_of(setup: DrillSetup, data_class: str) -> BucketConfig:
    return next(t.bucket for t in setup.data if t.data_class == data_class)


class Replica:
    """The DR site's buckets in moto, written as replication would write them."""

    def __init__(self, aws: MotoAws, setup: DrillSetup) -> None:
        self.aws, self.setup = aws, setup
        self.s3 = aws.client("s3", setup.site.region)

    def create(self) -> Replica:
        where = {"LocationConstraint": self.setup.site.region}
        for b in self.setup.site.buckets:
            self.s3.create_bucket(Bucket=b.name, CreateBucketConfiguration=where)
        return self

    def put(self, bucket: BucketConfig, key: str, data: bytes, algorithm: str | None) -> None:
        if algorithm is None:  # as uploaded before SDKs sent a checksum: none recorded
            plain = self.aws.client(
                "s3",
                self.setup.site.region,
                config=Config(request_checksum_calculation="when_required"),
            )
            plain.put_object(Bucket=bucket.name, Key=key, Body=data)
            return
        self.s3.put_object(Bucket=bucket.name, Key=key, Body=data, ChecksumAlgorithm=algorithm)

    def multipart(
        self, bucket: BucketConfig, key: str, parts: list[bytes], algorithm: str, kind: str
    ) -> None:
        """A multipart upload, each part with its `algorithm` checksum; `kind` is S3's
        ChecksumType of the whole object (FULL_OBJECT or COMPOSITE)."""
        upload = self.s3.create_multipart_upload(
            Bucket=bucket.name, Key=key, ChecksumAlgorithm=algorithm, ChecksumType=kind
        )["UploadId"]
        done = []
        for number, data in enumerate(parts, 1):
            answer = self.s3.upload_part(
                Bucket=bucket.name,
                Key=key,
                UploadId=upload,
                PartNumber=number,
                Body=data,
                ChecksumAlgorithm=algorithm,
            )
            checksum = f"Checksum{algorithm}"
            done.append({"PartNumber": number, "ETag": answer["ETag"], checksum: answer[checksum]})
        self.s3.complete_multipart_upload(
            Bucket=bucket.name, Key=key, UploadId=upload, MultipartUpload={"Parts": done}
        )

    def modified(self, bucket: BucketConfig, key: str) -> datetime:
        stamp: datetime = self.s3.head_object(Bucket=bucket.name, Key=key)["LastModified"]
        return stamp.astimezone(UTC)


def reader_role(aws: MotoAws, setup: DrillSetup, deny: str | None = None) -> str:
    """The drill stack's reader role (its real policy); `deny`: an object it may not get."""
    policies = {"read": reader_policy(setup.site.buckets, KEY_ARN, setup.site.region)}
    if deny:
        bucket, key = deny.split("/", 1)
        statement = {
            "Effect": "Deny",
            "Action": ["s3:GetObject"],
            "Resource": [f"arn:aws:s3:::{bucket}/{key}"],
        }
        policies["deny"] = json.dumps({"Version": "2012-10-17", "Statement": [statement]})
    return aws.role(reader_name(setup.id, "aws"), policies)


def probe(aws: MotoAws, setup: DrillSetup, **kwargs: Any) -> AwsProbe:
    return AwsProbe(setup, endpoint_url=aws.url, **kwargs)


def signed_in(aws: MotoAws, setup: DrillSetup, deny: str | None = None) -> AwsProbe:
    p = probe(aws, setup)
    p.sign_in({"reader": reader_role(aws, setup, deny)})
    return p


def listed(p: AwsProbe, bucket: BucketConfig, key: str) -> ObjectInfo:
    return next(o for o in p.list_objects(bucket) if o.key == key)


# --- checksums as S3 records them ---------------------------------------------------------------

BODY = bytes(range(256)) * 64  # 16 KiB


@pytest.mark.parametrize(
    ("upload", "ok", "algorithm", "detail"),
    [
        (("put", "CRC32C"), True, "crc32c", "crc32c matches"),
        (("put", "SHA256"), True, "sha256", "sha256 matches"),
        (("put", "CRC64NVME"), True, "crc64nvme", "crc64nvme matches"),
        (("put", "CRC32"), True, "crc32", "crc32 matches"),
        (("put", "SHA1"), True, "sha1", "sha1 matches"),
        (("multipart", "CRC64NVME", "FULL_OBJECT"), True, "crc64nvme", "crc64nvme matches"),
        (("multipart", "CRC32", "FULL_OBJECT"), True, "crc32", "crc32 matches"),
        # moto lists no parts for a composite checksum (S3 does): nothing to recompute.
        (("multipart", "CRC32C", "COMPOSITE"), False, None, "no recorded checksum"),
        (("put", None), False, None, "no recorded checksum to verify against"),
    ],
)
def test_checksums_as_s3_records_them(
    aws: MotoAws, upload: tuple[Any, ...], ok: bool, algorithm: str | None, detail: str
) -> None:
    setup = drill_setup()
    bucket = bucket_of(setup, "checkpoints")
    replica = Replica(aws, setup).create()
    if upload[0] == "put":
        replica.put(bucket, "step-1/model.pt", BODY, upload[1])
    else:
        replica.multipart(bucket, "step-1/model.pt", [b"a" * 5 * MIB, BODY], *upload[1:])
    p = signed_in(aws, setup)
    row = verify(p, bucket, listed(p, bucket, "step-1/model.pt"))
    assert (row["ok"], row.get("algorithm")) == (ok, algorithm), row
    assert row["detail"].startswith(detail), row


def composite(parts: list[bytes], truncated_after: int | None = None) -> list[dict[str, Any]]:
    """GetObjectAttributes answers for a COMPOSITE CRC32C object, its parts over two pages."""

    def crc(data: bytes) -> str:
        h = checksums.new("crc32c")
        h.update(data)
        return checksums.encoded(h)

    listed = [
        {"PartNumber": n, "Size": len(data), "ChecksumCRC32C": crc(data)}
        for n, data in enumerate(parts, 1)
    ]
    cut = truncated_after or len(listed)
    pages = [listed[:cut], listed[cut:]] if truncated_after else [listed]
    checksum = {"ChecksumCRC32C": "Y29tcG9zaXRl", "ChecksumType": "COMPOSITE"}
    return [
        {
            "Checksum": checksum,
            "ObjectSize": sum(map(len, parts)),
            "ObjectParts": {
                "TotalPartsCount": len(parts),
                "IsTruncated": i < len(pages) - 1,
                "NextPartNumberMarker": len(page) + (cut if i else 0),
                "Parts": page,
            },
        }
        for i, page in enumerate(pages)
    ]


@pytest.mark.parametrize(
    ("stored", "ok", "detail"),
    [
        (b"a" * 8 + b"b" * 8 + b"c" * 3, True, "crc32c matches for all 3 parts"),
        (
            b"a" * 8 + b"b" * 8 + b"c" * 2 + b"x",
            False,
            "crc32c differs from the recorded value (part 3)",
        ),
    ],
)
def test_composite_checksums_are_verified_part_by_part_over_every_page(
    stored: bytes, ok: bool, detail: str
) -> None:
    """What moto cannot answer (ObjectParts), stubbed as S3 answers it: the probe asks for the
    next page of parts from the marker S3 gave, and verifies each part on its own."""
    setup = drill_setup()
    bucket = bucket_of(setup, "checkpoints")
    session = boto3.Session(aws_access_key_id="stub", aws_secret_access_key="stub")
    p = AwsProbe(setup, session=session)
    first, second = composite([b"a" * 8, b"b" * 8, b"c" * 3], truncated_after=2)
    ask = {
        "Bucket": bucket.name,
        "Key": "step-1/model.pt",
        "ObjectAttributes": ["Checksum", "ObjectParts", "ObjectSize"],
        "MaxParts": 10_000,
    }
    with Stubber(p.s3) as stub:
        stub.add_response("get_object_attributes", first, ask)
        stub.add_response("get_object_attributes", second, {**ask, "PartNumberMarker": 2})
        body = StreamingBody(io.BytesIO(stored), len(stored))
        stub.add_response("get_object", {"Body": body}, {"Bucket": bucket.name, "Key": ask["Key"]})
        row = verify(p, bucket, ObjectInfo("step-1/model.pt", len(stored), START))
        stub.assert_no_pending_responses()
    assert (row["ok"], row["detail"]) == (ok, detail), row


def test_a_composite_checksum_missing_a_part_is_not_verifiable() -> None:
    setup = drill_setup()
    session = boto3.Session(aws_access_key_id="stub", aws_secret_access_key="stub")
    p = AwsProbe(setup, session=session)
    (answer,) = composite([b"a" * 8, b"b" * 8])
    answer["ObjectParts"]["Parts"].pop()  # S3 listed fewer parts than the object has
    with Stubber(p.s3) as stub:
        stub.add_response("get_object_attributes", answer)
        assert p.stored_checksum(bucket_of(setup, "checkpoints"), "k") is None


# --- bytes that differ from what S3 recorded ----------------------------------------------------


@dataclass
class Damage:
    """How a replica's object came to differ from its recorded checksum."""

    name: str
    upload: Callable[[Replica, BucketConfig, str], None]
    after_listing: Callable[[MotoAws, BucketConfig, str], None] = lambda *_: None
    expected: str = ""


def _rotted(replica: Replica, bucket: BucketConfig, key: str) -> None:
    replica.put(bucket, key, BODY, "SHA256")
    replica.aws.overwrite(bucket.name, key, BODY[:-1] + b"!")  # same size, one byte differs


def _recorded_wrong(replica: Replica, bucket: BucketConfig, key: str) -> None:
    wrong = "AAAAAA=="  # the CRC32C of other bytes: moto keeps it (S3 would say BadDigest)
    replica.s3.put_object(
        Bucket=bucket.name, Key=key, Body=BODY, ChecksumAlgorithm="CRC32C", ChecksumCRC32C=wrong
    )


def _multipart_rotted(replica: Replica, bucket: BucketConfig, key: str) -> None:
    replica.multipart(bucket, key, [b"a" * 5 * MIB, BODY], "CRC32", "FULL_OBJECT")
    replica.aws.overwrite(bucket.name, key, b"a" * 5 * MIB + BODY[:-1] + b"!")


def _put(replica: Replica, bucket: BucketConfig, key: str) -> None:
    replica.put(bucket, key, BODY, "SHA256")


def _shortened(aws: MotoAws, bucket: BucketConfig, key: str) -> None:
    aws.overwrite(bucket.name, key, BODY[:-10])


DAMAGE = [
    Damage("bytes changed after upload", _rotted, expected="sha256 differs from the recorded"),
    Damage("checksum recorded wrong", _recorded_wrong, expected="crc32c differs from the recorded"),
    Damage(
        "multipart bytes changed", _multipart_rotted, expected="crc32 differs from the recorded"
    ),
    Damage("shortened since listed", _put, _shortened, f"read {len(BODY) - 10} bytes, listed"),
]


@pytest.mark.parametrize("damage", DAMAGE, ids=[d.name for d in DAMAGE])
def test_bytes_that_differ_from_the_recorded_checksum_fail_their_row(
    aws: MotoAws, damage: Damage
) -> None:
    setup = drill_setup()
    bucket = bucket_of(setup, "checkpoints")
    replica = Replica(aws, setup).create()
    damage.upload(replica, bucket, "step-1/model.pt")
    p = signed_in(aws, setup)
    obj = listed(p, bucket, "step-1/model.pt")
    damage.after_listing(aws, bucket, "step-1/model.pt")
    row = verify(p, bucket, obj)
    assert not row["ok"] and row["detail"].startswith(damage.expected), row


# --- missing replicas, denied reads, the reader role --------------------------------------------


def test_a_missing_bucket_or_object_is_a_one_line_not_found(aws: MotoAws) -> None:
    setup = drill_setup()
    bucket = bucket_of(setup, "checkpoints")
    p = probe(aws, setup)
    with pytest.raises(NotFound) as missing:
        p.list_objects(bucket)
    assert str(missing.value) == (
        f"s3://{bucket.name}: NoSuchBucket: The specified bucket does not exist"
    )
    Replica(aws, setup).create()
    with pytest.raises(NotFound, match=rf"^s3://{bucket.name}/gone: NoSuchKey: "):
        p.stored_checksum(bucket, "gone")
    row = verify(p, bucket, ObjectInfo("gone", 1, START))
    assert not row["ok"] and row["detail"].startswith(f"s3://{bucket.name}/gone: NoSuchKey")


def test_an_object_the_reader_may_not_read_fails_its_row_only(aws: MotoAws) -> None:
    setup = drill_setup()
    bucket = bucket_of(setup, "checkpoints")
    replica = Replica(aws, setup).create()
    for key in ("step-1/model.pt", "step-1/secret.pt"):
        replica.put(bucket, key, BODY, "CRC32C")
    p = signed_in(aws, setup, deny=f"{bucket.name}/step-1/secret.pt")
    rows = {o.key: verify(p, bucket, o) for o in p.list_objects(bucket)}
    assert rows["step-1/model.pt"]["ok"], rows
    secret = rows["step-1/secret.pt"]
    assert not secret["ok"]
    assert secret["detail"] == f"s3://{bucket.name}/step-1/secret.pt: AccessDenied: Access Denied"
    with pytest.raises(AccessDenied, match="AccessDenied"):
        b"".join(p.read(bucket, "step-1/secret.pt"))  # the bytes too, not only the checksum


def test_the_reader_reads_only_the_replicas(aws: MotoAws) -> None:
    setup = drill_setup()
    aws.client("s3").create_bucket(
        Bucket="someone-elses", CreateBucketConfiguration={"LocationConstraint": "us-west-2"}
    )
    other = replace(bucket_of(setup, "checkpoints"), name="someone-elses")
    assert probe(aws, setup).list_objects(other) == []  # the operator may list it
    with pytest.raises(AccessDenied, match=r"^s3://someone-elses: AccessDenied: Access Denied$"):
        signed_in(aws, setup).list_objects(other)


def test_sign_in_waits_for_a_new_role_to_be_assumable(aws: MotoAws) -> None:
    setup = drill_setup()
    role = reader_role(aws, setup)
    name = reader_name(setup.id, "aws")
    aws.client("iam").update_assume_role_policy(RoleName=name, PolicyDocument=aws.trust(False))
    slept: list[float] = []

    def sleep(seconds: float) -> None:  # the trust reaches IAM while the drill waits
        slept.append(seconds)
        aws.client("iam").update_assume_role_policy(RoleName=name, PolicyDocument=aws.trust(True))

    p = probe(aws, setup, sleep=sleep)
    assert p.identity() == "the operator's own credentials"
    p.sign_in({"drill": setup.id, "reader": role})
    assert slept == [ASSUME_DELAY_S]
    assert p.identity() == f"the reader role {role}"


def test_a_role_that_never_becomes_assumable_fails_after_the_retries(aws: MotoAws) -> None:
    setup = drill_setup()
    role = aws.role(reader_name(setup.id, "aws"), {}, trusted=False)
    slept: list[float] = []
    p = probe(aws, setup, sleep=slept.append)
    with pytest.raises(AccessDenied) as denied:
        p.sign_in({"reader": role})
    assert slept == [ASSUME_DELAY_S] * (ASSUME_ATTEMPTS - 1)
    assert str(denied.value) == (
        f"sts:AssumeRole {role}: AccessDenied: User: {aws.operator_arn} is not authorized to "
        "perform: sts:AssumeRole (the role trusts only the drill's operator: the identity running "
        "the drill needs sts:AssumeRole on it, and must be the one gpudr named, or name it with "
        "--operator)"
    )
    assert p.identity() == "the operator's own credentials"


def test_listing_reads_every_page(aws: MotoAws) -> None:
    setup = drill_setup()
    bucket = bucket_of(setup, "datasets")
    Replica(aws, setup).create()
    keys = [f"shard-{i:04d}" for i in range(1003)]  # S3 lists 1000 keys a page
    aws.seed(bucket.name, {key: key.encode() for key in keys})
    objects = signed_in(aws, setup).list_objects(bucket)
    assert [o.key for o in objects] == keys
    assert {o.size for o in objects} == {10}
    assert all(o.modified.tzinfo is UTC for o in objects)


# --- capacity -----------------------------------------------------------------------------------


class Pools:
    """The drill's EKS clusters and node groups in moto, each node group with its Auto
    Scaling group (which moto's EKS only names)."""

    def __init__(self, aws: MotoAws, setup: DrillSetup) -> None:
        region = setup.site.region
        self.setup = setup
        self.eks = aws.client("eks", region)
        self.asg = aws.client("autoscaling", region)
        self.groups: dict[str, str] = {}  # pool -> its Auto Scaling group

    def create(self) -> Pools:
        role = f"arn:aws:iam::{ACCOUNT}:role/eks"
        for cluster in sorted({p.cluster_name for p in self.setup.pools}):
            self.eks.create_cluster(name=cluster, roleArn=role, resourcesVpcConfig={})
        for p in self.setup.pools:
            group = self.eks.create_nodegroup(
                clusterName=p.cluster_name,
                nodegroupName=p.pool,
                nodeRole=role,
                subnets=["subnet-drill"],
                instanceTypes=[p.instance_type],
                scalingConfig={"minSize": 0, "maxSize": p.nodes, "desiredSize": 0},
            )["nodegroup"]
            name = group["resources"]["autoScalingGroups"][0]["name"]
            self.asg.create_launch_configuration(
                LaunchConfigurationName=name, ImageId="ami-12c6146b", InstanceType=p.instance_type
            )
            self.asg.create_auto_scaling_group(
                AutoScalingGroupName=name,
                LaunchConfigurationName=name,
                MinSize=0,
                MaxSize=p.full_nodes,
                DesiredCapacity=0,
                AvailabilityZones=[f"{self.setup.site.region}a"],
            )
            self.groups[p.pool] = name
        return self

    def scale(self, pool: str, nodes: int) -> list[str]:
        group = self.groups[pool]
        self.asg.set_desired_capacity(AutoScalingGroupName=group, DesiredCapacity=nodes)
        described = self.asg.describe_auto_scaling_groups(AutoScalingGroupNames=[group])
        return [i["InstanceId"] for i in described["AutoScalingGroups"][0]["Instances"]]


@pytest.mark.parametrize(
    ("nodes", "unhealthy", "standby", "ready"),
    [(0, 0, 0, 0), (1, 0, 0, 1), (3, 1, 0, 2), (3, 0, 1, 3), (2, 2, 0, 0)],
)
def test_capacity_counts_instances_in_service_and_healthy(
    aws: MotoAws, nodes: int, unhealthy: int, standby: int, ready: int
) -> None:
    setup = drill_setup()
    pools = Pools(aws, setup).create()
    pool = setup.pools[0]
    instances = pools.scale(pool.pool, nodes)
    for i in instances[:unhealthy]:
        pools.asg.set_instance_health(InstanceId=i, HealthStatus="Unhealthy")
    if standby:  # Auto Scaling launches a replacement for an instance put in standby
        pools.asg.enter_standby(
            AutoScalingGroupName=pools.groups[pool.pool],
            InstanceIds=instances[-standby:],
            ShouldDecrementDesiredCapacity=False,
        )
    state = probe(aws, setup).pool_state(pool)
    assert state.ready == ready
    assert state.detail == f"node group ACTIVE, {ready} instance(s) in service"


def test_a_missing_node_group_is_a_one_line_not_found(aws: MotoAws) -> None:
    setup = drill_setup()
    pool = setup.pools[0]
    with pytest.raises(NotFound) as missing:
        probe(aws, setup).pool_state(pool)
    assert str(missing.value) == (
        f"EKS node group {pool.cluster_name}/{pool.pool}: ResourceNotFoundException: "
        f"No cluster found for name: {pool.cluster_name}."
    )


# --- errors that are not the cloud's answer -----------------------------------------------------


@pytest.mark.parametrize(
    ("code", "status", "kind"),
    [
        ("AccessDenied", 403, AccessDenied),
        ("AllAccessDisabled", 403, AccessDenied),
        ("403", 403, AccessDenied),  # HEAD: S3 sends no body, botocore names the status
        ("AccessDeniedException", 403, AccessDenied),  # EKS's form
        ("NoSuchBucket", 404, NotFound),
        ("NoSuchKey", 404, NotFound),
        ("404", 404, NotFound),
        ("ResourceNotFoundException", 404, NotFound),
        ("SlowDown", 503, ProbeError),
        ("InvalidAccessKeyId", 403, ProbeError),
    ],
)
def test_client_errors_map_to_one_line_probe_errors(code: str, status: int, kind: type) -> None:
    response = {
        "Error": {"Code": code, "Message": "the cloud's\n  reason"},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    error = aws_probe._error("s3://b/k", ClientError(response, "GetObject"))
    assert type(error) is kind
    assert str(error) == f"s3://b/k: {code}: the cloud's reason"


def test_no_endpoint_and_no_credentials_are_probe_errors(
    aws: MotoAws, monkeypatch: pytest.MonkeyPatch
) -> None:
    setup = drill_setup()
    bucket = bucket_of(setup, "checkpoints")
    once = Config(retries={"mode": "standard", "max_attempts": 1}, connect_timeout=2)
    closed = AwsProbe(setup, endpoint_url="http://127.0.0.1:9", config=once)
    with pytest.raises(ProbeError) as unreachable:
        closed.list_objects(bucket)
    assert type(unreachable.value) is ProbeError
    assert isinstance(unreachable.value.__cause__, EndpointConnectionError)
    assert str(unreachable.value) == (
        f"s3://{bucket.name}: EndpointConnectionError: Could not connect to the endpoint URL: "
        f'"http://127.0.0.1:9/{bucket.name}?list-type=2&encoding-type=url"'
    )
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    with pytest.raises(ProbeError) as anonymous:
        probe(aws, setup).list_objects(bucket)
    assert isinstance(anonymous.value.__cause__, NoCredentialsError)
    assert str(anonymous.value) == (
        f"s3://{bucket.name}: NoCredentialsError: Unable to locate credentials"
    )


def test_the_probe_for_an_aws_site_is_the_sdk_one_and_reports_the_runbooks_url() -> None:
    setup = drill_setup()
    p = probe_for(setup)
    assert isinstance(p, AwsProbe) and p.region == "us-west-2"
    bucket = bucket_of(setup, "checkpoints")
    rb = build_runbook(plan_design(), setup.primary, "usw2")
    assert p.url(bucket) in rb.step("data:checkpoints").why


# --- whole drills -------------------------------------------------------------------------------


WRITES: dict[tuple[str, str], tuple[bytes | list[bytes], str]] = {
    ("checkpoints", "step-100/model.pt"): (b"old" * 100, "CRC32C"),
    ("checkpoints", "step-200/model.pt"): (BODY, "CRC32C"),
    ("checkpoints", "step-200/optim.pt"): (BODY * 2, "SHA256"),
    ("checkpoints", "step-200/rng.pt"): (BODY[:100], "CRC64NVME"),
    ("checkpoints", "step-200/shard.pt"): ([b"s" * 5 * MIB, BODY], "CRC32"),
    ("checkpoints", "latest"): (b"step-200", "CRC32C"),
    ("datasets", "shard-0"): (b"rows", "CRC32C"),
    ("weights", "v1/weights"): (b"w", "CRC32C"),
}
AGES = {  # seconds before it was uploaded (now)
    "step-100/model.pt": 5400.0,
    "step-200/model.pt": 1800.0,
    "step-200/optim.pt": 1800.0,
    "step-200/rng.pt": 1790.0,
    "step-200/shard.pt": 1790.0,
    "latest": 1700.0,
    "shard-0": 7200.0,
    "v1/weights": 86400.0 * 20,
}


@dataclass
class Drill:
    """One drill of the example's usw2 site against moto: the fake stack interface stands for
    Pulumi (its ups take 900 s and 300 s of the fake clock), everything else is the real probe
    on the emulated account. The pools' nodes join `ready_after_s` after the drill started."""

    aws: MotoAws
    ready_after_s: float = 1800.0
    now: datetime = field(default_factory=lambda: datetime.now(UTC).replace(microsecond=0))

    def __post_init__(self) -> None:
        self.setup = drill_setup(self.now)
        self.clock = Clock(self.now)
        self.replica = Replica(self.aws, self.setup)
        self.pools = Pools(self.aws, self.setup).create()
        self.scaled = False

    def fill(self) -> None:
        """Two checkpoints (the newer: a CRC32C, a SHA256, a CRC64NVME object and a multipart
        upload with a full-object CRC32), a root pointer, a dataset, weights; written as long
        ago as `AGES` says."""
        self.replica.create()
        for (data_class, key), (data, algorithm) in WRITES.items():
            bucket = bucket_of(self.setup, data_class)
            if isinstance(data, list):
                self.replica.multipart(bucket, key, data, algorithm, "FULL_OBJECT")
            else:
                self.replica.put(bucket, key, data, algorithm)
            self.aws.backdate(bucket.name, key, AGES.get(key, 0.0))

    def sleep(self, seconds: float) -> None:
        """The drill's waits, on the fake clock; the node groups scale once it is time."""
        self.clock.advance(seconds)
        if not self.scaled and self.clock() >= self.now + timedelta(seconds=self.ready_after_s):
            for p in self.setup.pools:
                self.pools.scale(p.pool, p.nodes)
            self.scaled = True

    def run(self, deny: str | None = None) -> Any:
        role = reader_role(self.aws, self.setup, deny)
        clusters = {p.cluster: p.cluster_name for p in self.setup.pools}
        self.stacks = FakeStacks(self.clock, outputs={"clusters": clusters, "reader": role})
        self.role = role
        deps = Deps(
            stacks=self.stacks,
            probe=AwsProbe(self.setup, self.sleep, endpoint_url=self.aws.url),
            clock=self.clock,
            sleep=self.sleep,
            poll_s=300.0,  # capacity polls at 1200 s, 1500 s, 1800 s of the drill: 3, not 21
        )
        return run_drill(self.setup, deps)


def test_a_whole_drill_on_the_emulated_account_times_and_measures_every_stage(
    aws: MotoAws,
) -> None:
    drill = Drill(aws)
    drill.fill()
    ckpt = bucket_of(drill.setup, "checkpoints")
    written = {
        "checkpoints": drill.replica.modified(ckpt, "latest"),
        "datasets": drill.replica.modified(bucket_of(drill.setup, "datasets"), "shard-0"),
    }
    report = drill.run()
    stages = {s.key: s for s in report.stages}
    assert {k: s.status for k, s in stages.items()} == dict.fromkeys(stages, "passed"), [
        (s.key, s.detail) for s in report.stages
    ]
    # The fake clock moves only with the ups (900 s, 300 s) and the drill's waits: the probe's
    # calls take no drill time, and the nodes join 1800 s after the start.
    assert {k: s.duration_s for k, s in stages.items()} == {
        "infrastructure": 900,
        "checkpoint": 0,
        "capacity": 900,
        "data-age": 0,
    }
    assert stages["capacity"].verdict == "met"
    checkpoint = stages["checkpoint"].measurements
    assert checkpoint["bucket"] == f"s3://{ckpt.name}"
    assert checkpoint["checkpoint"] == "step-200/"
    rows = {r["key"]: (r["ok"], r["algorithm"]) for r in checkpoint["verified"]}
    assert rows == {
        "step-200/model.pt": (True, "crc32c"),
        "step-200/optim.pt": (True, "sha256"),
        "step-200/rng.pt": (True, "crc64nvme"),
        "step-200/shard.pt": (True, "crc32"),
    }
    size = len(BODY) * 3 + 100 + 5 * MIB + len(BODY)
    assert (checkpoint["objects"], checkpoint["bytes"], checkpoint["verified_bytes"]) == (
        4,
        size,
        size,
    )
    assert "every checksum matches" in stages["checkpoint"].detail
    pools = stages["capacity"].measurements["pools"]
    assert pools == {
        p.pool: "1 of 1 (node group ACTIVE, 1 instance(s) in service)" for p in drill.setup.pools
    }
    ages = {d.data_class: d for d in report.data_age}
    assert (ages["checkpoints"].newest_key, ages["datasets"].newest_key) == ("latest", "shard-0")
    listed_at = drill.now + timedelta(seconds=1800)  # data age is measured after capacity
    for data_class, at in written.items():
        assert ages[data_class].age_s == (listed_at - at).total_seconds(), data_class
        assert ages[data_class].verdict == "met"  # 1 and 2.5 hours old: RPO 4 h and 1 day
    assert ages["weights"].verdict == "-"  # published on demand: not judged
    assert f"Replicas were read as the reader role {drill.role}." in report.notes
    assert report.outcome == "passed"
    assert drill.stacks.ops()[-2:] == ["destroy", "remove"]


@pytest.mark.parametrize(
    ("scenario", "detail"),
    [
        ("no bucket", "s3://{checkpoints}: NoSuchBucket: The specified bucket does not exist"),
        ("empty", "s3://{checkpoints} holds no object: nothing has been replicated to it yet"),
        ("bytes differ", "1 failed verification, first step-200/model.pt: crc32c differs"),
        (
            "denied",
            "1 failed verification, first step-200/optim.pt: "
            "s3://{checkpoints}/step-200/optim.pt: AccessDenied: Access Denied",
        ),
    ],
)
def test_a_replica_that_fails_fails_its_stage_in_one_line_and_the_drill_goes_on(
    aws: MotoAws, scenario: str, detail: str
) -> None:
    drill = Drill(aws)
    ckpt = bucket_of(drill.setup, "checkpoints")
    deny = None
    if scenario == "empty":
        drill.replica.create()
    elif scenario != "no bucket":
        drill.fill()
    if scenario == "bytes differ":
        aws.overwrite(ckpt.name, "step-200/model.pt", BODY[:-1] + b"!")
    if scenario == "denied":
        deny = f"{ckpt.name}/step-200/optim.pt"
    report = drill.run(deny)
    checkpoint = report.stage("checkpoint")
    assert checkpoint.status == "failed"
    assert detail.format(checkpoints=ckpt.name) in checkpoint.detail, checkpoint.detail
    assert "\n" not in checkpoint.detail
    assert report.stage("capacity").status == "passed"  # the drill went on
    data_age = report.stage("data-age")
    assert data_age.status == ("failed" if scenario == "no bucket" else "passed")
    assert report.outcome == "failed"
    assert drill.stacks.ops()[-2:] == ["destroy", "remove"]
