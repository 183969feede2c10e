"""Re-hash a replica's objects and compare them with the checksums the cloud recorded.

Each object is streamed from the probe in chunks and hashed as it arrives, never stored. S3's
composite checksums (multipart uploads) are per part: the stream is cut at the recorded part
sizes and each part hashed alone. Objects are verified `VERIFY_STREAMS` at a time: every
checksum gpudr computes runs in C without the GIL (checksums.py), so that several objects hash on
several cores while their bytes arrive, and one slow object does not hold up the rest.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from gpudr.app.drill import checksums
from gpudr.app.drill.errors import ProbeError
from gpudr.app.drill.probes.base import ObjectInfo, StoredChecksum
from gpudr.contract.site import BucketConfig

# Objects hashed at once. More than the cores (2 here, often 4-16 on a runner) keeps each core
# busy while another stream waits on the network; each stream holds one chunk (probes/base.py).
VERIFY_STREAMS = 4


class Readable(Protocol):
    """What verification asks of a probe (every `Probe` is one): the recorded checksum and the
    bytes."""

    def stored_checksum(self, bucket: BucketConfig, key: str) -> StoredChecksum | None: ...

    def read(self, bucket: BucketConfig, key: str) -> Iterator[bytes]: ...


class _Stopped(Exception):
    """The drill is stopping (Ctrl-C, SIGTERM, SIGHUP): a read ends at its next chunk."""


def verify(
    probe: Readable, bucket: BucketConfig, obj: ObjectInfo, stop: threading.Event | None = None
) -> dict[str, Any]:
    """One object's row: `ok`, `detail`, and what was read. An object the probe cannot read
    (access denied, gone since it was listed) fails its row, not the drill."""
    row: dict[str, Any] = {"key": obj.key, "size": obj.size, "ok": False}
    try:
        stored = probe.stored_checksum(bucket, obj.key)
        if stored is None:
            row["detail"] = "no recorded checksum to verify against"
        elif stored.algorithm not in checksums.ALGORITHMS:
            row["algorithm"] = stored.algorithm
            row["detail"] = f"recorded checksum {stored.algorithm} is not one gpudr computes"
        else:
            _compare(row, obj, stored, _chunks(probe.read(bucket, obj.key), stop))
    except ProbeError as exc:
        row["detail"] = str(exc).strip().splitlines()[0] if str(exc).strip() else "read failed"
    except _Stopped:
        row["detail"] = "not finished: the drill was stopped"
    except Exception as exc:
        # An SDK failure no probe mapped: this object is not verified, and the others still are.
        text = str(exc).strip().splitlines()
        row["detail"] = f"{type(exc).__name__}: {text[0] if text else 'no message'}"
    return row


def verify_all(
    probe: Readable,
    bucket: BucketConfig,
    objects: Sequence[ObjectInfo],
    streams: int = VERIFY_STREAMS,
) -> list[dict[str, Any]]:
    """Every object's row, in the order given. An interrupt in the caller's thread stops every
    stream at its next chunk before it propagates."""
    if not objects:
        return []
    stop = threading.Event()
    pool = ThreadPoolExecutor(max_workers=min(streams, len(objects)), thread_name_prefix="verify")
    try:
        rows = list(pool.map(lambda o: verify(probe, bucket, o, stop), objects))
    except BaseException:
        # Not waited for: a stream blocked in a read would hold cleanup up to the SDK's read
        # timeout and retries. Each ends at its next chunk, and releases its connection then.
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return rows


def _chunks(stream: Iterable[bytes], stop: threading.Event | None) -> Iterator[bytes]:
    iterator = iter(stream)
    try:
        for chunk in iterator:
            if stop is not None and stop.is_set():
                raise _Stopped
            yield chunk
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            close()  # a generator's `finally` releases the SDK's connection now, not at GC


def hash_parts(
    chunks: Iterable[bytes], algorithm: str, sizes: Sequence[int]
) -> tuple[list[str], int]:
    """Each part's checksum (`sizes`: the parts' lengths; one part is the whole object) and the
    bytes read. Bytes past the parts' total are hashed into an extra entry, so that they fail
    the comparison. A chunk inside one part is hashed as it is, without a copy."""
    got: list[str] = []
    hasher = checksums.new(algorithm)
    left = sizes[0]
    read = 0
    for chunk in chunks:
        read += len(chunk)
        pos = 0
        while pos < len(chunk):
            if len(got) == len(sizes) or len(chunk) - pos <= left:
                piece = chunk if pos == 0 else chunk[pos:]
            else:
                piece = chunk[pos : pos + left]
            hasher.update(piece)
            pos += len(piece)
            if len(got) < len(sizes):
                left -= len(piece)
                if left == 0:
                    got.append(checksums.encoded(hasher))
                    hasher = checksums.new(algorithm)
                    left = sizes[len(got)] if len(got) < len(sizes) else 0
    if len(got) < len(sizes) or read > sum(sizes):
        got.append(checksums.encoded(hasher))
    return got, read


def _compare(
    row: dict[str, Any], obj: ObjectInfo, stored: StoredChecksum, chunks: Iterable[bytes]
) -> None:
    row["algorithm"] = stored.algorithm
    sizes = [size for size, _ in stored.parts] or [obj.size]
    expected = [value for _, value in stored.parts] or [stored.value]
    got, read = hash_parts(chunks, stored.algorithm, sizes)
    row["read"] = read
    if read != obj.size:
        row["detail"] = f"read {read} bytes, listed {obj.size}"
    elif got != expected:
        bad = [i + 1 for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b]
        where = f" (part {', '.join(map(str, bad))})" if stored.parts else ""
        row["detail"] = f"{stored.algorithm} differs from the recorded value{where}"
    else:
        row["ok"] = True
        row["detail"] = f"{stored.algorithm} matches" + (
            f" for all {len(sizes)} parts" if stored.parts else ""
        )
