"""The cloud end of an on-premises site's replication into Azure (components/azure/onprem.py),
under a recording monitor: Storage Mover's endpoints, job definitions and the agent's grant on
its container only; without registered agents, no job and no grant; the ExpressRoute circuit,
gateway (sized to the WAN path) and, once provisioned, the private peering and connection."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from pulumi.runtime import rpc

from components.azure.onprem import (
    ExpressRouteEnd,
    ExpressRouteEndArgs,
    ReplicaTarget,
    StorageMoverPull,
    StorageMoverPullArgs,
    registered_agents,
)
from gpudr.app.offline.mocks import GpudrMocks, RecordingMonitor, Registration
from gpudr.app.offline.run import run_stack
from gpudr.build.stackconfig import stack_config_values, stack_name
from gpudr.contract import grants
from gpudr.contract.azure_onprem import (
    START_JOB_ACTIONS,
    recurrence_s,
    schedule_definition,
    started_jobs,
)
from gpudr.contract.site import LinkConfig, OnPremSource
from gpudr.core.design import design
from gpudr.core.spec import parse_plan

SUBSCRIPTION = "00000000-0000-0000-0000-0000000000aa"
ACCOUNT_ID = (
    f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg-dr/providers/"
    "Microsoft.Storage/storageAccounts/frawe"
)
PRINCIPALS = ("11111111-2222-3333-4444-555555555555", "66666666-7777-8888-9999-000000000000")
AGENTS = {
    "sma-1": {"name": "fra1-sma-1", "principal_id": PRINCIPALS[0]},
    "sma-2": {"name": "fra1-sma-2", "principal_id": PRINCIPALS[1]},
}
SOURCE = OnPremSource(
    site="fra1",
    location="Frankfurt DC1",
    cidr="10.40.0.0/16",
    storage_kind="nfs",
    storage_host="10.40.8.10",
    storage_port=None,
    storage_path="/exports/ml",
    agents=("sma-1", "sma-2"),
    task_mode="",
    link_kind="expressroute",
    port_gbps=10,
    ports=1,
    link_location="Frankfurt",
    bgp_asn=65010,
    vlan=410,
    committed_gbps=8.0,
)
TARGETS = (
    ReplicaTarget("checkpoints", ACCOUNT_ID, "checkpoints", mirror_deletes=True, every_s=7200),
    ReplicaTarget("weights", ACCOUNT_ID, "weights", mirror_deletes=False, every_s=10800),
    ReplicaTarget("datasets", ACCOUNT_ID, "datasets", mirror_deletes=False, every_s=79200),
)
MOVER = "azure-native:storagemover:StorageMover"
ENDPOINT = "azure-native:storagemover:Endpoint"
JOB = "azure-native:storagemover:JobDefinition"
GRANT = "azure-native:authorization:RoleAssignment"
CIRCUIT = "azure-native:network:ExpressRouteCircuit"
GATEWAY = "azure-native:network:VirtualNetworkGateway"
PEERING = "azure-native:network:ExpressRouteCircuitPeering"
CONNECTION = "azure-native:network:VirtualNetworkGatewayConnection"
SUBNET = "azure-native:network:Subnet"
WORKFLOW = "azure-native:logic:Workflow"
ROLE = "azure-native:authorization:RoleDefinition"


@pytest.fixture
def monitor() -> RecordingMonitor:
    mocks = GpudrMocks(default_region="germanywestcentral")
    recording = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project="gpudr", stack="test", preview=True, monitor=recording)
    return recording


def registered(monitor: RecordingMonitor, typ: str) -> list[Registration]:
    return [r for r in monitor.registrations if r.type == typ]


def pull(source: OnPremSource = SOURCE, agents: dict[str, dict[str, str]] | None = None) -> Any:
    return StorageMoverPull(
        "t-mover",
        StorageMoverPullArgs(
            resource_group_name="rg-dr",
            location="germanywestcentral",
            subscription_id=SUBSCRIPTION,
            mover_name="gpudr-fra-training-weu",
            source=source,
            targets=TARGETS,
            agents=AGENTS if agents is None else agents,
            tags={"gpudr:system": "fra-training"},
        ),
    )


@pulumi.runtime.test
def test_each_class_is_a_job_from_its_directory_of_the_export_into_its_container(
    monitor: RecordingMonitor,
) -> pulumi.Output[None]:
    component = pull()

    def check(_: object) -> None:
        (mover,) = registered(monitor, MOVER)
        assert mover.inputs["storageMoverName"] == "gpudr-fra-training-weu", mover.urn
        endpoints = {r.inputs["endpointName"]: r for r in registered(monitor, ENDPOINT)}
        nfs = endpoints["fra1-nfs"]
        props = nfs.inputs["properties"]
        assert (props["endpointType"], props["host"], props["export"]) == (
            "NfsMount",
            "10.40.8.10",
            "/exports/ml",
        ), nfs.urn
        jobs = {r.inputs["jobDefinitionName"]: r for r in registered(monitor, JOB)}
        assert set(jobs) == {"checkpoints", "weights", "datasets"}
        for cls, job in jobs.items():
            target = endpoints[f"{cls}-replica"].inputs["properties"]
            assert target["endpointType"] == "AzureStorageBlobContainer", job.urn
            assert target["blobContainerName"] == cls, job.urn
            assert target["storageAccountResourceId"] == ACCOUNT_ID, job.urn
            assert job.inputs["sourceSubpath"] == cls, job.urn
            assert job.inputs["sourceName"] == "fra1-nfs", job.urn
            assert job.inputs["targetName"] == f"{cls}-replica", job.urn
        assert jobs["checkpoints"].inputs["copyMode"] == "Mirror", jobs["checkpoints"].urn
        assert jobs["datasets"].inputs["copyMode"] == "Additive", jobs["datasets"].urn
        # one agent runs a job: the classes are spread over the two in the plan's order
        agents = [jobs[c].inputs["agentName"] for c in ("checkpoints", "weights", "datasets")]
        assert agents == ["fra1-sma-1", "fra1-sma-2", "fra1-sma-1"]

    return component.job_names.apply(check)


@pulumi.runtime.test
def test_an_agent_may_write_only_the_container_its_job_writes(
    monitor: RecordingMonitor,
) -> pulumi.Output[None]:
    component = pull()

    def check(_: object) -> None:
        writes = [r for r in registered(monitor, GRANT) if r.urn.endswith("-agent-write")]
        made = {r.urn.rsplit("-", 3)[-3]: r for r in writes}
        assert set(made) == {t.data_class for t in TARGETS}
        for target in TARGETS:
            grant = made[target.data_class]
            assert grant.inputs["scope"] == (
                f"{ACCOUNT_ID}/blobServices/default/containers/{target.container}"
            ), grant.urn
            assert grant.inputs["roleDefinitionId"].endswith(
                f"/roleDefinitions/{grants.STORAGE_BLOB_DATA_CONTRIBUTOR}"
            ), grant.urn
            assert grant.inputs["principalId"] in PRINCIPALS, grant.urn

    return component.job_names.apply(check)


@pulumi.runtime.test
def test_without_every_registered_agent_no_job_and_no_grant_is_declared(
    monitor: RecordingMonitor,
) -> pulumi.Output[None]:
    component = pull(agents={"sma-1": AGENTS["sma-1"]})

    def check(names: list[str]) -> None:
        assert names == []
        assert registered(monitor, JOB) == []
        assert registered(monitor, GRANT) == []
        assert registered(monitor, WORKFLOW) == [], "a schedule with no job to start"
        assert registered(monitor, ROLE) == []
        # what does not need an agent is declared, so registration has a mover to join
        assert len(registered(monitor, MOVER)) == 1
        assert len(registered(monitor, ENDPOINT)) == 1 + len(TARGETS)

    return component.job_names.apply(check)


@pulumi.runtime.test
def test_each_job_is_started_at_the_plan_interval_by_a_logic_app_that_may_only_start_it(
    monitor: RecordingMonitor,
) -> pulumi.Output[None]:
    component = pull()

    def check(_: object) -> None:
        jobs = {r.inputs["jobDefinitionName"]: r for r in registered(monitor, JOB)}
        flows = {r.inputs["workflowName"]: r for r in registered(monitor, WORKFLOW)}
        assert set(flows) == {f"gpudr-fra-training-weu-{t.data_class}-every" for t in TARGETS}
        (role,) = registered(monitor, ROLE)
        group = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg-dr"
        assert role.inputs["assignableScopes"] == [group], role.urn
        assert role.inputs["permissions"] == [{"actions": list(START_JOB_ACTIONS)}], (
            role.urn
        )  # read and start job definitions: no data, no other action
        starts = {
            r.inputs["scope"]: r
            for r in registered(monitor, GRANT)
            if r.urn.endswith("-schedule-start")
        }
        for t in TARGETS:
            flow = flows[f"gpudr-fra-training-weu-{t.data_class}-every"]
            assert flow.inputs["state"] == "Enabled", flow.urn
            assert flow.inputs["identity"]["type"] == "SystemAssigned", flow.urn
            definition = flow.inputs["definition"]
            assert recurrence_s(definition) == t.every_s, flow.urn
            assert started_jobs(definition) == [
                f"https://management.azure.com/subscriptions/{SUBSCRIPTION}/resourceGroups/rg-dr"
                "/providers/Microsoft.StorageMover/storageMovers/gpudr-fra-training-weu/projects"
                f"/fra1/jobDefinitions/{t.data_class}/startJob?api-version=2024-07-01"
            ], flow.urn
            # the identity may start this job only: the role is assigned on the job itself
            start = starts[jobs[t.data_class].id]
            assert start.inputs["roleDefinitionId"] == role.id, start.urn
            assert start.inputs["principalType"] == "ServicePrincipal", start.urn
            assert start.inputs["principalId"] == flow.outputs["identity"]["principalId"], start.urn

    return component.schedules.apply(check)


@pytest.mark.parametrize("every_s", [0, 1800, 5400])
def test_a_schedule_that_is_not_whole_hours_is_refused(every_s: int) -> None:
    with pytest.raises(ValueError, match="whole number of hours"):
        schedule_definition("https://management.azure.com/x/startJob?api-version=1", every_s)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"name": "bad name!", "principal_id": PRINCIPALS[0]}, "sma-1.name"),
        ({"name": "fra1-sma-1", "principal_id": "not-a-guid"}, "sma-1.principal_id"),
        ({"principal_id": PRINCIPALS[0]}, "sma-1.name"),
    ],
)
def test_a_malformed_registered_agent_is_refused_with_its_key(
    entry: dict[str, str], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        registered_agents(SOURCE, {**AGENTS, "sma-1": entry})


@pytest.mark.parametrize("kind", ["s3-compatible", "hdfs"])
def test_a_store_storage_mover_does_not_read_is_refused(kind: str) -> None:
    with pytest.raises(ValueError, match="does not read"):
        pull(replace(SOURCE, storage_kind=kind))


WAN = LinkConfig(
    kind="wan",
    peer_site="fra1",
    capacity_gbps=2.0,
    required_gbps=0.77,
    headroom=1.25,
    location="Frankfurt",
    gateway_sku="ErGw2AZ",
)


def link_end(provisioned: bool, link: LinkConfig = WAN) -> ExpressRouteEnd:
    return ExpressRouteEnd(
        "t-er",
        ExpressRouteEndArgs(
            resource_group_name="rg-dr",
            location="germanywestcentral",
            network_name="gpudr-fra-training-weu",
            network=pulumi.CustomResource("test:index:Network", "vnet", {}),
            cidr="10.42.0.0/16",
            source=SOURCE,
            site="weu",
            provider="Equinix",
            link=link,
            peer_prefixes=("192.168.40.0/30", "192.168.40.4/30"),
            circuit_provisioned=provisioned,
            tags={"gpudr:system": "fra-training"},
        ),
    )


@pulumi.runtime.test
def test_the_circuit_and_gateway_are_sized_from_the_plan_before_provisioning(
    monitor: RecordingMonitor,
) -> pulumi.Output[None]:
    end = link_end(provisioned=False)

    def check(_: object) -> None:
        (circuit,) = registered(monitor, CIRCUIT)
        provider = circuit.inputs["serviceProviderProperties"]
        assert provider == {
            "serviceProviderName": "Equinix",
            "peeringLocation": "Frankfurt",
            "bandwidthInMbps": 10000,
        }, circuit.urn
        assert circuit.inputs["sku"]["family"] == "MeteredData", circuit.urn
        assert circuit.inputs["circuitName"] == "weu-er-circuit", circuit.urn
        (gateway,) = registered(monitor, GATEWAY)
        assert gateway.inputs["gatewayType"] == "ExpressRoute", gateway.urn
        assert gateway.inputs["sku"] == {"name": "ErGw2AZ", "tier": "ErGw2AZ"}, gateway.urn
        (subnet,) = registered(monitor, SUBNET)
        assert subnet.inputs["subnetName"] == "GatewaySubnet", subnet.urn
        assert subnet.inputs["addressPrefix"] == "10.42.255.192/26", subnet.urn
        # Azure refuses a peering or a connection on a circuit the provider has not provisioned
        assert registered(monitor, PEERING) == [], "peering before provisioning"
        assert registered(monitor, CONNECTION) == [], "connection before provisioning"

    return end.service_key.apply(check)


def test_a_gateway_sku_that_is_not_an_expressroute_one_is_refused(
    monitor: RecordingMonitor,
) -> None:
    with pytest.raises(ValueError, match="VpnGw2AZ"):
        link_end(False, replace(WAN, gateway_sku="VpnGw2AZ"))


@pulumi.runtime.test
def test_once_provisioned_the_private_peering_and_connection_follow_the_plan(
    monitor: RecordingMonitor,
) -> pulumi.Output[None]:
    end = link_end(provisioned=True)

    def check(_: object) -> None:
        (peering,) = registered(monitor, PEERING)
        i = peering.inputs
        assert (i["peeringName"], i["peeringType"]) == (
            "AzurePrivatePeering",
            "AzurePrivatePeering",
        ), peering.urn
        assert (i["peerASN"], i["vlanId"]) == (65010, 410), peering.urn
        assert (i["primaryPeerAddressPrefix"], i["secondaryPeerAddressPrefix"]) == (
            "192.168.40.0/30",
            "192.168.40.4/30",
        ), peering.urn
        (connection,) = registered(monitor, CONNECTION)
        assert connection.inputs["connectionType"] == "ExpressRoute", connection.urn
        (circuit,) = registered(monitor, CIRCUIT)
        (gateway,) = registered(monitor, GATEWAY)
        assert connection.inputs["peer"]["id"] == circuit.id, connection.urn
        assert connection.inputs["virtualNetworkGateway1"]["id"] == gateway.id, connection.urn

    return end.service_key.apply(check)


def test_the_service_key_leaves_the_stack_only_as_a_secret() -> None:
    """Whoever holds the service key can provision the circuit: the DR stack of
    examples/onprem-to-azure.yaml exports it (in `onprem`) only as a secret."""
    example = Path(__file__).resolve().parents[3] / "examples" / "onprem-to-azure.yaml"
    plan = parse_plan(yaml.safe_load(example.read_text()))
    site = plan.sites["eus"]
    config = stack_config_values(design(plan), site)
    run = run_stack(stack_name(plan, site), config, GpudrMocks(default_region=site.region))
    # (a preview: the key itself is unknown until the circuit exists)
    assert rpc.is_rpc_secret(run.outputs["onprem"]), run.outputs["onprem"]
