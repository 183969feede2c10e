"""The Azure probe (azure-storage-blob, ARM over azure-core) against a real Azurite on loopback
for Blob Storage, and a loopback HTTP server that answers ARM's documented JSON shapes (an AKS
agent pool, resource groups, subscriptions) for the node pools: Azurite emulates storage only.

What these do not cover: Entra ID sign-in (Azurite is given its shared key or a SAS; ARM a
static bearer token) and therefore the RBAC role the operator needs; a storage account's
firewall or private endpoints; AKS itself (the ARM server is a fake of its documented GET)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from azure.core.credentials import AccessToken
from azure.core.exceptions import ClientAuthenticationError, ResourceExistsError
from azure.storage.blob import (
    BlobBlock,
    BlobServiceClient,
    ContainerClient,
    ContainerSasPermissions,
    ContentSettings,
    generate_container_sas,
)

from gpudr.app.drill.orchestrate import Deps, run_drill
from gpudr.app.drill.probes import AccessDenied, NotFound, ProbeError, probe_for
from gpudr.app.drill.probes.azure import AKS_API, AzureProbe
from gpudr.app.drill.probes.base import CHUNK
from gpudr.app.drill.verify import verify
from gpudr.build.drill import DrillSetup, build_drill
from gpudr.contract.drill import resource_group_name
from gpudr.contract.site import BucketConfig
from gpudr.core.design import design
from gpudr.core.spec import load_plan
from gpudr.docs.runbook import build_runbook
from tests.conftest import ROOT
from tests.gpudr.app.drill import emulators_azure
from tests.gpudr.app.drill.emulators_azure import ACCOUNT, KEY, Azurite
from tests.gpudr.app.drill.fakes import Clock, FakeStacks

# Each module starts its emulator: `make e2e` runs these, the fast unit loop does not.
pytestmark = pytest.mark.emulator

azurite = emulators_azure.azurite  # the session's Azurite, a fixture by that name

NOW = datetime(2025, 1, 31, 3, 12, tzinfo=UTC)
SUBSCRIPTION = "00000000-0000-0000-0000-0000000000aa"
NEXT_LINK = "https://management.azure.com/subscriptions?api-version=2022-12-01&%24skiptoken=p2"


@cache
def setup(now: datetime = NOW) -> DrillSetup:
    plan = load_plan(ROOT / "examples" / "azure-two-region.yaml")
    return build_drill(design(plan), "wus", now)


def bucket(data_class: str, s: DrillSetup | None = None) -> BucketConfig:
    return next(t.bucket for t in (s or setup()).data if t.data_class == data_class)


def md5(data: bytes) -> str:
    return base64.b64encode(hashlib.md5(data).digest()).decode()


# --- a fake ARM on loopback ---------------------------------------------------------------------


class StaticToken:
    """A token credential handing out one bearer token (Entra ID is not emulated)."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.scopes: list[tuple[str, ...]] = []

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        self.scopes.append(scopes)
        if self.fail:
            raise ClientAuthenticationError(
                "DefaultAzureCredential failed to retrieve a token\nmore"
            )
        return AccessToken("test-token", int(time.time()) + 3600)


Answer = tuple[int, dict[str, Any]]


