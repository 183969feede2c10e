"""One run of an AzCopy job at an Azure DR site: the container's entrypoint, and the names the
job (components/azure/azcopy.py), the image (docker/azcopy/Dockerfile copies this file as
`ENTRYPOINT_PATH`) and the policy pack share. One home: the Pulumi program declares the job's
environment from these constants, and the image runs this very file.

What a run does, all with the job's user-assigned managed identity and nothing stored:
1. asks the Container Apps identity endpoint (`IDENTITY_ENDPOINT`, `IDENTITY_HEADER`) for an
   Entra token for the identity, with audience `TOKEN_EXCHANGE_AUDIENCE`;
2. exchanges it with AWS STS (AssumeRoleWithWebIdentity, unsigned: the token is the proof)
   for a session of the primary's read-only role, as long as the role allows (12 h);
3. runs `azcopy copy` from the S3 bucket into the replica container: AzCopy presigns each
   object's GET with the session (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
   AWS_SESSION_TOKEN, which its S3 credential factory reads) and the Blob service fetches it
   (Put Block From URL): the data never passes through the replica. AzCopy signs in to Blob
   as the same identity (AZCOPY_AUTO_LOGIN_TYPE=MSI, AZCOPY_MSI_CLIENT_ID). `--overwrite
   ifSourceNewer` copies only what changed since the replica's copy;
4. for checkpoints only, once the copy succeeded: deletes the replica's blobs whose key the
   source no longer lists (the source keeps the last N; `azcopy sync` has no S3 source). The
   replica is versioned: a delete leaves a noncurrent version its lifecycle keeps.
A run that fails exits non-zero (a failed execution in Container Apps, not retried: the next
scheduled run copies what it missed).

Standard library only, and no gpudr import: the image holds this one file, python3 and azcopy.
Its schedule's rules are gpudr/contract/azcopy.py.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import os
import subprocess
import sys
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Iterator

# Where the image puts this file, and what the job runs.
ENTRYPOINT_PATH = "/usr/local/bin/gpudr-azcopy"
COMMAND = ("python3", ENTRYPOINT_PATH)
# The audience Entra ID issues tokens for when they are exchanged with another identity
# provider; the AWS OIDC provider lists it as its client id, and the role's trust requires it.
TOKEN_EXCHANGE_AUDIENCE = "api://AzureADTokenExchange"
# The issuer of the identity's Entra tokens for that audience: the AWS OIDC provider's URL.
# Entra ID issues a managed identity's token for `api://AzureADTokenExchange` as a v2.0 token
# (issuer login.microsoftonline.com/<tenant>/v2.0, subject the identity's object id): Microsoft
# Graph's federatedIdentityCredential examples trust a managed identity by exactly this issuer,
# subject and audience. Not verified against a live token here: the runbook's first check
# decodes one.
ENTRA_ISSUER = "https://login.microsoftonline.com/{tenant}/v2.0"

# The job's environment (set by components/azure/azcopy.py, read here and by the pack).
ENV_SOURCE = "GPUDR_SOURCE_BUCKET"  # the S3 bucket
ENV_SOURCE_REGION = "GPUDR_SOURCE_REGION"
ENV_DESTINATION = "GPUDR_DESTINATION"  # https://<account>.blob.core.windows.net/<container>
ENV_ROLE_ARN = "GPUDR_AWS_ROLE_ARN"
ENV_SESSION_S = "GPUDR_SESSION_SECONDS"
ENV_MIRROR_DELETES = "GPUDR_MIRROR_DELETES"  # "true" for checkpoints
ENV_CLIENT_ID = "AZCOPY_MSI_CLIENT_ID"  # AzCopy's own variable: the identity it signs in as
ENV_LOGIN = "AZCOPY_AUTO_LOGIN_TYPE"
LOGIN_MSI = "MSI"

IDENTITY_API_VERSION = "2019-08-01"  # the App Service / Container Apps identity endpoint
STORAGE_RESOURCE = "https://storage.azure.com/"
BLOB_API_VERSION = "2023-11-03"


def blob_destination(account: str, container: str) -> str:
    """The replica container's URL, as the job's environment names it."""
    return f"https://{account}.blob.core.windows.net/{container}"


def s3_source(bucket: str, region: str) -> str:
    """What AzCopy copies: every object of the bucket (the trailing `*` copies the bucket's
    contents into the container's root rather than a directory named after the bucket)."""
    return f"https://{bucket}.s3.{region}.amazonaws.com/*"


def _http(req: urllib.request.Request) -> bytes:
    with urllib.request.urlopen(req, timeout=60) as resp:
        body: bytes = resp.read()
        return body


def identity_token(resource: str) -> str:
    """An Entra token for the job's user-assigned identity from the Container Apps endpoint."""
    query = urllib.parse.urlencode(
        {
            "api-version": IDENTITY_API_VERSION,
            "resource": resource,
            "client_id": os.environ[ENV_CLIENT_ID],
        }
    )
    req = urllib.request.Request(
        f"{os.environ['IDENTITY_ENDPOINT']}?{query}",
        headers={"X-IDENTITY-HEADER": os.environ["IDENTITY_HEADER"]},
    )
    return str(json.loads(_http(req))["access_token"])


def assume_role(token: str) -> dict[str, str]:
    """AWS STS AssumeRoleWithWebIdentity: the role's temporary credentials as AzCopy reads
    them from its environment."""
    region = os.environ[ENV_SOURCE_REGION]
    form = urllib.parse.urlencode(
        {
            "Action": "AssumeRoleWithWebIdentity",
            "Version": "2011-06-15",
            "RoleArn": os.environ[ENV_ROLE_ARN],
            "RoleSessionName": f"gpudr-azcopy-{os.environ.get('CONTAINER_APP_JOB_NAME', 'run')}"[
                :64
            ],
            "WebIdentityToken": token,
            "DurationSeconds": os.environ[ENV_SESSION_S],
        }
    ).encode()
    req = urllib.request.Request(f"https://sts.{region}.amazonaws.com/", data=form)
    root = ET.fromstring(_http(req))
    ns = {"sts": "https://sts.amazonaws.com/doc/2011-06-15/"}
    creds = root.find(".//sts:Credentials", ns)
    if creds is None:
        raise RuntimeError("STS returned no credentials")

    def text(tag: str) -> str:
        node = creds.find(f"sts:{tag}", ns)
        if node is None or node.text is None:
            raise RuntimeError(f"STS credentials have no {tag}")
        return node.text

    return {
        "AWS_ACCESS_KEY_ID": text("AccessKeyId"),
        "AWS_SECRET_ACCESS_KEY": text("SecretAccessKey"),
        "AWS_SESSION_TOKEN": text("SessionToken"),
    }


def _sign(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def s3_keys(bucket: str, region: str, creds: dict[str, str]) -> Iterator[str]:
    """Every key of the bucket (ListObjectsV2, SigV4-signed with the session)."""
    host = f"{bucket}.s3.{region}.amazonaws.com"
    token: str | None = None
    while True:
        params = {"list-type": "2"}
        if token:
            params["continuation-token"] = token
        query = urllib.parse.urlencode(sorted(params.items()), quote_via=urllib.parse.quote)
        now = datetime.datetime.now(datetime.UTC)
        amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
        payload = hashlib.sha256(b"").hexdigest()
        headers = {
            "host": host,
            "x-amz-content-sha256": payload,
            "x-amz-date": amz_date,
            "x-amz-security-token": creds["AWS_SESSION_TOKEN"],
        }
        signed = ";".join(sorted(headers))
        canonical = "\n".join(
            ["GET", "/", query, *(f"{k}:{headers[k]}" for k in sorted(headers)), "", signed]
        )
        canonical += "\n" + payload
        scope = f"{day}/{region}/s3/aws4_request"
        to_sign = "\n".join(
            ["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()]
        )
        key = _sign(f"AWS4{creds['AWS_SECRET_ACCESS_KEY']}".encode(), day)
        for part in (region, "s3", "aws4_request"):
            key = _sign(key, part)
        signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
        auth = (
            f"AWS4-HMAC-SHA256 Credential={creds['AWS_ACCESS_KEY_ID']}/{scope}, "
            f"SignedHeaders={signed}, Signature={signature}"
        )
        req = urllib.request.Request(
            f"https://{host}/?{query}", headers={**headers, "Authorization": auth}
        )
        root = ET.fromstring(_http(req))
        ns = {"s3": "http://s3.amazonaws.com/doc/2006-03-01/"}
        for node in root.findall("s3:Contents/s3:Key", ns):
            if node.text:
                yield node.text
        token = root.findtext("s3:NextContinuationToken", default="", namespaces=ns) or None
        if not token:
            return


def blob_names(destination: str, bearer: str) -> Iterator[str]:
    """Every current blob of the replica container (List Blobs, as the identity)."""
    marker = ""
    while True:
        query = {"restype": "container", "comp": "list"}
        if marker:
            query["marker"] = marker
        req = urllib.request.Request(
            f"{destination}?{urllib.parse.urlencode(query)}",
            headers={"Authorization": f"Bearer {bearer}", "x-ms-version": BLOB_API_VERSION},
        )
        root = ET.fromstring(_http(req))
        for node in root.findall("Blobs/Blob/Name"):
            if node.text:
                yield node.text
        marker = root.findtext("NextMarker", default="")
        if not marker:
            return


# A run deletes at most this share of the replica's blobs. Checkpoints keep the last N, so a
# run normally deletes the one or two checkpoints that aged out; a source emptied (a bad
# retention job, an attacker, the wrong bucket) must not empty the replica with it.
MAX_DELETE_SHARE = 0.5


class MirrorRefused(RuntimeError):
    """The deletes a run would make look like a lost source, not an aged-out checkpoint."""


def mirror_deletes(destination: str, bucket: str, region: str, creds: dict[str, str]) -> int:
    """Delete the replica's blobs the source no longer has; how many were deleted. Refuses (and
    deletes nothing) when the source lists no object or when more than MAX_DELETE_SHARE of the
    replica would go: the run fails, and Container Apps records the failed execution."""
    keep = set(s3_keys(bucket, region, creds))
    if not keep:
        raise MirrorRefused(
            f"s3://{bucket} lists no object: refusing to delete the replica's blobs"
        )
    bearer = identity_token(STORAGE_RESOURCE)
    names = list(blob_names(destination, bearer))
    gone = [n for n in names if n not in keep]
    if len(gone) > MAX_DELETE_SHARE * len(names):
        raise MirrorRefused(
            f"{len(gone)} of the replica's {len(names)} blobs are gone from s3://{bucket}: "
            f"more than {MAX_DELETE_SHARE:.0%}; refusing to delete them (check the source)"
        )
    for name in gone:
        print(f"gpudr-azcopy: deleting {name} (gone from the source)", flush=True)
        req = urllib.request.Request(
            f"{destination}/{urllib.parse.quote(name)}",
            method="DELETE",
            headers={"Authorization": f"Bearer {bearer}", "x-ms-version": BLOB_API_VERSION},
        )
        _http(req)
    return len(gone)


def main() -> int:
    bucket, region = os.environ[ENV_SOURCE], os.environ[ENV_SOURCE_REGION]
    destination = os.environ[ENV_DESTINATION]
    creds = assume_role(identity_token(TOKEN_EXCHANGE_AUDIENCE))
    env = {**os.environ, **creds, ENV_LOGIN: LOGIN_MSI}
    argv = [
        "azcopy",
        "copy",
        s3_source(bucket, region),
        destination,
        "--recursive",
        "--overwrite=ifSourceNewer",
        "--log-level=WARNING",
    ]
    copied = subprocess.run(argv, env=env, check=False).returncode
    if copied != 0:
        return copied
    if os.environ.get(ENV_MIRROR_DELETES) == "true":
        deleted = mirror_deletes(destination, bucket, region, creds)
        print(f"gpudr-azcopy: deleted {deleted} blobs the source no longer has", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
