"""GCP primary -> AWS DR (examples/gcp-to-aws.yaml) through the real program under mocks, in the
order a user deploys it: the GCP primary's stack (read-only reader, its HMAC key, HA VPN to the
DR's transit gateway), then the AWS DR stack with the key copied into its config (DataSync
tasks in Enhanced mode on the schedule the plan sized). The DR stack also runs with the primary
region down, and without the key."""

from __future__ import annotations

import json
import logging
from functools import cache
from typing import Any

import pytest
from pulumi.runtime import rpc

from gpudr.app.offline.mocks import GpudrMocks, Registration
from gpudr.app.offline.plan import credential_config, run_design
from gpudr.app.offline.run import StackRun, run_stack, unwrap_secret
from gpudr.build.stackconfig import build_site_configs, stack_config_values, stack_name
from gpudr.contract.site import SiteConfig
from gpudr.core.design import Design, design
from gpudr.core.spec import Plan, load_plan
from tests.conftest import ROOT
from tests.e2e.sdks import sdks_imported

EXAMPLE = ROOT / "examples" / "gcp-to-aws.yaml"
PRIMARY, DR = "usc1", "use1"
PRIMARY_REGION = "us-central1"
READ_ONLY = {"roles/storage.objectViewer", "roles/storage.legacyBucketReader"}


@cache
def plan() -> Plan:
    return load_plan(EXAMPLE)


@cache
def the_design() -> Design:
    return design(plan())


@cache
def site_config(site: str) -> SiteConfig:
    return build_site_configs(the_design())[site]


def pulled_buckets() -> set[str]:
    """The primary's buckets the DR site pulls, as the planner wrote them in its config."""
    return {t.source_bucket for b in site_config(DR).buckets for t in b.inbound}


@cache
def primary_run() -> StackRun:
    site = plan().sites[PRIMARY]
    return run_stack(stack_name(plan(), site), stack_config_values(the_design(), site))


def dr_config(mode: str = "standby", credentials: bool = True) -> tuple[dict[str, Any], list[str]]:
    config = stack_config_values(the_design(), plan().sites[DR])
    config["gpudr:mode"] = mode
    secret_keys: list[str] = []
    if credentials:
        copied, secret_keys = credential_config(primary_run().outputs, DR)
        config.update(copied)
    return config, secret_keys


def dr_run(
    mode: str = "standby", credentials: bool = True, mocks: GpudrMocks | None = None
) -> StackRun:
    config, secret_keys = dr_config(mode, credentials)
    site = plan().sites[DR]
    return run_stack(
        stack_name(plan(), site),
        config,
        mocks or GpudrMocks(default_region=site.region),
        secret_keys=secret_keys,
    )


@cache
def dr_standby() -> StackRun:
    return dr_run()


def of_type(r: StackRun, typ: str) -> list[Registration]:
    return [x for x in r.resources if x.type == typ]


def tasks_by_class(r: StackRun) -> dict[str, Registration]:
    tasks = of_type(r, "aws:datasync/task:Task")
    return {
        cls: next(t for t in tasks if f"-{cls}-" in t.name) for cls in ("checkpoints", "datasets")
    }


# --- the AWS DR stack: DataSync pulls ---------------------------------------------------------


def test_tasks_are_enhanced_and_run_on_the_interval_the_plan_sized() -> None:
    flows = {f.data_class: f for f in the_design().flows if f.mechanism == "datasync"}
    assert set(flows) == {"checkpoints", "datasets"}
    for cls, task in tasks_by_class(dr_standby()).items():
        schedule = flows[cls].schedule
        assert schedule is not None
        hours = schedule.interval_s // 3600
        assert task.inputs["taskMode"] == "ENHANCED", task.urn
        assert task.inputs["schedule"]["scheduleExpression"] == f"rate({hours} hours)", task.urn
        assert task.inputs["region"] == "us-east-1", task.urn
    # The example's figures: checkpoints every 3 h (4 h RPO), datasets every 23 h (24 h RPO).
    expressions = {
        c: t.inputs["schedule"]["scheduleExpression"]
        for c, t in tasks_by_class(dr_standby()).items()
    }
    assert expressions == {"checkpoints": "rate(3 hours)", "datasets": "rate(23 hours)"}


def test_sources_are_gcs_without_agents_and_their_secret_key_is_secret() -> None:
    r = dr_standby()
    sources = of_type(r, "aws:datasync/locationObjectStorage:LocationObjectStorage")
    assert len(sources) == 2
    primary_buckets = {b.name for b in site_config(PRIMARY).buckets}
    for s in sources:
        assert "agentArns" not in s.inputs, s.urn
        assert s.inputs["serverHostname"] == "storage.googleapis.com", s.urn
        assert (s.inputs["serverProtocol"], s.inputs["serverPort"]) == ("HTTPS", 443), s.urn
        assert s.inputs["bucketName"] in primary_buckets & pulled_buckets(), s.urn
        assert rpc.is_rpc_secret(s.inputs["secretKey"]), s.urn


