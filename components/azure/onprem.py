"""The cloud end of an on-premises site's replication into an Azure DR site, owned by the DR
stack: Azure Storage Mover (the mover, a project, the NFS source endpoint, one Blob container
target endpoint and one job definition per data class, and the agent's write grant on that
container only), and the link's Azure side (an ExpressRoute circuit with its private peering, an
ExpressRoute virtual network gateway sized to the committed WAN, and the connection joining them).

Nothing here runs on premises or reads anything there. The Storage Mover agent is a VM the
operator deploys and registers with Azure Arc on premises; registration creates the agent
resource, whose name and Arc identity reach this stack as config (`gpudr:storage_mover_agents`).
Until every agent the plan names has them, no job definition and no grant is declared and the
stack warns with the commands: it fails closed, as the AWS slice does without agent ARNs.

A job definition runs when something starts it: each one gets a Consumption Logic App that
calls its `startJob` action at the plan's interval with its own managed identity, which may
read and start this mover's job definitions and nothing else (a custom role assigned on that
one job definition). Why not Storage Mover's own schedule: gpudr/contract/azure_onprem.py.

Sources: shared/reference/dr-facts-2.md 3 (Storage Mover: Arc-registered agent, NFS -> Blob
container) and 4 (ExpressRoute gateway SKUs and throughput, GatewaySubnet /27 or larger); the
azure-native 3.29.0 SDK for the resources' arguments.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
from pulumi_azure_native import authorization, logic, network, storagemover

from components.azure.arm import assignment_name, role_definition_id
from components.azure.network import gateway_subnet_cidr
from gpudr.contract import grants
from gpudr.contract.azure_onprem import (
    START_JOB_ACTIONS,
    schedule_definition,
    schedule_name,
    start_job_path,
)
from gpudr.contract.naming import expressroute_circuit_name
from gpudr.contract.onprem import NFS_STORAGE_KINDS
from gpudr.contract.site import LinkConfig, OnPremSource
from gpudr.contract.stack import STORAGE_MOVER_AGENTS_KEY

AGENTS_KEY = STORAGE_MOVER_AGENTS_KEY
# The zone-redundant ExpressRoute gateway SKUs the planner sizes from (defaults.yaml
# links.onprem.expressroute_gateways, with the throughput each carries).
GATEWAY_SKUS = ("ErGw1AZ", "ErGw2AZ", "ErGw3AZ")
ZONES = ["1", "2", "3"]
# The name Azure gives a circuit's private peering; it takes no other.
PRIVATE_PEERING = "AzurePrivatePeering"
AGENT_NAME = re.compile(r"[0-9a-zA-Z][-_0-9a-zA-Z]{0,63}")
GUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass(frozen=True)
class RegisteredAgent:
    """A Storage Mover agent as Azure knows it after Arc registration on premises."""

    name: str  # the agent resource's name in the storage mover
    principal_id: str  # the Arc machine's system-assigned identity (object id)


def registered_agents(
    source: OnPremSource, configured: Mapping[str, Mapping[str, str]]
) -> list[RegisteredAgent] | None:
    """The plan's agents as registered, in the plan's order; None while any is missing. A
    malformed name or identity is an error naming the config key, never passed to Azure."""
    out = []
    for agent in source.agents:
        entry = configured.get(agent)
        if entry is None:
            return None
        name, principal = entry.get("name", ""), entry.get("principal_id", "")
        if not AGENT_NAME.fullmatch(name):
            raise ValueError(
                f"{AGENTS_KEY}.{agent}.name: {name[:70]!r} is not a Storage Mover agent name "
                "(letters, digits, - and _, at most 64)"
            )
        if not GUID.fullmatch(principal):
            raise ValueError(
                f"{AGENTS_KEY}.{agent}.principal_id: {principal[:40]!r} is not an object id "
                "(the Arc machine's identity, a lowercase GUID)"
            )
        out.append(RegisteredAgent(name, principal))
    return out


def missing_agents_message(
    source: OnPremSource, configured: Mapping[str, Mapping[str, str]], stack: str
) -> str:
    """What to do before the job definitions can be declared: register each agent, then set
    its name and Arc identity."""
    missing = [a for a in source.agents if a not in configured]
    lines = [
        f"Storage Mover jobs from {source.site} are not declared: {AGENTS_KEY} has no "
        f"registered agent for {', '.join(missing)}. Register each agent VM with this stack's "
        "storage mover (runbook, on-premises checklist), then:"
    ]
    for agent in missing:
        lines += [
            f"  pulumi config set --path '{AGENTS_KEY}.{agent}.name' <agent name> -s {stack}",
            f"  pulumi config set --path '{AGENTS_KEY}.{agent}.principal_id' "
            f"<Arc machine identity> -s {stack}",
        ]
    lines.append(f"  pulumi up -s {stack}")
    return "\n".join(lines)


def nfs_name(source: OnPremSource) -> str:
    return f"{source.site}-nfs"


@dataclass(frozen=True)
class ReplicaTarget:
    """One data class's replica: the container its job writes and where it reads on premises."""

    data_class: str
    storage_account_id: pulumi.Input[str]
    container: str
    mirror_deletes: bool  # checkpoints mirror the source; weights and datasets only add
    every_s: int  # how often its job is started: the plan's interval (whole hours)


