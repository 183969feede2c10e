"""Checksums as the clouds store them, recomputed from an object's bytes.

A stored checksum is the base64 of the digest (MD5, SHA-1, SHA-256) or of the big-endian CRC
(CRC32 and CRC32C: 4 bytes, CRC64/NVME: 8 bytes), as S3 (`ChecksumCRC32`...), Cloud Storage
(`crc32c_hash`, `md5_hash`) and Azure Blob (`Content-MD5`) return them. The digests and CRC32
come from the standard library (hundreds of MB/s); CRC32C and CRC64/NVME are table-driven here
in pure Python (about 10 MB/s), which the drill's byte budget (`drill.verify`) accounts for.
"""

from __future__ import annotations

import base64
import hashlib
import zlib
from collections.abc import Callable
from typing import Protocol


class Hasher(Protocol):
    def update(self, data: bytes) -> None: ...

    def digest(self) -> bytes: ...


def _table(poly: int, width: int) -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
        table.append(crc & ((1 << width) - 1))
    return table


class _ReflectedCrc:
    """A reflected CRC with all-ones init and final xor (CRC32C, CRC64/NVME)."""

    def __init__(self, table: list[int], width: int) -> None:
        self._table = table
        self._width = width
        self._mask = (1 << width) - 1
        self._crc = self._mask

    def update(self, data: bytes) -> None:
        crc, table = self._crc, self._table
        for byte in data:
            crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
        self._crc = crc

    @property
    def value(self) -> int:
        return self._crc ^ self._mask

    def digest(self) -> bytes:
        return self.value.to_bytes(self._width // 8, "big")


class _Crc32:
    def __init__(self) -> None:
        self._crc = 0

    def update(self, data: bytes) -> None:
        self._crc = zlib.crc32(data, self._crc)

    def digest(self) -> bytes:
        return self._crc.to_bytes(4, "big")


_CRC32C = _table(0x82F63B78, 32)  # Castagnoli, reflected
_CRC64NVME = _table(0x9A6C9329AC4BC9B5, 64)  # NVMe, reflected (0xAD93D23594C93659)


def _crc32c() -> Hasher:
    return _ReflectedCrc(_CRC32C, 32)


def _crc64nvme() -> Hasher:
    return _ReflectedCrc(_CRC64NVME, 64)


ALGORITHMS: dict[str, Callable[[], Hasher]] = {
    "md5": hashlib.md5,
    "sha1": hashlib.sha1,
    "sha256": hashlib.sha256,
    "crc32": _Crc32,
    "crc32c": _crc32c,
    "crc64nvme": _crc64nvme,
}


def new(algorithm: str) -> Hasher:
    """A hasher for `algorithm` (lower case, as in ALGORITHMS); KeyError for another."""
    return ALGORITHMS[algorithm]()


def encoded(hasher: Hasher) -> str:
    """The checksum as the clouds store it: base64 of the big-endian digest."""
    return base64.b64encode(hasher.digest()).decode("ascii")
