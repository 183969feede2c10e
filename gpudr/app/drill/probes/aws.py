"""A drill's checks on AWS, through boto3.

The replicas are read as the reader role the drill stack exports (`reader`): the operator's
credentials (boto3's default chain) assume it, and only the S3 calls use the temporary
credentials. The GPU pools' state (EKS node group, its Auto Scaling groups) is read with the
operator's own credentials: the reader can read data and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from gpudr.app.drill.errors import AccessDenied, NotFound, ProbeError
from gpudr.app.drill.probes.base import CHUNK, ObjectInfo, PoolState, Probe, StoredChecksum, utc
from gpudr.build.drill import DrillPool, DrillSetup
from gpudr.contract.site import BucketConfig

# S3's checksum attributes -> drill/checksums.py's algorithm names, in the order looked for.
S3_CHECKSUMS = {
    "ChecksumCRC64NVME": "crc64nvme",
    "ChecksumCRC32C": "crc32c",
    "ChecksumCRC32": "crc32",
    "ChecksumSHA256": "sha256",
    "ChecksumSHA1": "sha1",
}
ASSUME_ATTEMPTS = 6  # a new IAM role is assumable after seconds, not at once
ASSUME_DELAY_S = 10.0
MAX_PARTS = 10_000  # S3's limit on a multipart upload's parts: one page when S3 allows it
DENIED = frozenset({"AccessDenied", "AccessDeniedException", "AllAccessDisabled", "403"})
MISSING = frozenset({"NoSuchBucket", "NoSuchKey", "ResourceNotFoundException", "404"})
CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 5},  # throttling and 5xx, with backoff
    connect_timeout=10,
    read_timeout=60,
    # The drill hashes every byte itself and reports a mismatch as one: botocore must not
    # hash the stream a second time and raise its own error instead.
    response_checksum_validation="when_required",
)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _error(where: str, exc: Exception) -> ProbeError:
    """`exc` as this package's error: `<where>: <code>: <the cloud's message>`."""
    if isinstance(exc, ClientError):
        error = exc.response.get("Error") or {}
        status = (exc.response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
        code = str(error.get("Code") or status or "?")
        message = _one_line(error.get("Message") or exc)
        kind = AccessDenied if code in DENIED else NotFound if code in MISSING else ProbeError
        return kind(f"{where}: {code}: {message}")
    return ProbeError(f"{where}: {type(exc).__name__}: {_one_line(str(exc))}")


@contextmanager
def _calls(where: str) -> Iterator[None]:
    """botocore's errors inside as ProbeErrors that name `where`."""
    try:
        yield
    except (ClientError, BotoCoreError) as exc:
        raise _error(where, exc) from exc


class AwsProbe(Probe):
    """Tests pass `endpoint_url` (an emulator) and `session` (its credentials)."""

    def __init__(
        self,
        setup: DrillSetup,
        sleep: Callable[[float], None] | None = None,
        *,
        session: Any = None,
        endpoint_url: str | None = None,
        config: Any = None,
    ) -> None:
        super().__init__(setup, sleep)
        self.region = setup.site.region
        self.operator = session or boto3.Session(region_name=self.region)
        self.endpoint_url = endpoint_url
        self.config = CONFIG.merge(config) if config is not None else CONFIG
        self.reader = ""
        self._clients: dict[str, Any] = {}
        self._s3: Any = None

    def _client(self, service: str, **credentials: str) -> Any:
        """A client of the operator's session (its loaded service models are reused); with
        `credentials`, one that signs with those instead."""
        return self.operator.client(
            service,
            region_name=self.region,
            endpoint_url=self.endpoint_url,
            config=self.config,
            **credentials,
        )

    def _operator(self, service: str) -> Any:
        """The operator's client for `service`, made once: capacity polls it."""
        if service not in self._clients:
            self._clients[service] = self._client(service)
        return self._clients[service]

    @property
    def s3(self) -> Any:
        """The S3 client the replicas are read with: the reader's once signed in."""
        if self._s3 is None:
            self._s3 = self._operator("s3")
        return self._s3

    def sign_in(self, outputs: Mapping[str, Any]) -> None:
        role = str(outputs.get("reader") or "")
        if not role:
            return
        credentials = self._assume(role)
        self._s3 = self._client(
            "s3",
            aws_access_key_id=credentials["AccessKeyId"],
            aws_secret_access_key=credentials["SecretAccessKey"],
            aws_session_token=credentials["SessionToken"],
        )
        self.reader = role

    def _assume(self, role: str) -> dict[str, str]:
        """The role's temporary credentials, retried while it is too new to be assumed."""
        sts = self._operator("sts")
        for attempt in range(ASSUME_ATTEMPTS):
            try:
                with _calls(f"sts:AssumeRole {role}"):
                    answer = sts.assume_role(RoleArn=role, RoleSessionName=self.setup.id[:64])
                return {k: str(v) for k, v in answer["Credentials"].items()}
            except AccessDenied as exc:
                if attempt == ASSUME_ATTEMPTS - 1:
                    raise AccessDenied(
                        f"{exc} (the role trusts only the drill's operator: the identity "
                        "running the drill needs sts:AssumeRole on it, and must be the one "
                        "gpudr named, or name it with --operator)"
                    ) from exc
                self.sleep(ASSUME_DELAY_S)
        raise AssertionError("unreachable")

    def identity(self) -> str:
        return f"the reader role {self.reader}" if self.reader else super().identity()

    def list_objects(self, bucket: BucketConfig) -> list[ObjectInfo]:
        out = []
        with _calls(self.url(bucket)):
            for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=bucket.name):
                out += [
                    ObjectInfo(str(o["Key"]), int(o["Size"]), utc(o["LastModified"]))
                    for o in page.get("Contents") or []
                ]
        return out

    def stored_checksum(self, bucket: BucketConfig, key: str) -> StoredChecksum | None:
        with _calls(f"{self.url(bucket)}/{key}"):
            out = self._attributes(bucket, key)
        checksum = out.get("Checksum") or {}
        field = next((f for f in S3_CHECKSUMS if checksum.get(f)), None)
        if field is None:
            return None
        algorithm = S3_CHECKSUMS[field]
        if checksum.get("ChecksumType") != "COMPOSITE":
            return StoredChecksum(algorithm, str(checksum[field]))
        parts = (out.get("ObjectParts") or {}).get("Parts") or []
        listed = tuple(
            (int(p["Size"]), str(p[field]))
            for p in sorted(parts, key=lambda p: int(p["PartNumber"]))
            if p.get(field)
        )
        total = (out.get("ObjectParts") or {}).get("TotalPartsCount")
        if not listed or (total is not None and len(listed) != int(total)):
            return None  # a composite checksum cannot be recomputed without every part's
        return StoredChecksum(algorithm, str(checksum[field]), listed)

    def _attributes(self, bucket: BucketConfig, key: str) -> dict[str, Any]:
        """GetObjectAttributes, with every page of a composite object's parts."""
        ask = {
            "Bucket": bucket.name,
            "Key": key,
            "ObjectAttributes": ["Checksum", "ObjectParts", "ObjectSize"],
            "MaxParts": MAX_PARTS,
        }
        out: dict[str, Any] = self.s3.get_object_attributes(**ask)
        if (out.get("Checksum") or {}).get("ChecksumType") != "COMPOSITE":
            return out  # a full-object checksum: the parts are not needed
        first = out.get("ObjectParts") or {}
        parts, collected = first, list(first.get("Parts") or [])
        while parts.get("IsTruncated") and parts.get("NextPartNumberMarker"):
            marker = parts["NextPartNumberMarker"]
            parts = (
                self.s3.get_object_attributes(**ask, PartNumberMarker=marker).get("ObjectParts")
                or {}
            )
            collected += parts.get("Parts") or []
            if parts.get("NextPartNumberMarker") == marker:
                break  # a marker that does not move on would loop for ever
        out["ObjectParts"] = {**first, "Parts": collected}
        return out

    def read(self, bucket: BucketConfig, key: str) -> Iterator[bytes]:
        with _calls(f"{self.url(bucket)}/{key}"):
            body = self.s3.get_object(Bucket=bucket.name, Key=key)["Body"]
            try:
                while chunk := body.read(CHUNK):
                    yield chunk
            finally:
                body.close()

    def pool_state(self, pool: DrillPool) -> PoolState:
        with _calls(f"EKS node group {pool.cluster_name}/{pool.pool}"):
            group = self._operator("eks").describe_nodegroup(
                clusterName=pool.cluster_name, nodegroupName=pool.pool
            )["nodegroup"]
        status = group.get("status", "?")
        issues = [i.get("code", "?") for i in (group.get("health") or {}).get("issues") or []]
        asgs = [a["name"] for a in (group.get("resources") or {}).get("autoScalingGroups") or []]
        ready = self._in_service(asgs) if asgs else 0
        detail = f"node group {status}, {ready} instance(s) in service"
        if issues:
            detail += f", health issues: {', '.join(issues)}"
        return PoolState(ready, detail)

    def _in_service(self, asgs: list[str]) -> int:
        """Instances of the groups both InService and Healthy: nodes that can take pods."""
        ready = 0
        with _calls(f"Auto Scaling groups {', '.join(asgs)}"):
            pages = self._operator("autoscaling").get_paginator("describe_auto_scaling_groups")
            for page in pages.paginate(AutoScalingGroupNames=asgs):
                ready += sum(
                    1
                    for g in page.get("AutoScalingGroups") or []
                    for i in g.get("Instances") or []
                    if i.get("LifecycleState") == "InService" and i.get("HealthStatus") == "Healthy"
                )
        return ready


PROBE = AwsProbe