def target_name(t: ReplicaTarget) -> str:
    return f"{t.data_class}-replica"


@dataclass(frozen=True)
class StorageMoverPullArgs:
    resource_group_name: pulumi.Input[str]  # the group's name output: what is in it waits
    location: str
    subscription_id: pulumi.Input[str]
    mover_name: str
    source: OnPremSource
    targets: Sequence[ReplicaTarget]
    agents: Mapping[str, Mapping[str, str]]  # gpudr:storage_mover_agents, as configured
    tags: dict[str, str]
    # In failover mode: leave the schedules as the operator set them (the runbook pauses the
    # pulls from on premises, whose source is gone and whose return must not overwrite or,
    # for checkpoints, delete what the DR site now writes). A `pulumi up` during the failover
    # then never resumes them; the failback's up in standby, with --refresh, does.
    hold_schedules: bool = False


class StorageMoverPull(pulumi.ComponentResource):
    """Storage Mover copying each class's directory of the on-premises export into its
    replica container. Each job definition names one agent (the service runs a job on one):
    the classes are spread over the registered agents in the plan's order."""

    job_names: pulumi.Output[list[str]]
    schedules: pulumi.Output[dict[str, str]]  # data class -> the Logic App starting its job

    def __init__(
        self, name: str, args: StorageMoverPullArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:transfer:StorageMoverPull", name, None, opts)
        src = args.source
        # Storage Mover reads file systems over NFS (a Lustre file system through its NFS
        # export); object stores and HDFS are not its sources (dr-facts-2.md 3).
        if src.storage_kind not in NFS_STORAGE_KINDS:
            raise ValueError(
                f"{name}: Storage Mover does not read a {src.storage_kind} store; serve the "
                "data over NFS (docs/onprem.md, Azure)"
            )
        self._args, self._name = args, name
        self._child = pulumi.ResourceOptions(parent=self)
        mover = storagemover.StorageMover(
            f"{name}-mover",
            storage_mover_name=args.mover_name,
            resource_group_name=args.resource_group_name,
            location=args.location,
            description=f"gpudr: {src.site} ({src.location}) to this DR site",
            tags=args.tags,
            opts=self._child,
        )
        self._under_mover = pulumi.ResourceOptions(parent=self, depends_on=[mover])
        project = storagemover.Project(
            f"{name}-project",
            project_name=src.site,
            storage_mover_name=args.mover_name,
            resource_group_name=args.resource_group_name,
            opts=self._under_mover,
        )
        nfs = storagemover.Endpoint(
            f"{name}-nfs",
            opts=self._under_mover,
            endpoint_name=nfs_name(src),
            storage_mover_name=args.mover_name,
            resource_group_name=args.resource_group_name,
            properties=storagemover.NfsMountEndpointPropertiesArgs(
                endpoint_type=storagemover.EndpointType.NFS_MOUNT,
                host=src.storage_host,
                export=src.storage_path,
                # The agent mounts the export with the version the server offers.
                nfs_version=storagemover.NfsVersion.NF_SAUTO,
            ),
        )
        registered = registered_agents(src, args.agents)
        if registered is None:
            stack = pulumi.get_stack()
            pulumi.log.warn(missing_agents_message(src, args.agents, stack), resource=self)
        self._starter = self._starter_role() if registered else None
        self._schedules: dict[str, pulumi.Output[str]] = {}
        jobs = [
            self._job(t, project, nfs, registered[i % len(registered)] if registered else None)
            for i, t in enumerate(args.targets)
        ]
        names = [j.name for j in jobs if j is not None]
        # Resolved once the mover and its endpoints are, jobs or not (before registration).
        self.job_names = pulumi.Output.all(mover.id, nfs.id, *names).apply(lambda x: list(x[2:]))
        self.schedules = pulumi.Output.all(**self._schedules).apply(dict)
        self.register_outputs({"job_names": self.job_names, "schedules": self.schedules})

    def _job(
        self,
        t: ReplicaTarget,
        project: storagemover.Project,
        nfs: storagemover.Endpoint,
        agent: RegisteredAgent | None,
    ) -> storagemover.JobDefinition | None:
        args, name = self._args, self._name
        target = storagemover.Endpoint(
            f"{name}-{t.data_class}-target",
            endpoint_name=target_name(t),
            storage_mover_name=args.mover_name,
            resource_group_name=args.resource_group_name,
            properties=storagemover.AzureStorageBlobContainerEndpointPropertiesArgs(
                endpoint_type=storagemover.EndpointType.AZURE_STORAGE_BLOB_CONTAINER,
                storage_account_resource_id=t.storage_account_id,
                blob_container_name=t.container,
            ),
            opts=self._under_mover,
        )
        if agent is None:
            return None  # fail closed: no job without a registered agent
        # Least privilege: the agent writes this container only, nothing else in the account.
        scope = pulumi.Output.concat(
            t.storage_account_id, "/blobServices/default/containers/", t.container
        )
        grant = authorization.RoleAssignment(
            f"{name}-{t.data_class}-agent-write",
            role_assignment_name=assignment_name(args.mover_name, t.data_class, agent.principal_id),
            scope=scope,
            role_definition_id=role_definition_id(
                args.subscription_id, grants.STORAGE_BLOB_DATA_CONTRIBUTOR
            ),
            principal_id=agent.principal_id,
            principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
            opts=self._child,
        )
        job = storagemover.JobDefinition(
            f"{name}-{t.data_class}-job",
            job_definition_name=t.data_class,
            # By name, as Azure addresses them (the resources' `name` outputs are the same
            # names); the dependencies order the creation.
            project_name=args.source.site,
            storage_mover_name=args.mover_name,
            resource_group_name=args.resource_group_name,
            agent_name=agent.name,
            source_name=nfs_name(args.source),
            source_subpath=t.data_class,
            target_name=target_name(t),
            copy_mode=storagemover.CopyMode.MIRROR
            if t.mirror_deletes
            else storagemover.CopyMode.ADDITIVE,
            description=f"{self._args.source.site} {t.data_class} -> replica container",
            opts=pulumi.ResourceOptions(parent=self, depends_on=[grant, project, nfs, target]),
        )
        self._schedule(t, job)
        return job

    def _starter_role(self) -> authorization.RoleDefinition:
        """What the schedules may do: read and start job definitions, nothing else (no
        built-in role is that narrow). Defined on the resource group, assigned per job."""
        args = self._args
        # From the group's output, not a string: the definition waits for the group.
        group_id = pulumi.Output.concat(
            "/subscriptions/", args.subscription_id, "/resourceGroups/", args.resource_group_name
        )
        return authorization.RoleDefinition(
            f"{self._name}-job-starter",
            role_definition_id=assignment_name(args.mover_name, "job-starter"),
            role_name=f"gpudr job starter ({args.mover_name})",
            description="Starts the Storage Mover job definitions of gpudr's on-premises pulls",
            scope=group_id,
            assignable_scopes=[group_id],
            permissions=[authorization.PermissionArgs(actions=list(START_JOB_ACTIONS))],
            opts=self._child,
        )

    def _schedule(self, t: ReplicaTarget, job: storagemover.JobDefinition) -> None:
        """A Consumption Logic App starting the job every `t.every_s`: the interval the plan
        sized the RPO with. A start while the last run still runs is refused by the service and
        retried at the next interval; the plan sizes a run to finish within one."""
        args, name = self._args, self._name
        uri = pulumi.Output.all(args.subscription_id, args.resource_group_name).apply(
            lambda x: (
                f"https://management.azure.com/subscriptions/{x[0]}"
                + start_job_path(str(x[1]), args.mover_name, args.source.site, t.data_class)
            )
        )
        flow = logic.Workflow(
            f"{name}-{t.data_class}-schedule",
            workflow_name=schedule_name(args.mover_name, t.data_class),
            resource_group_name=args.resource_group_name,
            location=args.location,
            identity=logic.ManagedServiceIdentityArgs(
                type=logic.ManagedServiceIdentityType.SYSTEM_ASSIGNED
            ),
            state=logic.WorkflowState.ENABLED,
            definition=uri.apply(lambda u: schedule_definition(u, t.every_s)),
            tags=args.tags,
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[job],
                ignore_changes=["state"] if args.hold_schedules else [],
            ),
        )
        principal = flow.identity.apply(lambda i: (i.principal_id if i else None) or "")
        assert self._starter is not None  # declared whenever a job is
        start = authorization.RoleAssignment(
            f"{name}-{t.data_class}-schedule-start",
            # Named by the identity too: a replaced workflow's new identity gets a new
            # assignment (Azure refuses to change an assignment's principal).
            role_assignment_name=principal.apply(
                lambda p: assignment_name(args.mover_name, t.data_class, "schedule", p)
            ),
            scope=job.id,
            role_definition_id=self._starter.id,
            principal_id=principal,
            principal_type=authorization.PrincipalType.SERVICE_PRINCIPAL,
            opts=self._child,
        )
        # Resolves once the workflow and its grant are created (the component's outputs).
        self._schedules[t.data_class] = pulumi.Output.all(flow.name, start.id).apply(lambda x: x[0])


