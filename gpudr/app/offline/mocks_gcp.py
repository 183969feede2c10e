"""Provider-like answers for pulumi_gcp resources and lookups under the offline mocks.

Ids and self links have the shapes the Google provider returns, built from the inputs, so they
are deterministic. The project number is an obviously offline value: nothing here exists.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpudr.app.offline.ids import short_hash

OFFLINE_PROJECT_NUMBER = "123456789012"
COMPUTE = "https://www.googleapis.com/compute/v1"


def _last(value: Any) -> str:
    """The name at the end of a name-or-self-link input."""
    return str(value or "").rstrip("/").rsplit("/", 1)[-1]


@dataclass(frozen=True)
class _Resource:
    """A resource to answer for, with the inputs most answers build on."""

    typ: str
    name: str  # Pulumi's resource name
    inputs: dict[str, Any]

    @property
    def project(self) -> str:
        return str(self.inputs.get("project") or "offline-project")

    @property
    def rname(self) -> str:
        """The resource's own name in GCP."""
        return str(self.inputs.get("name") or self.name)

    def input(self, key: str) -> str:
        return str(self.inputs.get(key) or "")


@dataclass(frozen=True)
class _Found:
    """What a service's answer decides: the id, the self link, and the name when it is not
    the input's."""

    rid: str
    self_link: str | None = None
    name: str | None = None


