"""The GCP drill probe through google-cloud-storage against fake-gcs-server (a real Cloud
Storage emulator, started once per session on loopback), and through google-auth against a
loopback server answering as GKE, Compute Engine and IAM Credentials do (recorded JSON in the
documented shapes): what neither reproduces is listed in emulators_gcp."""

from __future__ import annotations

import gzip
import time
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import pytest
from google.oauth2.credentials import Credentials as UserCredentials

from gpudr.app.drill.orchestrate import Deps, run_drill
from gpudr.app.drill.probes import AccessDenied, NotFound, ObjectInfo, ProbeError, probe_for
from gpudr.app.drill.probes.base import CHUNK
from gpudr.app.drill.probes.gcp import READ_ONLY, Endpoints, GcpProbe
from gpudr.app.drill.verify import verify
from gpudr.build.drill import DrillSetup, build_drill
from gpudr.contract.site import BucketConfig
from gpudr.core.design import design
from gpudr.core.spec import load_plan
from gpudr.docs.runbook import build_runbook
from tests.conftest import ROOT
from tests.gpudr.app.drill.emulators_gcp import (  # noqa: F401 (fixtures, used by name)
    FakeGcs,
    FakeGoogleApis,
    empty_gcs,
    error,
    fake_gcs_server,
    google_apis_server,
)
from tests.gpudr.app.drill.fakes import Clock, FakeStacks

# Each module starts its emulator: `make e2e` runs these, the fast unit loop does not.
pytestmark = pytest.mark.emulator

OPERATOR = "user:op@example.com"
READER = "gpudr-drill-use4-reader@acme-vision-dr.iam.gserviceaccount.com"
PROJECT = "acme-vision-dr"
ZONE = "us-east4-a"


def drill(now: datetime, operator: str | None = OPERATOR) -> DrillSetup:
    plan = load_plan(ROOT / "examples" / "gcp-two-region.yaml")
    return build_drill(design(plan), "use4", now, operator=operator)


def bucket_of(s: DrillSetup, data_class: str) -> BucketConfig:
    return next(t.bucket for t in s.data if t.data_class == data_class)


def probe(s: DrillSetup, storage: str, api: FakeGoogleApis | None = None) -> GcpProbe:
    """A probe on the emulator, with GKE/Compute/IAM at `api` when given."""
    root = api.url if api else "http://127.0.0.1:9"  # port 9: discard, nothing answers
    endpoints = Endpoints(
        storage=storage,
        container=root,
        compute=root,
        iam=f"{root}/v1/projects/-/serviceAccounts/{{}}:generateAccessToken",
    )
    return GcpProbe(s, credentials=UserCredentials(token="ya29.operator"), endpoints=endpoints)


def upload(gcs: FakeGcs, bucket: str, objects: dict[str, bytes]) -> None:
    client = gcs.client()
    b = client.bucket(bucket)
    if not b.exists():
        b = client.create_bucket(bucket)
    for key, data in objects.items():
        b.blob(key).upload_from_string(data)


# --- replicas on the emulator ---------------------------------------------------------------


def test_a_matching_replica_is_listed_and_verified_by_crc32c(gcs: FakeGcs) -> None:
    s = drill(datetime.now(UTC))
    b = bucket_of(s, "checkpoints")
    written = {f"step-{i}/shard-{j}": bytes([i, j]) * 500 for i in (1, 2) for j in range(3)}
    upload(gcs, b.name, written)
    p = probe(s, gcs.url)
    listed = {o.key: o for o in p.list_objects(b)}
    assert {k: o.size for k, o in listed.items()} == {k: len(v) for k, v in written.items()}
    assert all(abs(o.modified - datetime.now(UTC)) < timedelta(minutes=5) for o in listed.values())
    stored = p.stored_checksum(b, "step-2/shard-0")
    # CRC32C although the object has an MD5 too: every object has one, composite ones no MD5.
    assert stored is not None and stored.algorithm == "crc32c"
    rows = [verify(p, b, o) for o in listed.values()]
    assert all(r["ok"] and r["detail"] == "crc32c matches" for r in rows), rows


