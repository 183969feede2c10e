"""The runbook of an on-premises site protected in a cloud: the on-premises checklist (the agent
VMs, their activation, the router's BGP session on the virtual interface, the firewall openings
and the exports, with the exact values of the plan and of the DR stack), the failover to the
cloud and the failback as far as gpudr prepares it. Rendered with jinja2
(`templates/runbook-onprem.md.j2`, StrictUndefined): every value comes from the design or the
DR stack's config; what only exists once deployed is read from the stack's outputs by command.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from gpudr.build.stackconfig import build_site_configs, onprem_class_path, stack_name
from gpudr.contract.azure_onprem import BLOB_PUBLIC_ZONE, schedule_name, upload_subnets
from gpudr.contract.naming import (
    DX_GATEWAY_ASN,
    datasync_schedule,
    datasync_task_name,
    datasync_task_prefix,
    expressroute_circuit_name,
    storage_mover_name,
    sts_agent_account_id,
    sts_agent_pool_name,
    sts_pool_limit_mbps,
)
from gpudr.contract.onprem import (
    DATASYNC_ACTIVATION_PORT,
    DATASYNC_ENDPOINT_PORTS,
    NFS_PORT,
    PORTMAPPER_PORT,
    PRIVATE_GOOGLE_APIS,
)
from gpudr.contract.stack import (
    DATASYNC_AGENT_ARNS_KEY,
    EXPRESSROUTE_PROVISIONED_KEY,
    MODE_KEY,
    STORAGE_MOVER_AGENTS_KEY,
)
from gpudr.core import reference
from gpudr.core.design import Design, vpn_connections
from gpudr.core.enums import MICROSOFT_ASN, Cloud
from gpudr.core.spec import OnPremSite, Site, parse_endpoint
from gpudr.core.stepgraph import step_graph
from gpudr.core.units import fmt_duration
from gpudr.docs import cloudcli as cli
from gpudr.docs.cloudcli import shell
from gpudr.docs.runbook import RUNBOOKS_DIR
from gpudr.docs.templating import environment

TEMPLATE = "runbook-onprem.md.j2"
# What a Storage Mover agent opens: outbound HTTPS to Azure (Arc, the service, the Blob
# endpoints of the replica accounts).
AZURE_AGENT_PORTS = "TCP 443 outbound"
DNS_PORTS = "UDP and TCP 53"
# The HTTPS endpoints a Storage Mover agent must reach to register and run (its control
# traffic; the uploads take the private endpoints), `{region}` being the storage mover's (the
# DR site's) region. Source: Microsoft's agent deployment page, Prerequisites
# (learn.microsoft.com/azure/storage-mover/agent-deploy), as the on-premises review quoted it;
# not re-read in this pass.
STORAGE_MOVER_AGENT_FQDNS = (
    "mcr.microsoft.com",
    "{region}.agentgateway.prd.azsm.azure.com",
    "evhns-sm-ur-prd-{region}.servicebus.windows.net",
    "*.his.arc.azure.com",
    "*.guestconfiguration.azure.com",
    "login.microsoftonline.com",
    "pas.windows.net",
    "management.azure.com",
)


def storage_mover_agent_fqdns(region: str) -> tuple[str, ...]:
    """The endpoints a Storage Mover agent reaches, for a storage mover in `region`."""
    return tuple(f.format(region=region) for f in STORAGE_MOVER_AGENT_FQDNS)


def tcp_ports(ranges: tuple[tuple[int, int], ...]) -> str:
    """Port ranges as the checklist writes them: `TCP 443 and TCP 1024-1064`."""
    return " and ".join(f"TCP {lo}" if lo == hi else f"TCP {lo}-{hi}" for lo, hi in ranges)


# What the agents open to the DataSync endpoint, what opens to the agents during activation,
# and what they open to an NFS server (gpudr.contract.onprem).
ENDPOINT_PORTS = tcp_ports(DATASYNC_ENDPOINT_PORTS)
ACTIVATION_PORT = f"TCP {DATASYNC_ACTIVATION_PORT}"
NFS_PORTS = (
    f"TCP {NFS_PORT} (NFS v4.1); NFS v3 also needs TCP/UDP {PORTMAPPER_PORT} and the server's "
    "mountd port"
)


@dataclass(frozen=True)
class AgentRow:
    name: str
    address: str  # or what to do when the plan gives none
    config_command: str


@dataclass(frozen=True)
class Pull:
    data_class: str
    source: str  # the directory (or prefix) on premises
    task: str  # what runs the pull: the DataSync task, the Storage Transfer job, the job definition
    every: str
    rpo: str
    estimated_rpo: str
    meets: bool
    lookup: str  # finds the task or job ($TASK, $JOB) or shows the job definition
    runs: str  # its runs
    run_now: str
    pause: str  # stops its schedule (after `lookup`): the failover's pause step
    paused: str  # shows the schedule's state


@dataclass(frozen=True)
class Row:
    workload: str
    how: str
    rpo: str
    rto: str
    estimated_rpo: str
    estimated_rto: str
    verdict: str


# What each kind of failover step of the pair's step graph is, here (the cloud runbook words
# them in templates/runbook/; this runbook numbers them the same, so a drill's report points at
# the same step numbers).
STEP_WORDS = {
    "variables": "Set the shell variables the commands below use",
    "cloud-login": "Sign in to the DR cloud",
    "pulumi-login": "Log in to the state backend of the DR stack",
    "declare": "Switch the DR stack to failover and deploy it",
    "pause-pulls": "Pause the scheduled pulls (the source is gone)",
    "capacity": "Wait for the GPU pools to reach their full size",
}


@dataclass(frozen=True)
class GraphStep:
    """One step of the pair's step graph, as this runbook numbers and titles it."""

    number: int
    key: str
    phase: str
    title: str
    expected_s: float | None
    duration: str


