"""Azure's drill checks through the Azure SDK for Python: Blob Storage (azure-storage-blob) for
the replicas, Azure Resource Manager's REST API for the AKS node pools, both signed in with
azure-identity's DefaultAzureCredential (environment, workload identity, managed identity, then
the Azure CLI's or PowerShell's sign-in; never an interactive browser, a drill runs unattended).

The data calls run as the operator: the drill's reader identity is a user-assigned managed
identity, which only an Azure resource it is attached to can sign in as, and this host is not
one. The operator needs Storage Blob Data Reader on the DR site's storage accounts (shared keys
are disabled on them). The recorded checksum is the blob's Content-MD5, which Azure keeps when
the uploader set it or computed it itself (Put Blob, a single-shot upload); a blob committed
from blocks without one has none, and the drill fails its row.

Which subscription holds the drill's AKS clusters: ARM_SUBSCRIPTION_ID (the variable the Pulumi
azure-native provider deployed them with), else AZURE_SUBSCRIPTION_ID, else the one subscription
among those the operator can see that holds the drill's resource group (its name carries the
drill's id, so no other can).
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from typing import Any

from azure.core import PipelineClient
from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential, TokenCredential
from azure.core.exceptions import (
    AzureError,
    ClientAuthenticationError,
    HttpResponseError,
    ResourceNotFoundError,
)
from azure.core.pipeline.policies import (
    BearerTokenCredentialPolicy,
    HeadersPolicy,
    RetryPolicy,
    UserAgentPolicy,
)
from azure.core.rest import HttpRequest, HttpResponse
from azure.identity import DefaultAzureCredential
from azure.storage.blob import BlobClient, BlobServiceClient

from gpudr.app.drill.errors import AccessDenied, NotFound, ProbeError
from gpudr.app.drill.probes.base import CHUNK, ObjectInfo, PoolState, Probe, StoredChecksum, utc
from gpudr.build.drill import DrillPool, DrillSetup
from gpudr.contract.drill import reader_name, resource_group_name
from gpudr.contract.site import BucketConfig
from gpudr.docs import cloudcli as cli

StorageCredential = str | AzureNamedKeyCredential | AzureSasCredential | TokenCredential

MANAGEMENT = "https://management.azure.com"
MANAGEMENT_SCOPE = "https://management.azure.com/.default"
# The REST API versions the drill stack deploys with (pulumi-azure-native 3.29, pinned in
# pyproject.toml: AgentPool 2025-09-01, ResourceGroup 2024-03-01): the shapes read here are the
# ones the stack wrote. Listing subscriptions: Microsoft.Resources' GA 2022-12-01.
AKS_API = "2025-09-01"
RESOURCES_API = "2024-03-01"
SUBSCRIPTIONS_API = "2022-12-01"
SUBSCRIPTION_VARIABLES = ("ARM_SUBSCRIPTION_ID", "AZURE_SUBSCRIPTION_ID")
# Error codes that mean "this identity may not", whatever the status: Blob Storage's
# (AuthorizationPermissionMismatch, AuthorizationFailure) and ARM's (AuthorizationFailed).
DENIED_CODES = frozenset(
    {"AuthorizationPermissionMismatch", "AuthorizationFailure", "AuthorizationFailed"}
)


def blob_endpoint(account: str) -> str:
    return f"https://{account}.blob.core.windows.net"


def _first_line(text: object) -> str:
    lines = [x.strip() for x in str(text or "").splitlines() if x.strip()]
    return lines[0] if lines else ""


def _mapped_error(where: str, exc: AzureError) -> ProbeError:
    """One line naming what was asked, the HTTP status, the service's error code and reason."""
    status = exc.status_code if isinstance(exc, HttpResponseError) else None
    code = getattr(exc, "error_code", None)
    if isinstance(code, Enum):  # the storage SDK gives StorageErrorCode members
        code = code.value
    reason = _first_line(exc.message) or type(exc).__name__
    if reason.startswith("Operation returned an invalid status") and getattr(exc, "reason", None):
        reason = str(getattr(exc, "reason", ""))  # a HEAD's answer has no body, only its reason
    head = " ".join(str(x) for x in (status, code) if x)
    line = f"{where}: {head}: {reason}" if head else f"{where}: {reason}"
    if isinstance(exc, ResourceNotFoundError) or status == 404:
        return NotFound(line)
    if isinstance(exc, ClientAuthenticationError) or status == 403 or code in DENIED_CODES:
        return AccessDenied(line)
    return ProbeError(line)