def test_the_hmac_secret_is_secret_config_and_never_plain() -> None:
    config, secret_keys = dr_config()
    assert "gpudr:gcs_hmac_secret" in secret_keys
    assert config["gpudr:gcs_hmac_access_id"].startswith("GOOG1E")
    secret = config["gpudr:gcs_hmac_secret"]
    # The primary exports it as a secret output.
    exported = primary_run().outputs["transfer_credentials"]
    assert rpc.is_rpc_secret(exported), exported.keys()
    # The DR stack holds it only where it is marked secret: in no output, and in no input but
    # the location's (secret) key.
    r = dr_standby()
    assert secret not in json.dumps(r.outputs)
    for x in r.resources:
        plain = {k: v for k, v in x.inputs.items() if not rpc.is_rpc_secret(v)}
        assert secret not in json.dumps(plain), x.urn


def test_a_plain_text_hmac_secret_is_refused() -> None:
    config, _ = dr_config()
    site = plan().sites[DR]
    with pytest.raises(Exception, match="gcs_hmac_secret is stored in plain text"):
        run_stack(stack_name(plan(), site), config, GpudrMocks(default_region=site.region))


def test_only_checkpoints_mirror_deletes() -> None:
    options = {c: t.inputs["options"] for c, t in tasks_by_class(dr_standby()).items()}
    assert options["checkpoints"]["preserveDeletedFiles"] == "REMOVE"
    assert options["datasets"]["preserveDeletedFiles"] == "PRESERVE"
    for o in options.values():
        assert o["verifyMode"] == "ONLY_FILES_TRANSFERRED"
        assert o["transferMode"] == "CHANGED"


def test_the_sinks_are_the_versioned_replica_buckets_written_by_a_datasync_role() -> None:
    r = dr_standby()
    buckets = {b.inputs["bucket"]: b for b in of_type(r, "aws:s3/bucket:Bucket")}
    versioned = {
        v.inputs["bucket"]
        for v in of_type(r, "aws:s3/bucketVersioning:BucketVersioning")
        if v.inputs["versioningConfiguration"]["status"] == "Enabled"
    }
    roles = {x.outputs["arn"]: x for x in of_type(r, "aws:iam/role:Role")}
    for sink in of_type(r, "aws:datasync/s3Location:S3Location"):
        name = sink.inputs["s3BucketArn"].removeprefix("arn:aws:s3:::")
        assert name in buckets and name in versioned, sink.urn
        role = roles[sink.inputs["s3Config"]["bucketAccessRoleArn"]]
        trust = json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]
        assert trust["Principal"] == {"Service": "datasync.amazonaws.com"}, role.urn
        assert "aws:SourceAccount" in trust["Condition"]["StringEquals"], role.urn
    (group,) = [
        g for g in of_type(r, "aws:cloudwatch/logGroup:LogGroup") if "/eks/" not in g.inputs["name"]
    ]
    assert group.inputs["name"] == "/aws/datasync" and group.inputs["retentionInDays"] > 0


def test_without_the_key_the_dr_stack_declares_no_pulls_and_says_what_to_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        r = dr_run(credentials=False)
    assert not [x for x in r.resources if x.type.startswith("aws:datasync/")]
    # the rest of the site is there: three data buckets and the log bucket
    assert len(of_type(r, "aws:s3/bucket:Bucket")) == 4
    warnings = [m for m in caplog.messages if "DataSync pulls" in m]
    assert len(warnings) == 1, caplog.messages
    message = warnings[0]
    primary, dr = "vision-xcloud-usc1", "vision-xcloud-use1"
    assert f"pulumi stack output transfer_credentials --show-secrets --json -s {primary}" in message
    assert f"pulumi config set gpudr:gcs_hmac_access_id -s {dr}" in message
    assert f"pulumi config set --secret gpudr:gcs_hmac_secret -s {dr}" in message
    assert f"pulumi up -s {dr}" in message


# --- the DR stack survives the loss of the primary ---------------------------------------------


@pytest.mark.parametrize("mode", ["standby", "failover"])
def test_dr_stack_runs_with_the_gcp_primary_region_down(mode: str) -> None:
    mocks = GpudrMocks(default_region="us-east-1", unreachable_regions=frozenset({PRIMARY_REGION}))
    r = dr_run(mode, mocks=mocks)
    assert not [x for x in r.resources if x.type.startswith("gcp:")]
    assert {x.inputs.get("region") for x in r.resources} - {None} == {"us-east-1"}
    assert len(of_type(r, "aws:datasync/task:Task")) == 2
    pools = of_type(r, "aws:eks/nodeGroup:NodeGroup")
    train = next(p for p in pools if "train-train" in p.name)
    floor = train.inputs["scalingConfig"]["minSize"]
    assert floor == (8 if mode == "failover" else 0), train.urn


def test_the_aws_dr_stack_loads_no_gcp_sdk() -> None:
    assert sdks_imported(EXAMPLE, DR) == {"pulumi_aws"}


# --- the GCP primary: a read-only reader with an HMAC key, and the HA VPN ----------------------