@dataclass(frozen=True)
class GcpEnd:
    """A GCP DR site's end of the link and the agents' pool and account: the values the
    checklist needs that a DataSync runbook does not."""

    project: str
    pool: str
    account: str  # the agents' service account (email)
    limit_mbps: int  # the pool's bandwidth limit, MB/s
    cloud_router_asn: int
    private_apis: str


@dataclass(frozen=True)
class AzureChecklist:
    """What the Azure checklist names: the storage mover the agents register with, its
    resource group, the private peering's addresses and each agent's upload limit."""

    mover: str
    circuit: str
    resource_group: str
    provider: str
    bandwidth_mbps: int
    vlan: int
    peerings: tuple[tuple[str, str, str], ...]  # (/30, your address, Microsoft's)
    upload_limit_mbps: int  # per agent: the committed WAN shared by the agents
    jobs: tuple[tuple[str, str, str], ...]  # (data class, job definition, every)
    # The uploads' private path (gpudr/contract/azure_onprem.py): the private endpoints' subnet,
    # the resolver's inbound address on-premises DNS forwards the public Blob zone to, the zone,
    # and each class's replica account name and the Logic App that starts its job.
    endpoints_subnet: str
    dns_forwarder: str
    blob_zone: str
    accounts: tuple[tuple[str, str], ...]  # (data class, storage account)
    schedules: tuple[tuple[str, str, str], ...]  # (data class, Logic App, every)
    agent_fqdns: tuple[str, ...]  # what the agents reach over HTTPS to register and run


