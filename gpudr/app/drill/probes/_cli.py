"""What a drill checks in the cloud, through each cloud's CLI (tests fake the runner).

Replicas are read as the drill's reader identity where the CLI can take it on: AWS assumes the
reader role (`aws sts assume-role`, temporary credentials for the data commands only). GPU
capacity is read with the operator's own credentials: the reader can read data and nothing
else. (GCP's and Azure's probes use their SDKs: probes/gcp.py, probes/azure.py.)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from gpudr.app.drill.commands import CommandFailed, Runner
from gpudr.app.drill.probes.base import ObjectInfo, PoolState, StoredChecksum, parse_time
from gpudr.app.drill.probes.base import Probe as BaseProbe
from gpudr.build.drill import DrillPool, DrillSetup
from gpudr.contract.site import BucketConfig
from gpudr.docs import cloudcli as cli

# S3's checksum attributes -> this module's algorithm names (drill/checksums.py).
S3_CHECKSUMS = {
    "ChecksumCRC64NVME": "crc64nvme",
    "ChecksumCRC32C": "crc32c",
    "ChecksumCRC32": "crc32",
    "ChecksumSHA256": "sha256",
    "ChecksumSHA1": "sha1",
}
ASSUME_ATTEMPTS = 6  # a new IAM role is assumable after seconds, not at once
ASSUME_DELAY_S = 10.0


def _json(text: str) -> Any:
    return json.loads(text) if text.strip() else None


class Probe(BaseProbe):
    """A probe that runs the cloud's CLI through `runner`."""

    def __init__(
        self, setup: DrillSetup, runner: Runner, sleep: Callable[[float], None] | None = None
    ) -> None:
        super().__init__(setup, sleep)
        self.runner = runner


class AwsProbe(Probe):
    def __init__(
        self, setup: DrillSetup, runner: Runner, sleep: Callable[[float], None] | None = None
    ) -> None:
        super().__init__(setup, runner, sleep)
        self.region = setup.site.region
        self.reader_env: dict[str, str] = {}
        self.reader = ""

    def sign_in(self, outputs: Mapping[str, Any]) -> None:
        role = str(outputs.get("reader") or "")
        if not role:
            return
        argv = cli.aws_assume_role(role, self.setup.id[:64], self.region)
        for attempt in range(ASSUME_ATTEMPTS):
            try:
                creds = _json(self.runner.run(argv))["Credentials"]
                break
            except CommandFailed:
                if attempt == ASSUME_ATTEMPTS - 1:
                    raise
                self.sleep(ASSUME_DELAY_S)
        # An empty AWS_PROFILE unsets it: with a profile named, the CLI would ignore these.
        self.reader_env = {
            "AWS_ACCESS_KEY_ID": creds["AccessKeyId"],
            "AWS_SECRET_ACCESS_KEY": creds["SecretAccessKey"],
            "AWS_SESSION_TOKEN": creds["SessionToken"],
            "AWS_PROFILE": "",
        }
        self.reader = role

    def identity(self) -> str:
        return f"the reader role {self.reader}" if self.reader else super().identity()

    def list_objects(self, bucket: BucketConfig) -> list[ObjectInfo]:
        out = _json(self.runner.run(cli.s3_list_objects(bucket, self.region), self.reader_env))
        return [
            ObjectInfo(o["Key"], int(o["Size"]), parse_time(o["LastModified"]))
            for o in (out or {}).get("Contents") or []
        ]

    def stored_checksum(self, bucket: BucketConfig, key: str) -> StoredChecksum | None:
        argv = cli.s3_object_attributes(bucket, key, self.region)
        out = _json(self.runner.run(argv, self.reader_env)) or {}
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

    def read(self, bucket: BucketConfig, key: str) -> Iterator[bytes]:
        argv = cli.read_object("aws", bucket, key, self.region)
        return self.runner.stream(argv, self.reader_env)

    def pool_state(self, pool: DrillPool) -> PoolState:
        argv = cli.eks_nodegroup(pool.cluster_name, pool.pool, self.region, output="json")
        group = _json(self.runner.run(argv))["nodegroup"]
        status = group.get("status", "?")
        issues = [i.get("code", "?") for i in (group.get("health") or {}).get("issues") or []]
        asgs = [a["name"] for a in (group.get("resources") or {}).get("autoScalingGroups") or []]
        ready = 0
        if asgs:
            described = _json(self.runner.run(cli.autoscaling_groups(asgs, self.region)))
            ready = sum(
                1
                for g in described.get("AutoScalingGroups") or []
                for i in g.get("Instances") or []
                if i.get("LifecycleState") == "InService" and i.get("HealthStatus") == "Healthy"
            )
        detail = f"node group {status}, {ready} instance(s) in service"
        if issues:
            detail += f", health issues: {', '.join(issues)}"
        return PoolState(ready, detail)


PROBES: dict[str, type[Probe]] = {"aws": AwsProbe}