class FakeArm:
    """ARM's GETs on loopback: `routes` maps a path to answers given in turn (the last one
    repeats); `requests` records (path, api-version, Authorization) of each."""

    def __init__(self, routes: dict[str, list[Answer]]) -> None:
        self.routes = routes
        self.requests: list[tuple[str, str, str]] = []
        self.queries: list[str] = []
        arm = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlsplit(self.path)
                version = parse_qs(url.query).get("api-version", [""])[0]
                arm.requests.append((url.path, version, self.headers.get("Authorization", "")))
                arm.queries.append(url.query)
                answers = arm.routes.get(url.path) or [(404, _arm_error("ResourceNotFound"))]
                status, body = answers.pop(0) if len(answers) > 1 else answers[0]
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                del format, args

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _arm_error(code: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": f"The {code} error.\nSecond line."}}


def agent_pool(state: str, power: str, count: int) -> Answer:
    """An AKS agent pool as ARM's GET returns it (the CLI flattens `properties`)."""
    return 200, {
        "id": "/subscriptions/.../agentPools/x",
        "name": "x",
        "type": "Microsoft.ContainerService/managedClusters/agentPools",
        "properties": {
            "count": count,
            "vmSize": "Standard_ND96isr_H100_v5",
            "provisioningState": state,
            "powerState": {"code": power},
        },
    }


def pool_path(s: DrillSetup, agent: str, subscription: str = SUBSCRIPTION) -> str:
    cluster = next(p.cluster_name for p in s.pools if p.agent == agent)
    return (
        f"/subscriptions/{subscription}/resourceGroups/{resource_group_name(s.id)}/providers/"
        f"Microsoft.ContainerService/managedClusters/{cluster}/agentPools/{agent}"
    )


@pytest.fixture
def arm() -> Iterator[Callable[[dict[str, list[Answer]]], FakeArm]]:
    servers: list[FakeArm] = []

    def start(routes: dict[str, list[Answer]]) -> FakeArm:
        servers.append(FakeArm(routes))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


# --- the replica in Azurite ---------------------------------------------------------------------


@pytest.fixture
def service(azurite: Azurite) -> BlobServiceClient:
    """The account emptied: each test writes the replica it needs."""
    client = azurite.service()
    for container in client.list_containers():
        client.delete_container(container.name)
    return client


def put(service: BlobServiceClient, container: str, key: str, data: bytes) -> None:
    """One Put Blob (single shot): the service records the body's Content-MD5."""
    with_container(service, container).upload_blob(key, data, overwrite=True)


def put_blocks(service: BlobServiceClient, container: str, key: str, parts: list[bytes]) -> None:
    """Put Block for each part, then Put Block List without a Content-MD5: none is recorded."""
    blob = with_container(service, container).get_blob_client(key)
    ids = [base64.b64encode(f"{i:08d}".encode()).decode() for i in range(len(parts))]
    for block_id, part in zip(ids, parts, strict=True):
        blob.stage_block(block_id, part)
    blob.commit_block_list([BlobBlock(block_id) for block_id in ids])


def with_container(service: BlobServiceClient, name: str) -> ContainerClient:
    client = service.get_container_client(name)
    with contextlib.suppress(ResourceExistsError):
        client.create_container()
    return client


def probe(azurite: Azurite, s: DrillSetup | None = None, **changes: Any) -> AzureProbe:
    options: dict[str, Any] = {
        "credential": StaticToken(),
        "endpoint": azurite.endpoint,
        "storage_credential": azurite.key,
        "subscription": SUBSCRIPTION,
    }
    return AzureProbe(s or setup(), **{**options, **changes})


# --- checkpoint verification --------------------------------------------------------------------


def test_a_single_shot_upload_verifies_and_a_block_upload_has_no_checksum(
    azurite: Azurite, service: BlobServiceClient
) -> None:
    model = b"new model" * 1000
    put(service, "checkpoints", "step-200/model.pt", model)
    put_blocks(service, "checkpoints", "step-200/optim.pt", [b"a" * 10, b"b" * 20])
    p = probe(azurite)
    ckpt = bucket("checkpoints")
    listed = {o.key: o for o in p.list_objects(ckpt)}
    assert {k: o.size for k, o in listed.items()} == {
        "step-200/model.pt": len(model),
        "step-200/optim.pt": 30,
    }
    assert all(o.modified.tzinfo is UTC for o in listed.values())
    # Azurite, like Blob Storage, records the MD5 of a Put Blob's body.
    stored = p.stored_checksum(ckpt, "step-200/model.pt")
    assert stored is not None and (stored.algorithm, stored.value) == ("md5", md5(model))
    row = verify(p, ckpt, listed["step-200/model.pt"])
    assert row["ok"] and row["detail"] == "md5 matches" and row["read"] == len(model), row
    # Put Block List records none unless the uploader sent one: the row fails, not the drill.
    assert p.stored_checksum(ckpt, "step-200/optim.pt") is None
    row = verify(p, ckpt, listed["step-200/optim.pt"])
    assert not row["ok"] and row["detail"] == "no recorded checksum to verify against", row


def test_a_blob_larger_than_a_chunk_streams_in_chunks(
    azurite: Azurite, service: BlobServiceClient
) -> None:
    data = bytes(range(256)) * ((CHUNK + (1 << 20)) // 256)
    put(service, "checkpoints", "step-300/big.pt", data)
    p = probe(azurite)
    ckpt = bucket("checkpoints")
    sizes = [len(c) for c in p.read(ckpt, "step-300/big.pt")]
    assert len(sizes) >= 2 and max(sizes) <= CHUNK and sum(sizes) == len(data), sizes
    (obj,) = p.list_objects(ckpt)
    assert verify(p, ckpt, obj)["ok"]


def test_bytes_that_differ_from_the_recorded_md5_fail_their_row(
    azurite: Azurite, service: BlobServiceClient
) -> None:
    put(service, "checkpoints", "step-200/model.pt", b"written bytes")
    blob = service.get_blob_client("checkpoints", "step-200/model.pt")
    # Set Blob Properties replaces the recorded Content-MD5, as a buggy uploader might.
    wrong = bytearray(hashlib.md5(b"other bytes").digest())
    blob.set_http_headers(ContentSettings(content_md5=wrong))
    p = probe(azurite)
    ckpt = bucket("checkpoints")
    (obj,) = p.list_objects(ckpt)
    row = verify(p, ckpt, obj)
    assert not row["ok"] and row["detail"] == "md5 differs from the recorded value", row
    assert row["algorithm"] == "md5" and row["read"] == len(b"written bytes")


def test_a_reader_that_may_list_but_not_read_gets_one_access_denied_line_per_object(
    azurite: Azurite, service: BlobServiceClient
) -> None:
    put(service, "checkpoints", "step-200/model.pt", b"model")
    sas = generate_container_sas(
        ACCOUNT,
        "checkpoints",
        account_key=KEY,
        permission=ContainerSasPermissions(list=True),
        expiry=datetime.now(UTC) + timedelta(hours=1),
    )
    p = probe(azurite, storage_credential=lambda _account: sas)
    ckpt = bucket("checkpoints")
    (obj,) = p.list_objects(ckpt)  # listing is allowed
    where = f"https://{ckpt.storage_account}.blob.core.windows.net/checkpoints/step-200/model.pt"
    row = verify(p, ckpt, obj)
    assert not row["ok"]
    assert row["detail"] == (
        f"{where}: 403 AuthorizationPermissionMismatch: "
        "This request is not authorized to perform this operation using this permission."
    )
    assert "\n" not in row["detail"] and "sig=" not in row["detail"]  # one line, no SAS
    with pytest.raises(AccessDenied, match="403 AuthorizationPermissionMismatch"):
        b"".join(p.read(ckpt, obj.key))


def test_a_missing_container_or_blob_is_not_found_in_one_line(
    azurite: Azurite, service: BlobServiceClient
) -> None:
    del service  # emptied: no container at all
    p = probe(azurite)
    ckpt = bucket("checkpoints")
    url = f"https://{ckpt.storage_account}.blob.core.windows.net/checkpoints"
    with pytest.raises(NotFound) as listed:
        p.list_objects(ckpt)
    assert str(listed.value).startswith(f"{url}: 404 ContainerNotFound: ")
    assert "\n" not in str(listed.value)
    with pytest.raises(NotFound, match=f"^{url}/gone: 404 (BlobNotFound|ContainerNotFound)"):
        b"".join(p.read(ckpt, "gone"))


def test_an_unreachable_endpoint_is_a_probe_error_not_a_traceback(azurite: Azurite) -> None:
    closed = emulators_azure._free_port()  # nothing listens there
    p = probe(azurite)
    ckpt = bucket("checkpoints")
    # Fail fast: the SDK's default retries back off for about a minute.
    p.services[str(ckpt.storage_account)] = BlobServiceClient(
        f"http://127.0.0.1:{closed}/{ACCOUNT}", credential=azurite.key(), retry_total=0
    )
    with pytest.raises(ProbeError) as raised:
        p.list_objects(ckpt)
    assert type(raised.value) is ProbeError
    assert str(raised.value).startswith(f"{p.url(ckpt)}: ") and "\n" not in str(raised.value)


# --- node pools through ARM ---------------------------------------------------------------------


def test_pool_state_reads_the_agent_pool_arm_returns(
    azurite: Azurite, arm: Callable[[dict[str, list[Answer]]], FakeArm]
) -> None:
    s = setup()
    server = arm(
        {
            pool_path(s, "train"): [agent_pool("Creating", "Running", 0)],
            pool_path(s, "svcasr"): [agent_pool("Succeeded", "Running", 1)],
        }
    )
    token = StaticToken()
    p = probe(azurite, credential=token, management=server.url)
    train, svc = (next(x for x in s.pools if x.agent == a) for a in ("train", "svcasr"))
    assert p.pool_state(train).ready == 0
    state = p.pool_state(svc)
    assert (
        state.ready == 1 and state.detail == "node pool Succeeded, Running, 1 node(s) provisioned"
    )
    assert [(v, auth) for _, v, auth in server.requests] == [(AKS_API, "Bearer test-token")] * 2
    assert token.scopes[0] == ("https://management.azure.com/.default",)


def test_pool_state_finds_the_subscription_holding_the_drills_group(
    azurite: Azurite,
    arm: Callable[[dict[str, list[Answer]]], FakeArm],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for variable in ("ARM_SUBSCRIPTION_ID", "AZURE_SUBSCRIPTION_ID"):
        monkeypatch.delenv(variable, raising=False)
    s = setup()
    other, mine = "11111111-0000-0000-0000-000000000000", SUBSCRIPTION
    group = resource_group_name(s.id)
    server = arm(
        {
            # Two pages: ARM's nextLink is absolute and carries its own query.
            "/subscriptions": [
                (200, {"value": [{"subscriptionId": other}], "nextLink": NEXT_LINK}),
                (200, {"value": [{"subscriptionId": mine}]}),
            ],
            f"/subscriptions/{other}/resourcegroups/{group}": [
                (404, _arm_error("ResourceGroupNotFound"))
            ],
            f"/subscriptions/{mine}/resourcegroups/{group}": [(200, {"name": group})],
            pool_path(s, "train", mine): [agent_pool("Succeeded", "Running", 1)],
        }
    )
    p = probe(azurite, management=server.url, subscription=None)
    train = next(x for x in s.pools if x.agent == "train")
    assert p.pool_state(train).ready == 1
    assert p.pool_state(train).ready == 1  # found once, then remembered
    paths = [path for path, _, _ in server.requests]
    assert paths.count("/subscriptions") == 2 and paths.count(pool_path(s, "train", mine)) == 2
    assert "%24skiptoken=p2" in server.queries[1]  # the second page, as nextLink named it
    # A subscription named in the environment is used as is, nothing listed.
    monkeypatch.setenv("ARM_SUBSCRIPTION_ID", other)
    p = probe(azurite, management=server.url, subscription=None)
    with pytest.raises(NotFound, match=f"^{pool_path(s, 'train', other)}: 404 ResourceNotFound"):
        p.pool_state(train)


def test_arm_refusals_are_one_line_errors(
    azurite: Azurite, arm: Callable[[dict[str, list[Answer]]], FakeArm]
) -> None:
    s = setup()
    train = next(x for x in s.pools if x.agent == "train")
    server = arm({pool_path(s, "train"): [(403, _arm_error("AuthorizationFailed"))]})
    with pytest.raises(AccessDenied) as denied:
        probe(azurite, management=server.url).pool_state(train)
    assert str(denied.value) == (
        f"{pool_path(s, 'train')}: 403 AuthorizationFailed: The AuthorizationFailed error."
    )
    # No token at all (DefaultAzureCredential found no sign-in): denied, first line only.
    p = probe(azurite, management=server.url, credential=StaticToken(fail=True))
    with pytest.raises(AccessDenied) as unsigned:
        p.pool_state(train)
    assert str(unsigned.value) == (
        f"{pool_path(s, 'train')}: DefaultAzureCredential failed to retrieve a token"
    )


def test_production_defaults_and_probe_for() -> None:
    p = probe_for(setup())
    assert isinstance(p, AzureProbe)
    assert p.management == "https://management.azure.com"
    ckpt = bucket("checkpoints")
    assert p._service(ckpt).url == f"https://{ckpt.storage_account}.blob.core.windows.net/"
    assert "DefaultAzureCredential" in p.identity() and "reader" in p.identity()
    # The report names the replica as the runbook does.
    s = setup()
    runbook = build_runbook(
        design(load_plan(ROOT / "examples" / "azure-two-region.yaml")), s.primary, "wus"
    )
    assert p.url(ckpt) in runbook.step("data:checkpoints").why


# --- a whole drill ------------------------------------------------------------------------------


def test_a_drill_through_the_real_probe_times_its_stages(
    azurite: Azurite,
    service: BlobServiceClient,
    arm: Callable[[dict[str, list[Answer]]], FakeArm],
) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    s = setup(now)
    put(service, "checkpoints", "step-100/model.pt", b"old" * 100)
    time.sleep(1.1)  # Last-Modified has whole seconds: the newer checkpoint must be newer
    put(service, "checkpoints", "step-200/model.pt", b"new" * 100)
    put(service, "checkpoints", "step-200/optim.pt", b"opt" * 100)
    put(service, "weights", "v1/weights", b"w")
    # The pools reach their test size on the third poll (30 s apart on the drill's clock).
    server = arm(
        {
            pool_path(s, "train"): [
                agent_pool("Creating", "Running", 0),
                agent_pool("Creating", "Running", 0),
                agent_pool("Succeeded", "Running", 1),
            ],
            pool_path(s, "svcasr"): [agent_pool("Succeeded", "Running", 1)],
        }
    )
    clock = Clock(now)
    stacks = FakeStacks(clock, outputs={"clusters": {"train": s.pools[0].cluster_name}})
    p = probe(azurite, s, management=server.url)
    report = run_drill(s, Deps(stacks=stacks, probe=p, clock=clock, sleep=clock.advance))
    stages = {x.key: x for x in report.stages}
    checkpoint = stages["checkpoint"]
    assert checkpoint.status == "passed", checkpoint.detail
    assert checkpoint.measurements["checkpoint"] == "step-200/"
    assert [r["key"] for r in checkpoint.measurements["verified"]] == [
        "step-200/model.pt",
        "step-200/optim.pt",
    ]
    assert checkpoint.detail.endswith(": every checksum matches")
    assert checkpoint.duration_s == 0  # no listing was retried (each retry waits 20 s)
    capacity = stages["capacity"]
    assert capacity.status == "passed", capacity.detail
    # The second up takes 300 s, then two polls find the train pool short: 60 s of waiting.
    assert capacity.duration_s == 300 + 60
    assert "train: 1 of 1 (node pool Succeeded, Running, 1 node(s) provisioned)" in capacity.detail
    ages = {d.data_class: d for d in report.data_age}
    assert str(ages["checkpoints"].newest_key).startswith("step-200/")
    # Written a second or two after the drill's clock started, read 900 + 360 s later.
    assert 1250 <= (ages["checkpoints"].age_s or 0) <= 1260, ages["checkpoints"]
    assert ages["weights"].newest_key == "v1/weights"
    assert ages["datasets"].detail.startswith("https://") and "404 ContainerNotFound" in (
        ages["datasets"].detail
    )
    assert stages["data-age"].status == "failed"  # the datasets container does not exist
    assert report.notes[-1] == "Replicas were read as the storage credential given to the probe."


def test_an_empty_replica_fails_the_checkpoint_stage_in_one_line(
    azurite: Azurite,
    service: BlobServiceClient,
    arm: Callable[[dict[str, list[Answer]]], FakeArm],
) -> None:
    with_container(service, "checkpoints")
    s = setup()
    server = arm({})
    clock = Clock(NOW)
    stacks = FakeStacks(clock)
    p = probe(azurite, s, management=server.url)
    report = run_drill(s, Deps(stacks=stacks, probe=p, clock=clock, sleep=clock.advance))
    checkpoint = report.stage("checkpoint")
    assert checkpoint.status == "failed"
    assert checkpoint.detail == (
        f"{p.url(bucket('checkpoints'))} holds no object: nothing has been replicated to it yet"
    )
