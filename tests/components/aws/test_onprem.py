"""The cloud end of an on-premises site's replication into AWS (components/aws/onprem.py), under
a recording monitor: the Direct Connect ports, transit virtual interface and DataSync endpoint
of the link, the agent-read locations and tasks of a pull, what is refused, and the whole DR
stack of examples/onprem-to-aws.yaml with and without the agents' ARNs."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pulumi
import pytest
import yaml
from pulumi.runtime import rpc

from components.aws.onprem import (
    OnPremLinkEnd,
    OnPremLinkEndArgs,
    OnPremPull,
    OnPremPullArgs,
    agent_arns,
    check_inbound,
)
from gpudr.app.offline.mocks import GpudrMocks, RecordingMonitor, Registration
from gpudr.app.offline.plan import OFFLINE_S3_KEY, activated_agents
from gpudr.app.offline.run import run_stack
from gpudr.build.stackconfig import build_site_configs, stack_config_values, stack_name
from gpudr.contract.site import InboundTransfer, LinkConfig, OnPremSource
from gpudr.contract.stack import DATASYNC_AGENT_ARNS_KEY, ONPREM_S3_SECRET_KEY
from gpudr.contract.stack import key as config_key
from gpudr.core.design import design
from gpudr.core.spec import Plan, load_plan, parse_plan

ROOT = Path(__file__).resolve().parents[3]
REGION = "eu-central-1"
ACCOUNT = "123456789012"
SINK_ARN = "arn:aws:s3:::fra-training-euc1-checkpoints-abc123"
KEY_ARN = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/mrk-offline"
ARNS = (
    f"arn:aws:datasync:{REGION}:{ACCOUNT}:agent/agent-0123456789abcdef0",
    f"arn:aws:datasync:{REGION}:{ACCOUNT}:agent/agent-0fedcba9876543210",
)
SOURCE = OnPremSource(
    site="fra1",
    location="Frankfurt DC1",
    cidr="10.40.0.0/16",
    storage_kind="nfs",
    storage_host="10.40.8.10",
    storage_port=None,
    storage_path="/exports/ml",
    agents=("dsa-1", "dsa-2"),
    task_mode="ENHANCED",
    link_kind="direct-connect",
    port_gbps=10,
    ports=2,
    link_location="EqFA5",
    bgp_asn=65010,
    vlan=410,
    committed_gbps=8.0,
    link_gbps=20.0,
)
CHECKPOINTS = InboundTransfer(
    service="datasync-agent",
    source_cloud="onprem",
    source_site="fra1",
    source_region="Frankfurt DC1",
    source_bucket="/exports/ml/checkpoints",
    source_account=None,
    source_project=None,
    schedule_s=2 * 3600,
    role_name="",
    mirror_deletes=True,
)
WAN = LinkConfig(
    kind="wan",
    peer_site="fra1",
    capacity_gbps=8.0,
    required_gbps=0.77,
    headroom=1.25,
    location="EqFA5",
    port_gbps=10,
    ports=2,
)


@pytest.fixture
def monitor() -> RecordingMonitor:
    mocks = GpudrMocks(default_region=REGION)
    recording = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project="gpudr", stack="test", preview=True, monitor=recording)
    return recording


def registered(monitor: RecordingMonitor, typ: str) -> list[Registration]:
    return [r for r in monitor.registrations if r.type == typ]


S3_SOURCE = replace(
    SOURCE,
    storage_kind="s3-compatible",
    storage_host="minio.dc1.lan",
    storage_port=9000,
    storage_path="ml-data",
    task_mode="BASIC",
)
S3_SECRET = "offline-minio-secret-not-real-000"


def pull(source: OnPremSource = SOURCE, secret: object = None) -> OnPremPull:
    return OnPremPull(
        "t-ckpt",
        OnPremPullArgs(
            region=REGION,
            account_id=ACCOUNT,
            role_name="gpudr-fra-training-euc1-checkpoints-datasync",
            sink_bucket_arn=SINK_ARN,
            key_arn=KEY_ARN,
            transfers=[CHECKPOINTS],
            source=source,
            agent_arns=list(ARNS),
            log_group_arn=f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/datasync",
            task_name="gpudr-fra-training-euc1-checkpoints",
            tags={"gpudr:system": "fra-training"},
            access_key="MINIOREADONLY" if secret is not None else None,
            secret_key=secret,  # type: ignore[arg-type]
        ),
    )


def link_end(source: OnPremSource = SOURCE) -> OnPremLinkEnd:
    return OnPremLinkEnd(
        "t-onprem",
        OnPremLinkEndArgs(
            region=REGION,
            system="fra-training",
            site="euc1",
            cidr="10.42.0.0/16",
            vpc_id="vpc-0offline",
            subnet_ids=["subnet-0a", "subnet-0b"],
            transit_gateway_id="tgw-0offline",
            source=source,
            link=WAN,
            tags={"gpudr:system": "fra-training"},
        ),
    )


@pulumi.runtime.test
def test_nfs_source_is_read_through_every_agent_on_the_planned_schedule(
    monitor: RecordingMonitor,
) -> pulumi.Output[None]:
    component = pull()

    def check(_: object) -> None:
        (source,) = registered(monitor, "aws:datasync/nfsLocation:NfsLocation")
        assert source.inputs["serverHostname"] == "10.40.8.10", source.urn
        assert source.inputs["subdirectory"] == "/exports/ml/checkpoints", source.urn
        assert source.inputs["onPremConfig"]["agentArns"] == list(ARNS), source.urn
        assert source.inputs["region"] == REGION, source.urn
        (task,) = registered(monitor, "aws:datasync/task:Task")
        assert task.inputs["taskMode"] == "ENHANCED", task.urn
        assert task.inputs["schedule"] == {
            "scheduleExpression": "rate(2 hours)",
            "status": "ENABLED",
        }, task.urn
        assert task.inputs["sourceLocationArn"] == source.id, task.urn
        (sink,) = registered(monitor, "aws:datasync/s3Location:S3Location")
        assert task.inputs["destinationLocationArn"] == sink.id, task.urn
        assert sink.inputs["s3BucketArn"] == SINK_ARN, sink.urn
        options = task.inputs["options"]
        assert options["preserveDeletedFiles"] == "REMOVE", task.urn  # checkpoints mirror
        assert options["posixPermissions"] == "PRESERVE", task.urn

    return component.task_arns.apply(check)


@pulumi.runtime.test
def test_an_object_store_is_read_over_https_with_a_secret_key_in_basic_mode(
    monitor: RecordingMonitor,
) -> pulumi.Output[None]:
    component = pull(S3_SOURCE, secret=pulumi.Output.secret(S3_SECRET))

    def check(_: object) -> None:
        (source,) = registered(monitor, "aws:datasync/locationObjectStorage:LocationObjectStorage")
        i = source.inputs
        assert (i["serverHostname"], i["serverPort"], i["serverProtocol"]) == (
            "minio.dc1.lan",
            9000,
            "HTTPS",
        ), source.urn
        assert (i["bucketName"], i["subdirectory"]) == ("ml-data", "/exports/ml/checkpoints")
        assert i["agentArns"] == list(ARNS), source.urn
        assert i["accessKey"] == "MINIOREADONLY", source.urn
        assert rpc.is_rpc_secret(i["secretKey"]), source.urn
        for r in monitor.registrations:
            if r is not source:
                assert S3_SECRET not in json.dumps(r.inputs), r.urn
        (task,) = registered(monitor, "aws:datasync/task:Task")
        assert task.inputs["taskMode"] == "BASIC", task.urn
        assert "posixPermissions" not in task.inputs["options"], task.urn
        # held to the WAN bandwidth committed to DR, in bytes per second
        committed = S3_SOURCE.committed_gbps
        assert task.inputs["options"]["bytesPerSecond"] == int(committed * 1e9 / 8), task.urn

    return component.task_arns.apply(check)


def test_an_object_store_without_a_secret_output_is_refused(monitor: RecordingMonitor) -> None:
    with pytest.raises(TypeError, match="secret Output"):
        pull(S3_SOURCE, secret=S3_SECRET)


@pulumi.runtime.test
def test_pull_role_writes_only_its_sink(monitor: RecordingMonitor) -> pulumi.Output[None]:
    component = pull()

    def check(_: object) -> None:
        (role,) = registered(monitor, "aws:iam/role:Role")
        (statement,) = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
        assert statement["Principal"] == {"Service": "datasync.amazonaws.com"}, role.urn
        (policy,) = registered(monitor, "aws:iam/rolePolicy:RolePolicy")
        resources = {s["Resource"] for s in json.loads(policy.inputs["policy"])["Statement"]}
        assert resources == {SINK_ARN, f"{SINK_ARN}/*", KEY_ARN}, policy.urn

    return component.task_arns.apply(check)


@pulumi.runtime.test
def test_link_end_declares_ports_vif_on_the_vlan_and_a_closed_endpoint(
    monitor: RecordingMonitor,
) -> pulumi.Output[None]:
    end = link_end()

    def check(_: object) -> None:
        ports = registered(monitor, "aws:directconnect/connection:Connection")
        assert len(ports) == 2, [p.urn for p in ports]
        for p in ports:
            assert (p.inputs["bandwidth"], p.inputs["location"]) == ("10Gbps", "EqFA5"), p.urn
        (lag,) = registered(monitor, "aws:directconnect/linkAggregationGroup:LinkAggregationGroup")
        (vif,) = registered(
            monitor, "aws:directconnect/transitVirtualInterface:TransitVirtualInterface"
        )
        assert (vif.inputs["vlan"], vif.inputs["bgpAsn"]) == (410, 65010), vif.urn
        assert vif.inputs["connectionId"] == lag.id, vif.urn  # two ports: on their LAG
        (gateway,) = registered(monitor, "aws:directconnect/gateway:Gateway")
        assert vif.inputs["dxGatewayId"] == gateway.id, vif.urn
        (assoc,) = registered(monitor, "aws:directconnect/gatewayAssociation:GatewayAssociation")
        assert assoc.inputs["allowedPrefixes"] == ["10.42.0.0/16"], assoc.urn
        (endpoint,) = registered(monitor, "aws:ec2/vpcEndpoint:VpcEndpoint")
        assert endpoint.inputs["serviceName"] == f"com.amazonaws.{REGION}.datasync", endpoint.urn
        assert endpoint.inputs["vpcEndpointType"] == "Interface", endpoint.urn
        (group,) = registered(monitor, "aws:ec2/securityGroup:SecurityGroup")
        rules = {
            (r["fromPort"], r["toPort"], tuple(r["cidrBlocks"])) for r in group.inputs["ingress"]
        }
        assert rules == {(443, 443, ("10.40.0.0/16",)), (1024, 1064, ("10.40.0.0/16",))}, group.urn

    return pulumi.Output.all(end.endpoint_id, end.link_ids, end.amazon_address).apply(check)


VPN_SOURCE = replace(
    SOURCE,
    link_kind="vpn",
    port_gbps=1.25,
    ports=4,
    link_gbps=5.0,
    vpn_connections=2,
    link_location=None,
    vlan=None,
    router_address="145.40.66.7",
)


@pulumi.runtime.test
def test_a_vpn_link_end_is_the_router_and_two_connections_on_the_transit_gateway(
    monitor: RecordingMonitor,
) -> pulumi.Output[None]:
    end = link_end(VPN_SOURCE)

    def check(_: object) -> None:
        (gateway,) = registered(monitor, "aws:ec2/customerGateway:CustomerGateway")
        assert (gateway.inputs["ipAddress"], gateway.inputs["bgpAsn"]) == (
            "145.40.66.7",
            "65010",
        ), gateway.urn
        connections = registered(monitor, "aws:ec2/vpnConnection:VpnConnection")
        assert len(connections) == 2, [c.urn for c in connections]  # 4 tunnels, 2 each
        for c in connections:
            assert c.inputs["customerGatewayId"] == gateway.id, c.urn
            assert c.inputs["transitGatewayId"] == "tgw-0offline", c.urn
            assert c.inputs["staticRoutesOnly"] is False, c.urn
            assert c.inputs["tunnel1IkeVersions"] == ["ikev2"], c.urn
        assert not registered(monitor, "aws:directconnect/connection:Connection")
        (endpoint,) = registered(monitor, "aws:ec2/vpcEndpoint:VpcEndpoint")
        assert endpoint.inputs["vpcEndpointType"] == "Interface", endpoint.urn

    return pulumi.Output.all(end.endpoint_id, end.link_ids).apply(check)


@pytest.mark.parametrize(("tunnels", "connections"), [(2, 1), (4, 2), (6, 3), (8, 4)])
@pulumi.runtime.test
def test_a_vpn_link_end_declares_the_planners_connection_count(
    monitor: RecordingMonitor, tunnels: int, connections: int
) -> pulumi.Output[None]:
    """The count comes from the stack config (`OnPremSource.vpn_connections`, the planner's
    `vpn_connections`), never recomputed, so it is the count the cost and the runbook give."""
    plan = _vpn_plan(tunnels)
    source = build_site_configs(design(plan))["euc1"].onprem
    assert source is not None and source.vpn_connections == connections
    end = link_end(source)

    def check(_: object) -> None:
        declared = registered(monitor, "aws:ec2/vpnConnection:VpnConnection")
        assert len(declared) == connections, [c.urn for c in declared]

    return pulumi.Output.all(end.endpoint_id, end.link_ids).apply(check)


@pytest.mark.parametrize(
    ("source", "error"),
    [
        (replace(VPN_SOURCE, vpn_connections=0), "vpn_connections"),
        (replace(SOURCE, link_gbps=0.0), "link_gbps"),
    ],
)
def test_a_stack_file_without_the_planners_link_facts_is_refused(
    monitor: RecordingMonitor, source: OnPremSource, error: str
) -> None:
    with pytest.raises(ValueError, match=rf"\({error}\); regenerate the stack"):
        link_end(source)


@pulumi.runtime.test
def test_the_ports_carry_the_planners_link_capacity(
    monitor: RecordingMonitor,
) -> pulumi.Output[None]:
    end = link_end(replace(SOURCE, link_gbps=17.5))  # not port_gbps x ports: read, not redone

    def check(_: object) -> None:
        for port in registered(monitor, "aws:directconnect/connection:Connection"):
            assert port.inputs["tags"]["gpudr:capacity-gbps"] == "17.5", port.urn

    return pulumi.Output.all(end.endpoint_id, end.link_ids).apply(check)


@pulumi.runtime.test
def test_the_link_end_gives_create_agent_its_subnet_and_group_arns(
    monitor: RecordingMonitor,
) -> pulumi.Output[None]:
    end = link_end()

    def check(x: list[object]) -> None:
        subnets, group = x
        # (the mocks' ARN has no resource type; the partition, region and account are kept)
        assert isinstance(group, str) and group.startswith("arn:aws:ec2:eu-central-1:"), group
        prefix = group.rsplit(":", 1)[0]
        assert subnets == [f"{prefix}:subnet/subnet-0a", f"{prefix}:subnet/subnet-0b"], subnets

    return pulumi.Output.all(end.subnet_arns, end.security_group_arn).apply(check)


@pulumi.runtime.test
def test_a_four_byte_asn_goes_in_the_vifs_long_argument(
    monitor: RecordingMonitor,
) -> pulumi.Output[None]:
    end = link_end(replace(SOURCE, bgp_asn=4200000001))

    def check(_: object) -> None:
        (vif,) = registered(
            monitor, "aws:directconnect/transitVirtualInterface:TransitVirtualInterface"
        )
        assert vif.inputs.get("bgpAsn") is None, vif.urn  # exactly one of the two
        assert vif.inputs["bgpAsnLong"] == "4200000001", vif.urn

    return pulumi.Output.all(end.endpoint_id, end.link_ids).apply(check)


@pulumi.runtime.test
def test_a_four_byte_asn_goes_in_the_customer_gateways_extended_argument(
    monitor: RecordingMonitor,
) -> pulumi.Output[None]:
    end = link_end(replace(VPN_SOURCE, bgp_asn=4200000001))

    def check(_: object) -> None:
        (gateway,) = registered(monitor, "aws:ec2/customerGateway:CustomerGateway")
        assert gateway.inputs.get("bgpAsn") is None, gateway.urn  # they conflict
        assert gateway.inputs["bgpAsnExtended"] == "4200000001", gateway.urn

    return pulumi.Output.all(end.endpoint_id, end.link_ids).apply(check)


def test_agent_arns_wait_for_every_agent_and_refuse_a_malformed_one() -> None:
    assert agent_arns(SOURCE, {"dsa-1": ARNS[0]}) is None
    assert agent_arns(SOURCE, {"dsa-1": ARNS[0], "dsa-2": ARNS[1]}) == list(ARNS)
    with pytest.raises(ValueError, match=r"dsa-2.*not a DataSync agent ARN"):
        agent_arns(SOURCE, {"dsa-1": ARNS[0], "dsa-2": "arn:aws:iam::123456789012:role/x"})


@pytest.mark.parametrize(
    ("source", "transfer", "error"),
    [
        (replace(SOURCE, storage_kind="hdfs"), CHECKPOINTS, "not read into S3 yet"),
        (SOURCE, replace(CHECKPOINTS, source_site="other"), "no on-premises source"),
        (SOURCE, replace(CHECKPOINTS, schedule_s=1800), "whole number of hours"),
    ],
)
def test_what_cannot_be_pulled_is_refused(
    source: OnPremSource, transfer: InboundTransfer, error: str
) -> None:
    with pytest.raises(ValueError, match=error):
        check_inbound([transfer], source)


def _vpn_plan(tunnels: int) -> Plan:
    raw = yaml.safe_load((ROOT / "examples" / "onprem-to-aws.yaml").read_text())
    raw["sites"]["fra1"]["link"] = {
        "kind": "vpn",
        "bgp_asn": 65010,
        "address": "145.40.66.7",
        "ports": tunnels,
    }
    raw["sites"]["fra1"]["wan_committed_gbps"] = 1
    return parse_plan(raw)


def _dr_stack(config_extra: dict[str, object]) -> list[Registration]:
    plan = load_plan(ROOT / "examples" / "onprem-to-aws.yaml")
    site = plan.sites["euc1"]
    config = {**stack_config_values(design(plan), site), **config_extra}
    # Only the DR region answers: nothing on premises is reachable, or called.
    mocks = GpudrMocks(default_region=site.region)
    return run_stack(stack_name(plan, site), config, mocks).registrations


def test_dr_stack_with_activated_agents_declares_every_pull() -> None:
    plan = load_plan(ROOT / "examples" / "onprem-to-aws.yaml")
    regs = _dr_stack(activated_agents(plan.onprem["fra1"], "eu-central-1"))
    tasks = [r for r in regs if r.type == "aws:datasync/task:Task"]
    assert len(tasks) == 3, [t.urn for t in tasks]
    for r in regs:
        region = r.inputs.get("region")
        assert region in (None, "eu-central-1"), r.urn  # nothing placed elsewhere
        # Only the NFS locations name the on-premises server: nothing else reaches there.
        if r.custom and r.type != "aws:datasync/nfsLocation:NfsLocation":
            assert "10.40.8.10" not in json.dumps(r.inputs), r.urn


def test_dr_stack_without_agent_arns_declares_no_task_but_everything_else() -> None:
    regs = _dr_stack({})
    assert not [r for r in regs if r.type.startswith("aws:datasync/")], "tasks without agents"
    assert [r for r in regs if r.type == "aws:ec2/vpcEndpoint:VpcEndpoint"]
    assert [r for r in regs if r.type == "aws:s3/bucket:Bucket"]


def test_a_malformed_agent_arn_stops_the_dr_stack() -> None:
    bad = {DATASYNC_AGENT_ARNS_KEY: {"dsa-1": "not-an-arn", "dsa-2": ARNS[1]}}
    with pytest.raises(Exception, match="not a DataSync agent ARN"):
        _dr_stack(bad)


def test_an_object_store_without_its_key_declares_no_task() -> None:
    """Agents activated, but no read-only key for the bucket yet: fail closed."""
    raw = yaml.safe_load((ROOT / "examples" / "onprem-to-aws.yaml").read_text())
    raw["sites"]["fra1"]["storage"] = {
        "kind": "s3-compatible",
        "endpoint": "https://s3.lan/ml-data",
    }
    plan = parse_plan(raw)
    site = plan.sites["euc1"]
    config = {
        **stack_config_values(design(plan), site),
        **activated_agents(plan.onprem["fra1"], site.region),
    }
    regs = run_stack(stack_name(plan, site), config, GpudrMocks(default_region=site.region))
    assert not [r for r in regs.registrations if r.type == "aws:datasync/task:Task"]
    config["gpudr:onprem_s3_secret_key"] = "plain-text"
    config["gpudr:onprem_s3_access_key"] = "KEY"
    with pytest.raises(Exception, match="onprem_s3_secret_key is stored in plain text"):
        run_stack(stack_name(plan, site), config, GpudrMocks(default_region=site.region))


def _object_store_dr_stack(storage: dict[str, str]) -> list[Registration]:
    """The example's DR stack with the agents activated and `storage` on premises; for an
    object store, its read-only key set (the secret as secret config)."""
    raw = yaml.safe_load((ROOT / "examples" / "onprem-to-aws.yaml").read_text())
    raw["sites"]["fra1"]["storage"] = storage
    plan = parse_plan(raw)
    site = plan.sites["euc1"]
    config = {
        **stack_config_values(design(plan), site),
        **activated_agents(plan.onprem["fra1"], site.region),
    }
    secret_keys = []
    if storage["kind"] == "s3-compatible":
        config.update(OFFLINE_S3_KEY)
        secret_keys.append(config_key(ONPREM_S3_SECRET_KEY))
    mocks = GpudrMocks(default_region=site.region)
    return list(
        run_stack(stack_name(plan, site), config, mocks, secret_keys=secret_keys).registrations
    )


LOGS_CONTEXT = "kms:EncryptionContext:aws:logs:arn"
MINIO = {"kind": "s3-compatible", "endpoint": "https://minio.dc1.lan:9000/ml-data"}
NFS = {"kind": "nfs", "endpoint": "10.40.8.10:/exports/ml"}


@pytest.mark.parametrize(
    ("storage", "mode", "policies"),
    [
        # Basic mode: DataSync writes only where a resource policy lets it.
        (MINIO, "BASIC", 1),
        # Enhanced mode: through DataSync's service-linked role; no policy to declare.
        (NFS, "ENHANCED", 0),
    ],
)
def test_every_task_logs_its_errors_to_the_sites_encrypted_group(
    storage: dict[str, str], mode: str, policies: int
) -> None:
    regs = _object_store_dr_stack(storage)
    (group,) = [r for r in regs if r.type == "aws:cloudwatch/logGroup:LogGroup"]
    assert group.inputs["name"] == "/aws/datasync", group.urn
    assert group.inputs["retentionInDays"] > 0 and group.inputs["kmsKeyId"], group.urn
    # CloudWatch Logs may encrypt the group with the site's key: else the group is refused.
    (key,) = [r for r in regs if r.type == "aws:kms/key:Key"]
    admitted = [
        arn
        for s in json.loads(key.inputs["policy"])["Statement"]
        for arn in s.get("Condition", {}).get("ArnLike", {}).get(LOGS_CONTEXT, [])
    ]
    assert group.outputs["arn"] in admitted, admitted
    tasks = [r for r in regs if r.type == "aws:datasync/task:Task"]
    assert len(tasks) == 3, [t.urn for t in tasks]
    for task in tasks:
        assert task.inputs["taskMode"] == mode, task.urn
        assert task.inputs["cloudwatchLogGroupArn"] == group.outputs["arn"], task.urn
        assert task.inputs["options"]["logLevel"] == "BASIC", task.urn  # transfer errors
    resource_policies = [
        r for r in regs if r.type == "aws:cloudwatch/logResourcePolicy:LogResourcePolicy"
    ]
    assert len(resource_policies) == policies, [r.urn for r in resource_policies]
    for policy in resource_policies:
        (statement,) = json.loads(policy.inputs["policyDocument"])["Statement"]
        account = group.outputs["arn"].split(":")[4]
        assert statement["Principal"] == {"Service": "datasync.amazonaws.com"}, policy.urn
        assert set(statement["Action"]) == {"logs:CreateLogStream", "logs:PutLogEvents"}
        assert statement["Resource"] == f"{group.outputs['arn']}:*", policy.urn
        assert statement["Condition"] == {
            "StringEquals": {"aws:SourceAccount": account},
            "ArnLike": {"aws:SourceArn": f"arn:aws:datasync:eu-central-1:{account}:task/*"},
        }, policy.urn
        assert policy.inputs["region"] == "eu-central-1", policy.urn
