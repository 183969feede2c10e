"""The CLI drill checks (GCP, Azure) against a fake CLI runner: the commands run (and as whom),
how their output is read, and checksums recomputed the way the clouds store them. AWS's probe
(boto3) is tested against moto in test_probe_aws.py."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from typing import Any

import pytest

from gpudr.app.drill import checksums
from gpudr.app.drill.commands import CommandFailed, SubprocessRunner
from gpudr.app.drill.orchestrate import verify
from gpudr.app.drill.probes import parse_time
from gpudr.app.drill.probes._cli import AzureProbe, GcpProbe
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


# --- GCP ----------------------------------------------------------------------------------------


def test_gcp_impersonates_the_reader_only_when_the_stack_granted_it() -> None:
    s = setup("gcp-two-region", "use4", operator="user:op@example.com")
    bucket = next(b for b in s.site.buckets if b.data_class == "checkpoints")
    listing = [{"name": "c/1", "size": "12", "update_time": "2025-01-31T03:00:00.123+00:00"}]
    runner = FakeRunner(
        [
            (["objects", "list"], listing),
            (["objects", "describe"], {"crc32c_hash": "AAAAAA==", "md5_hash": "bWQ1"}),
        ]
    )
    probe = GcpProbe(s, runner)
    probe.sign_in({"reader": "gpudr-drill-x@acme-vision-dr.iam.gserviceaccount.com"})
    (obj,) = probe.list_objects(bucket)
    assert (obj.key, obj.size) == ("c/1", 12)
    stored = probe.stored_checksum(bucket, "c/1")
    assert stored is not None and stored.algorithm == "md5"  # MD5 first, at C speed
    assert all(
        "--impersonate-service-account=gpudr-drill-x@acme-vision-dr.iam.gserviceaccount.com" in argv
        for argv, _ in runner.calls
    )
    plain = GcpProbe(setup("gcp-two-region", "use4"), runner)
    plain.sign_in({"reader": "someone@x"})
    assert plain.impersonate == []  # no operator known: the stack granted nobody


def test_gcp_capacity_counts_running_instances_of_the_pools_groups() -> None:
    s = setup("gcp-two-region", "use4")
    url = (
        "https://www.googleapis.com/compute/v1/projects/acme-vision-dr/zones/us-east4-a/"
        "instanceGroupManagers/gke-train-grp"
    )
    runner = FakeRunner(
        [
            (["node-pools", "describe"], {"status": "RUNNING", "instanceGroupUrls": [url]}),
            (
                ["list-instances", "gke-train-grp", "us-east4-a"],
                [{"instanceStatus": "RUNNING"}, {"instanceStatus": "STAGING"}],
            ),
        ]
    )
    state = GcpProbe(s, runner).pool_state(s.pools[0])
    assert state.ready == 1 and "RUNNING" in state.detail


# --- Azure --------------------------------------------------------------------------------------


def test_azure_reads_content_md5_and_the_pools_count() -> None:
    s = setup("azure-two-region", "wus")
    bucket = next(b for b in s.site.buckets if b.data_class == "checkpoints")
    body = b"checkpoint bytes"
    md5 = b64(hashlib.md5(body).digest())
    runner = FakeRunner(
        [
            (
                ["blob", "list"],
                [{"name": "c/1", "size": len(body), "modified": "2025-01-31T03:00:00+00:00"}],
            ),
            (["blob", "show"], json.dumps(md5)),  # --output json of a string
            (["blob", "download", "/dev/stdout"], body),
            (
                ["nodepool", "show", "train"],
                {"provisioningState": "Succeeded", "powerState": {"code": "Running"}, "count": 1},
            ),
        ]
    )
    probe = AzureProbe(s, runner)
    (obj,) = probe.list_objects(bucket)
    row = verify(probe, bucket, obj)
    assert row["ok"] and row["algorithm"] == "md5", row
    assert all("--auth-mode" in argv for argv, _ in runner.calls)
    pool = next(p for p in s.pools if p.pool == "train")
    state = probe.pool_state(pool)
    assert state.ready == 1
    argv, _ = runner.calls[-1]
    assert "gpudr-drill-wus-20250131t031200z" in argv  # the drill's group, not the DR site's
    assert "operator" in probe.identity()


@pytest.mark.parametrize(
    ("example", "site", "probe"),
    [
        ("gcp-two-region", "use4", GcpProbe),
        ("azure-two-region", "wus", AzureProbe),
    ],
)
def test_probes_read_an_object_as_the_runbook_tells_people_to(
    example: str, site: str, probe: type[GcpProbe | AzureProbe]
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