@dataclass(frozen=True)
class ExpressRouteEndArgs:
    resource_group_name: pulumi.Input[str]
    location: str
    network_name: pulumi.Input[str]
    network: pulumi.Resource  # the DR VNet, which the GatewaySubnet waits for
    cidr: str  # the DR VNet's range; the GatewaySubnet is its last /26
    source: OnPremSource
    site: str  # the DR site, which names the circuit
    provider: str  # the connectivity provider at link_location (e.g. Equinix)
    link: LinkConfig  # kind wan: the path's capacity and the gateway SKU sized to carry it
    # Your two /30s for the private peering's primary and secondary BGP sessions.
    peer_prefixes: tuple[str, str]
    # The provider has provisioned the circuit (its service key): only then do the peering and
    # the connection deploy; before, Azure refuses them.
    circuit_provisioned: bool
    tags: dict[str, str]


class ExpressRouteEnd(pulumi.ComponentResource):
    """The DR site's end of an ExpressRoute link: the circuit ordered at the plan's peering
    location and bandwidth (metered data: inbound to Azure is not billed), the gateway in the
    site's GatewaySubnet, and once the provider has provisioned the circuit, the private peering
    on your VLAN with your ASN and the connection to the gateway."""

    # What the provider needs to provision the circuit: a secret (whoever holds it can connect
    # to the circuit), shown by `pulumi stack output --show-secrets` only.
    service_key: pulumi.Output[str]

    def __init__(
        self, name: str, args: ExpressRouteEndArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpudr:links:ExpressRouteEnd", name, None, opts)
        src = args.source
        if src.link_kind != "expressroute" or not src.link_location or src.vlan is None:
            raise ValueError(
                f"{name}: an ExpressRoute link needs link.kind expressroute, a peering location "
                "and a VLAN; regenerate the stack"
            )
        sku = args.link.gateway_sku
        if sku not in GATEWAY_SKUS:
            raise ValueError(
                f"{name}: gateway SKU {sku!r} is not one of {', '.join(GATEWAY_SKUS)}; "
                "regenerate the stack"
            )
        child = pulumi.ResourceOptions(parent=self)
        circuit = network.ExpressRouteCircuit(
            f"{name}-circuit",
            circuit_name=expressroute_circuit_name(args.site),
            resource_group_name=args.resource_group_name,
            location=args.location,
            sku=network.ExpressRouteCircuitSkuArgs(
                name="Standard_MeteredData",
                tier=network.ExpressRouteCircuitSkuTier.STANDARD,
                family=network.ExpressRouteCircuitSkuFamily.METERED_DATA,
            ),
            service_provider_properties=network.ExpressRouteCircuitServiceProviderPropertiesArgs(
                service_provider_name=args.provider,
                peering_location=src.link_location,
                bandwidth_in_mbps=round(src.port_gbps * 1000),
            ),
            tags=args.tags,
            opts=child,
        )
        subnet = network.Subnet(
            f"{name}-subnet",
            subnet_name="GatewaySubnet",  # the only name Azure accepts for a gateway's subnet
            virtual_network_name=args.network_name,
            resource_group_name=args.resource_group_name,
            address_prefix=gateway_subnet_cidr(args.cidr),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[args.network]),
        )
        address = network.PublicIPAddress(
            f"{name}-ip",
            resource_group_name=args.resource_group_name,
            location=args.location,
            sku=network.PublicIPAddressSkuArgs(
                name=network.PublicIPAddressSkuName.STANDARD,
                tier=network.PublicIPAddressSkuTier.REGIONAL,
            ),
            public_ip_allocation_method=network.IPAllocationMethod.STATIC,
            zones=ZONES,
            tags=args.tags,
            opts=child,
        )
        gateway = network.VirtualNetworkGateway(
            f"{name}-gateway",
            resource_group_name=args.resource_group_name,
            location=args.location,
            gateway_type=network.VirtualNetworkGatewayType.EXPRESS_ROUTE,
            sku=network.VirtualNetworkGatewaySkuArgs(name=sku, tier=sku),
            ip_configurations=[
                network.VirtualNetworkGatewayIPConfigurationArgs(
                    name="default",
                    private_ip_allocation_method=network.IPAllocationMethod.DYNAMIC,
                    subnet=network.SubResourceArgs(id=subnet.id),
                    public_ip_address=network.SubResourceArgs(id=address.id),
                )
            ],
            tags=args.tags,
            opts=child,
        )
        self.service_key = pulumi.Output.secret(circuit.service_key.apply(lambda k: k or ""))
        if args.circuit_provisioned:
            self._peer(name, args, circuit, gateway, child)
        self.register_outputs({"service_key": self.service_key})

    @staticmethod
    def _peer(
        name: str,
        args: ExpressRouteEndArgs,
        circuit: network.ExpressRouteCircuit,
        gateway: network.VirtualNetworkGateway,
        child: pulumi.ResourceOptions,
    ) -> None:
        src = args.source
        peering = network.ExpressRouteCircuitPeering(
            f"{name}-private-peering",
            circuit_name=circuit.name,
            peering_name=PRIVATE_PEERING,
            peering_type=network.ExpressRoutePeeringType.AZURE_PRIVATE_PEERING,
            resource_group_name=args.resource_group_name,
            peer_asn=src.bgp_asn,
            vlan_id=src.vlan,
            primary_peer_address_prefix=args.peer_prefixes[0],
            secondary_peer_address_prefix=args.peer_prefixes[1],
            opts=child,
        )
        network.VirtualNetworkGatewayConnection(
            f"{name}-connection",
            resource_group_name=args.resource_group_name,
            location=args.location,
            connection_type=network.VirtualNetworkGatewayConnectionType.EXPRESS_ROUTE,
            virtual_network_gateway1=network.VirtualNetworkGatewayArgs(id=gateway.id),
            peer=network.SubResourceArgs(id=circuit.id),
            tags=args.tags,
            opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[peering])),
        )
