"""Mocks for `pulumi.runtime.set_mocks`, and a monitor that records what the program registered.

The ids and outputs are what a provider would return, made deterministic (same plan, same ids)
so offline runs can be diffed. The account id is AWS's documented example account: nothing here
was created anywhere.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.runtime import MockCallArgs, MockResourceArgs
from pulumi.runtime.mocks import MockMonitor

OFFLINE_ACCOUNT = "123456789012"


class UnreachableError(RuntimeError):
    """Raised by the mocks for anything that needs an unreachable region or another stack."""


@dataclass
class Registration:
    """One resource as the program registered it, in the engine's own terms."""

    urn: str
    type: str
    name: str
    id: str
    custom: bool
    parent: str
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    dependencies: list[str]
    property_dependencies: dict[str, list[str]]
    protect: bool
    retain_on_delete: bool
    provider: str


def _short(*parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:12]


@dataclass
class GpudrMocks(pulumi.runtime.Mocks):
    """Provider-like answers for the resources and data sources gpudr's program uses.

    `unreachable_regions`: any resource placed in, or lookup made against, one of these regions
    fails, as it would during a regional outage; so does any StackReference (another stack's
    state is assumed gone)."""

    default_region: str = "us-east-1"
    unreachable_regions: frozenset[str] = frozenset()
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def _check_region(self, what: str, region: str | None) -> None:
        if region and region in self.unreachable_regions:
            raise UnreachableError(f"{what}: region {region} is unreachable")

    @staticmethod
    def placed_in(inputs: dict[str, Any]) -> str | None:
        """The region a resource is placed in: AWS `region`, Azure `location`, GCP `region`
        or the region of a `location`/zone (`us-central1-a` -> `us-central1`)."""
        for key in ("region", "location"):
            value = inputs.get(key)
            if isinstance(value, str) and value:
                parts = value.split("-")
                if len(parts) == 3 and len(parts[2]) == 1 and parts[2].isalpha():  # GCP zone
                    return "-".join(parts[:2])
                return value
        return None

    def new_resource(self, args: MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        if args.typ == "pulumi:pulumi:StackReference":
            raise UnreachableError(
                f"StackReference {args.name}: the other stack's state is unreachable"
            )
        inputs = dict(args.inputs)
        placed = self.placed_in(inputs)
        region = placed or self.default_region
        self._check_region(f"{args.typ} {args.name}", placed)
        if not args.custom:
            return "", {}
        return self._provider_answer(args.typ, args.name, inputs, str(region))

    def _provider_answer(
        self, typ: str, name: str, inputs: dict[str, Any], region: str
    ) -> tuple[str, dict[str, Any]]:
        if typ.startswith("gcp:"):
            from gpudr.app.offline import mocks_gcp

            return mocks_gcp.answer(typ, name, inputs)
        if typ.startswith("azure-native:"):
            from gpudr.app.offline import mocks_azure

            return mocks_azure.answer(typ, name, inputs)
        if typ.startswith("random:"):
            from gpudr.app.offline import mocks_azure

            return mocks_azure.answer_random(typ, name, inputs)
        return self._aws_answer(typ, name, inputs, region)

    def _aws_answer(
        self, typ: str, name: str, inputs: dict[str, Any], region: str
    ) -> tuple[str, dict[str, Any]]:
        state = dict(inputs)
        rid = f"{name}-{_short(typ, name)}"
        service = typ.split(":")[1].split("/")[0]
        arn = f"arn:aws:{service}:{region}:{OFFLINE_ACCOUNT}:{name}"
        if typ == "aws:s3/bucket:Bucket":
            rid = inputs.get("bucket") or name
            state.update(bucket=rid, arn=f"arn:aws:s3:::{rid}", region=region)
            arn = state["arn"]
        elif typ == "aws:kms/key:Key":
            rid = f"mrk-{_short(typ, name)}"
            arn = f"arn:aws:kms:{region}:{OFFLINE_ACCOUNT}:key/{rid}"
            state.update(keyId=rid)
        elif typ == "aws:kms/alias:Alias":
            rid = inputs.get("name", name)
            arn = f"arn:aws:kms:{region}:{OFFLINE_ACCOUNT}:{rid}"
        elif typ in ("aws:iam/role:Role", "aws:iam/policy:Policy"):
            kind = "role" if typ.endswith("Role") else "policy"
            rname = inputs.get("name") or rid
            rid = rname
            arn = f"arn:aws:iam::{OFFLINE_ACCOUNT}:{kind}/{rname}"
            state.update(name=rname)
        elif typ == "aws:eks/cluster:Cluster":
            rid = inputs.get("name", name)
            vpc = dict(inputs.get("vpcConfig") or {})
            vpc.update(clusterSecurityGroupId=f"sg-{_short(name, 'cluster')}", vpcId="")
            state.update(
                vpcConfig=vpc, endpoint=f"https://{_short(name)}.eks.{region}.amazonaws.com"
            )
        elif typ == "aws:ec2/launchTemplate:LaunchTemplate":
            rid = f"lt-{_short(typ, name)}"
            state.update(latestVersion=1, defaultVersion=1)
        elif typ == "aws:ec2transitgateway/transitGateway:TransitGateway":
            rid = f"tgw-{_short(typ, name)}"
            state.update(associationDefaultRouteTableId=f"tgw-rtb-{_short(name)}")
        elif typ == "aws:ec2/eip:Eip":
            rid = f"eipalloc-{_short(typ, name)}"
            state.update(allocationId=rid)
        elif (
            typ == "aws:ec2/vpcEndpoint:VpcEndpoint"
            and inputs.get("vpcEndpointType") == "Interface"
        ):
            rid = f"vpce-{_short(typ, name)}"
            state.update(
                dnsEntries=[
                    {"dnsName": f"*.{rid}.s3.{region}.vpce.amazonaws.com", "hostedZoneId": "Z"}
                ]
            )
        elif typ == "aws:ec2/vpnConnection:VpnConnection":
            # Documentation address space (RFC 5737) and link-local /30s, as AWS assigns them.
            n = int(_short(typ, name), 16) % 200
            state.update(
                {
                    f"tunnel{t}{k}": v
                    for t in (1, 2)
                    for k, v in (
                        ("Address", f"203.0.113.{n + t}"),
                        ("PresharedKey", f"offline-psk-{_short(name, str(t))}"),
                        ("CgwInsideAddress", f"169.254.{n}.{4 * t - 2}"),
                        ("VgwInsideAddress", f"169.254.{n}.{4 * t - 3}"),
                    )
                }
            )
        elif typ.startswith("aws:datasync/"):
            # The id is the ARN: .../location/loc-<17 hex> or .../task/task-<17 hex>.
            kind, prefix = ("task", "task") if typ.endswith(":Task") else ("location", "loc")
            suffix = (_short(typ, name) + _short(name, typ))[:17]
            rid = f"arn:aws:datasync:{region}:{OFFLINE_ACCOUNT}:{kind}/{prefix}-{suffix}"
            arn = rid
        elif typ == "aws:cloudwatch/logGroup:LogGroup":
            rid = inputs.get("name") or rid
            arn = f"arn:aws:logs:{region}:{OFFLINE_ACCOUNT}:log-group:{rid}"
        elif typ == "aws:ec2/placementGroup:PlacementGroup":
            state.update(name=inputs.get("name") or rid)
        state.setdefault("arn", arn)
        state.setdefault("id", rid)
        return rid, state

    def call(self, args: MockCallArgs) -> tuple[dict[Any, Any], list[tuple[str, str]] | None]:
        self.calls.append((args.token, dict(args.args)))
        region = self.placed_in(args.args)
        self._check_region(f"lookup {args.token}", region)
        return self._lookup(args.token, args.args, region), []

    def _lookup(self, token: str, args: dict[str, Any], region: str | None) -> dict[str, Any]:
        if token.startswith("gcp:"):
            from gpudr.app.offline import mocks_gcp

            return mocks_gcp.lookup(token, args)
        if token.startswith("azure-native:"):
            from gpudr.app.offline import mocks_azure

            return mocks_azure.lookup(token, args)
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
            rid = f"mrk-{_short('lookup', key)}"
            return {
                "arn": f"arn:aws:kms:{region or self.default_region}:{OFFLINE_ACCOUNT}:key/{rid}",
                "id": rid,
                "keyId": key,
                "keyManager": "CUSTOMER",
                "keyState": "Enabled",
                "keyUsage": "ENCRYPT_DECRYPT",
                "enabled": True,
                "region": region or self.default_region,
            }
        if token == "aws:ec2transitgateway/getTransitGateway:getTransitGateway":
            name = _tag_filter(args.get("filters", []), "tag:Name")
            return {
                "id": f"tgw-{_short('lookup', name)}",
                "associationDefaultRouteTableId": f"tgw-rtb-{_short('lookup', name)}",
                "ownerId": OFFLINE_ACCOUNT,
                "arn": f"arn:aws:ec2:{region}:{OFFLINE_ACCOUNT}:transit-gateway/{name}",
            }
        if token == "aws:directconnect/getGateway:getGateway":
            name = str(args.get("name"))
            return {
                "id": f"dxgw-{_short('lookup', name)}",
                "name": name,
                "amazonSideAsn": "64512",
                "ownerAccountId": OFFLINE_ACCOUNT,
            }
        raise LookupError(f"the offline mocks do not answer {token}; add it to offline/mocks.py")


def _tag_filter(filters: Iterable[dict[str, Any]], name: str) -> str:
    for f in filters:
        if f.get("name") == name:
            values = f.get("values") or [""]
            return str(values[0])
    return ""


class RecordingMonitor(MockMonitor):
    """The SDK's mock monitor, also keeping each registration's parent, dependencies, property
    dependencies and options: what the policy engine sees in `AnalyzeStack`."""

    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
        super().__init__(mocks)
        self.registrations: list[Registration] = []
        self._by_urn: dict[str, Registration] = {}
        self.stack_urn: str | None = None
        # The root stack's exports, as `pulumi stack output` would show them; a secret stays
        # wrapped (`pulumi.runtime.rpc.is_rpc_secret`), so callers know to keep it secret.
        self.stack_outputs: dict[str, Any] = {}

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
        if request.type == "pulumi:pulumi:Stack":
            self.stack_urn = response.urn
            return response
        from pulumi.runtime import rpc

        inputs = rpc.deserialize_properties(request.object)
        registration = self.resources.get(response.urn)
        outputs = dict(registration.state) if registration is not None else {}
        reg = Registration(
            urn=response.urn,
            type=request.type,
            name=request.name,
            id=response.id,
            custom=bool(request.custom),
            parent=request.parent,
            inputs=_plain(inputs),
            outputs=_plain(outputs),
            # The SDK gathers these from sets of resources, so their order follows object
            # addresses and changed from run to run; sorted, two runs of a plan are identical.
            dependencies=sorted(request.dependencies),
            property_dependencies={
                k: sorted(v.urns) for k, v in sorted(request.propertyDependencies.items())
            },
            protect=bool(request.protect),
            retain_on_delete=bool(request.retainOnDelete),
            provider=request.provider,
        )
        self.registrations.append(reg)
        self._by_urn[reg.urn] = reg
        return response

    def RegisterResourceOutputs(self, request: Any) -> Any:
        if self.stack_urn is not None and request.urn == self.stack_urn:
            from pulumi.runtime import rpc

            self.stack_outputs = _plain(rpc.deserialize_properties(request.outputs))
        return super().RegisterResourceOutputs(request)  # type: ignore[no-untyped-call]


def _plain(value: Any) -> Any:
    """Deserialized properties as plain JSON values (unknowns become None)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)
