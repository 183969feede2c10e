"""The drill program (`gpudr:mode` drill) under mocks, for the DR site of every example, same
cloud and cross-cloud: isolated (no route, peering, VPN or link to another site), read-only on
the replicas, no data resource created, TTL tags on everything taggable, nothing protected,
pools at the test size, and no physical name shared with the real DR stack."""

from __future__ import annotations

import importlib
import inspect
import json
from datetime import UTC, datetime
from functools import cache
from typing import Any

import pytest

from components.aws.drill import trust_operator
from components.azure.arm import STORAGE_BLOB_DATA_READER
from components.config import StackConfigError
from gpudr.app.offline.mocks import GpudrMocks, Registration
from gpudr.app.offline.run import StackRun, run_stack
from gpudr.build.drill import DrillSetup, build_drill
from gpudr.build.stackconfig import stack_config_values, stack_name
from gpudr.contract.drill import parse_ts
from gpudr.contract.tags import TAG_DRILL, TAG_EXPIRES
from gpudr.core.design import design
from gpudr.core.spec import load_plan
from tests.conftest import ROOT

NOW = datetime(2025, 1, 31, 3, 12, tzinfo=UTC)
OPERATOR = "user:drill-operator@example.com"
# On AWS the operator is a principal ARN: a role session, as `aws sts get-caller-identity` says.
AWS_OPERATOR = "arn:aws:sts::123456789012:assumed-role/DrillRunner/alice"
# (example, DR site): one per cloud, and every cross-cloud DR site.
SITES = [
    ("aws-two-region", "usw2"),
    ("gcp-two-region", "use4"),
    ("azure-two-region", "wus"),
    ("aws-to-gcp", "gcpe4"),
    ("gcp-to-aws", "use1"),
    ("azure-to-gcp", "gcpe4"),
]
PHASES = ("infrastructure", "capacity")

# Anything that links a network to another, on any cloud, by type token.
LINKS = (
    "ec2transitgateway/",
    "directconnect/",
    "ec2/vpnConnection",
    "ec2/vpnGateway",
    "ec2/customerGateway",
    "ec2/vpcPeeringConnection",
    "compute/networkPeering",
    "compute/haVpnGateway",
    "compute/vPNTunnel",
    "compute/externalVpnGateway",
    "compute/routerPeer",
    "compute/routerInterface",
    "compute/interconnectAttachment",
    "network:VirtualNetworkPeering",
    "network:VirtualNetworkGateway",
    "network:LocalNetworkGateway",
    "network:ExpressRoute",
)
# Data, keys and what moves data: never declared (so never created or deleted) by a drill.
DATA = (
    "aws:s3/",
    "aws:kms/",
    "aws:datasync/",
    "gcp:storage/bucket:",
    "gcp:storage/transferJob",
    "gcp:storage/hmacKey",
    "gcp:kms/",
    "azure-native:storage:",
    "azure-native:keyvault:",
)


@cache
def setup(example: str, site: str) -> DrillSetup:
    plan = load_plan(ROOT / "examples" / f"{example}.yaml")
    operator = AWS_OPERATOR if plan.sites[site].cloud == "aws" else OPERATOR
    return build_drill(design(plan), site, NOW, operator=operator)


@cache
def drill_run(example: str, site: str, phase: str) -> StackRun:
    s = setup(example, site)
    return run_stack(s.stack, s.config(phase), GpudrMocks(default_region=s.site.region))


@cache
def dr_run(example: str, site: str) -> StackRun:
    plan = load_plan(ROOT / "examples" / f"{example}.yaml")
    s = plan.sites[site]
    config = stack_config_values(design(plan), s)
    return run_stack(stack_name(plan, s), config, GpudrMocks(default_region=s.region))


def runs() -> list[Any]:
    return [pytest.param(e, s, p, id=f"{e}-{s}-{p}") for e, s in SITES for p in PHASES]


