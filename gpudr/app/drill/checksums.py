"""Checksums as the clouds store them, recomputed from an object's bytes at memory speed.

A stored checksum is the base64 of the digest (MD5, SHA-1, SHA-256) or of the big-endian CRC
(CRC32 and CRC32C: 4 bytes, CRC64/NVME: 8 bytes), as S3 (`ChecksumCRC32`...), Cloud Storage
(`crc32c`, `md5Hash`) and Azure Blob (`Content-MD5`) return them.

Every algorithm runs in C and releases the GIL, so that a drill verifying several objects at
once uses every core: CRC32C from google-crc32c (Cloud Storage's own library), CRC64/NVME from
awscrt (what botocore uses for S3's default checksum), CRC32 from zlib, the digests from
hashlib. The pure-Python CRC tables this module used before hashed 3 to 11 MB/s: a 2 GB check
took minutes against a stage target of minutes. `make bench` measures each algorithm through
the drill's own verification (docs/bench-checksums.md).
"""

from __future__ import annotations

import base64
import hashlib
import zlib
from collections.abc import Callable
from typing import Protocol

import google_crc32c
from awscrt import checksums as crt


class Hasher(Protocol):
    def update(self, data: bytes) -> None: ...

    def digest(self) -> bytes: ...


class _Crc:
    """A running CRC from a C function `crc(data, previous) -> int` of `width` bits."""

    def __init__(self, crc: Callable[[bytes, int], int], width: int) -> None:
        self._crc_fn = crc
        self._bytes = width // 8
        self._crc = 0

    def update(self, data: bytes) -> None:
        self._crc = self._crc_fn(data, self._crc)

    def digest(self) -> bytes:
        return self._crc.to_bytes(self._bytes, "big")


def _crc32() -> Hasher:
    return _Crc(zlib.crc32, 32)


def _crc32c() -> Hasher:
    return _Crc(lambda data, crc: google_crc32c.extend(crc, data), 32)


def _crc64nvme() -> Hasher:
    return _Crc(crt.crc64nvme, 64)


ALGORITHMS: dict[str, Callable[[], Hasher]] = {
    "md5": hashlib.md5,
    "sha1": hashlib.sha1,
    "sha256": hashlib.sha256,
    "crc32": _crc32,
    "crc32c": _crc32c,
    "crc64nvme": _crc64nvme,
}


def new(algorithm: str) -> Hasher:
    """A hasher for `algorithm` (lower case, as in ALGORITHMS); KeyError for another."""
    return ALGORITHMS[algorithm]()


def encoded(hasher: Hasher) -> str:
    """The checksum as the clouds store it: base64 of the big-endian digest."""
    return base64.b64encode(hasher.digest()).decode("ascii")
