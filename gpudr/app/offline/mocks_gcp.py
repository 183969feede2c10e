"""Provider-like answers for pulumi_gcp resources and lookups under the offline mocks.

Ids and self links have the shapes the Google provider returns, built from the inputs, so they
are deterministic. The project number is an obviously offline value: nothing here exists.
"""

from __future__ import annotations

import hashlib
from typing import Any

OFFLINE_PROJECT_NUMBER = "123456789012"
COMPUTE = "https://www.googleapis.com/compute/v1"


def _short(*parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:12]


def _last(value: Any) -> str:
    """The name at the end of a name-or-self-link input."""
    return str(value or "").rstrip("/").rsplit("/", 1)[-1]


def answer(typ: str, name: str, inputs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(id, outputs) for a GCP resource: inputs echoed, plus the computed fields gpudr reads."""
    state = dict(inputs)
    project = str(inputs.get("project") or "offline-project")
    rname = str(inputs.get("name") or name)
    region = str(inputs.get("region") or "")
    location = str(inputs.get("location") or "")
    self_link: str | None = None
    if typ == "gcp:kms/keyRing:KeyRing":
        rid = f"projects/{project}/locations/{location}/keyRings/{rname}"
    elif typ == "gcp:kms/cryptoKey:CryptoKey":
        rid = f"{inputs.get('keyRing')}/cryptoKeys/{rname}"
        state.setdefault("primary", {"name": f"{rid}/cryptoKeyVersions/1", "state": "ENABLED"})
    elif typ == "gcp:storage/bucket:Bucket":
        rid = rname
        state.update(url=f"gs://{rname}", project=project)
        self_link = f"https://www.googleapis.com/storage/v1/b/{rname}"
    elif typ == "gcp:storage/transferJob:TransferJob":
        rname = str(inputs.get("name") or f"transferJobs/offline-{_short(typ, name)}")
        rid = f"{project}/{rname}"
    elif typ == "gcp:compute/network:Network":
        rid = f"projects/{project}/global/networks/{rname}"
        self_link = f"{COMPUTE}/{rid}"
    elif typ in ("gcp:compute/subnetwork:Subnetwork", "gcp:compute/router:Router"):
        kind = "subnetworks" if typ.endswith("Subnetwork") else "routers"
        rid = f"projects/{project}/regions/{region}/{kind}/{rname}"
        self_link = f"{COMPUTE}/{rid}"
    elif typ == "gcp:compute/routerNat:RouterNat":
        rid = f"{project}/{region}/{_last(inputs.get('router'))}/{rname}"
    elif typ == "gcp:compute/haVpnGateway:HaVpnGateway":
        rid = f"projects/{project}/regions/{region}/vpnGateways/{rname}"
        self_link = f"{COMPUTE}/{rid}"
        state.setdefault(
            "vpnInterfaces",
            [{"id": i, "ipAddress": _test_net(rname, i)} for i in range(2)],
        )
    elif typ == "gcp:compute/networkPeering:NetworkPeering":
        rid = f"{_last(inputs.get('network'))}/{rname}"
        state.setdefault("state", "ACTIVE")
    elif typ == "gcp:compute/reservation:Reservation":
        rid = f"projects/{project}/zones/{inputs.get('zone')}/reservations/{rname}"
        self_link = f"{COMPUTE}/{rid}"
    elif typ == "gcp:container/cluster:Cluster":
        rid = f"projects/{project}/locations/{location}/clusters/{rname}"
        self_link = f"https://container.googleapis.com/v1/{rid}"
        state.setdefault("endpoint", "192.0.2.2")  # TEST-NET-1: clearly not a real address
    elif typ == "gcp:container/nodePool:NodePool":
        cluster = _last(inputs.get("cluster"))
        rid = f"projects/{project}/locations/{location}/clusters/{cluster}/nodePools/{rname}"
    elif typ == "gcp:serviceaccount/account:Account":
        email = f"{inputs.get('accountId')}@{project}.iam.gserviceaccount.com"
        rid = f"projects/{project}/serviceAccounts/{email}"
        rname = rid
        state.update(
            email=email,
            member=f"serviceAccount:{email}",
            uniqueId=str(int(_short(typ, email), 16)).rjust(21, "1")[:21],
        )
    elif typ == "gcp:storage/hmacKey:HmacKey":
        # The shapes Cloud Storage returns: a 61-character GOOG1E access id and a 40-character
        # base64 secret. Obviously offline values; the SDK marks the secret as secret.
        access_id = f"GOOG1EOFFLINE{_short(typ, name, 'id').upper()}".ljust(61, "0")
        rid = f"projects/{project}/hmacKeys/{access_id}"
        state.update(
            accessId=access_id,
            secret=f"offline{_short(typ, name, 'secret')}".ljust(40, "0"),
            state=inputs.get("state") or "ACTIVE",
        )
    elif "IAMMember" in typ:
        target = inputs.get("cryptoKeyId") or inputs.get("bucket") or project
        rid = f"{target}/{inputs.get('role')}/{inputs.get('member')}"
        state.setdefault("etag", f"BwOffline{_short(typ, name)}")
    else:
        rid = f"projects/{project}/{typ.split(':')[-1].lower()}s/{rname}"
        self_link = f"{COMPUTE}/{rid}"
    state.setdefault("name", rname)
    if self_link:
        state.setdefault("selfLink", self_link)
    state.setdefault("id", rid)
    return rid, state


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
            "subjectId": str(int(_short("subject", project), 16)).rjust(21, "1")[:21],
            "id": project,
            "project": project,
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
    return f"198.51.100.{int(_short(name, str(interface)), 16) % 250 + 1}"