@contextmanager
def _errors(where: str) -> Iterator[None]:
    try:
        yield
    except AzureError as exc:
        raise _mapped_error(where, exc) from exc


class AzureProbe(Probe):
    """Blob Storage and ARM through the SDK. Tests pass `endpoint` (an account's blob endpoint,
    e.g. Azurite's path-style URL), `storage_credential` (a shared key or SAS per account),
    `management` (ARM's base URL) and `credential` (ARM's token credential); production passes
    none and gets https://<account>.blob.core.windows.net, ARM and DefaultAzureCredential."""

    def __init__(
        self,
        setup: DrillSetup,
        sleep: Callable[[float], None] | None = None,
        *,
        credential: TokenCredential | None = None,
        endpoint: Callable[[str], str] = blob_endpoint,
        storage_credential: Callable[[str], StorageCredential] | None = None,
        management: str = MANAGEMENT,
        subscription: str | None = None,
    ) -> None:
        super().__init__(setup, sleep)
        self.group = resource_group_name(setup.id)
        self.credential: TokenCredential = credential or DefaultAzureCredential(
            exclude_interactive_browser_credential=True
        )
        self.endpoint = endpoint
        self.storage_credential = storage_credential
        self.management = management.rstrip("/")
        self.subscription = subscription
        self.services: dict[str, BlobServiceClient] = {}
        self.arm: PipelineClient[HttpRequest, HttpResponse] = PipelineClient(
            self.management,
            policies=[
                HeadersPolicy(),
                UserAgentPolicy("gpudr-drill"),
                RetryPolicy(),
                BearerTokenCredentialPolicy(self.credential, MANAGEMENT_SCOPE),
            ],
        )

    def identity(self) -> str:
        if self.storage_credential is not None:
            return "the storage credential given to the probe"
        return (
            "the operator's own credentials (DefaultAzureCredential): the drill's reader "
            f"identity, {reader_name(self.setup.id, 'azure')}, can only be signed in to from Azure"
        )

    # --- Blob Storage ---------------------------------------------------------------------------

    def _service(self, bucket: BucketConfig) -> BlobServiceClient:
        account = str(bucket.storage_account)
        if account not in self.services:
            storage = self.storage_credential
            self.services[account] = BlobServiceClient(
                self.endpoint(account),
                credential=storage(account) if storage else self.credential,
                # Every GET at most CHUNK bytes, the first one included (its default is 32 MiB):
                # the drill holds one chunk of a blob in memory, never the whole blob.
                max_single_get_size=CHUNK,
                max_chunk_get_size=CHUNK,
            )
        return self.services[account]

    def _blob(self, bucket: BucketConfig, key: str) -> BlobClient:
        return self._service(bucket).get_blob_client(bucket.name, key)

    def list_objects(self, bucket: BucketConfig) -> list[ObjectInfo]:
        container = self._service(bucket).get_container_client(bucket.name)
        with _errors(self.url(bucket)):  # the pager fetches every page as it is iterated
            return [
                ObjectInfo(b.name, int(b.size or 0), utc(b.last_modified))
                for b in container.list_blobs()
            ]

    def stored_checksum(self, bucket: BucketConfig, key: str) -> StoredChecksum | None:
        with _errors(cli.object_url("azure", bucket, key)):
            properties = self._blob(bucket, key).get_blob_properties()
        md5 = properties.content_settings.content_md5
        if not md5:
            return None  # committed from blocks without one: nothing to verify against
        return StoredChecksum("md5", base64.b64encode(bytes(md5)).decode("ascii"))

    def read(self, bucket: BucketConfig, key: str) -> Iterator[bytes]:
        # One connection, ranges in order. validate_content=False: the SDK's check is a
        # per-range transport MD5 (x-ms-range-get-content-md5, allowed only up to 4 MiB per
        # range), not the blob's recorded Content-MD5; the drill hashes the whole stream itself
        # and compares that with the recorded value. The SDK pins every range to the first
        # response's ETag, so a blob overwritten mid-read fails rather than mixing versions.
        with _errors(cli.object_url("azure", bucket, key)):
            downloader = self._blob(bucket, key).download_blob(
                max_concurrency=1, validate_content=False
            )
            yield from downloader.chunks()

    # --- AKS, through ARM -----------------------------------------------------------------------

    def _get(self, path: str, api_version: str | None) -> dict[str, Any]:
        """GET an ARM path as JSON (`api_version` None: the path carries its query, as a
        nextLink does); a failure is the one-line ProbeError naming the path."""
        params = {"api-version": api_version} if api_version else None
        request = HttpRequest("GET", f"{self.management}{path}", params=params)
        # Bearer tokens go over HTTPS only, except to a loopback endpoint a test serves.
        https = not self.management.startswith(("http://127.0.0.1", "http://localhost"))
        where = path.split("?", 1)[0]
        with _errors(where):
            response = self.arm.send_request(request, enforce_https=https)
        if response.status_code == 200:
            body: dict[str, Any] = response.json()
            return body
        raise _arm_error(where, response.status_code, response.text())

    def _subscription(self) -> str:
        if self.subscription is None:
            named = (os.environ.get(v, "").strip() for v in SUBSCRIPTION_VARIABLES)
            self.subscription = next((s for s in named if s), None) or self._find_subscription()
        return self.subscription

    def _find_subscription(self) -> str:
        listed: list[str] = []
        page: dict[str, Any] = self._get("/subscriptions", SUBSCRIPTIONS_API)
        while True:
            listed += [str(s["subscriptionId"]) for s in page.get("value") or []]
            link = str(page.get("nextLink") or "")
            if not link:
                break
            page = self._get(link.removeprefix(MANAGEMENT), None)  # its query has the skip token
        for subscription in listed:
            try:
                self._get(
                    f"/subscriptions/{subscription}/resourcegroups/{self.group}", RESOURCES_API
                )
            except (NotFound, AccessDenied):
                continue
            return subscription
        raise NotFound(
            f"resource group {self.group}: in none of the {len(listed)} subscription(s) these "
            f"credentials can see; set {SUBSCRIPTION_VARIABLES[0]} to the one the drill used"
        )

    def pool_state(self, pool: DrillPool) -> PoolState:
        path = (
            f"/subscriptions/{self._subscription()}/resourceGroups/{self.group}/providers/"
            f"Microsoft.ContainerService/managedClusters/{pool.cluster_name}/agentPools/{pool.agent}"
        )
        shown = self._get(path, AKS_API).get("properties") or {}
        state = shown.get("provisioningState", "?")
        power = (shown.get("powerState") or {}).get("code", "?")
        count = int(shown.get("count") or 0)
        # AKS reports Succeeded once the scale set has its instances; count is their number. The
        # agent pool does not count ready nodes (Kubernetes does): the detail says what is read.
        ready = count if state == "Succeeded" and power == "Running" else 0
        return PoolState(ready, f"node pool {state}, {power}, {count} node(s) provisioned")


def _arm_error(path: str, status: int, text: str) -> ProbeError:
    """ARM's error body is {"error": {"code", "message"}}; anything else is reported as is."""
    try:
        error = json.loads(text).get("error") or {}
    except (ValueError, AttributeError):
        error = {}
    code = str(error.get("code") or "")
    reason = _first_line(error.get("message") or text) or "no reason given"
    line = f"{path}: {status} {code}: {reason}" if code else f"{path}: {status}: {reason}"
    if status == 404:
        return NotFound(line)
    if status in (401, 403) or code in DENIED_CODES:
        return AccessDenied(line)
    return ProbeError(line)


PROBE = AzureProbe
