"""GCP's drill checks through Google's Python libraries: Cloud Storage with
google-cloud-storage, GKE and Compute Engine over their REST APIs with google-auth.

Identity. The operator's Application Default Credentials (`google.auth.default()`). Replicas
are read as the drill's reader service account (stack output `reader`) when the stack granted
the operator the right to act as it (`setup.drill.operator` known): impersonated credentials
limited to `devstorage.read_only`, so the data calls can do no more than the reader may. GPU
capacity is read with the operator's own credentials: the reader can read data and nothing else.

Checksums. CRC32C, never MD5: Cloud Storage records a CRC32C for every object, but an MD5 only
for objects uploaded whole (composite objects, which parallel uploads produce, have none), and
CRC32C is hashed in C by google-crc32c several times faster than MD5. One algorithm for every
object also keeps the drill's byte budget honest.

Reads. In `CHUNK`-sized ranged requests (`blob.open("rb")`), so memory stays bounded whatever
the object's size; every request names the generation whose checksum was read, so the bytes
hashed are that version's even if the object is rewritten meanwhile. The stored bytes are read
as stored (`raw_download`): a gzip-encoded object's CRC32C is over its compressed bytes.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

# google-api-core warns at import, on Python 3.11, of its own support policy for 2027: nothing a
# drill's operator can act on mid-drill, and a line that looks like a problem in the report.
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", category=FutureWarning, module="google.api_core")
    from google.api_core import exceptions as api

import google.auth
import requests
from google.auth import credentials as ga_credentials
from google.auth import exceptions as auth_errors
from google.auth import impersonated_credentials
from google.auth.transport.requests import AuthorizedSession
from google.cloud import storage

from gpudr.app.drill.errors import AccessDenied, NotFound, ProbeError
from gpudr.app.drill.probes.base import CHUNK, ObjectInfo, PoolState, Probe, StoredChecksum, utc
from gpudr.build.drill import DrillPool, DrillSetup
from gpudr.contract.site import BucketConfig

READ_ONLY = "https://www.googleapis.com/auth/devstorage.read_only"
CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
TOKEN_LIFETIME_S = 3600  # the longest an impersonated token lives; the client renews it
TIMEOUT_S = 60.0
PAGE = 1000  # objects per listing page: the API's maximum
# api_core prefixes its messages with the request ("GET https://...: "): the caller names
# the object already.
_REQUEST = re.compile(r"^[A-Z]+ \S+: ")


@dataclass(frozen=True)
class Endpoints:
    """Where the APIs answer: Google's unless a test points them at loopback servers."""

    storage: str | None = None  # None: the client's own (storage.googleapis.com)
    container: str = "https://container.googleapis.com"
    compute: str = "https://compute.googleapis.com"
    # IAM Credentials' generateAccessToken URL, `{}` for the service account; None: Google's.
    iam: str | None = None