def sites() -> list[Any]:
    return [pytest.param(e, s, id=f"{e}-{s}") for e, s in SITES]


def of_type(run: StackRun, token: str) -> list[Registration]:
    return [r for r in run.resources if r.type == token]


@pytest.mark.parametrize(("example", "site", "phase"), runs())
def test_no_link_to_any_other_network(example: str, site: str, phase: str) -> None:
    run = drill_run(example, site, phase)
    s = setup(example, site)
    for r in run.resources:
        assert not any(x in r.type for x in LINKS), r.urn
    peers = {p.cidr for p in s.site.peers}
    for r in of_type(run, "aws:ec2/routeTable:RouteTable"):
        for route in r.inputs.get("routes") or []:
            # Egress only: the NAT or the internet gateway, never a peer's range.
            assert route["cidrBlock"] == "0.0.0.0/0", r.urn
            assert route.get("natGatewayId") or route.get("gatewayId"), r.urn
            assert route["cidrBlock"] not in peers, r.urn
    for r in of_type(run, "gcp:compute/router:Router"):
        # For Cloud NAT only: no interface or BGP peer is declared on it (checked above).
        assert r.name.endswith("-net-router"), r.urn
    regions = {GpudrMocks.placed_in(r.inputs) for r in run.resources} - {None}
    assert regions <= {s.site.region, s.site.region.lower()}, regions


@pytest.mark.parametrize(("example", "site", "phase"), runs())
def test_no_data_resource_is_declared(example: str, site: str, phase: str) -> None:
    run = drill_run(example, site, phase)
    for r in run.registrations:
        assert not any(r.type.startswith(x) for x in DATA), r.urn
        assert not r.protect, r.urn
        # Only its EKS audit trail outlives a drill (expiring with the retention): `pulumi
        # destroy` leaves nothing else behind.
        if r.retain_on_delete:
            assert r.type == "aws:cloudwatch/logGroup:LogGroup", r.urn
            assert r.inputs["name"].startswith("/aws/eks/") and r.inputs["retentionInDays"]
        assert not r.inputs.get("forceDestroy"), r.urn


