"""What every cloud's drill probe answers, and the errors it raises.

A probe reads the DR site's replicas through the cloud's own Python SDK (as the drill's reader
identity where the cloud lets a program take it on) and the GPU pools' state. Its errors are
`ProbeError`s with a one-line message that names the bucket or pool and the cloud's own reason:
the drill reports them in the stage they happened in, never as a traceback.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from gpudr.build.drill import DrillPool, DrillSetup
from gpudr.contract.site import BucketConfig
from gpudr.docs import cloudcli as cli

CHUNK = 8 << 20  # bytes per read: large enough that hashing, not the loop, sets the pace


@dataclass(frozen=True)
class ObjectInfo:
    key: str
    size: int
    modified: datetime


@dataclass(frozen=True)
class StoredChecksum:
    """What the cloud recorded when the object was written."""

    algorithm: str  # md5 | sha1 | sha256 | crc32 | crc32c | crc64nvme
    value: str  # base64, as the cloud returns it
    # S3 composite checksums (multipart uploads): each part's size and checksum, in order.
    parts: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True)
class PoolState:
    ready: int  # nodes running
    detail: str


def parse_time(text: str) -> datetime:
    """An RFC 3339 / ISO 8601 time (`...Z`, `+00:00`, fractions); naive means UTC."""
    value = text.strip().replace("Z", "+00:00")
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def utc(at: datetime) -> datetime:
    """An SDK's datetime in UTC (naive ones are UTC: botocore and the GCS client say so)."""
    return at.astimezone(UTC) if at.tzinfo else at.replace(tzinfo=UTC)


class Probe(ABC):
    """One cloud's checks for one drill."""

    def __init__(self, setup: DrillSetup, sleep: Callable[[float], None] | None = None) -> None:
        self.setup = setup
        self.site = setup.site
        self.sleep = sleep or (lambda _s: None)

    def sign_in(self, outputs: Mapping[str, Any]) -> None:
        """Take on the reader identity the drill stack exported (`reader`), if this cloud can."""
        del outputs

    def identity(self) -> str:
        """Who the data calls run as, for the report."""
        return "the operator's own credentials"

    def url(self, bucket: BucketConfig) -> str:
        return cli.storage_url(self.site.cloud, bucket)

    @abstractmethod
    def list_objects(self, bucket: BucketConfig) -> list[ObjectInfo]: ...

    @abstractmethod
    def stored_checksum(self, bucket: BucketConfig, key: str) -> StoredChecksum | None: ...

    @abstractmethod
    def read(self, bucket: BucketConfig, key: str) -> Iterator[bytes]: ...

    @abstractmethod
    def pool_state(self, pool: DrillPool) -> PoolState: ...
