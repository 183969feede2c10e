"""The cloud end of an on-premises site's replication into GCP (components/gcp/onprem.py and the
site that wires it), run as the whole DR stack of examples/onprem-to-gcp.yaml under the offline
mocks, with the on-premises site unreachable (only the DR region answers): the agent pool held
to the committed WAN, the agents' account and its grants, one job per class through the pool,
the Interconnect end (Dedicated and Partner), and what is refused."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from pulumi.runtime import rpc

from components.gcp.onprem import OnPremLinkEnd, OnPremLinkEndArgs, check_inbound
from gpudr.app.offline.mocks import GpudrMocks, Registration
from gpudr.app.offline.run import StackRun, run_stack
from gpudr.build.stackconfig import stack_config_values, stack_name
from gpudr.contract.naming import sts_pool_limit_mbps
from gpudr.contract.site import InboundTransfer, OnPremSource
from gpudr.core.design import design
from gpudr.core.spec import parse_plan

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = yaml.safe_load((ROOT / "examples" / "onprem-to-gcp.yaml").read_text())
POOL = "ams-training-euw4-from-ams1"


def _plan(**onprem: Any) -> Any:
    raw = copy.deepcopy(EXAMPLE)
    raw["sites"]["ams1"].update(onprem)
    return parse_plan(raw)


def _run(**onprem: Any) -> StackRun:
    plan = _plan(**onprem)
    site = plan.sites["euw4"]
    config = stack_config_values(design(plan), site)
    mocks = GpudrMocks(default_region=site.region)
    return run_stack(stack_name(plan, site), config, mocks)


def _stack(**onprem: Any) -> list[Registration]:
    return list(_run(**onprem).registrations)


def _of(regs: list[Registration], typ: str) -> list[Registration]:
    return [r for r in regs if r.type == typ]


@pytest.fixture(scope="module")
def dedicated() -> list[Registration]:
    return _stack()


def test_the_pool_is_capped_at_the_committed_wan(dedicated: list[Registration]) -> None:
    (pool,) = _of(dedicated, "gcp:storage/transferAgentPool:TransferAgentPool")
    assert pool.inputs["name"] == POOL, pool.urn
    # 8 Gbps committed = 1000 MB/s, the API's unit, shared by every agent in the pool
    assert pool.inputs["bandwidthLimit"] == {"limitMbps": "1000"}, pool.urn
    assert pool.inputs["project"] == "ams-training-dr", pool.urn


@pytest.mark.parametrize(
    ("gbps", "mbps"), [(8, 1000), (0.5, 62), (10, 1250), (0.004, 1), (100, 12500)]
)
def test_pool_limit_is_the_commitment_in_megabytes_rounded_down(gbps: float, mbps: int) -> None:
    assert sts_pool_limit_mbps(gbps) == mbps


def test_every_class_is_one_job_through_the_pool_on_the_planned_schedule(
    dedicated: list[Registration],
) -> None:
    jobs = _of(dedicated, "gcp:storage/transferJob:TransferJob")
    plan = _plan()
    d = design(plan)
    every = {f.data_class: f"{f.schedule.interval_s}s" for f in d.flows if f.schedule}
    buckets = {
        r.name.removeprefix("euw4-").removesuffix("-bucket"): r.inputs["name"]
        for r in _of(dedicated, "gcp:storage/bucket:Bucket")
    }
    assert len(jobs) == 3, [j.urn for j in jobs]
    for job in jobs:
        cls = job.name.removeprefix("euw4-").split("-")[0]
        spec = job.inputs["transferSpec"]
        assert spec["posixDataSource"] == {"rootDirectory": f"/exports/ml/{cls}"}, job.urn
        assert spec["sourceAgentPoolName"] == POOL, job.urn
        assert spec["gcsDataSink"]["bucketName"] == buckets[cls], job.urn
        assert job.inputs["schedule"]["repeatInterval"] == every[cls], job.urn
        assert spec["transferOptions"]["deleteObjectsFromSourceAfterTransfer"] is False, job.urn


def test_the_agents_account_has_the_agent_role_and_writes_only_the_replicas(
    dedicated: list[Registration],
) -> None:
    (account,) = _of(dedicated, "gcp:serviceaccount/account:Account")
    assert account.inputs["accountId"] == "sts-agents-ams1", account.urn
    roles = {
        r.inputs["role"]: r.inputs["member"]
        for r in _of(dedicated, "gcp:projects/iAMMember:IAMMember")
    }
    assert roles["roles/storagetransfer.transferAgent"].startswith("serviceAccount:sts-agents")
    # the project's transfer service agent manages the agents' Pub/Sub
    assert "sts-agents" not in roles["roles/pubsub.editor"]
    agent_grants = [
        r
        for r in _of(dedicated, "gcp:storage/bucketIAMMember:BucketIAMMember")
        if "sts-agents" in str(r.inputs["member"])
    ]
    assert len(agent_grants) == 3, [r.urn for r in agent_grants]
    for r in agent_grants:
        assert r.inputs["role"] == "roles/storage.objectAdmin", r.urn
    # no key of the account exists in the stack
    assert not _of(dedicated, "gcp:serviceaccount/key:Key")


def test_dedicated_link_end_orders_circuits_and_peers_on_the_vlan(
    dedicated: list[Registration],
) -> None:
    (ic,) = _of(dedicated, "gcp:compute/interconnect:Interconnect")
    assert ic.inputs["interconnectType"] == "DEDICATED", ic.urn
    assert ic.inputs["linkType"] == "LINK_TYPE_ETHERNET_10G_LR", ic.urn
    assert ic.inputs["requestedLinkCount"] == 2, ic.urn
    assert ic.inputs["location"].endswith("/interconnectLocations/ams-zone1-1"), ic.urn
    (att,) = _of(dedicated, "gcp:compute/interconnectAttachment:InterconnectAttachment")
    assert (att.inputs["type"], att.inputs["vlanTag8021q"]) == ("DEDICATED", 420), att.urn
    assert att.inputs["bandwidth"] == "BPS_20G", att.urn
    # the LOA-CFAs name the plan's customer and go to its NOC address
    assert (ic.inputs["customerName"], ic.inputs["nocContactEmail"]) == (
        "Example AI B.V.",
        "noc@example.com",
    ), ic.urn
    assert att.inputs["region"] == "europe-west4", att.urn
    routers = [
        r for r in _of(dedicated, "gcp:compute/router:Router") if r.name == "euw4-onprem-router"
    ]
    (router,) = routers
    bgp = router.inputs["bgp"]
    assert bgp["asn"] == 64514, router.urn
    ranges = [x["range"] for x in bgp["advertisedIpRanges"]]
    assert ranges == ["10.52.0.0/16", "199.36.153.8/30"], router.urn
    (peer,) = _of(dedicated, "gcp:compute/routerPeer:RouterPeer")
    assert peer.inputs["peerAsn"] == 65020, peer.urn
    (route,) = _of(dedicated, "gcp:compute/route:Route")
    assert route.inputs["destRange"] == "199.36.153.8/30", route.urn
    assert route.inputs["nextHopGateway"] == "default-internet-gateway", route.urn


def test_nothing_is_placed_elsewhere_or_names_the_onprem_store(
    dedicated: list[Registration],
) -> None:
    for r in dedicated:
        region = r.inputs.get("region")
        assert region in (None, "europe-west4"), r.urn
        if r.custom:
            assert "10.50.8.10" not in json.dumps(r.inputs), r.urn


def test_partner_link_end_is_attachments_in_both_domains_on_asn_16550() -> None:
    link = {"kind": "interconnect-partner", "port_gbps": 5, "ports": 2, "bgp_asn": 65020}
    regs = _stack(link=link, wan_committed_gbps=8)
    assert not _of(regs, "gcp:compute/interconnect:Interconnect")
    assert not _of(regs, "gcp:compute/routerPeer:RouterPeer")  # the provider's, or after pairing
    # by name: the engine registers them in no fixed order
    atts = sorted(
        _of(regs, "gcp:compute/interconnectAttachment:InterconnectAttachment"),
        key=lambda a: str(a.inputs["name"]),
    )
    assert [a.inputs["edgeAvailabilityDomain"] for a in atts] == [
        "AVAILABILITY_DOMAIN_1",
        "AVAILABILITY_DOMAIN_2",
    ], [a.urn for a in atts]
    for a in atts:
        assert a.inputs["type"] == "PARTNER", a.urn
        assert "bandwidth" not in a.inputs, a.urn  # the partner sets it
    (router,) = [r for r in _of(regs, "gcp:compute/router:Router") if "onprem" in r.name]
    assert router.inputs["bgp"]["asn"] == 16550, router.urn


def test_the_pairing_keys_leave_the_stack_only_as_a_secret() -> None:
    """Whoever holds a pairing key can connect to its attachment: exported only as a secret."""
    link = {"kind": "interconnect-partner", "port_gbps": 5, "ports": 2, "bgp_asn": 65020}
    exported = _run(link=link, wan_committed_gbps=8).outputs["onprem"]
    assert rpc.is_rpc_secret(exported), exported
    # A Dedicated Interconnect has none: its BGP addresses stay readable without secrets.
    exported = _run().outputs["onprem"]
    assert not rpc.is_rpc_secret(exported), exported


def test_an_s3_compatible_store_is_read_by_prefix_through_the_pool() -> None:
    regs = _stack(
        storage={"kind": "s3-compatible", "endpoint": "https://minio.dc1.lan:9000/ml-data"}
    )
    jobs = _of(regs, "gcp:storage/transferJob:TransferJob")
    assert len(jobs) == 3
    for job in jobs:
        cls = job.name.removeprefix("euw4-").split("-")[0]
        spec = job.inputs["transferSpec"]
        assert spec["awsS3CompatibleDataSource"] == {
            "bucketName": "ml-data",
            "endpoint": "minio.dc1.lan:9000",
            "path": f"{cls}/",
        }, job.urn
        assert spec["sourceAgentPoolName"] == POOL, job.urn
        assert "posixDataSource" not in spec, job.urn
    assert "secret" not in json.dumps([r.inputs for r in regs]).lower()


SOURCE = OnPremSource(
    site="ams1",
    location="Amsterdam DC1",
    cidr="10.50.0.0/16",
    storage_kind="nfs",
    storage_host="10.50.8.10",
    storage_port=None,
    storage_path="/exports/ml",
    agents=("sts-1", "sts-2"),
    task_mode="ENHANCED",
    link_kind="interconnect-dedicated",
    port_gbps=10,
    ports=2,
    link_gbps=20.0,
    link_location="ams-zone1-1",
    customer="Example AI B.V.",
    noc_email="noc@example.com",
    bgp_asn=65020,
    vlan=420,
    committed_gbps=8.0,
    cloud_router_asn=64514,
)
PULL = InboundTransfer(
    service="sts-agent",
    source_cloud="onprem",
    source_site="ams1",
    source_region="Amsterdam DC1",
    source_bucket="/exports/ml/checkpoints",
    source_account=None,
    source_project=None,
    schedule_s=7200,
    role_name="",
)


@pytest.mark.parametrize(
    ("source", "transfer", "error"),
    [
        (None, PULL, "no on-premises source of that name"),
        (SOURCE, replace(PULL, source_site="other"), "no on-premises source of that name"),
        (SOURCE, replace(PULL, service="datasync-agent"), "or not sts-agent"),
        (replace(SOURCE, storage_kind="hdfs"), PULL, "a hdfs store is not read"),
    ],
)
def test_what_cannot_be_pulled_is_refused(
    source: OnPremSource | None, transfer: InboundTransfer, error: str
) -> None:
    with pytest.raises(ValueError, match=error):
        check_inbound([transfer], source)


@pytest.mark.parametrize(
    "change",
    [
        {"link_gbps": 0.0},
        {"vlan": None},
        {"port_gbps": 40},
        {"customer": None},
        {"noc_email": None},
    ],
)
def test_a_dedicated_link_the_stack_config_does_not_size_is_refused(
    change: dict[str, Any],
) -> None:
    """A stack config written before the planner gave the circuits' capacity (or edited by
    hand) stops the program: the attachment's bandwidth is never guessed."""
    pulumi.runtime.set_mocks(GpudrMocks(default_region="europe-west4"), preview=True)
    args = OnPremLinkEndArgs(
        project="p",
        region="europe-west4",
        network_id="projects/p/global/networks/n",
        name="n",
        cidr="10.52.0.0/16",
        source=replace(SOURCE, **change),
        labels={},
    )
    with pytest.raises(ValueError, match="regenerate the stack"):
        OnPremLinkEnd("t-link", args)