def answer(typ: str, name: str, inputs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(id, outputs) for a GCP resource: inputs echoed, plus the computed fields gpudr reads."""
    r = _Resource(typ, name, inputs)
    state = dict(inputs)
    if "IAMMember" in typ:
        found = _iam_member(r, state)
    else:
        service = typ.split(":")[1].split("/")[0]
        by_service = _SERVICES.get(service)
        found = (by_service(r, state) if by_service else None) or _generic(r)
    state.setdefault("name", found.name or r.rname)
    if found.self_link:
        state.setdefault("selfLink", found.self_link)
    state.setdefault("id", found.rid)
    return found.rid, state


def _generic(r: _Resource) -> _Found:
    rid = f"projects/{r.project}/{r.typ.split(':')[-1].lower()}s/{r.rname}"
    return _Found(rid, f"{COMPUTE}/{rid}")


def _iam_member(r: _Resource, state: dict[str, Any]) -> _Found:
    target = r.inputs.get("cryptoKeyId") or r.inputs.get("bucket") or r.project
    state.setdefault("etag", f"BwOffline{short_hash(r.typ, r.name)}")
    return _Found(f"{target}/{r.inputs.get('role')}/{r.inputs.get('member')}")


def _kms(r: _Resource, state: dict[str, Any]) -> _Found | None:
    if r.typ == "gcp:kms/keyRing:KeyRing":
        return _Found(f"projects/{r.project}/locations/{r.input('location')}/keyRings/{r.rname}")
    if r.typ == "gcp:kms/cryptoKey:CryptoKey":
        rid = f"{r.inputs.get('keyRing')}/cryptoKeys/{r.rname}"
        state.setdefault("primary", {"name": f"{rid}/cryptoKeyVersions/1", "state": "ENABLED"})
        return _Found(rid)
    return None


def _storage(r: _Resource, state: dict[str, Any]) -> _Found | None:
    if r.typ == "gcp:storage/bucket:Bucket":
        state.update(url=f"gs://{r.rname}", project=r.project)
        return _Found(r.rname, f"https://www.googleapis.com/storage/v1/b/{r.rname}")
    if r.typ == "gcp:storage/transferJob:TransferJob":
        rname = str(r.inputs.get("name") or f"transferJobs/offline-{short_hash(r.typ, r.name)}")
        return _Found(f"{r.project}/{rname}", name=rname)
    if r.typ == "gcp:storage/hmacKey:HmacKey":
        # The shapes Cloud Storage returns: a 61-character GOOG1E access id and a 40-character
        # base64 secret. Obviously offline values; the SDK marks the secret as secret.
        access_id = f"GOOG1EOFFLINE{short_hash(r.typ, r.name, 'id').upper()}".ljust(61, "0")
        state.update(
            accessId=access_id,
            secret=f"offline{short_hash(r.typ, r.name, 'secret')}".ljust(40, "0"),
            state=r.inputs.get("state") or "ACTIVE",
        )
        return _Found(f"projects/{r.project}/hmacKeys/{access_id}")
    return None


def _compute(r: _Resource, state: dict[str, Any]) -> _Found | None:
    regional = f"projects/{r.project}/regions/{r.input('region')}"
    if r.typ == "gcp:compute/network:Network":
        rid = f"projects/{r.project}/global/networks/{r.rname}"
    elif r.typ in ("gcp:compute/subnetwork:Subnetwork", "gcp:compute/router:Router"):
        kind = "subnetworks" if r.typ.endswith("Subnetwork") else "routers"
        rid = f"{regional}/{kind}/{r.rname}"
    elif r.typ == "gcp:compute/routerNat:RouterNat":
        router = _last(r.inputs.get("router"))
        return _Found(f"{r.project}/{r.input('region')}/{router}/{r.rname}")
    elif r.typ == "gcp:compute/haVpnGateway:HaVpnGateway":
        rid = f"{regional}/vpnGateways/{r.rname}"
        state.setdefault(
            "vpnInterfaces",
            [{"id": i, "ipAddress": _test_net(r.rname, i)} for i in range(2)],
        )
    elif r.typ == "gcp:compute/networkPeering:NetworkPeering":
        state.setdefault("state", "ACTIVE")
        return _Found(f"{_last(r.inputs.get('network'))}/{r.rname}")
    elif r.typ == "gcp:compute/reservation:Reservation":
        rid = f"projects/{r.project}/zones/{r.inputs.get('zone')}/reservations/{r.rname}"
    else:
        return None
    return _Found(rid, f"{COMPUTE}/{rid}")


def _container(r: _Resource, state: dict[str, Any]) -> _Found | None:
    located = f"projects/{r.project}/locations/{r.input('location')}"
    if r.typ == "gcp:container/cluster:Cluster":
        rid = f"{located}/clusters/{r.rname}"
        state.setdefault("endpoint", "192.0.2.2")  # TEST-NET-1: clearly not a real address
        return _Found(rid, f"https://container.googleapis.com/v1/{rid}")
    if r.typ == "gcp:container/nodePool:NodePool":
        cluster = _last(r.inputs.get("cluster"))
        return _Found(f"{located}/clusters/{cluster}/nodePools/{r.rname}")
    return None


def _service_account(r: _Resource, state: dict[str, Any]) -> _Found | None:
    if r.typ != "gcp:serviceaccount/account:Account":
        return None
    email = f"{r.inputs.get('accountId')}@{r.project}.iam.gserviceaccount.com"
    rid = f"projects/{r.project}/serviceAccounts/{email}"
    state.update(
        email=email,
        member=f"serviceAccount:{email}",
        uniqueId=str(int(short_hash(r.typ, email), 16)).rjust(21, "1")[:21],
    )
    return _Found(rid, name=rid)


def _logging(r: _Resource, state: dict[str, Any]) -> _Found | None:
    if r.typ == "gcp:logging/projectBucketConfig:ProjectBucketConfig":
        rid = f"projects/{r.project}/locations/{r.input('location')}/buckets/{r.input('bucketId')}"
        state.setdefault("lifecycleState", "ACTIVE")
        return _Found(rid, name=rid)
    if r.typ == "gcp:logging/projectSink:ProjectSink":
        # A sink into a log bucket of its own project has no writer identity (Cloud Logging
        # API, LogSink.writerIdentity).
        state.setdefault("writerIdentity", "")
        return _Found(f"projects/{r.project}/sinks/{r.rname}")
    return None


def _projects(r: _Resource, state: dict[str, Any]) -> _Found | None:
    if r.typ != "gcp:projects/iAMAuditConfig:IAMAuditConfig":
        return None
    state.setdefault("etag", f"BwOffline{short_hash(r.typ, r.name)}")
    return _Found(f"{r.project}/audit_config/{r.input('service')}")


# The service of a type token (gcp:<service>/...) -> its answers; None for a type it does not
# know, which gets the generic compute-style id.
_SERVICES: dict[str, Callable[[_Resource, dict[str, Any]], _Found | None]] = {
    "kms": _kms,
    "storage": _storage,
    "compute": _compute,
    "container": _container,
    "serviceaccount": _service_account,
    "logging": _logging,
    "projects": _projects,
}


def lookup(token: str, args: dict[str, Any]) -> dict[str, Any]:
    project = str(args.get("project") or args.get("projectId") or "offline-project")
    if token == "gcp:storage/getProjectServiceAccount:getProjectServiceAccount":
        email = f"service-{OFFLINE_PROJECT_NUMBER}@gs-project-accounts.iam.gserviceaccount.com"
        return {
            "emailAddress": email,
            "member": f"serviceAccount:{email}",
            "id": project,
            "project": project,
        }
    if token == "gcp:storage/getTransferProjectServiceAccount:getTransferProjectServiceAccount":
        email = f"project-{OFFLINE_PROJECT_NUMBER}@storage-transfer-service.iam.gserviceaccount.com"
        return {
            "email": email,
            "member": f"serviceAccount:{email}",
            # The numeric id an AWS role trusting Google names as its subject.
            "subjectId": str(int(short_hash("subject", project), 16)).rjust(21, "1")[:21],
            "id": project,
            "project": project,
        }
    if token == "gcp:logging/getProjectCmekSettings:getProjectCmekSettings":
        # The Cloud Logging service agent a CMEK log bucket's key is granted to.
        return {
            "id": f"projects/{project}/cmekSettings",
            "name": f"projects/{project}/cmekSettings",
            "project": project,
            "serviceAccountId": (
                f"service-{OFFLINE_PROJECT_NUMBER}@gcp-sa-logging.iam.gserviceaccount.com"
            ),
            "kmsKeyName": str(args.get("kmsKeyName") or ""),
            "kmsKeyVersionName": "",
        }
    if token == "gcp:organizations/getProject:getProject":
        return {
            "projectId": project,
            "number": OFFLINE_PROJECT_NUMBER,
            "name": project,
            "id": f"projects/{project}",
            "labels": {},
            "effectiveLabels": {},
            "pulumiLabels": {},
            "tags": {},
            "autoCreateNetwork": True,
            "deletionPolicy": "PREVENT",
            "billingAccount": "",
            "folderId": "",
            "orgId": "",
        }
    if token == "gcp:compute/getHcVpnGateway:getHcVpnGateway":
        # The DR site's HA VPN gateway, as the primary's stack finds it by name.
        name = str(args.get("name"))
        region = str(args.get("region") or "")
        rid = f"projects/{project}/regions/{region}/vpnGateways/{name}"
        network = f"projects/{project}/global/networks/{name.removesuffix('-havpn')}"
        return {
            "id": rid,
            "name": name,
            "project": project,
            "region": region,
            "selfLink": f"{COMPUTE}/{rid}",
            "network": f"{COMPUTE}/{network}",
            "description": "",
            "stackType": "IPV4_ONLY",
            "gatewayIpVersion": "IPV4",
            # TEST-NET-2 addresses (RFC 5737): documentation only, never routable.
            "vpnInterfaces": [
                {"id": i, "ipAddress": _test_net(name, i), "interconnectAttachment": ""}
                for i in range(2)
            ],
            "labels": {},
            "effectiveLabels": {},
            "pulumiLabels": {},
            "labelFingerprint": "",
            "deletionPolicy": "",
            "params": [],
        }
    raise LookupError(f"the offline mocks do not answer {token}; add it to offline/mocks_gcp.py")


def _test_net(name: str, interface: int) -> str:
    return f"198.51.100.{int(short_hash(name, str(interface)), 16) % 250 + 1}"
