"""Each cloud's drill checks against a fake CLI runner: the commands run (and as whom), how
their output is read, and checksums recomputed the way the clouds store them."""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from typing import Any

import pytest

from gpudr.app.drill import checksums
from gpudr.app.drill.commands import CommandFailed, SubprocessRunner
from gpudr.app.drill.probes import ObjectInfo, parse_time
from gpudr.app.drill.probes._cli import AwsProbe
from gpudr.app.drill.verify import verify
from gpudr.build.drill import DrillSetup, build_drill
from gpudr.core.design import design
from gpudr.core.spec import load_plan
from gpudr.docs.cloudcli import shell
from gpudr.docs.runbook import build_runbook
from tests.conftest import ROOT

NOW = datetime(2025, 1, 31, 3, 12, tzinfo=UTC)


@cache
def setup(example: str, site: str, operator: str | None = None) -> DrillSetup:
    plan = load_plan(ROOT / "examples" / f"{example}.yaml")
    return build_drill(design(plan), site, NOW, operator=operator)


class Seq:
    """Answers given one after the other; an exception among them is raised."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)


class FakeRunner:
    """Answers by the first rule whose words all appear in the command, in order given."""

    def __init__(self, rules: Sequence[tuple[Sequence[str], Any]]) -> None:
        self.rules = list(rules)
        self.calls: list[tuple[list[str], dict[str, str]]] = []

    def _answer(self, argv: Sequence[str]) -> Any:
        for words, answer in self.rules:
            if all(w in argv for w in words):
                if isinstance(answer, Seq):
                    answer = answer.answers.pop(0)
                if isinstance(answer, Exception):
                    raise answer
                return answer
        raise AssertionError(f"unexpected command {argv}")

    def run(self, argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
        self.calls.append((list(argv), dict(env or {})))
        answer = self._answer(argv)
        return answer if isinstance(answer, str) else json.dumps(answer)

    def stream(self, argv: Sequence[str], env: Mapping[str, str] | None = None) -> Iterator[bytes]:
        self.calls.append((list(argv), dict(env or {})))
        data = self._answer(argv)
        for i in range(0, len(data), 5):
            yield data[i : i + 5]


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


# --- checksums ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("algorithm", "expected"),
    [
        ("crc32", (0xCBF43926).to_bytes(4, "big")),
        ("crc32c", (0xE3069283).to_bytes(4, "big")),  # the CRC catalogue's check values
        ("crc64nvme", (0xAE8B14860A799888).to_bytes(8, "big")),
        ("md5", hashlib.md5(b"123456789").digest()),
        ("sha256", hashlib.sha256(b"123456789").digest()),
    ],
)
def test_checksums_match_the_standard_check_values(algorithm: str, expected: bytes) -> None:
    h = checksums.new(algorithm)
    for part in (b"1234", b"5", b"6789"):  # fed in pieces, as a stream arrives
        h.update(part)
    assert checksums.encoded(h) == b64(expected)


# --- AWS ----------------------------------------------------------------------------------------

CREDS = {"AccessKeyId": "ASIAOFFLINE", "SecretAccessKey": "s3cret", "SessionToken": "tok"}
READER = "arn:aws:iam::123456789012:role/gpudr-drill-usw2-20250131t031200z-reader"


def test_aws_reads_replicas_as_the_reader_role_and_retries_until_it_exists() -> None:
    s = setup("aws-two-region", "usw2")
    bucket = next(b for b in s.site.buckets if b.data_class == "checkpoints")
    runner = FakeRunner(
        [
            (["assume-role"], Seq(CommandFailed("AccessDenied"), {"Credentials": CREDS})),
            (
                ["list-objects-v2"],
                {"Contents": [{"Key": "s/1", "Size": 5, "LastModified": "2025-01-31T02:00:00Z"}]},
            ),
        ]
    )
    slept: list[float] = []
    probe = AwsProbe(s, runner, slept.append)
    probe.sign_in({"reader": READER})
    assert slept == [10.0]
    assert probe.list_objects(bucket) == [
        ObjectInfo("s/1", 5, datetime(2025, 1, 31, 2, 0, tzinfo=UTC))
    ]
    argv, env = runner.calls[-1]
    assert argv[:3] == ["aws", "s3api", "list-objects-v2"] and bucket.name in argv
    assert env["AWS_SESSION_TOKEN"] == "tok" and env["AWS_PROFILE"] == ""
    assert "reader role" in probe.identity()


def test_aws_composite_checksum_is_verified_part_by_part() -> None:
    s = setup("aws-two-region", "usw2")
    bucket = next(b for b in s.site.buckets if b.data_class == "checkpoints")
    parts = [b"a" * 8, b"b" * 8, b"c" * 3]

    def crc(data: bytes) -> str:
        return b64(zlib.crc32(data).to_bytes(4, "big"))

    attributes = {
        "Checksum": {"ChecksumCRC32": "composite-3", "ChecksumType": "COMPOSITE"},
        "ObjectParts": {
            "TotalPartsCount": 3,
            "Parts": [
                {"PartNumber": i + 1, "Size": len(p), "ChecksumCRC32": crc(p)}
                for i, p in enumerate(parts)
            ],
        },
    }
    body = b"".join(parts)
    runner = FakeRunner([(["get-object-attributes"], attributes), (["s3", "cp"], body)])
    probe = AwsProbe(s, runner)
    row = verify(probe, bucket, ObjectInfo("ckpt/1", len(body), NOW))
    assert row["ok"] and row["detail"] == "crc32 matches for all 3 parts", row
    bad = FakeRunner([(["get-object-attributes"], attributes), (["s3", "cp"], body[:-1] + b"x")])
    row = verify(AwsProbe(s, bad), bucket, ObjectInfo("ckpt/1", len(body), NOW))
    assert not row["ok"] and "(part 3)" in row["detail"], row


@pytest.mark.parametrize(
    ("checksum", "expected"),
    [
        ({"ChecksumCRC64NVME": "x", "ChecksumType": "FULL_OBJECT"}, ("crc64nvme", "x")),
        ({"ChecksumSHA256": "y", "ChecksumType": "FULL_OBJECT"}, ("sha256", "y")),
        ({}, None),  # uploaded without a checksum and before S3 added one by default
    ],
)
def test_aws_full_object_checksums(checksum: dict[str, str], expected: Any) -> None:
    s = setup("aws-two-region", "usw2")
    bucket = s.site.buckets[0]
    probe = AwsProbe(s, FakeRunner([(["get-object-attributes"], {"Checksum": checksum})]))
    stored = probe.stored_checksum(bucket, "k")
    assert (stored.algorithm, stored.value) == expected if stored else expected is None


def test_aws_capacity_counts_healthy_instances_in_service() -> None:
    s = setup("aws-two-region", "usw2")
    pool = s.pools[0]
    runner = FakeRunner(
        [
            (
                ["describe-nodegroup"],
                {
                    "nodegroup": {
                        "status": "ACTIVE",
                        "resources": {"autoScalingGroups": [{"name": "eks-train-asg"}]},
                        "health": {"issues": [{"code": "InsufficientFreeAddresses"}]},
                    }
                },
            ),
            (
                ["describe-auto-scaling-groups", "eks-train-asg"],
                {
                    "AutoScalingGroups": [
                        {
                            "Instances": [
                                {"LifecycleState": "InService", "HealthStatus": "Healthy"},
                                {"LifecycleState": "Pending", "HealthStatus": "Healthy"},
                            ]
                        }
                    ]
                },
            ),
        ]
    )
    state = AwsProbe(s, runner).pool_state(pool)
    assert state.ready == 1
    assert "InsufficientFreeAddresses" in state.detail
    argv, env = runner.calls[0]
    assert pool.cluster_name in argv and env == {}  # the operator's credentials, not the reader's


@pytest.mark.parametrize(
    ("example", "site", "probe"),
    [
        ("aws-two-region", "usw2", AwsProbe),
    ],
)
def test_probes_read_an_object_as_the_runbook_tells_people_to(
    example: str, site: str, probe: type[AwsProbe]
) -> None:
    """One command line per operation (gpudr.docs.cloudcli): the runbook hashes the object the
    probe streams, and names the bucket by the URL the probe reports."""
    s = setup(example, site)
    bucket = next(b for b in s.site.buckets if b.data_class == "checkpoints")
    runner = FakeRunner([([], b"bytes")])
    b"".join(probe(s, runner).read(bucket, "$CHECKPOINTS_KEY"))
    ((argv, _),) = runner.calls
    rb = build_runbook(design(load_plan(ROOT / "examples" / f"{example}.yaml")), s.primary, site)
    assert f"{shell(argv)} | sha256sum" in [c.command for c in rb.step("data:checkpoints").checks]
    assert probe(s, runner).url(bucket) in rb.step("data:checkpoints").why


def test_times_as_the_clis_print_them() -> None:
    for text in ("2025-01-31T03:12:00Z", "2025-01-31T03:12:00+00:00", "2025-01-31T03:12:00.000Z"):
        assert parse_time(text) == NOW


# --- the real runner, on this machine's own tools -----------------------------------------------


def test_subprocess_runner_output_errors_and_missing_tools() -> None:
    runner = SubprocessRunner()
    assert runner.run(["sh", "-c", "printf hello"]) == "hello"
    assert b"".join(runner.stream(["sh", "-c", "printf abc; printf def"])) == b"abcdef"
    with pytest.raises(CommandFailed, match="the last line"):
        runner.run(["sh", "-c", "echo noise >&2; echo 'the last line' >&2; exit 3"])
    with pytest.raises(CommandFailed, match="exit code 4"):
        list(runner.stream(["sh", "-c", "exit 4"]))
    with pytest.raises(CommandFailed, match="is not installed"):
        runner.run(["gpudr-no-such-tool"])
    # An empty value unsets a variable (a named AWS profile would win over the reader's keys).
    assert runner.run(["sh", "-c", 'echo "${HOME:-unset}"'], {"HOME": ""}).strip() == "unset"