class GcpProbe(Probe):
    def __init__(
        self,
        setup: DrillSetup,
        sleep: Callable[[float], None] | None = None,
        *,
        credentials: ga_credentials.Credentials | None = None,
        endpoints: Endpoints | None = None,
    ) -> None:
        super().__init__(setup, sleep)
        self.project = setup.site.project or ""
        self.endpoints = endpoints or Endpoints()
        self.reader = ""
        # None: Application Default Credentials, looked up on first use (a probe is built
        # before the drill knows whether it will call anything).
        self._operator = credentials
        self._storage: storage.Client | None = None
        self._session: AuthorizedSession | None = None
        self._generations: dict[tuple[str, str], int] = {}

    # --- identity -------------------------------------------------------------------------------

    def sign_in(self, outputs: Mapping[str, Any]) -> None:
        reader = str(outputs.get("reader") or "")
        # The stack lets the operator act as the reader only when it knows the operator.
        if reader and self.setup.drill.operator:
            self.reader = reader
            self._storage = None  # the next data call builds a client as the reader

    def identity(self) -> str:
        if self.reader:
            return f"the reader service account ({self.reader})"
        return super().identity()

    def _operator_credentials(self, scope: str) -> ga_credentials.Credentials:
        if self._operator is None:
            try:
                self._operator, _ = google.auth.default()
            except auth_errors.DefaultCredentialsError as exc:
                raise ProbeError(
                    f"no Google credentials ({_line(str(exc))}): run "
                    "`gcloud auth application-default login`"
                ) from exc
        # Service-account keys take the scope; user credentials carry their own.
        scoped: ga_credentials.Credentials = ga_credentials.with_scopes_if_required(
            self._operator, [scope]
        )
        return scoped

    def _reader_credentials(self) -> ga_credentials.Credentials:
        if not self.reader:
            return self._operator_credentials(READ_ONLY)
        iam = self.endpoints.iam.format(self.reader) if self.endpoints.iam else None
        return impersonated_credentials.Credentials(
            source_credentials=self._operator_credentials(CLOUD_PLATFORM),
            target_principal=self.reader,
            target_scopes=[READ_ONLY],
            lifetime=TOKEN_LIFETIME_S,
            iam_endpoint_override=iam,
        )

    def _client(self) -> storage.Client:
        if self._storage is None:
            options = {"api_endpoint": self.endpoints.storage} if self.endpoints.storage else None
            client = storage.Client(
                project=self.project or None,
                credentials=self._reader_credentials(),
                client_options=options,
            )
            # The client looks each bucket up (buckets.get) in a background thread to label
            # its trace spans: a call the reader may not be allowed, racing the first token
            # request, for spans a drill does not record. Without the cache it does not.
            client._bucket_metadata_cache = None
            self._storage = client
        return self._storage

    # --- replicas -------------------------------------------------------------------------------

    def list_objects(self, bucket: BucketConfig) -> list[ObjectInfo]:
        where = self.url(bucket)
        with _mapped(where):
            blobs = self._client().list_blobs(
                bucket.name, page_size=PAGE, fields="items(name,size,updated),nextPageToken"
            )
            return [_info(where, b) for b in blobs]

    def stored_checksum(self, bucket: BucketConfig, key: str) -> StoredChecksum | None:
        blob = self._client().bucket(bucket.name).blob(key)
        with _mapped(f"{self.url(bucket)}/{key}"):
            blob.reload()
        if blob.generation is not None:
            self._generations[(bucket.name, key)] = int(blob.generation)
        return StoredChecksum("crc32c", str(blob.crc32c)) if blob.crc32c else None

    def read(self, bucket: BucketConfig, key: str) -> Iterator[bytes]:
        generation = self._generations.get((bucket.name, key))
        blob = self._client().bucket(bucket.name).blob(key, generation=generation)
        return _stream(blob, f"{self.url(bucket)}/{key}")

    # --- capacity -------------------------------------------------------------------------------

    def pool_state(self, pool: DrillPool) -> PoolState:
        what = f"GKE node pool {pool.cluster_name}/{pool.pool}"
        path = (
            f"/v1/projects/{self.project}/locations/{self.site.region}/clusters/"
            f"{pool.cluster_name}/nodePools/{pool.pool}"
        )
        described = self._call("GET", self.endpoints.container + path, what)
        status = str(described.get("status") or "?")
        urls = described.get("instanceGroupUrls")
        ready = sum(self._running(str(u)) for u in urls if u) if isinstance(urls, list) else 0
        detail = f"node pool {status}, {ready} instance(s) running"
        if described.get("statusMessage"):
            detail += f", {_line(str(described['statusMessage']))}"
        # Why a pool does not grow (GCE_STOCKOUT, quota) shows in its conditions.
        codes = [_condition(c) for c in described.get("conditions") or [] if isinstance(c, dict)]
        if codes:
            detail += f", conditions: {', '.join(codes)}"
        return PoolState(ready, detail)

    def _running(self, group_url: str) -> int:
        """RUNNING instances of one of the pool's instance groups (GKE lists their managers;
        the group has the manager's name, project and zone)."""
        parts = urlsplit(group_url).path.split("/")
        try:
            project = parts[parts.index("projects") + 1]
            zone = parts[parts.index("zones") + 1]
        except (ValueError, IndexError):
            raise ProbeError(
                f"GKE listed an instance group URL without a zone: {group_url}"
            ) from None
        name = parts[-1]
        what = f"instance group {zone}/{name}"
        url = (
            f"{self.endpoints.compute}/compute/v1/projects/{project}/zones/{zone}/"
            f"instanceGroups/{name}/listInstances"
        )
        running, token = 0, ""
        while True:
            page = self._call(
                "POST", url, what, body={"instanceState": "RUNNING"}, params={"pageToken": token}
            )
            items = page.get("items")
            running += sum(
                1
                for i in (items if isinstance(items, list) else [])
                if isinstance(i, dict) and i.get("status") == "RUNNING"
            )
            token = str(page.get("nextPageToken") or "")
            if not token:
                return running

    def _call(
        self,
        method: str,
        url: str,
        what: str,
        body: dict[str, Any] | None = None,
        params: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        if self._session is None:
            self._session = AuthorizedSession(self._operator_credentials(CLOUD_PLATFORM))
        kept = {k: v for k, v in (params or {}).items() if v}
        try:
            response = self._session.request(
                method, url, json=body, params=kept or None, timeout=TIMEOUT_S
            )
        except (requests.RequestException, auth_errors.GoogleAuthError) as exc:
            raise ProbeError(f"{what}: {type(exc).__name__}: {_line(str(exc))}") from exc
        if response.status_code >= 400:
            raise _error(what, response.status_code, _json_reason(response.text) or response.reason)
        try:
            parsed = response.json()
        except ValueError:
            raise ProbeError(f"{what}: the API answered with something not JSON") from None
        return parsed if isinstance(parsed, dict) else {}


def _info(where: str, blob: storage.Blob) -> ObjectInfo:
    if blob.updated is None:
        raise ProbeError(f"{where}/{blob.name}: listed without an update time")
    return ObjectInfo(str(blob.name), int(blob.size or 0), utc(blob.updated))


def _stream(blob: storage.Blob, where: str) -> Iterator[bytes]:
    """The object's bytes, CHUNK at a time. The reader asks for each range without checksum
    validation (the server's X-Goog-Hash covers the whole object, not a range): the drill
    hashes the bytes itself, once."""
    with _mapped(where), blob.open("rb", chunk_size=CHUNK, raw_download=True) as reader:
        while chunk := reader.read(CHUNK):
            yield chunk


def _condition(c: dict[str, Any]) -> str:
    return str(c.get("code") or c.get("canonicalCode") or _line(str(c.get("message") or "?")))


@contextmanager
def _mapped(where: str) -> Iterator[None]:
    """Google's errors as one-line ProbeErrors that name the object: 403 AccessDenied,
    404 NotFound, any other failure of the call ProbeError."""
    try:
        yield
    except api.GoogleAPICallError as exc:
        raise _error(where, exc.code, _api_reason(exc)) from exc
    except auth_errors.RefreshError as exc:
        # No token: the operator's sign-in expired, or the operator may not (yet) act as the
        # reader (IAM's PERMISSION_DENIED, which the reason carries).
        reason = _auth_reason(exc)
        if "PERMISSION_DENIED" in reason:
            raise AccessDenied(
                f"{where}: no access token: {reason} (the drill lets only the account gcloud "
                "names act as its reader: Application Default Credentials must be that account, "
                "`gcloud auth application-default login` as it)"
            ) from exc
        raise ProbeError(f"{where}: no access token: {reason}") from exc
    except api.GoogleAPIError as exc:
        # Not a call's answer: the client's retries gave up (RetryError: a connection refused,
        # 5xx or 429 until the deadline), or the client itself failed.
        raise ProbeError(f"{where}: {type(exc).__name__}: {_line(str(exc))}") from exc
    except (auth_errors.GoogleAuthError, requests.RequestException) as exc:
        raise ProbeError(f"{where}: {type(exc).__name__}: {_line(str(exc))}") from exc


def _error(where: str, code: int | None, reason: str) -> ProbeError:
    cls = {403: AccessDenied, 404: NotFound}.get(code or 0, ProbeError)
    return cls(f"{where}: {_status(code)}: {reason}")


def _status(code: int | None) -> str:
    try:
        return f"{code} {HTTPStatus(code or 0).phrase}"
    except ValueError:
        return f"HTTP {code}"


def _api_reason(exc: api.GoogleAPICallError) -> str:
    """The cloud's own message: the JSON error's when the response is at hand (a download's
    exception message also carries the client's expectations), else the exception's."""
    response = exc.response
    text = getattr(response, "text", None)
    found = _json_reason(text) if isinstance(text, str) else ""
    return found or _line(_REQUEST.sub("", exc.message or "")) or type(exc).__name__


def _json_reason(text: str) -> str:
    """`error.message` of a Google API error body ({"error": {"code", "message", ...}})."""
    try:
        body = json.loads(text)
    except ValueError:
        return ""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        status = f"{error['status']}: " if error.get("status") else ""
        return _line(f"{status}{error['message']}")
    return ""


def _auth_reason(exc: auth_errors.GoogleAuthError) -> str:
    """A google-auth error's args: a summary and, for a refused token, the API's JSON body."""
    parts = [_json_reason(a) or _line(a) for a in exc.args if isinstance(a, str)]
    return "; ".join(p for p in parts if p) or type(exc).__name__


def _line(text: str) -> str:
    return " ".join(text.split())


PROBE = GcpProbe
