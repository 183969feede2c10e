"""Every billable resource the examples deploy has a cost line (or is listed as unpriced).

The real program runs for every stack of every example under the mocks (`run_design`), and each
registered resource is looked up in one table: the cost rule that bills it (`gpudr.core.cost`),
or why nothing bills it. A type missing from the table fails the test: a new resource is priced,
or said to be free, before it ships. For resources billed by the hour or by the key, the plan's
usages must also count as many as the stacks register, per cloud (a transit gateway attachment
registered in one stack and billed to the other site still counts once).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from functools import cache
from typing import Any

import pytest

from gpudr.app.offline.plan import run_design
from gpudr.core import cost
from gpudr.core.design import Design, design
from gpudr.core.spec import load_plan
from tests.conftest import ROOT

EXAMPLES = [
    "aws-two-region",
    "aws-to-gcp",
    "aws-to-gcp-dedicated",
    "gcp-two-region",
    "gcp-to-aws",
    "azure-two-region",
    "azure-to-gcp",
    "aws-to-azure",
]

FREE = "free"  # no charge of its own: configuration, identity, routing, a component
# Billed per GB crossing it or per request, by traffic gpudr does not send through it or whose
# volume is immaterial: say which, so that a reader can check.
BY_USE: dict[str, str] = {
    "aws:datasync/locationObjectStorage:LocationObjectStorage": "a DataSync location: free",
    "aws:datasync/s3Location:S3Location": "a DataSync location: free",
    "azure-native:network:VirtualNetworkPeering": (
        "per GB crossing it; dual writes reach the DR storage account's endpoint (inter-region "
        "transfer line), nothing gpudr replicates crosses the peering"
    ),
    "gcp:compute/networkPeering:NetworkPeering": (
        "per GB crossing it; dual writes go to the Cloud Storage endpoint (transfer line)"
    ),
    "gcp:compute/haVpnGateway:HaVpnGateway": "its addresses are free while tunnels use them",
    "azure-native:network:VirtualNetworkGatewayConnection": (
        "a site-to-site connection: included in the gateway's hours"
    ),
    "aws:ec2transitgateway/transitGateway:TransitGateway": "billed by its attachments",
    "azure-native:keyvault:Vault": "billed by its keys and per operation",
    "azure-native:app:ManagedEnvironment": (
        "a Consumption-profile environment: its jobs' runs bill (azcopy-job-* lines)"
    ),
}

# Billed resources: type -> {rule: units each one adds to the rule's hourly or monthly count}.
# An empty mapping: billed by volume through the rules listed in VOLUME_RULES.
BILLED: dict[str, Mapping[str, float]] = {
    # AWS
    "aws:ec2/natGateway:NatGateway": {"nat-gateway": 1},
    "aws:ec2/eip:Eip": {"public-ipv4": 1},
    "aws:ec2/vpnConnection:VpnConnection": {
        "aws-vpn-connections": 1,
        "tgw-attachments": 1,
        "public-ipv4": 2,  # one address per tunnel
    },
    "aws:ec2transitgateway/vpcAttachment:VpcAttachment": {"tgw-attachments": 1},
    "aws:ec2transitgateway/peeringAttachment:PeeringAttachment": {"tgw-attachments": 1},
    "aws:ec2transitgateway/peeringAttachmentAccepter:PeeringAttachmentAccepter": {
        "tgw-attachments": 1
    },
    "aws:directconnect/gatewayAssociation:GatewayAssociation": {"tgw-attachments": 1},
    "aws:directconnect/connection:Connection": {"dx-ports": 1},
    # A Cross-Cloud Interconnect's Google end (its VLAN attachments and the AWS virtual
    # interfaces come once provisioned: not registered by the examples' stacks).
    "gcp:compute/interconnect:Interconnect": {"cci-connections": 1},
    "aws:eks/cluster:Cluster": {"control-plane": 1},
    "aws:kms/key:Key": {"data-key": 1},
    "aws:cloudwatch/metricAlarm:MetricAlarm": {"replication-alarms": 1},
    "aws:ec2/flowLog:FlowLog": {},
    "aws:s3/bucketReplicationConfig:BucketReplicationConfig": {},
    "aws:datasync/task:Task": {},
    # GCP
    "gcp:compute/routerNat:RouterNat": {"nat-gateway": 1, "public-ipv4": 1},
    "gcp:compute/vPNTunnel:VPNTunnel": {"ha-vpn-tunnels": 1},
    "gcp:container/cluster:Cluster": {"control-plane": 1},
    "gcp:kms/cryptoKey:CryptoKey": {"data-key": 1},
    "gcp:storage/bucket:Bucket": {},
    "gcp:storage/transferJob:TransferJob": {},
    "gcp:logging/projectBucketConfig:ProjectBucketConfig": {},
    "gcp:projects/iAMAuditConfig:IAMAuditConfig": {},
    # Azure
    "azure-native:network:PublicIPAddress": {"public-ipv4": 1},
    "azure-native:network:VirtualNetworkGateway": {"azure-vpn-gateway": 1},
    "azure-native:containerservice:ManagedCluster": {"control-plane": 1, "aks-system-pool": 2},
    "azure-native:keyvault:Key": {"data-key": 1},
    "azure-native:storage:StorageAccount": {},
    "azure-native:storage:ObjectReplicationPolicy": {},
    "azure-native:operationalinsights:Workspace": {},
    "azure-native:monitor:DiagnosticSetting": {},
    "azure-native:monitor:DataCollectionRule": {},
    "azure-native:app:Job": {},
}
# The volume-billed types: the rules whose lines carry what they bill.
VOLUME_RULES: dict[str, tuple[str, ...]] = {
    "aws:ec2/flowLog:FlowLog": ("flow-log-delivery",),
    "aws:s3/bucketReplicationConfig:BucketReplicationConfig": ("transfer",),
    "aws:datasync/task:Task": ("datasync-fee", "datasync-executions"),
    "aws:s3/bucket:Bucket": ("storage", "log-bucket-storage"),
    "aws:cloudwatch/logGroup:LogGroup": ("cluster-log-ingest", "cluster-log-storage"),
    "gcp:storage/bucket:Bucket": ("storage",),
    "gcp:storage/transferJob:TransferJob": ("storage-transfer-fee",),
    "gcp:logging/projectBucketConfig:ProjectBucketConfig": ("log-ingest", "log-retention"),
    "gcp:projects/iAMAuditConfig:IAMAuditConfig": ("log-ingest",),
    "azure-native:storage:StorageAccount": ("storage",),
    "azure-native:storage:ObjectReplicationPolicy": ("transfer",),
    "azure-native:operationalinsights:Workspace": ("log-ingest", "log-retention"),
    "azure-native:monitor:DiagnosticSetting": ("log-ingest",),
    "azure-native:monitor:DataCollectionRule": ("log-ingest",),
    "azure-native:app:Job": ("azcopy-job-vcpu", "azcopy-job-memory", "azcopy-blob-writes"),
}
# GPU node groups: billed for the nodes they run (an empty pilot-light group costs nothing).
NODE_POOLS = {
    "aws:eks/nodeGroup:NodeGroup",
    "gcp:container/nodePool:NodePool",
    "azure-native:containerservice:AgentPool",
}


FREE_TYPES = {
    # AWS: networking and identity with no charge of their own, bucket settings
    "aws:ec2/vpc:Vpc",
    "aws:ec2/subnet:Subnet",
    "aws:ec2/routeTable:RouteTable",
    "aws:ec2/routeTableAssociation:RouteTableAssociation",
    "aws:ec2/securityGroup:SecurityGroup",
    "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup",
    "aws:ec2/internetGateway:InternetGateway",
    "aws:ec2/launchTemplate:LaunchTemplate",
    "aws:ec2/placementGroup:PlacementGroup",
    "aws:ec2/customerGateway:CustomerGateway",
    "aws:ec2transitgateway/route:Route",
    "aws:eks/addon:Addon",
    "aws:kms/alias:Alias",
    "aws:directconnect/gateway:Gateway",
    "aws:directconnect/linkAggregationGroup:LinkAggregationGroup",
    "aws:directconnect/connectionAssociation:ConnectionAssociation",
    "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
    "aws:s3/bucketLogging:BucketLogging",  # its logs: the log bucket's storage line
    "aws:s3/bucketObjectLockConfiguration:BucketObjectLockConfiguration",
    "aws:s3/bucketOwnershipControls:BucketOwnershipControls",
    "aws:s3/bucketPolicy:BucketPolicy",
    "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
    "aws:s3/bucketVersioning:BucketVersioning",
    # GCP
    "gcp:compute/network:Network",
    "gcp:compute/subnetwork:Subnetwork",  # its flow logs: the GCP flow-log lines
    "gcp:compute/firewall:Firewall",
    "gcp:compute/router:Router",
    "gcp:compute/routerInterface:RouterInterface",
    "gcp:compute/routerPeer:RouterPeer",
    "gcp:compute/externalVpnGateway:ExternalVpnGateway",
    "gcp:kms/keyRing:KeyRing",
    "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember",
    "gcp:logging/projectExclusion:ProjectExclusion",
    "gcp:logging/projectSink:ProjectSink",
    "gcp:serviceaccount/account:Account",
    "gcp:storage/bucketIAMMember:BucketIAMMember",
    "gcp:storage/hmacKey:HmacKey",
    # Azure
    "azure-native:authorization:RoleAssignment",
    "azure-native:managedidentity:UserAssignedIdentity",
    "azure-native:managedidentity:FederatedIdentityCredential",
    "azure-native:resources:ResourceGroup",
    "azure-native:monitor:DataCollectionRuleAssociation",
    "azure-native:network:LocalNetworkGateway",
    "azure-native:network:NetworkSecurityGroup",
    "azure-native:network:Subnet",
    "azure-native:network:VirtualNetwork",
    "azure-native:storage:BlobContainer",
    "azure-native:storage:BlobServiceProperties",
    "azure-native:storage:ManagementPolicy",
}


def _free(token: str) -> bool:
    """Resource types that bill nothing themselves: components, generated passwords, IAM."""
    provider, _, rest = token.partition(":")
    if provider in ("gpudr", "random", "pulumi") or rest.startswith(("iam/", "projects/iAMMember")):
        return True
    return token in FREE_TYPES


def _nodes(r: Mapping[str, Any]) -> float:
    i = r.get("inputs") or {}
    if "scalingConfig" in i:
        return float(i["scalingConfig"].get("desiredSize") or 0)
    if "initialNodeCount" in i:
        return float(i.get("initialNodeCount") or 0)
    return float(i.get("count") or 0)


def _units(r: Mapping[str, Any]) -> Mapping[str, float]:
    """What one registered resource adds to the hour- or key-billed rules."""
    token = r["type"]
    if token in NODE_POOLS:
        return {"gpu-nodes": _nodes(r)}
    if token == "aws:ec2/vpcEndpoint:VpcEndpoint":
        interface = (r.get("inputs") or {}).get("vpcEndpointType") == "Interface"
        return {"endpoint-hours": 1} if interface else {}  # gateway endpoints are free
    return BILLED.get(token, {})


def _unclassified(token: str) -> bool:
    known = token in BILLED or token in BY_USE or token in VOLUME_RULES or token in NODE_POOLS
    return not (known or token == "aws:ec2/vpcEndpoint:VpcEndpoint" or _free(token))


@cache
def _example(name: str) -> tuple[Design, tuple[dict[str, Any], ...]]:
    d = design(load_plan(ROOT / "examples" / f"{name}.yaml"))
    return d, tuple(run_design(d))


def _cloud(token: str) -> str:
    return {"azure-native": "azure"}.get(token.split(":")[0], token.split(":")[0])


# Rules billed per unit-hour count a resource per 730 hours; keys and alarms per month. Not
# counted: an endpoint's hours are per AZ, and a slowdown's node-hours are no resource's; a
# Cross-Cloud Interconnect's VLAN attachments are declared only once its ports are provisioned
# (gpudr:cross_cloud_interconnect_provisioned), and the plan bills the posture as it stands then.
PER_MONTH = {"data-key", "replication-alarms"}
UNCOUNTED = {"endpoint-hours", "dual-write-slowdown", "interconnect-vlan-attachments"}


def _counted(d: Design) -> Counter[tuple[str, str]]:
    out: Counter[tuple[str, str]] = Counter()
    for u in d.usages:
        if u.rule in PER_MONTH:
            out[(u.cloud, u.rule)] += u.quantity
        elif cost.RULES[u.rule].unit.endswith("-hour") and u.rule not in UNCOUNTED:
            out[(u.cloud, u.rule)] += u.quantity / cost.HOURS_PER_MONTH
    return out


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_registered_resource_type_is_priced_or_said_free(example: str) -> None:
    _, stacks = _example(example)
    unknown = sorted(
        {r["type"] for s in stacks for r in s["resources"] if _unclassified(r["type"])}
    )
    assert not unknown, f"{example}: resource types with no cost rule and not said free: {unknown}"


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_billed_resource_has_its_usage(example: str) -> None:
    d, stacks = _example(example)
    rules = {(u.cloud, u.rule) for u in d.usages}
    missing = set()
    for s in stacks:
        for r in s["resources"]:
            cloud = _cloud(r["type"])
            wanted = set(_units(r)) | set(VOLUME_RULES.get(r["type"], ()))
            if r["type"] in NODE_POOLS and not _nodes(r):
                wanted = set()
            if r["type"] == "aws:cloudwatch/logGroup:LogGroup" and "datasync" in r["name"]:
                # DataSync logs at the BASIC level: errors only, an immaterial volume.
                wanted = set()
            if r["type"] == "aws:s3/bucket:Bucket" and "-logs-" in r["name"]:
                wanted = {"log-bucket-storage"}
            missing |= {(cloud, rule, r["type"]) for rule in wanted if (cloud, rule) not in rules}
    assert not missing, f"{example}: billed resources without a usage: {sorted(missing)}"


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_plan_bills_as_many_as_the_stacks_register(example: str) -> None:
    d, stacks = _example(example)
    registered: Counter[tuple[str, str]] = Counter()
    for s in stacks:
        for r in s["resources"]:
            for rule, n in _units(r).items():
                if rule not in UNCOUNTED:
                    registered[(_cloud(r["type"]), rule)] += n
    # A reservation bills nodes no node group runs yet: compare GPU nodes only without one.
    reserved = any(site.reserve_capacity for site in d.plan.sites.values())
    counted = {
        k: round(v, 6)
        for k, v in _counted(d).items()
        if v and not (reserved and k[1] == "gpu-nodes")
    }
    expected = {k: v for k, v in registered.items() if v and not (reserved and k[1] == "gpu-nodes")}
    assert counted == expected