def _aws_reader(run: StackRun, s: DrillSetup) -> None:
    (role,) = [r for r in of_type(run, "aws:iam/role:Role") if r.name.endswith("-reader")]
    # Only the operator's role (its session's role, at any path) may assume the reader.
    assert json.loads(role.inputs["assumeRolePolicy"]) == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"AWS": "arn:aws:iam::123456789012:root"},
                "Action": "sts:AssumeRole",
                "Condition": {
                    "ArnLike": {
                        "aws:PrincipalArn": [
                            "arn:aws:iam::123456789012:role/DrillRunner",
                            "arn:aws:iam::123456789012:role/*/DrillRunner",
                        ]
                    }
                },
            }
        ],
    }, role.urn
    (policy,) = [r for r in of_type(run, "aws:iam/rolePolicy:RolePolicy") if "reader" in r.name]
    assert policy.inputs["role"] == role.id, policy.urn
    attachments = of_type(run, "aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    assert all(a.inputs["role"] != role.id for a in attachments), role.urn
    doc = json.loads(policy.inputs["policy"])
    buckets = {f"arn:aws:s3:::{b.name}" for b in s.site.buckets}
    for st in doc["Statement"]:
        assert st["Effect"] == "Allow", policy.urn
        for action in st["Action"]:
            assert action.startswith(("s3:Get", "s3:List")) or action == "kms:Decrypt", action
        for resource in st["Resource"]:
            if st["Action"] == ["kms:Decrypt"]:
                assert resource.startswith("arn:aws:kms:us-") and ":key/" in resource, resource
                assert st["Condition"]["StringEquals"]["kms:ViaService"].startswith("s3."), st
            else:
                assert resource.removesuffix("/*") in buckets, resource
    listed = {r for st in doc["Statement"] for r in st["Resource"] if r.startswith("arn:aws:s3")}
    assert {r.removesuffix("/*") for r in listed} == buckets, policy.urn


def _gcp_reader(run: StackRun, s: DrillSetup) -> None:
    (account,) = of_type(run, "gcp:serviceaccount/account:Account")
    grants = of_type(run, "gcp:storage/bucketIAMMember:BucketIAMMember")
    assert {g.inputs["role"] for g in grants} == {"roles/storage.objectViewer"}, account.urn
    assert {g.inputs["bucket"] for g in grants} == {b.name for b in s.site.buckets}
    assert {g.inputs["member"] for g in grants} == {account.outputs["member"]}
    # Only the operator may act as the reader; no project-level or key grant at all.
    (act_as,) = of_type(run, "gcp:serviceaccount/iAMMember:IAMMember")
    assert (act_as.inputs["role"], act_as.inputs["member"]) == (
        "roles/iam.serviceAccountTokenCreator",
        OPERATOR,
    ), act_as.urn
    assert act_as.inputs["serviceAccountId"] == account.outputs["name"], act_as.urn
    for r in run.resources:
        assert "IAMMember" not in r.type or r in grants or r is act_as, r.urn
        assert "IAMBinding" not in r.type and "IAMPolicy" not in r.type, r.urn


def _azure_reader(run: StackRun, s: DrillSetup) -> None:
    (identity,) = [
        r
        for r in of_type(run, "azure-native:managedidentity:UserAssignedIdentity")
        if r.name.endswith("-reader")
    ]
    principal = identity.outputs["principalId"]
    grants = [
        r
        for r in of_type(run, "azure-native:authorization:RoleAssignment")
        if r.inputs["principalId"] == principal
    ]
    accounts = {b.storage_account for b in s.site.buckets}
    assert len(grants) == len(accounts), identity.urn
    for g in grants:
        assert g.inputs["roleDefinitionId"].endswith(f"/{STORAGE_BLOB_DATA_READER}"), g.urn
        assert g.inputs["scope"].rsplit("/", 1)[-1] in accounts, g.urn
        assert f"/resourceGroups/{s.site.resource_group}/" in g.inputs["scope"], g.urn
    # Nothing else is granted on a storage account.
    for r in of_type(run, "azure-native:authorization:RoleAssignment"):
        if "Microsoft.Storage" in r.inputs["scope"]:
            assert r in grants, r.urn


@pytest.mark.parametrize(("example", "site"), sites())
def test_the_reader_is_read_only_on_the_replicas(example: str, site: str) -> None:
    s = setup(example, site)
    run = drill_run(example, site, "capacity")
    {"aws": _aws_reader, "gcp": _gcp_reader, "azure": _azure_reader}[s.site.cloud](run, s)
    assert run.outputs["reader"], run.outputs


def _takes_tags(token: str) -> str | None:
    """The input a resource type carries its tags or labels in, per its SDK class."""
    provider, module, name = token.split(":")
    package = {"aws": "pulumi_aws", "gcp": "pulumi_gcp", "azure-native": "pulumi_azure_native"}
    cls = getattr(importlib.import_module(f"{package[provider]}.{module.split('/')[0]}"), name)
    params = inspect.signature(cls._internal_init).parameters
    for arg, key in (("tags", "tags"), ("labels", "labels"), ("resource_labels", "resourceLabels")):
        if arg in params:
            return key
    return None


@pytest.mark.parametrize(("example", "site", "phase"), runs())
def test_every_taggable_resource_carries_the_ttl_tags(example: str, site: str, phase: str) -> None:
    s = setup(example, site)
    run = drill_run(example, site, phase)
    gcp = s.site.cloud == "gcp"
    keys = ("gpudr-drill", "gpudr-expires-at") if gcp else (TAG_DRILL, TAG_EXPIRES)
    tagged = 0
    for r in run.resources:
        key = _takes_tags(r.type)
        tags = r.inputs.get(key) if key else None
        if r.type == "gcp:container/nodePool:NodePool":
            tags = r.inputs["nodeConfig"]["resourceLabels"]  # GKE puts them on the nodes
        elif key is None:
            continue
        assert tags is not None, r.urn
        assert tags[keys[0]] == s.id, r.urn
        assert parse_ts(tags[keys[1]]) == s.drill.expires, r.urn
        tagged += 1
    assert tagged >= 3  # the check checked something


def _pool_sizes(run: StackRun) -> list[tuple[str, tuple[Any, ...]]]:
    out = []
    for r in run.resources:
        i = r.inputs
        if r.type == "aws:eks/nodeGroup:NodeGroup":
            c = i["scalingConfig"]
            out.append((r.urn, (c["minSize"], c["desiredSize"], c["maxSize"])))
        elif r.type == "gcp:container/nodePool:NodePool":
            a = i["autoscaling"]
            low = a["totalMinNodeCount"]
            out.append((r.urn, (low, i["initialNodeCount"], a["totalMaxNodeCount"])))
        elif r.type == "azure-native:containerservice:AgentPool":
            out.append((r.urn, (i["minCount"], i["count"], i["maxCount"])))
    return out


@pytest.mark.parametrize(("example", "site", "phase"), runs())
def test_pools_at_zero_then_at_the_test_size(example: str, site: str, phase: str) -> None:
    s = setup(example, site)
    sizes = _pool_sizes(drill_run(example, site, phase))
    assert len(sizes) == len(s.pools)
    for urn, (low, now, high) in sizes:
        test = next(p.nodes for p in s.pools if f"-{p.pool}-" in urn.rsplit("::", 1)[1])
        # GKE's initial count is ignored on update (as in a failover): the autoscaling floor
        # is what moves from 0 to the test size.
        expected = (0, 0, test) if phase == "infrastructure" else (test, test, test)
        assert (low, now, high) == expected, urn


# The most specific first: an agent pool names its cluster (resourceName) and itself.
PHYSICAL = (
    "agentPoolName",
    "subnetName",
    "nodeGroupName",
    "roleAssignmentName",
    "accountId",
    "name",
    "resourceName",
    "virtualNetworkName",
    "resourceGroupName",
)
# resourceUri: an extension resource's name (a diagnostic setting's) is unique per resource only.
SCOPE = (
    "clusterName",
    "cluster",
    "resourceName",
    "resourceGroupName",
    "virtualNetworkName",
    "resourceUri",
)


def _names(run: StackRun) -> set[tuple[str, str, tuple[str, ...]]]:
    """(type, physical name, scope) of every resource that names itself."""
    out = set()
    for r in run.resources:
        field = next((f for f in PHYSICAL if isinstance(r.inputs.get(f), str)), None)
        if field is None:
            continue
        scope = tuple(str(r.inputs.get(f)) for f in SCOPE if f != field and f in r.inputs)
        out.add((r.type, r.inputs[field], scope))
    return out


@pytest.mark.parametrize(("example", "site"), sites())
def test_no_physical_name_is_the_dr_stacks(example: str, site: str) -> None:
    drill = _names(drill_run(example, site, "capacity"))
    real = _names(dr_run(example, site))
    assert drill, "the drill names nothing?"
    assert not drill & real, sorted(drill & real)


@pytest.mark.parametrize(("example", "site"), sites())
def test_exports_name_what_the_drill_reads_and_created(example: str, site: str) -> None:
    s = setup(example, site)
    out = drill_run(example, site, "capacity").outputs
    assert (out["drill"], out["expires_at"], out["mode"]) == (s.id, s.drill.expires_at, "drill")
    assert set(out["clusters"].values()) == {p.cluster_name for p in s.pools}
    assert set(out["buckets"]) == {t.data_class for t in s.data}


@pytest.mark.parametrize(
    ("stack", "site", "message"),
    [
        ("llm-training-usw2", "usw2", "drills run on their own disposable stacks"),
        ("drill-use1-20250131T031200Z", "use1", "needs gpudr:site of a DR site"),
        ("drill-usw2-20250131T031200Z", "usw2", "gpudr:drill is not set"),
        # Dated in 2099, the drill's expiry (from its name) would be 2099 too.
        ("drill-usw2-20990101T000000Z", "usw2", "later than now"),
    ],
)
def test_drill_mode_is_refused_outside_a_drill_stack_of_a_dr_site(
    stack: str, site: str, message: str
) -> None:
    plan = load_plan(ROOT / "examples" / "aws-two-region.yaml")
    config = stack_config_values(design(plan), plan.sites[site])
    config["gpudr:mode"] = "drill"
    if "not set" not in message:
        config["gpudr:drill"] = {
            **setup("aws-two-region", "usw2").drill.to_dict(),
            "stack": stack if stack.startswith("drill-") else "drill-usw2-20250131T031200Z",
        }
    with pytest.raises(StackConfigError, match=message):
        run_stack(stack, config, GpudrMocks(default_region=plan.sites[site].region))


@pytest.mark.parametrize("mode", ["standby", "failover", None])
@pytest.mark.parametrize("stack", ["drill-usw2-20250131T031200Z", "drill-aa-99999999T999999Z"])
def test_a_drill_stack_refuses_every_mode_but_drill(stack: str, mode: str | None) -> None:
    # In standby mode a drill-named stack would declare the DR site's buckets by name.
    plan = load_plan(ROOT / "examples" / "aws-two-region.yaml")
    config = stack_config_values(design(plan), plan.sites["usw2"])
    config.pop("gpudr:mode", None)
    if mode is not None:
        config["gpudr:mode"] = mode
    shown = mode or "standby"  # unset is the default, standby
    with pytest.raises(StackConfigError) as refused:
        run_stack(stack, config, GpudrMocks(default_region=plan.sites["usw2"].region))
    (line,) = str(refused.value).splitlines()
    assert line.startswith(f"gpudr:mode {shown} is set on drill stack {stack}, which runs in")
    assert f"`pulumi config set gpudr:mode drill -s {stack}`" in line


@pytest.mark.parametrize(
    ("example", "site", "operator"),
    [
        ("aws-two-region", "usw2", OPERATOR),
        ("gcp-two-region", "use4", AWS_OPERATOR),
    ],
)
def test_an_operator_of_another_cloud_is_refused(example: str, site: str, operator: str) -> None:
    s = setup(example, site)
    config = s.config("capacity")
    config["gpudr:drill"] = {**config["gpudr:drill"], "operator": operator}
    with pytest.raises(StackConfigError, match=f"operator {operator} is not a"):
        run_stack(s.stack, config, GpudrMocks(default_region=s.site.region))


@pytest.mark.parametrize("example", ["aws-two-region", "gcp-to-aws"])
def test_with_no_operator_known_aws_declares_no_reader(example: str) -> None:
    # Fail closed: no role the whole account could assume; the checks use the operator's own.
    site = "usw2" if example == "aws-two-region" else "use1"
    plan = load_plan(ROOT / "examples" / f"{example}.yaml")
    s = build_drill(design(plan), site, NOW)
    run = run_stack(s.stack, s.config("capacity"), GpudrMocks(default_region=s.site.region))
    assert not [r for r in of_type(run, "aws:iam/role:Role") if r.name.endswith("-reader")]
    assert not [r for r in of_type(run, "aws:iam/rolePolicy:RolePolicy") if "reader" in r.name]
    assert run.outputs["reader"] == ""


def test_an_iam_user_operator_is_trusted_exactly() -> None:
    user = "arn:aws:iam::123456789012:user/ops/alice"
    (statement,) = json.loads(trust_operator(user))["Statement"]
    assert statement["Condition"] == {"ArnLike": {"aws:PrincipalArn": [user]}}
    assert statement["Principal"] == {"AWS": "arn:aws:iam::123456789012:root"}
