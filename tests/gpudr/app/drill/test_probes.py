"""What every probe shares: checksums recomputed the way the clouds store them, and times as
the clouds' APIs print them. Each cloud's probe is tested against its emulator:
test_probe_aws.py (moto), test_probe_gcp.py (fake-gcs-server), test_probe_azure.py (Azurite)."""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime

import pytest

from gpudr.app.drill import checksums
from gpudr.app.drill.probes import parse_time

NOW = datetime(2025, 1, 31, 3, 12, tzinfo=UTC)


@pytest.mark.parametrize(
    ("algorithm", "expected"),
    [
        ("crc32", (0xCBF43926).to_bytes(4, "big")),
        ("crc32c", (0xE3069283).to_bytes(4, "big")),  # the CRC catalogue's check values
        ("crc64nvme", (0xAE8B14860A799888).to_bytes(8, "big")),
        ("md5", hashlib.md5(b"123456789").digest()),
        ("sha1", hashlib.sha1(b"123456789").digest()),
        ("sha256", hashlib.sha256(b"123456789").digest()),
    ],
)
def test_checksums_match_the_standard_check_values(algorithm: str, expected: bytes) -> None:
    h = checksums.new(algorithm)
    for part in (b"1234", b"5", b"6789"):  # fed in pieces, as a stream arrives
        h.update(part)
    assert checksums.encoded(h) == base64.b64encode(expected).decode()


def test_times_as_the_apis_print_them() -> None:
    for text in ("2025-01-31T03:12:00Z", "2025-01-31T03:12:00+00:00", "2025-01-31T03:12:00.000Z"):
        assert parse_time(text) == NOW
