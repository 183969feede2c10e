"""Provider-like answers for pulumi_aws resources and lookups under the offline mocks.

Ids and ARNs have the shapes AWS returns, built from the inputs, so they are deterministic. The
account id is AWS's documented example account: nothing here was created anywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from gpudr.app.offline.ids import short_hash

OFFLINE_ACCOUNT = "123456789012"


@dataclass(frozen=True)
class _Resource:
    """A resource to answer for, and the id and ARN it gets unless its service says otherwise."""

    typ: str
    name: str  # Pulumi's resource name
    inputs: dict[str, Any]
    region: str

    @property
    def service(self) -> str:
        """`s3` of `aws:s3/bucket:Bucket`."""
        return self.typ.split(":")[1].split("/")[0]

    @property
    def default_id(self) -> str:
        return f"{self.name}-{short_hash(self.typ, self.name)}"

    @property
    def default_arn(self) -> str:
        return f"arn:aws:{self.service}:{self.region}:{OFFLINE_ACCOUNT}:{self.name}"

    def regional_arn(self, service: str, resource: str) -> str:
        return f"arn:aws:{service}:{self.region}:{OFFLINE_ACCOUNT}:{resource}"


def answer(typ: str, name: str, inputs: dict[str, Any], region: str) -> tuple[str, dict[str, Any]]:
    """(id, outputs) for an AWS resource: inputs echoed, plus the ARN and the computed fields
    gpudr reads."""
    r = _Resource(typ, name, inputs, region)
    state = dict(inputs)
    by_service = _SERVICES.get(r.service)
    found = by_service(r, state) if by_service else None
    rid, arn = found or (r.default_id, r.default_arn)
    state.setdefault("arn", arn)
    state.setdefault("id", rid)
    return rid, state


def _s3(r: _Resource, state: dict[str, Any]) -> tuple[str, str] | None:
    if r.typ != "aws:s3/bucket:Bucket":
        return None
    rid = r.inputs.get("bucket") or r.name
    state.update(bucket=rid, arn=f"arn:aws:s3:::{rid}", region=r.region)
    return rid, state["arn"]


def _kms(r: _Resource, state: dict[str, Any]) -> tuple[str, str] | None:
    if r.typ == "aws:kms/key:Key":
        rid = f"mrk-{short_hash(r.typ, r.name)}"
        state.update(keyId=rid)
        return rid, r.regional_arn("kms", f"key/{rid}")
    if r.typ == "aws:kms/alias:Alias":
        rid = r.inputs.get("name", r.name)
        return rid, r.regional_arn("kms", rid)
    return None


def _iam(r: _Resource, state: dict[str, Any]) -> tuple[str, str] | None:
    if r.typ not in ("aws:iam/role:Role", "aws:iam/policy:Policy"):
        return None
    kind = "role" if r.typ.endswith("Role") else "policy"
    rname = r.inputs.get("name") or r.default_id
    state.update(name=rname)
    return rname, f"arn:aws:iam::{OFFLINE_ACCOUNT}:{kind}/{rname}"


def _eks(r: _Resource, state: dict[str, Any]) -> tuple[str, str] | None:
    if r.typ != "aws:eks/cluster:Cluster":
        return None
    vpc = dict(r.inputs.get("vpcConfig") or {})
    vpc.update(clusterSecurityGroupId=f"sg-{short_hash(r.name, 'cluster')}", vpcId="")
    endpoint = f"https://{short_hash(r.name)}.eks.{r.region}.amazonaws.com"
    state.update(vpcConfig=vpc, endpoint=endpoint)
    return r.inputs.get("name", r.name), r.default_arn


def _ec2(r: _Resource, state: dict[str, Any]) -> tuple[str, str] | None:
    short = short_hash(r.typ, r.name)
    if r.typ == "aws:ec2/launchTemplate:LaunchTemplate":
        rid = f"lt-{short}"
        state.update(latestVersion=1, defaultVersion=1)
    elif r.typ == "aws:ec2/eip:Eip":
        rid = f"eipalloc-{short}"
        state.update(allocationId=rid)
    elif (
        r.typ == "aws:ec2/vpcEndpoint:VpcEndpoint"
        and r.inputs.get("vpcEndpointType") == "Interface"
    ):
        rid = f"vpce-{short}"
        dns = {"dnsName": f"*.{rid}.s3.{r.region}.vpce.amazonaws.com", "hostedZoneId": "Z"}
        state.update(dnsEntries=[dns])
    elif r.typ == "aws:ec2/vpnConnection:VpnConnection":
        state.update(_vpn_tunnels(r.typ, r.name))
        return None
    elif r.typ == "aws:ec2/placementGroup:PlacementGroup":
        state.update(name=r.inputs.get("name") or r.default_id)
        return None
    else:
        return None
    return rid, r.default_arn


def _vpn_tunnels(typ: str, name: str) -> dict[str, str]:
    """The two tunnels' outside addresses, keys and inside addresses: documentation address
    space (RFC 5737) and link-local /30s, as AWS assigns them."""
    n = int(short_hash(typ, name), 16) % 200
    return {
        f"tunnel{t}{k}": v
        for t in (1, 2)
        for k, v in (
            ("Address", f"203.0.113.{n + t}"),
            ("PresharedKey", f"offline-psk-{short_hash(name, str(t))}"),
            ("CgwInsideAddress", f"169.254.{n}.{4 * t - 2}"),
            ("VgwInsideAddress", f"169.254.{n}.{4 * t - 3}"),
        )
    }


def _transit_gateway(r: _Resource, state: dict[str, Any]) -> tuple[str, str] | None:
    if r.typ != "aws:ec2transitgateway/transitGateway:TransitGateway":
        return None
    state.update(associationDefaultRouteTableId=f"tgw-rtb-{short_hash(r.name)}")
    return f"tgw-{short_hash(r.typ, r.name)}", r.default_arn


def _datasync(r: _Resource, state: dict[str, Any]) -> tuple[str, str] | None:
    # The id is the ARN: .../location/loc-<17 hex> or .../task/task-<17 hex>.
    kind, prefix = ("task", "task") if r.typ.endswith(":Task") else ("location", "loc")
    suffix = (short_hash(r.typ, r.name) + short_hash(r.name, r.typ))[:17]
    rid = r.regional_arn("datasync", f"{kind}/{prefix}-{suffix}")
    return rid, rid


def _cloudwatch(r: _Resource, state: dict[str, Any]) -> tuple[str, str] | None:
    if r.typ != "aws:cloudwatch/logGroup:LogGroup":
        return None
    rid = r.inputs.get("name") or r.default_id
    return rid, r.regional_arn("logs", f"log-group:{rid}")


# The service of a type token (aws:<service>/...) -> (id, ARN) for the types it knows, None for
# the rest: those get `<name>-<hash>` and an ARN of the service and name.
_SERVICES: dict[str, Callable[[_Resource, dict[str, Any]], tuple[str, str] | None]] = {
    "s3": _s3,
    "kms": _kms,
    "iam": _iam,
    "eks": _eks,
    "ec2": _ec2,
    "ec2transitgateway": _transit_gateway,
    "datasync": _datasync,
    "cloudwatch": _cloudwatch,
}


def _log_group_arn(name: str, region: str) -> str:
    return f"arn:aws:logs:{region}:{OFFLINE_ACCOUNT}:log-group:{name}"


def lookup(
    token: str,
    args: dict[str, Any],
    region: str | None,
    default_region: str,
    *,
    existing_log_groups: Iterable[str] = (),
) -> dict[str, Any]:
    """What an AWS data source returns; `region` is where the lookup is made, if it says.
    `existing_log_groups`: the CloudWatch log groups that exist already."""
    groups = set(existing_log_groups)
    if token == "aws:cloudwatch/getLogGroups:getLogGroups":
        prefix = str(args.get("logGroupNamePrefix", ""))
        names = sorted(n for n in groups if n.startswith(prefix))
        arns = [_log_group_arn(n, region or default_region) for n in names]
        return {"logGroupNames": names, "arns": arns, "id": region or default_region}
    if token == "aws:index/getCallerIdentity:getCallerIdentity":
        return {
            "accountId": OFFLINE_ACCOUNT,
            "arn": f"arn:aws:iam::{OFFLINE_ACCOUNT}:user/offline",
            "userId": "OFFLINE",
            "id": OFFLINE_ACCOUNT,
        }
    if token == "aws:kms/getKey:getKey":
        # A key found by its alias (a drill uses the DR site's key, never declares one).
        key = str(args.get("keyId"))
        rid = f"mrk-{short_hash('lookup', key)}"
        return {
            "arn": f"arn:aws:kms:{region or default_region}:{OFFLINE_ACCOUNT}:key/{rid}",
            "id": rid,
            "keyId": key,
            "keyManager": "CUSTOMER",
            "keyState": "Enabled",
            "keyUsage": "ENCRYPT_DECRYPT",
            "enabled": True,
            "region": region or default_region,
        }
    if token == "aws:ec2transitgateway/getTransitGateway:getTransitGateway":
        name = _tag_filter(args.get("filters", []), "tag:Name")
        return {
            "id": f"tgw-{short_hash('lookup', name)}",
            "associationDefaultRouteTableId": f"tgw-rtb-{short_hash('lookup', name)}",
            "ownerId": OFFLINE_ACCOUNT,
            "arn": f"arn:aws:ec2:{region}:{OFFLINE_ACCOUNT}:transit-gateway/{name}",
        }
    if token == "aws:directconnect/getGateway:getGateway":
        name = str(args.get("name"))
        return {
            "id": f"dxgw-{short_hash('lookup', name)}",
            "name": name,
            "amazonSideAsn": "64512",
            "ownerAccountId": OFFLINE_ACCOUNT,
        }
    raise LookupError(f"the offline mocks do not answer {token}; add it to offline/mocks_aws.py")


def _tag_filter(filters: Iterable[dict[str, Any]], name: str) -> str:
    for f in filters:
        if f.get("name") == name:
            values = f.get("values") or [""]
            return str(values[0])
    return ""