def test_listing_follows_every_page(gcs: FakeGcs, monkeypatch: pytest.MonkeyPatch) -> None:
    s = drill(datetime.now(UTC))
    b = bucket_of(s, "datasets")
    upload(gcs, b.name, {f"shard-{i:02d}": b"x" for i in range(7)})
    monkeypatch.setattr("gpudr.app.drill.probes.gcp.PAGE", 3)  # 3 pages of 3, 3 and 1
    keys = [o.key for o in probe(s, gcs.url).list_objects(b)]
    assert keys == [f"shard-{i:02d}" for i in range(7)]


def test_a_large_object_streams_in_chunks_and_verifies(gcs: FakeGcs) -> None:
    s = drill(datetime.now(UTC))
    b = bucket_of(s, "checkpoints")
    data = bytes(range(256)) * ((CHUNK + 1000) // 256) + b"tail"
    upload(gcs, b.name, {"step-9/model.pt": data})
    p = probe(s, gcs.url)
    (obj,) = p.list_objects(b)
    assert p.stored_checksum(b, obj.key) is not None
    sizes = [len(c) for c in p.read(b, obj.key)]
    assert sizes == [CHUNK, len(data) - CHUNK]  # never the whole object at once
    row = verify(p, b, obj)
    assert row["ok"] and row["read"] == len(data), row


def test_a_gzip_encoded_object_is_hashed_as_stored(gcs: FakeGcs) -> None:
    """The recorded CRC32C is of the compressed bytes; the emulator, like Cloud Storage,
    decompresses on download unless asked for the raw bytes."""
    s = drill(datetime.now(UTC))
    b = bucket_of(s, "checkpoints")
    upload(gcs, b.name, {})
    blob = gcs.client().bucket(b.name).blob("step-1/config.json")
    blob.content_encoding = "gzip"
    blob.upload_from_string(gzip.compress(b'{"lr": 0.1}' * 100), content_type="application/json")
    p = probe(s, gcs.url)
    (obj,) = p.list_objects(b)
    row = verify(p, b, obj)
    assert row["ok"], row


def test_bytes_that_differ_from_the_recorded_checksum_fail_the_row(gcs: FakeGcs) -> None:
    s = drill(datetime.now(UTC))
    b = bucket_of(s, "checkpoints")
    upload(gcs, b.name, {"step-1/model.pt": b"good weights" * 100})
    gcs.rewrite(b.name, "step-1/model.pt", b"evil weights" * 100)  # same size, at rest
    p = probe(s, gcs.url)
    (obj,) = p.list_objects(b)
    row = verify(p, b, obj)
    assert not row["ok"] and row["detail"] == "crc32c differs from the recorded value", row


def test_reads_stay_on_the_generation_whose_checksum_was_read(gcs: FakeGcs) -> None:
    """An object rewritten between reading its checksum and its bytes: hashing the new
    version against the old checksum would report corruption; the version read is gone."""
    s = drill(datetime.now(UTC))
    b = bucket_of(s, "checkpoints")
    upload(gcs, b.name, {"latest": b"step-100"})
    p = probe(s, gcs.url)
    assert p.stored_checksum(b, "latest") is not None
    upload(gcs, b.name, {"latest": b"step-200"})
    with pytest.raises(NotFound, match=r"^gs://.+/latest: 404 Not Found"):
        list(p.read(b, "latest"))


def test_an_absent_object_or_bucket_is_not_found_in_one_line(gcs: FakeGcs) -> None:
    s = drill(datetime.now(UTC))
    b = bucket_of(s, "checkpoints")
    p = probe(s, gcs.url)
    with pytest.raises(NotFound) as bucket_missing:
        p.list_objects(b)
    assert str(bucket_missing.value) == f"gs://{b.name}: 404 Not Found: Not Found"
    upload(gcs, b.name, {})
    with pytest.raises(NotFound, match=rf"^gs://{b.name}/gone: 404 Not Found: Not Found$"):
        p.stored_checksum(b, "gone")
    with pytest.raises(NotFound, match=rf"^gs://{b.name}/gone: 404 Not Found"):
        list(p.read(b, "gone"))


# --- identity and refusals (the loopback server) ----------------------------------------------


def token(api: FakeGoogleApis, principal: str, value: str) -> None:
    expires = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    path = f"/v1/projects/-/serviceAccounts/{principal}:generateAccessToken"
    api.answer("POST", path, (200, {"accessToken": value, "expireTime": expires}))


def test_replicas_are_read_as_the_reader_with_read_only_scope(
    gcs: FakeGcs, google_apis: FakeGoogleApis
) -> None:
    s = drill(datetime.now(UTC))
    b = bucket_of(s, "checkpoints")
    upload(gcs, b.name, {"step-1/model.pt": b"weights"})
    token(google_apis, READER, "ya29.reader")
    p = GcpProbe(
        s,
        credentials=UserCredentials(token="ya29.operator"),
        endpoints=Endpoints(
            storage=gcs.url,
            iam=f"{google_apis.url}/v1/projects/-/serviceAccounts/{{}}:generateAccessToken",
        ),
    )
    p.sign_in({"reader": READER})
    (obj,) = p.list_objects(b)
    assert verify(p, b, obj)["ok"]
    (minted,) = google_apis.calls("POST")  # one token, reused by every data call
    assert minted.headers["authorization"] == "Bearer ya29.operator"
    assert minted.body["scope"] == [READ_ONLY]
    assert p.identity() == f"the reader service account ({READER})"
    # No operator known: the stack granted nobody the reader, so the operator reads.
    plain = probe(drill(datetime.now(UTC), operator=None), gcs.url)
    plain.sign_in({"reader": READER})
    assert plain.identity() == "the operator's own credentials"


def test_a_refused_impersonation_is_access_denied(
    gcs: FakeGcs, google_apis: FakeGoogleApis
) -> None:
    s = drill(datetime.now(UTC))
    b = bucket_of(s, "checkpoints")
    path = f"/v1/projects/-/serviceAccounts/{READER}:generateAccessToken"
    denied = error(
        403, "Permission 'iam.serviceAccounts.getAccessToken' denied", "PERMISSION_DENIED"
    )
    google_apis.answer("POST", path, (403, denied))
    p = probe(s, gcs.url, google_apis)
    p.sign_in({"reader": READER})
    with pytest.raises(AccessDenied) as refused:
        p.list_objects(b)
    message = str(refused.value)
    assert message.startswith(
        f"gs://{b.name}: no access token: Unable to acquire impersonated credentials; "
    )
    assert "PERMISSION_DENIED: Permission 'iam.serviceAccounts.getAccessToken' denied" in message
    assert "\n" not in message


def test_an_object_the_reader_may_not_read_fails_its_row_with_the_clouds_reason(
    google_apis: FakeGoogleApis,
) -> None:
    """Cloud Storage's 403s, in its JSON error shape, from the loopback server (the emulator
    never refuses anything)."""
    s = drill(datetime.now(UTC))
    b = bucket_of(s, "checkpoints")
    token(google_apis, READER, "ya29.reader")
    listing = f"/storage/v1/b/{b.name}/o"
    no_list = (
        f"{READER} does not have storage.objects.list access to the Google Cloud Storage bucket."
    )
    google_apis.answer("GET", listing, (403, error(403, no_list, reason="forbidden")))
    p = probe(s, google_apis.url, google_apis)
    p.sign_in({"reader": READER})
    with pytest.raises(AccessDenied) as refused:
        p.list_objects(b)
    assert str(refused.value) == f"gs://{b.name}: 403 Forbidden: {no_list}"
    storage_calls = [c for c in google_apis.seen if c.path.startswith("/storage/")]
    assert storage_calls[0].headers["authorization"] == "Bearer ya29.reader"

    key = "step-1/model.pt"
    meta = {"name": key, "bucket": b.name, "size": "7", "crc32c": "AAAAAA==", "generation": "5"}
    google_apis.answer("GET", f"{listing}/{quote(key, safe='')}", (200, meta))
    no_get = (
        f"{READER} does not have storage.objects.get access to the Google Cloud Storage object."
    )
    media = f"/download/storage/v1/b/{b.name}/o/{quote(key, safe='')}"
    google_apis.answer("GET", media, (403, error(403, no_get, reason="forbidden")))
    row = verify(p, b, ObjectInfo(key, 7, datetime.now(UTC)))
    assert not row["ok"]
    assert row["detail"] == f"gs://{b.name}/{key}: 403 Forbidden: {no_get}"
    (download,) = google_apis.calls("GET", media)
    assert download.query["generation"] == ["5"]  # the version whose checksum was read
    # The client's background bucket lookup (for trace spans) is switched off.
    assert all(c.path != f"/storage/v1/b/{b.name}" for c in google_apis.seen)


def test_without_application_default_credentials_the_probe_says_what_to_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/adc.json")
    s = drill(datetime.now(UTC))
    p = probe_for(s)  # built without looking for credentials: a dry run needs none
    assert isinstance(p, GcpProbe)
    with pytest.raises(ProbeError, match=r"^no Google credentials \(.*adc\.json.*\): run `gcloud"):
        p.list_objects(bucket_of(s, "checkpoints"))


def test_the_probe_names_the_bucket_as_the_runbook_does() -> None:
    s = drill(datetime.now(UTC))
    plan = design(load_plan(ROOT / "examples" / "gcp-two-region.yaml"))
    rb = build_runbook(plan, s.primary, "use4")
    url = GcpProbe(s).url(bucket_of(s, "checkpoints"))
    assert url.startswith("gs://") and url in rb.step("data:checkpoints").why


# --- GPU capacity (the loopback server answering as GKE and Compute Engine) -------------------


def group_url(name: str, zone: str = ZONE) -> str:
    """As GKE lists them: the instance group managers' URLs on www.googleapis.com."""
    return (
        f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/zones/{zone}/"
        f"instanceGroupManagers/{name}"
    )


def node_pool(s: DrillSetup, name: str, status: str, groups: list[str], **extra: Any) -> Any:
    """A NodePool resource (container.googleapis.com v1), trimmed to what a drill reads."""
    cluster = s.pools[0].cluster_name
    return {
        "name": name,
        "config": {"machineType": "a3-highgpu-8g", "diskSizeGb": 200},
        "initialNodeCount": 0,
        "autoscaling": {},
        "management": {"autoUpgrade": True, "autoRepair": True},
        "selfLink": (
            f"https://container.googleapis.com/v1/projects/{PROJECT}/locations/us-east4/"
            f"clusters/{cluster}/nodePools/{name}"
        ),
        "version": "1.31.6-gke.1020000",
        "instanceGroupUrls": [group_url(g) for g in groups],
        "status": status,
        "locations": [ZONE],
        **extra,
    }


def instances(group: str, *statuses: str, next_page: str = "") -> Any:
    """An InstanceGroupsListInstances page (compute v1)."""
    page: dict[str, Any] = {
        "kind": "compute#instanceGroupsListInstances",
        "id": f"projects/{PROJECT}/zones/{ZONE}/instanceGroups/{group}",
        "items": [
            {
                "instance": (
                    f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/zones/{ZONE}/"
                    f"instances/{group}-{i}"
                ),
                "status": status,
            }
            for i, status in enumerate(statuses)
        ],
        "selfLink": (
            f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/zones/{ZONE}/"
            f"instanceGroups/{group}"
        ),
    }
    if next_page:
        page["nextPageToken"] = next_page
    return page


def pool_path(s: DrillSetup, pool: str) -> str:
    cluster = s.pools[0].cluster_name
    return f"/v1/projects/{PROJECT}/locations/us-east4/clusters/{cluster}/nodePools/{pool}"


def list_path(group: str) -> str:
    return f"/compute/v1/projects/{PROJECT}/zones/{ZONE}/instanceGroups/{group}/listInstances"


def test_capacity_counts_running_instances_of_every_group_on_every_page(
    google_apis: FakeGoogleApis,
) -> None:
    s = drill(datetime.now(UTC))
    train = next(p for p in s.pools if p.pool == "train")
    stockout = {
        "code": "GCE_STOCKOUT",
        "message": "Instances cannot be created: a3-highgpu-8g is out of stock in us-east4-a.",
        "canonicalCode": "RESOURCE_EXHAUSTED",
    }
    google_apis.answer(
        "GET",
        pool_path(s, "train"),
        (200, node_pool(s, "train", "RUNNING", ["grp-a", "grp-b"], conditions=[stockout])),
    )
    google_apis.answer(
        "POST",
        list_path("grp-a"),
        (200, instances("grp-a", "RUNNING", "STAGING", next_page="p2")),
        (200, instances("grp-a", "RUNNING")),
    )
    google_apis.answer(
        "POST", list_path("grp-b"), (200, {"kind": "compute#instanceGroupsListInstances"})
    )
    state = probe(s, "http://127.0.0.1:9", google_apis).pool_state(train)
    assert state.ready == 2  # grp-a's two RUNNING over two pages; grp-b empty (no `items`)
    assert state.detail == "node pool RUNNING, 2 instance(s) running, conditions: GCE_STOCKOUT"
    pages = google_apis.calls("POST", list_path("grp-a"))
    assert [c.query.get("pageToken") for c in pages] == [None, ["p2"]]
    assert all(c.body == {"instanceState": "RUNNING"} for c in pages)
    (described,) = google_apis.calls("GET")
    assert described.headers["authorization"] == "Bearer ya29.operator"  # not the reader


@pytest.mark.parametrize(
    ("answer", "raised", "message"),
    [
        (
            (
                404,
                error(
                    404,
                    "Not found: projects/acme-vision-dr/locations/us-east4/clusters/x.",
                    "NOT_FOUND",
                ),
            ),
            NotFound,
            "404 Not Found: NOT_FOUND: Not found: projects/acme-vision-dr/locations/us-east4/"
            "clusters/x.",
        ),
        (
            (403, error(403, "Required 'container.clusters.get' permission.", "PERMISSION_DENIED")),
            AccessDenied,
            "403 Forbidden: PERMISSION_DENIED: Required 'container.clusters.get' permission.",
        ),
        (
            (503, "<html>unavailable</html>"),
            ProbeError,
            "503 Service Unavailable: Service Unavailable",
        ),
    ],
)
def test_capacity_errors_are_one_line_and_name_the_pool(
    google_apis: FakeGoogleApis, answer: tuple[int, Any], raised: type[ProbeError], message: str
) -> None:
    s = drill(datetime.now(UTC))
    train = next(p for p in s.pools if p.pool == "train")
    google_apis.answer("GET", pool_path(s, "train"), answer)
    with pytest.raises(raised) as caught:
        probe(s, "http://127.0.0.1:9", google_apis).pool_state(train)
    assert type(caught.value) is raised
    assert str(caught.value) == f"GKE node pool {train.cluster_name}/train: {message}"


def test_capacity_reads_a_pool_with_missing_or_odd_fields(google_apis: FakeGoogleApis) -> None:
    s = drill(datetime.now(UTC))
    train = next(p for p in s.pools if p.pool == "train")
    google_apis.answer("GET", pool_path(s, "train"), (200, {"name": "train"}))
    state = probe(s, "http://127.0.0.1:9", google_apis).pool_state(train)
    assert (state.ready, state.detail) == (0, "node pool ?, 0 instance(s) running")
    odd = {"status": "PROVISIONING", "instanceGroupUrls": "not-a-list", "statusMessage": "a\nb"}
    google_apis.answer("GET", pool_path(s, "train"), (200, odd))
    state = probe(s, "http://127.0.0.1:9", google_apis).pool_state(train)
    assert (state.ready, state.detail) == (0, "node pool PROVISIONING, 0 instance(s) running, a b")
    google_apis.answer("GET", pool_path(s, "train"), (200, {"instanceGroupUrls": ["grp-no-zone"]}))
    with pytest.raises(ProbeError, match="instance group URL without a zone: grp-no-zone"):
        probe(s, "http://127.0.0.1:9", google_apis).pool_state(train)


# --- a whole drill with the real probe ------------------------------------------------------


class RunningClock(Clock):
    """Real time (the probe's calls take it) plus what the fakes advance (up, polls)."""

    def __init__(self) -> None:
        super().__init__(datetime.now(UTC))
        self.origin = time.monotonic()

    def __call__(self) -> datetime:
        return self.now + timedelta(seconds=time.monotonic() - self.origin)


def replicate(gcs: FakeGcs, s: DrillSetup) -> None:
    upload(
        gcs,
        bucket_of(s, "checkpoints").name,
        {
            "step-100/model.pt": b"old" * 1000,
            "step-200/model.pt": b"new" * 1000,
            "step-200/optim.pt": b"adam" * 1000,
        },
    )
    upload(gcs, bucket_of(s, "datasets").name, {"shard-0": b"rows"})
    upload(gcs, bucket_of(s, "weights").name, {"v1/weights": b"w"})


def capacity_answers(api: FakeGoogleApis, s: DrillSetup) -> None:
    """`train` provisions for two polls, then runs its node; `svc-detect` runs from the start."""
    api.answer(
        "GET",
        pool_path(s, "train"),
        (200, node_pool(s, "train", "PROVISIONING", [])),
        (200, node_pool(s, "train", "PROVISIONING", ["grp-train"])),
        (200, node_pool(s, "train", "RUNNING", ["grp-train"])),
    )
    api.answer(
        "POST",
        list_path("grp-train"),
        (200, instances("grp-train", "PROVISIONING")),
        (200, instances("grp-train", "RUNNING")),
    )
    api.answer(
        "GET", pool_path(s, "svc-detect"), (200, node_pool(s, "svc-detect", "RUNNING", ["grp-svc"]))
    )
    api.answer("POST", list_path("grp-svc"), (200, instances("grp-svc", "RUNNING")))


def run(s: DrillSetup, clock: Clock, p: GcpProbe) -> Any:
    stacks = FakeStacks(
        clock, outputs={"clusters": {"train": s.pools[0].cluster_name}, "reader": READER}
    )
    return run_drill(s, Deps(stacks=stacks, probe=p, clock=clock, sleep=clock.advance))


def test_a_drill_times_each_stage_with_the_real_probe(
    gcs: FakeGcs, google_apis: FakeGoogleApis
) -> None:
    clock = RunningClock()
    s = drill(clock(), operator=None)  # the operator reads: the emulator has no IAM
    replicate(gcs, s)
    capacity_answers(google_apis, s)
    report = run(s, clock, probe(s, gcs.url, google_apis))
    stages = {st.key: st for st in report.stages}
    assert report.outcome == "passed", [(st.key, st.status, st.detail) for st in report.stages]
    # The fakes' time is exact (up 900 s; up 300 s and two 30 s polls); the probe's is real
    # and, on loopback, under a minute.
    assert 900 <= stages["infrastructure"].duration_s < 960
    assert 0 < stages["checkpoint"].duration_s < 60
    assert 360 <= stages["capacity"].duration_s < 420
    assert 0 < stages["data-age"].duration_s < 60
    checkpoint = stages["checkpoint"].measurements
    assert (checkpoint["checkpoint"], checkpoint["objects"], checkpoint["verified_objects"]) == (
        "step-200/",
        2,
        2,
    )
    assert stages["checkpoint"].detail.endswith("every checksum matches")
    assert {r["algorithm"] for r in checkpoint["verified"]} == {"crc32c"}
    assert stages["capacity"].measurements["pools"] == {
        "train": "1 of 1 (node pool RUNNING, 1 instance(s) running)",
        "svc-detect": "1 of 1 (node pool RUNNING, 1 instance(s) running)",
    }
    ages = {d.data_class: d for d in report.data_age}
    # Written just before the drill: as old as the stages before data-age took.
    assert ages["checkpoints"].age_s is not None and 1260 <= ages["checkpoints"].age_s < 1400
    assert ages["checkpoints"].newest_key == "step-200/optim.pt"
    assert "Replicas were read as the operator's own credentials." in report.notes


def test_a_drill_against_an_empty_replica_fails_its_checkpoint_stage(
    gcs: FakeGcs, google_apis: FakeGoogleApis
) -> None:
    clock = RunningClock()
    s = drill(clock(), operator=None)
    replicate(gcs, s)
    checkpoints = bucket_of(s, "checkpoints").name
    for blob in gcs.client().list_blobs(checkpoints):
        blob.delete()
    capacity_answers(google_apis, s)
    report = run(s, clock, probe(s, gcs.url, google_apis))
    stage = report.stage("checkpoint")
    assert stage.status == "failed"
    assert (
        stage.detail == f"gs://{checkpoints} holds no object: nothing has been replicated to it yet"
    )
    assert report.stage("capacity").status == "passed"  # the drill went on


def test_a_drill_against_an_absent_bucket_fails_with_the_clouds_404(
    gcs: FakeGcs, google_apis: FakeGoogleApis
) -> None:
    clock = RunningClock()
    s = drill(clock(), operator=None)
    replicate(gcs, s)
    checkpoints = bucket_of(s, "checkpoints").name
    gcs.client().bucket(checkpoints).delete(force=True)
    capacity_answers(google_apis, s)
    report = run(s, clock, probe(s, gcs.url, google_apis))
    expected = f"gs://{checkpoints}: 404 Not Found: Not Found"
    assert report.stage("checkpoint").detail == expected  # after the listing's retries
    assert report.stage("checkpoint").duration_s >= 5 * 20
    age = next(d for d in report.data_age if d.data_class == "checkpoints")
    assert age.detail == expected and age.age_s is None
    assert report.stage("data-age").status == "failed"


def test_a_drill_over_corrupted_bytes_names_the_object(
    gcs: FakeGcs, google_apis: FakeGoogleApis
) -> None:
    clock = RunningClock()
    s = drill(clock(), operator=None)
    replicate(gcs, s)
    gcs.rewrite(bucket_of(s, "checkpoints").name, "step-200/optim.pt", b"sgd!" * 1000)
    capacity_answers(google_apis, s)
    report = run(s, clock, probe(s, gcs.url, google_apis))
    stage = report.stage("checkpoint")
    assert stage.status == "failed"
    assert stage.detail.endswith(
        "1 failed verification, first step-200/optim.pt: crc32c differs from the recorded value"
    )


def test_retries_that_gave_up_are_a_one_line_probe_error() -> None:
    # RetryError is a GoogleAPIError but no call's answer (connection refused or 5xx until the
    # client's deadline): it must not escape as an unmapped exception.
    from google.api_core import exceptions as api

    from gpudr.app.drill.probes.gcp import _mapped

    with pytest.raises(ProbeError) as raised, _mapped("gs://b/k"):
        raise api.RetryError("Timeout of 120.0s exceeded", cause=ConnectionError("refused"))
    assert type(raised.value) is ProbeError
    assert str(raised.value) == (
        "gs://b/k: RetryError: Timeout of 120.0s exceeded, last exception: refused"
    )