def test_the_reader_can_only_read_the_buckets_its_dr_site_pulls() -> None:
    r = primary_run()
    # The reader, not the dual-written weights' writer (components/gcp/writer.py).
    (account,) = [
        x for x in of_type(r, "gcp:serviceaccount/account:Account") if "-reader" in x.name
    ]
    member = account.outputs["member"]
    grants = of_type(r, "gcp:storage/bucketIAMMember:BucketIAMMember")
    reader_grants = [g for g in grants if g.inputs["member"] == member]
    assert {g.inputs["role"] for g in reader_grants} == READ_ONLY
    pulled = pulled_buckets()
    assert len(pulled) == 2  # checkpoints and datasets; weights are dual-written
    assert {g.inputs["bucket"] for g in reader_grants} == pulled
    assert len(reader_grants) == 2 * len(pulled)
    # Nothing else grants this account anything (no write, no delete, no project role).
    iam = [x for x in r.resources if "IAM" in x.type and x.inputs.get("member") == member]
    assert iam == reader_grants
    (key,) = of_type(r, "gcp:storage/hmacKey:HmacKey")
    assert key.inputs["serviceAccountEmail"] == account.outputs["email"], key.urn
    assert set(key.dependencies) >= {g.urn for g in reader_grants}, key.urn


def test_the_primary_exports_the_key_for_its_dr_site_as_a_secret() -> None:
    value, secret = unwrap_secret(primary_run().outputs["transfer_credentials"])
    assert secret
    assert set(value) == {DR}
    assert set(value[DR]) == {"gcs_hmac_access_id", "gcs_hmac_secret"}
    (key,) = of_type(primary_run(), "gcp:storage/hmacKey:HmacKey")
    assert value[DR]["gcs_hmac_access_id"] == key.outputs["accessId"]


def test_the_primary_declares_four_tunnels_with_bgp_to_the_dr_transit_gateway() -> None:
    r = primary_run()
    dr_site = plan().sites[DR]
    connections = of_type(r, "aws:ec2/vpnConnection:VpnConnection")
    assert len(connections) == 2
    lookups = [
        args
        for token, args in r.calls
        if token == "aws:ec2transitgateway/getTransitGateway:getTransitGateway"
    ]
    assert lookups and all(a["region"] == dr_site.region for a in lookups)
    assert lookups[0]["filters"][0]["values"] == [f"gpudr-{plan().name}-{DR}"]
    for c in connections:
        assert c.inputs["region"] == dr_site.region, c.urn
        assert c.inputs["transitGatewayId"].startswith("tgw-"), c.urn
        assert c.inputs["staticRoutesOnly"] is False, c.urn  # BGP
    gcp_asn = str(64600 + list(plan().sites).index(PRIMARY))
    aws_asn = 64600 + list(plan().sites).index(DR)
    for cgw in of_type(r, "aws:ec2/customerGateway:CustomerGateway"):
        assert cgw.inputs["bgpAsn"] == gcp_asn, cgw.urn
    tunnels = of_type(r, "gcp:compute/vPNTunnel:VPNTunnel")
    peers = of_type(r, "gcp:compute/routerPeer:RouterPeer")
    assert len(tunnels) == 4 and len(peers) == 4
    (gateway,) = of_type(r, "gcp:compute/haVpnGateway:HaVpnGateway")
    (router,) = of_type(r, "gcp:compute/router:Router")
    for t in tunnels:
        assert t.inputs["region"] == PRIMARY_REGION, t.urn
        assert t.inputs["vpnGateway"] == gateway.outputs["selfLink"], t.urn
        assert t.inputs["router"] == router.inputs["name"], t.urn
        assert rpc.is_rpc_secret(t.inputs["sharedSecret"]), t.urn
    assert {t.inputs["vpnGatewayInterface"] for t in tunnels} == {0, 1}
    for p in peers:
        assert p.inputs["peerAsn"] == aws_asn, p.urn
    assert router.inputs["bgp"]["asn"] == int(gcp_asn)


def test_the_primary_no_longer_warns_about_the_vpn(caplog: pytest.LogCaptureFixture) -> None:
    site = plan().sites[PRIMARY]
    with caplog.at_level(logging.WARNING):
        run_stack(stack_name(plan(), site), stack_config_values(the_design(), site))
    assert not [m for m in caplog.messages if "not declared" in m], caplog.messages


# --- the offline bootstrap (gpudr plan) ---------------------------------------------------------


def test_run_design_copies_the_key_from_primary_to_dr() -> None:
    stacks = run_design(the_design())
    assert [s["site"] for s in stacks] == list(plan().sites)
    dr = next(s for s in stacks if s["site"] == DR)
    assert len([r for r in dr["resources"] if r["type"] == "aws:datasync/task:Task"]) == 2


def test_run_design_for_the_dr_stack_alone_still_gets_the_key() -> None:
    stacks = run_design(the_design(), sites=[DR])
    assert [s["site"] for s in stacks] == [DR]
    assert len([r for r in stacks[0]["resources"] if r["type"] == "aws:datasync/task:Task"]) == 2
