"""Azurite, the Azure Storage emulator (Blob service only), started on loopback once per test
session (per xdist worker) and stopped at its end.

It comes from npm (tools/package.json, installed by `make setup`, i.e. `npm ci` in tools/) and
runs in memory. Every storage account of a plan maps onto Azurite's one well-known account,
devstoreaccount1, with its published key: the plans' containers have distinct names, and the
probe names blobs by their Azure URL whatever endpoint it was given.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from azure.core.credentials import AzureNamedKeyCredential
from azure.storage.blob import BlobServiceClient

from tests.conftest import ROOT

ACCOUNT = "devstoreaccount1"
# Azurite's documented development key (not a secret: every Azurite accepts it).
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
MAIN = ROOT / "tools" / "node_modules" / "azurite" / "dist" / "src" / "blob" / "main.js"
START_S = 30.0


@dataclass(frozen=True)
class Azurite:
    port: int

    @property
    def url(self) -> str:
        """The blob endpoint, path-style (the account is the path's first segment)."""
        return f"http://127.0.0.1:{self.port}/{ACCOUNT}"

    def endpoint(self, account: str) -> str:
        del account  # every account is devstoreaccount1 here
        return self.url

    def key(self, account: str = ACCOUNT) -> AzureNamedKeyCredential:
        del account
        return AzureNamedKeyCredential(ACCOUNT, KEY)

    def service(self) -> BlobServiceClient:
        """A client with the account key, to set the replica up."""
        return BlobServiceClient(self.url, credential=self.key())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def start(workdir: Path) -> tuple[subprocess.Popen[bytes], Azurite]:
    node = shutil.which("node")
    if node is None or not MAIN.exists():
        missing = "node" if node is None else str(MAIN.relative_to(ROOT))
        pytest.fail(
            f"Azurite cannot start: {missing} is missing. Run `make setup` (it runs `npm ci` in "
            "tools/, which installs Azurite from tools/package.json; Node 20 or later).",
            pytrace=False,
        )
    port = _free_port()
    argv = [
        node,
        str(MAIN),
        *("--blobHost", "127.0.0.1", "--blobPort", str(port)),
        "--inMemoryPersistence",
        # Telemetry would call out to the internet; newer SDKs send API versions it may not know.
        *("--silent", "--skipApiVersionCheck", "--disableTelemetry"),
    ]
    log = workdir / "azurite.log"
    with log.open("wb") as out:
        # In the session's own directory: whatever Azurite writes there is removed with it.
        process = subprocess.Popen(argv, cwd=workdir, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + START_S
    while not _listening(port):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"Azurite did not start: {log.read_text()[-2000:]}", pytrace=False)
        time.sleep(0.1)
    return process, Azurite(port)


@pytest.fixture(scope="session")
def azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Azurite]:
    process, emulator = start(tmp_path_factory.mktemp("azurite"))
    try:
        yield emulator
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
