"""Re-hashing replicas: part boundaries anywhere in the stream, rows in order whatever order
the streams finish in, unreadable objects failing their row only, and a stop ending every
stream at its next chunk."""

from __future__ import annotations

import base64
import hashlib
import signal
import threading
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from gpudr.app.drill import checksums
from gpudr.app.drill.errors import AccessDenied
from gpudr.app.drill.probes.base import ObjectInfo, StoredChecksum
from gpudr.app.drill.verify import hash_parts, verify, verify_all
from tests.gpudr.app.drill.test_orchestrate import setup

NOW = datetime(2025, 1, 31, tzinfo=UTC)
BUCKET = setup().data[0].bucket


def b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode()


def crc32(data: bytes) -> str:
    return b64(zlib.crc32(data).to_bytes(4, "big"))


def split(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


DATA = bytes(range(256)) * 40  # 10,240 bytes


@pytest.mark.parametrize("chunk", [1, 7, 1000, 3000, 4096, 10_240, 20_000])
@pytest.mark.parametrize(
    "sizes",
    [[10_240], [4096, 4096, 2048], [1, 10_239], [5000, 5240], [10_239, 1]],
    ids=["whole", "three-parts", "tiny-first", "two", "tiny-last"],
)
def test_each_part_hashes_alone_wherever_the_chunks_fall(chunk: int, sizes: list[int]) -> None:
    expected, start = [], 0
    for size in sizes:
        expected.append(crc32(DATA[start : start + size]))
        start += size
    assert hash_parts(split(DATA, chunk), "crc32", sizes) == (expected, len(DATA))


def test_bytes_past_the_parts_make_an_extra_entry_that_cannot_match() -> None:
    got, read = hash_parts(split(DATA + b"!", 1000), "crc32", [4096, 6144])
    assert read == len(DATA) + 1
    assert got[:2] == [crc32(DATA[:4096]), crc32(DATA[4096:])]
    assert got[2] == crc32(b"!")


class MemProbe:
    """Objects in memory, read in `chunk`-byte pieces; `gate` holds every read until set."""

    def __init__(self, objects: dict[str, StoredChecksum | None], chunk: int = 512) -> None:
        self.stored = objects
        self.chunk = chunk
        self.gate = threading.Event()
        self.gate.set()
        self.closed: list[str] = []
        self.denied: set[str] = set()
        self.served: dict[str, int] = {}  # chunks handed out per key

    def stored_checksum(self, bucket: object, key: str) -> StoredChecksum | None:
        return self.stored[key]

    def read(self, bucket: object, key: str) -> Iterator[bytes]:
        if key in self.denied:
            raise AccessDenied(f"s3://b/{key}: AccessDenied: not allowed")
        try:
            for piece in split(DATA, self.chunk):
                self.gate.wait(5)
                self.served[key] = self.served.get(key, 0) + 1
                yield piece
        finally:
            self.closed.append(key)


def obj(key: str, size: int = len(DATA)) -> ObjectInfo:
    return ObjectInfo(key, size, NOW)


@pytest.mark.parametrize(
    ("stored", "ok", "detail"),
    [
        (StoredChecksum("sha256", b64(hashlib.sha256(DATA).digest())), True, "sha256 matches"),
        (StoredChecksum("md5", b64(hashlib.md5(DATA + b"x").digest())), False, "md5 differs"),
        (None, False, "no recorded checksum"),
        (StoredChecksum("xxhash", "AAAA"), False, "not one gpudr computes"),
        (
            StoredChecksum("crc32", "", ((4096, crc32(DATA[:4096])), (6144, crc32(DATA[4096:])))),
            True,
            "crc32 matches for all 2 parts",
        ),
        (
            StoredChecksum("crc32", "", ((4096, crc32(DATA[:4096])), (6144, crc32(b"no")))),
            False,
            "differs from the recorded value (part 2)",
        ),
    ],
)
def test_a_row_says_what_was_compared(stored: StoredChecksum | None, ok: bool, detail: str) -> None:
    row = verify(MemProbe({"k": stored}), BUCKET, obj("k"))
    assert (row["ok"], detail in row["detail"]) == (ok, True), row


def test_a_short_read_fails_whatever_the_checksum_says() -> None:
    stored = StoredChecksum("sha256", b64(hashlib.sha256(DATA).digest()))
    row = verify(MemProbe({"k": stored}), BUCKET, obj("k", size=len(DATA) + 10))
    assert not row["ok"] and row["detail"] == f"read {len(DATA)} bytes, listed {len(DATA) + 10}"


def test_an_error_no_probe_mapped_fails_its_row_only() -> None:
    class Broken(MemProbe):
        def read(self, bucket: object, key: str) -> Iterator[bytes]:
            raise RuntimeError("the SDK's own bug\nwith a traceback")

    good = StoredChecksum("crc32c", checksums.encoded(_hashed("crc32c")))
    rows = verify_all(Broken({"a": good, "b": good}), BUCKET, [obj("a"), obj("b")])
    assert [(r["ok"], r["detail"]) for r in rows] == [
        (False, "RuntimeError: the SDK's own bug")
    ] * 2


def test_rows_come_back_in_order_and_a_denied_object_fails_only_its_own_row() -> None:
    good = StoredChecksum("crc32c", checksums.encoded(_hashed("crc32c")))
    keys = [f"k{i}" for i in range(9)]
    probe = MemProbe(dict.fromkeys(keys, good))
    probe.denied = {"k4"}
    rows = verify_all(probe, BUCKET, [obj(k) for k in keys], streams=3)
    assert [r["key"] for r in rows] == keys
    assert [r["ok"] for r in rows] == [k != "k4" for k in keys]
    assert rows[4]["detail"] == "s3://b/k4: AccessDenied: not allowed"


def test_an_interrupt_stops_every_stream_at_its_next_chunk() -> None:
    good = StoredChecksum("crc32c", checksums.encoded(_hashed("crc32c")))
    keys = [f"k{i}" for i in range(4)]
    probe = MemProbe(dict.fromkeys(keys, good), chunk=64)
    probe.gate.clear()  # every stream waits on its next chunk

    caller = threading.get_ident()

    def ctrl_c_then_release() -> None:
        threading.Event().wait(0.2)
        signal.pthread_kill(caller, signal.SIGINT)  # Ctrl-C, in the drill's main thread
        threading.Event().wait(0.2)
        probe.gate.set()

    threading.Thread(target=ctrl_c_then_release).start()
    with pytest.raises(KeyboardInterrupt):
        verify_all(probe, BUCKET, [obj(k) for k in keys], streams=4)
    # The interrupt came through at once; every stream then ended at its next chunk (160 of
    # them each, had they run on) and released its SDK stream.
    for _ in range(50):
        if len(probe.closed) == len(keys):
            break
        threading.Event().wait(0.1)
    assert sorted(probe.closed) == keys
    assert all(n <= 2 for n in probe.served.values()), probe.served


def test_a_stopped_stream_says_so_in_its_row() -> None:
    good = StoredChecksum("crc32c", checksums.encoded(_hashed("crc32c")))
    stop = threading.Event()
    stop.set()
    probe = MemProbe({"k0": good})
    assert verify(probe, BUCKET, obj("k0"), stop)["detail"] == "not finished: the drill was stopped"
    assert probe.closed == ["k0"]


def _hashed(algorithm: str) -> checksums.Hasher:
    h = checksums.new(algorithm)
    h.update(DATA)
    return h
