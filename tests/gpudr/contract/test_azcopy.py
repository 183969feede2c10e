"""The AzCopy job's one home: the entrypoint the image runs is the module the program and the
pack read their names from, and it stands alone in the image."""

from __future__ import annotations

import ast

import pytest

from gpudr.contract import azcopy_job
from gpudr.contract.azcopy import cron_expression, cron_interval_s
from gpudr.contract.stack import image_error
from tests.conftest import ROOT

DOCKERFILE = ROOT / "docker" / "azcopy" / "Dockerfile"
ENTRYPOINT = ROOT / "gpudr" / "contract" / "azcopy_job.py"


def test_the_entrypoint_imports_nothing_but_the_standard_library() -> None:
    """The image holds this one file, python3 and azcopy: a gpudr import would fail there."""
    tree = ast.parse(ENTRYPOINT.read_text())
    modules = {
        (n.module or "") if isinstance(n, ast.ImportFrom) else a.name
        for n in ast.walk(tree)
        if isinstance(n, ast.Import | ast.ImportFrom)
        for a in n.names
    }
    assert not [m for m in modules if m.split(".")[0] in ("gpudr", "components", "policies")]


def test_the_image_runs_this_file_where_the_job_runs_it() -> None:
    text = DOCKERFILE.read_text()
    assert f"COPY gpudr/contract/azcopy_job.py {azcopy_job.ENTRYPOINT_PATH}" in text
    assert f'ENTRYPOINT ["python3", "{azcopy_job.ENTRYPOINT_PATH}"]' in text
    assert azcopy_job.COMMAND == ("python3", azcopy_job.ENTRYPOINT_PATH)
    # AzCopy from its release commit, checked after the fetch; no root at run time
    assert "ARG AZCOPY_COMMIT=96a83216c1e34f291ee93fbaca614ed010c90b23" in text
    assert 'test "$(git -C /src rev-parse HEAD)" = "${AZCOPY_COMMIT}"' in text
    assert "USER 10001" in text


def test_the_destination_and_source_urls() -> None:
    assert azcopy_job.blob_destination("acct", "checkpoints") == (
        "https://acct.blob.core.windows.net/checkpoints"
    )
    assert azcopy_job.s3_source("b", "us-east-1") == "https://b.s3.us-east-1.amazonaws.com/*"


@pytest.mark.parametrize(
    ("expression", "interval_s"),
    [
        ("0 */2 * * *", 7200.0),
        ("0 * * * *", 3600.0),
        ("0 0 * * *", 86400.0),
        ("0 */5 * * *", 5 * 3600.0),  # 0, 5, ..., 20: gaps of 5 h, and 4 h back to 0
        ("0 0,6 * * *", 18 * 3600.0),  # 6 h then 18 h: the longest gap counts
        ("30 1-3 * * *", 22 * 3600.0),
        ("0 3 * * 1", None),  # weekly: not a daily schedule gpudr declares
        ("0 0 31 2 *", None),  # never fires
        ("61 * * * *", None),
        ("0 */0 * * *", None),
        ("every 2 hours", None),
    ],
)
def test_the_longest_gap_of_a_daily_cron_schedule(
    expression: str, interval_s: float | None
) -> None:
    assert cron_interval_s(expression) == interval_s


def test_only_intervals_cron_keeps_are_written() -> None:
    assert cron_expression(7200) == "0 */2 * * *"
    assert cron_expression(86400) == "0 0 * * *"
    for bad in (5 * 3600, 1800, 7201):
        with pytest.raises(ValueError, match="not one cron keeps"):
            cron_expression(bad)


@pytest.mark.parametrize(
    ("image", "refused"),
    [
        ("acr.azurecr.io/gpudr-azcopy@sha256:" + "0" * 64, False),
        ("ghcr.io/acme/dr/gpudr-azcopy@sha256:" + "a" * 64, False),
        ("acr.azurecr.io/gpudr-azcopy:latest", True),
        ("acr.azurecr.io/gpudr-azcopy@sha256:" + "A" * 64, True),
        ("gpudr-azcopy@sha256:" + "0" * 64, True),
    ],
)
def test_the_image_is_named_by_digest(image: str, refused: bool) -> None:
    problem = image_error(image)
    assert (problem is not None) is refused
    if problem:
        assert problem.startswith("gpudr:azcopy_image ") and "\n" not in problem


class _FakeReplica:
    """The entrypoint's HTTP calls faked: the source's keys and the replica's blobs."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, source: list[str], replica: list[str]):
        self.deleted: list[str] = []
        monkeypatch.setattr(azcopy_job, "s3_keys", lambda bucket, region, creds: iter(source))
        monkeypatch.setattr(azcopy_job, "identity_token", lambda resource: "token")
        monkeypatch.setattr(azcopy_job, "blob_names", lambda destination, bearer: iter(replica))
        monkeypatch.setattr(azcopy_job, "_http", lambda req: self.deleted.append(req.full_url))

    def run(self) -> int:
        return azcopy_job.mirror_deletes("https://a.blob.core.windows.net/c", "b", "r", {})


def test_mirror_deletes_only_what_aged_out_of_the_source(monkeypatch: pytest.MonkeyPatch) -> None:
    blobs = [f"ckpt-{i}/shard" for i in range(6)]
    fake = _FakeReplica(monkeypatch, source=blobs[1:], replica=blobs)
    assert fake.run() == 1
    assert fake.deleted == ["https://a.blob.core.windows.net/c/ckpt-0/shard"]


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ([], "lists no object"),  # an emptied bucket: nothing may be deleted
        (["ckpt-5/shard"], "5 of the replica's 6 blobs are gone"),  # most of it gone
    ],
)
def test_mirror_deletes_refuses_what_looks_like_a_lost_source(
    monkeypatch: pytest.MonkeyPatch, source: list[str], why: str
) -> None:
    fake = _FakeReplica(monkeypatch, source=source, replica=[f"ckpt-{i}/shard" for i in range(6)])
    with pytest.raises(azcopy_job.MirrorRefused, match=why):
        fake.run()
    assert fake.deleted == []