def _azure_checklist(
    design: Design, onprem: OnPremSite, cfg_group: str, dr: Site
) -> AzureChecklist:
    link = onprem.link
    peerings = []
    for subnet in link.peering_subnets:
        hosts = list(ipaddress.ip_network(subnet).hosts())
        # Your router takes the first usable address of each /30, Microsoft's the second.
        peerings.append((subnet, str(hosts[0]), str(hosts[1])))
    jobs = tuple(
        (f.data_class, f.data_class, _duration(f.schedule.interval_s if f.schedule else None))
        for f in design.flows
        if f.primary == onprem.name and f.dr == dr.name
    )
    mover = storage_mover_name(design.plan.name, dr.name)
    endpoints_subnet, _, forwarder = upload_subnets(dr.cidr)
    buckets = {b.data_class: b for b in build_site_configs(design)[dr.name].buckets}
    return AzureChecklist(
        mover=mover,
        circuit=expressroute_circuit_name(dr.name),
        resource_group=cfg_group,
        provider=link.provider or "",
        bandwidth_mbps=round(link.port_gbps * 1000),
        vlan=link.vlan or 0,
        peerings=tuple(peerings),
        upload_limit_mbps=int(onprem.wan_committed_gbps * 1000 // max(1, len(onprem.agents))),
        jobs=jobs,
        endpoints_subnet=endpoints_subnet,
        dns_forwarder=forwarder,
        blob_zone=BLOB_PUBLIC_ZONE,
        accounts=tuple((c, buckets[c].storage_account or "") for c, _, _ in jobs),
        schedules=tuple((c, schedule_name(mover, c), every) for c, _, every in jobs),
        agent_fqdns=storage_mover_agent_fqdns(dr.region),
    )


@dataclass(frozen=True)
class OnPremRunbook:
    plan: str
    path: str
    onprem: OnPremSite
    dr: Site
    dr_stack: str
    rows: tuple[Row, ...]
    pulls: tuple[Pull, ...]
    agents: tuple[AgentRow, ...]
    agent_vm: dict[str, object]
    storage_host: str
    storage_port: int | None
    export: str  # the export, or the bucket
    task_mode: str
    endpoint_ports: str
    activation_port: str
    store_ports: str  # what the agents open to the store
    dr_cidr: str
    dr_subnets: str  # where the endpoint's interfaces are: the DR VPC's range
    amazon_asn: int  # Direct Connect: the gateway's
    tgw_asn: int  # VPN: the transit gateway's, Amazon's end of each tunnel's BGP session
    vpn_connections: int
    wan: str  # the path's capacity and what bounds it
    notes: tuple[str, ...]
    steps: tuple[GraphStep, ...]
    gcp: GcpEnd | None = None  # a DR site in GCP: Interconnect, the Storage Transfer pool
    azure: AzureChecklist | None = None  # a DR site in Azure: Storage Mover, ExpressRoute

    def phase(self, name: str) -> tuple[GraphStep, ...]:
        return tuple(s for s in self.steps if s.phase == name)

    def step(self, key: str) -> GraphStep:
        return next(s for s in self.steps if s.key == key)


def _title(key: str, title: str | None) -> str:
    if title:
        return title
    kind, _, what = key.partition(":")
    if kind == "data":
        return f"Check the newest {what} at the DR site: its task's last run and its age"
    if kind == "fb":
        return f"Failback: {key.removeprefix('fb:').replace(':', ' ')}"
    return STEP_WORDS.get(kind, key)


def _duration(seconds: float | None) -> str:
    return "-" if seconds is None else fmt_duration(seconds)


def runbook_path(plan: str, onprem: str, dr: str) -> str:
    return f"{RUNBOOKS_DIR}/{plan}-{onprem}-to-{dr}.md"


def build_onprem_runbook(design: Design, onprem: OnPremSite, dr: Site) -> OnPremRunbook:
    pair = f"{onprem.name}->{dr.name}"
    rows = tuple(
        Row(
            workload=w.name,
            how=str(w.mechanism or w.pattern or "-"),
            rpo=_duration(w.rpo_s),
            rto=_duration(w.rto_s),
            estimated_rpo=_duration(w.estimated_rpo_s),
            estimated_rto=_duration(w.estimated_rto_s),
            verdict=w.verdict,
        )
        for w in design.workloads
        if w.pair == pair
    )
    if dr.cloud == Cloud.GCP:
        pulls = _gcp_pulls(design, onprem, dr)
    elif dr.cloud == Cloud.AZURE:
        pulls = _azure_pulls(design, onprem, dr)
    else:
        pulls = _aws_pulls(design, onprem, dr)
    return _runbook(design, onprem, dr, rows, pulls)


def _gcp_pulls(design: Design, onprem: OnPremSite, dr: Site) -> tuple[Pull, ...]:
    """Each class's Storage Transfer job (found by its sink, as the cloud runbook does)."""
    cfg = build_site_configs(design)[dr.name]
    project = dr.project or ""
    sinks = {b.data_class: b for b in cfg.buckets}
    return tuple(
        Pull(
            data_class=f.data_class,
            source=onprem_class_path(onprem, f.data_class),
            task=f"the job into gs://{sinks[f.data_class].name}",
            every=_duration(f.schedule.interval_s if f.schedule else None),
            rpo=_duration(f.rpo_s),
            estimated_rpo=_duration(f.estimate.estimated_s),
            meets=design.replication_meets(f),
            lookup="JOB=$(" + shell(cli.sts_jobs(project, sinks[f.data_class])) + ")",
            runs=shell(cli.sts_runs("$JOB", 5)),
            run_now=shell(cli.sts_run("$JOB", project)),
            pause=shell(cli.sts_job_status("$JOB", project, enable=False)),
            paused=shell(cli.sts_job_status("$JOB", project)),
        )
        for f in design.flows
        if f.primary == onprem.name and f.dr == dr.name
    )


def _azure_pulls(design: Design, onprem: OnPremSite, dr: Site) -> tuple[Pull, ...]:
    """Each class's Storage Mover job definition (named after the class, in the project named
    after the on-premises site)."""
    group = build_site_configs(design)[dr.name].resource_group or ""
    mover = storage_mover_name(design.plan.name, dr.name)

    def job(data_class: str, verb: str) -> str:
        return shell(cli.mover_job(group, mover, onprem.name, data_class, verb))

    return tuple(
        Pull(
            data_class=f.data_class,
            source=onprem_class_path(onprem, f.data_class),
            task=f"job definition {f.data_class} of project {onprem.name}",
            every=_duration(f.schedule.interval_s if f.schedule else None),
            rpo=_duration(f.rpo_s),
            estimated_rpo=_duration(f.estimate.estimated_s),
            meets=design.replication_meets(f),
            lookup=job(f.data_class, "show"),
            runs=job(f.data_class, "job-run"),
            run_now=job(f.data_class, "start-job"),
            pause=shell(
                cli.logic_workflow(group, schedule_name(mover, f.data_class), state="Disabled")
            ),
            paused=shell(cli.logic_workflow(group, schedule_name(mover, f.data_class))),
        )
        for f in design.flows
        if f.primary == onprem.name and f.dr == dr.name
    )


def _aws_pulls(design: Design, onprem: OnPremSite, dr: Site) -> tuple[Pull, ...]:
    plan = design.plan
    # The pause keeps the schedule expression the stack declared (the replica's inbound
    # transfer's interval, as components/aws/onprem.py writes it) and only turns it off.
    declared = {
        b.data_class: datasync_schedule(b.inbound[0].schedule_s)
        for b in build_site_configs(design)[dr.name].buckets
        if b.inbound
    }
    return tuple(
        Pull(
            data_class=f.data_class,
            source=onprem_class_path(onprem, f.data_class),
            task=datasync_task_name(
                datasync_task_prefix(plan.name, dr.name, f.data_class), onprem.name
            ),
            every=_duration(f.schedule.interval_s if f.schedule else None),
            rpo=_duration(f.rpo_s),
            estimated_rpo=_duration(f.estimate.estimated_s),
            meets=design.replication_meets(f),
            lookup="TASK=$("
            + shell(
                cli.datasync_tasks(
                    dr.region,
                    datasync_task_name(
                        datasync_task_prefix(plan.name, dr.name, f.data_class), onprem.name
                    ),
                )
            )
            + ")",
            runs=shell(cli.datasync_runs("$TASK", dr.region)),
            run_now=shell(cli.datasync_run("$TASK", dr.region)),
            pause=shell(
                cli.datasync_schedule(
                    "$TASK",
                    dr.region,
                    declared[f.data_class],
                    enable=False,
                )
            ),
            paused=shell(cli.datasync_status("$TASK", dr.region)),
        )
        for f in design.flows
        if f.primary == onprem.name and f.dr == dr.name
    )


def _runbook(
    design: Design,
    onprem: OnPremSite,
    dr: Site,
    rows: tuple[Row, ...],
    pulls: tuple[Pull, ...],
) -> OnPremRunbook:
    plan = design.plan
    cfg = build_site_configs(design)[dr.name]
    stack = stack_name(plan, dr)
    pair = f"{onprem.name}->{dr.name}"
    agents = tuple(
        AgentRow(
            name=a.name,
            address=a.address or f"an address in {onprem.cidr} you assign",
            config_command=f"pulumi config set --path '{DATASYNC_AGENT_ARNS_KEY}.{a.name}' "
            f'"$AGENT_ARN" -s {stack}',
        )
        for a in onprem.agents
    )
    endpoint = parse_endpoint(onprem.storage.kind, onprem.storage.endpoint)
    path = next(p for p in design.paths.values() if p.primary == onprem.name and p.dr == dr.name)
    notes = tuple(
        n for w in design.workloads if w.pair == pair and w.kind != "data" for n in w.notes
    )
    assert cfg.onprem is not None
    graph = step_graph(design, onprem.name, dr.name)
    steps = tuple(
        GraphStep(
            n.number,
            n.key,
            n.phase,
            _title(n.key, n.title),
            n.expected_s,
            "not timed by the plan" if n.expected_s is None else fmt_duration(n.expected_s),
        )
        for n in graph.steps
    )
    return OnPremRunbook(
        plan=plan.name,
        path=runbook_path(plan.name, onprem.name, dr.name),
        onprem=onprem,
        dr=dr,
        dr_stack=stack,
        rows=rows,
        pulls=pulls,
        agents=agents,
        agent_vm=dict(reference.defaults()["links"]["onprem"]["agent_vm"]),
        storage_host=endpoint.host,
        storage_port=endpoint.port,
        export=endpoint.path,
        task_mode=cfg.onprem.task_mode,
        endpoint_ports=ENDPOINT_PORTS,
        activation_port=ACTIVATION_PORT,
        store_ports=NFS_PORTS if endpoint.port is None else f"TCP {endpoint.port} (HTTPS)",
        dr_cidr=dr.cidr,
        dr_subnets=str(ipaddress.ip_network(dr.cidr)),
        amazon_asn=DX_GATEWAY_ASN,
        tgw_asn=cfg.transit_gateway_asn,
        vpn_connections=vpn_connections(onprem.link.ports),
        wan=f"{path.capacity_gbps:g} Gbps ({path.capacity_source})",
        notes=notes,
        steps=steps,
        gcp=_gcp_end(plan.name, onprem, dr, cfg.onprem.cloud_router_asn),
        azure=_azure_checklist(design, onprem, cfg.resource_group or "", dr)
        if dr.cloud == Cloud.AZURE
        else None,
    )


def _gcp_end(system: str, onprem: OnPremSite, dr: Site, asn: int) -> GcpEnd | None:
    if dr.cloud != Cloud.GCP:
        return None
    project = dr.project or ""
    return GcpEnd(
        project=project,
        pool=sts_agent_pool_name(system, dr.name, onprem.name),
        account=f"{sts_agent_account_id(onprem.name)}@{project}.iam.gserviceaccount.com",
        limit_mbps=sts_pool_limit_mbps(onprem.wan_committed_gbps),
        cloud_router_asn=asn,
        private_apis=PRIVATE_GOOGLE_APIS,
    )


def render_onprem_runbook(rb: OnPremRunbook, header: str) -> str:
    text = (
        environment(trim=True)
        .get_template(TEMPLATE)
        .render(
            rb=rb,
            header=header,
            mode_key=MODE_KEY,
            agents_key=STORAGE_MOVER_AGENTS_KEY,
            provisioned_key=EXPRESSROUTE_PROVISIONED_KEY,
            microsoft_asn=MICROSOFT_ASN,
            azure_agent_ports=AZURE_AGENT_PORTS,
            dns_ports=DNS_PORTS,
        )
    )
    return text.rstrip("\n") + "\n"


def render_onprem_runbooks(design: Design, header: str) -> dict[str, str]:
    out = {}
    for onprem, dr in design.plan.onprem_pairs():
        rb = build_onprem_runbook(design, onprem, dr)
        out[rb.path] = render_onprem_runbook(rb, header)
    return out
