"""examples/azure-to-gcp.yaml through the real program under mocks: the Azure primary
(speech-xcloud-eus) and the GCP DR site (speech-xcloud-gcpe4), as `gpudr generate` configures
them from the plan.

The DR stack's transfer jobs sign in with the identity the primary's stack creates, copied into
the DR stack's own config. Here the copy is made by hand from the primary's run (the identity's
client id as the mocks answer it), as an operator would with `pulumi config set`."""

from __future__ import annotations

import logging
from functools import cache
from typing import Any

import pytest

from gpudr.app.offline.mocks import GpudrMocks, Registration
from gpudr.app.offline.mocks_azure import OFFLINE_TENANT
from gpudr.app.offline.run import StackRun, run_stack
from gpudr.build.stackconfig import build_site_configs, stack_config_values, stack_name
from gpudr.contract.site import SiteConfig
from gpudr.core.design import design
from gpudr.core.spec import load_plan
from tests.conftest import ROOT

EXAMPLE = ROOT / "examples" / "azure-to-gcp.yaml"
PRIMARY, DR = "eus", "gcpe4"
JOB = "gcp:storage/transferJob:TransferJob"
IDENTITY = "azure-native:managedidentity:UserAssignedIdentity"
FEDERATION = "azure-native:managedidentity:FederatedIdentityCredential"
ROLE = "azure-native:authorization:RoleAssignment"
ACCOUNT = "azure-native:storage:StorageAccount"
GATEWAY = "azure-native:network:VirtualNetworkGateway"
CONNECTION = "azure-native:network:VirtualNetworkGatewayConnection"
TUNNEL = "gcp:compute/vPNTunnel:VPNTunnel"
ROUTER_PEER = "gcp:compute/routerPeer:RouterPeer"
STORAGE_BLOB_DATA_READER = "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1"


@cache
def _plan() -> Any:
    return load_plan(EXAMPLE)


@cache
def _configs() -> dict[str, SiteConfig]:
    return build_site_configs(design(_plan()))


def stack(site: str) -> str:
    return stack_name(_plan(), _plan().sites[site])


def config(site: str, **extra: str) -> dict[str, Any]:
    values = stack_config_values(design(_plan()), _plan().sites[site])
    values.update({f"gpudr:{k}": v for k, v in extra.items()})
    return values


def run(site: str, mocks: GpudrMocks | None = None, **extra: str) -> StackRun:
    region = _plan().sites[site].region
    return run_stack(stack(site), config(site, **extra), mocks or GpudrMocks(default_region=region))


@cache
def primary() -> StackRun:
    return run(PRIMARY)


def reader(r: StackRun) -> Registration:
    (identity,) = [x for x in r.resources if x.type == IDENTITY and "reader" in x.name]
    return identity


def copied_credentials() -> dict[str, str]:
    """What `pulumi config set` copies from the primary's transfer_credentials[gcpe4]."""
    identity = reader(primary())
    return {
        "azure_sts_client_id": identity.outputs["clientId"],
        "azure_tenant_id": identity.outputs["tenantId"],
    }


@cache
def dr() -> StackRun:
    return run(DR, **copied_credentials())


def of_type(r: StackRun, typ: str) -> list[Registration]:
    return [x for x in r.resources if x.type == typ]


def secret(value: Any) -> bool:
    from pulumi.runtime import rpc

    return isinstance(value, dict) and value.get(rpc._special_sig_key) == rpc._special_secret_sig


# --- the plan says what the stacks get ---------------------------------------------------------


def test_the_plan_pairs_an_azure_primary_with_a_gcp_dr_over_vpn() -> None:
    p, d = _configs()[PRIMARY], _configs()[DR]
    assert (p.cloud, p.role, d.cloud, d.role) == ("azure", "primary", "gcp", "dr")
    assert [x.kind for x in p.links] == [x.kind for x in d.links] == ["vpn"]
    assert [r.dr_site for r in p.azure_sts_readers] == [DR]
    inbound = [t for b in d.buckets for t in b.inbound]
    assert {t.source_cloud for t in inbound} == {"azure"} and len(inbound) == 2


# --- primary: the federated reader --------------------------------------------------------------


def test_primary_reader_is_federated_to_the_dr_projects_transfer_agent() -> None:
    r = primary()
    (planned,) = _configs()[PRIMARY].azure_sts_readers
    identity = reader(r)
    assert identity.inputs["resourceName"] == planned.identity_name, identity.urn
    (federation,) = of_type(r, FEDERATION)
    assert federation.inputs["issuer"] == "https://accounts.google.com", federation.urn
    assert federation.inputs["audiences"] == ["api://AzureADTokenExchange"], federation.urn
    subject = federation.inputs["subject"]
    assert subject.isdigit() and len(subject) == 21, federation.urn  # the agent's subject id
    token = "gcp:storage/getTransferProjectServiceAccount:getTransferProjectServiceAccount"
    assert [a.get("project") for t, a in r.calls if t == token] == [planned.gcp_project]


def test_primary_reader_reads_only_the_planned_source_accounts() -> None:
    r = primary()
    (planned,) = _configs()[PRIMARY].azure_sts_readers
    principal = reader(r).outputs["principalId"]
    grants = [x for x in of_type(r, ROLE) if x.inputs["principalId"] == principal]
    ids = {x.inputs["accountName"]: x.id for x in of_type(r, ACCOUNT)}
    assert sorted(x.inputs["scope"] for x in grants) == sorted(
        ids[a] for a in planned.storage_accounts
    ), [x.urn for x in grants]
    for x in grants:
        assert x.inputs["roleDefinitionId"].endswith(f"/{STORAGE_BLOB_DATA_READER}"), x.urn


# --- primary: the VPN -------------------------------------------------------------------------


def test_primary_vpn_gateway_has_the_planned_sku_and_two_bgp_tunnels() -> None:
    r = primary()
    (link,) = _configs()[PRIMARY].links
    (gateway,) = of_type(r, GATEWAY)
    assert gateway.inputs["sku"]["name"] == link.gateway_sku == "VpnGw2AZ", gateway.urn
    assert gateway.inputs["activeActive"] is True, gateway.urn
    assert len(gateway.inputs["ipConfigurations"]) == 2, gateway.urn
    tunnels = of_type(r, TUNNEL)
    peers = of_type(r, ROUTER_PEER)
    assert len(tunnels) == len(peers) == link.tunnels == 2, [x.urn for x in tunnels + peers]
    (peer,) = _configs()[PRIMARY].peers
    for t in tunnels:
        assert (t.inputs["project"], t.inputs["region"]) == (peer.project, peer.region), t.urn
        assert secret(t.inputs["sharedSecret"]), t.urn
    for p in peers:
        assert p.inputs["peerAsn"] == _configs()[PRIMARY].transit_gateway_asn, p.urn
    connections = of_type(r, CONNECTION)
    assert len(connections) == 2
    for c in connections:
        (policy,) = c.inputs["ipsecPolicies"]
        assert policy["ipsecEncryption"] == policy["ipsecIntegrity"] == "GCMAES256", c.urn
        assert c.inputs["enableBgp"] is True, c.urn
        assert secret(c.inputs["sharedKey"]), c.urn


def test_no_shared_key_or_credential_is_in_any_stack_config() -> None:
    for site in (PRIMARY, DR):
        text = str(config(site)).lower()
        assert "shared" not in text and "psk" not in text and "sas" not in text, site


# --- DR: the transfer jobs --------------------------------------------------------------------


def test_dr_jobs_pull_from_azure_blob_by_federation_on_the_planned_schedule() -> None:
    r = dr()
    # source container -> its planned transfer
    planned = {t.source_bucket: t for b in _configs()[DR].buckets for t in b.inbound}
    jobs = of_type(r, JOB)
    assert len(jobs) == len(planned) == 2, [x.urn for x in jobs]
    credentials = copied_credentials()
    for job in jobs:
        spec = job.inputs["transferSpec"]
        source = spec["azureBlobStorageDataSource"]
        t = planned[source["container"]]
        assert source["storageAccount"] == t.source_storage_account, job.urn
        assert source["federatedIdentityConfig"] == {
            "clientId": credentials["azure_sts_client_id"],
            "tenantId": OFFLINE_TENANT,
        }, job.urn
        # no SAS token, no secret in Secret Manager
        assert "azureCredentials" not in source and "credentialsSecret" not in source, job.urn
        assert job.inputs["schedule"]["repeatInterval"] == f"{t.schedule_s}s", job.urn
        assert spec["transferOptions"]["deleteObjectsUniqueInSink"] is t.mirror_deletes
        assert (
            f"https://{t.source_storage_account}.blob.core.windows.net/{t.source_bucket}"
            in job.inputs["description"]
        ), job.urn
    # the example's numbers: 1 TB checkpoints every hour under a 4 h RPO; datasets daily
    repeat = {
        j.inputs["transferSpec"]["azureBlobStorageDataSource"]["container"]: (
            j.inputs["schedule"]["repeatInterval"]
        )
        for j in jobs
    }
    assert repeat == {"checkpoints": "7200s", "datasets": "82800s"}


def test_without_the_client_id_the_dr_stack_declares_no_azure_job_and_says_what_to_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        r = run(DR)
    assert of_type(r, JOB) == []
    # the sinks' grants stand, so the next `pulumi up` only adds the jobs
    assert len([x for x in r.resources if x.type == "gcp:storage/bucketIAMMember:BucketIAMMember"])
    warnings = [
        x.getMessage() for x in caplog.records if "Storage Transfer from Azure" in x.getMessage()
    ]
    assert len(warnings) == 2, warnings  # one per skipped transfer
    for text in warnings:
        for key in ("azure_sts_client_id", "azure_tenant_id"):
            assert (
                f"pulumi stack output transfer_credentials --show-secrets --json -s "
                f'{stack(PRIMARY)} | jq -j \'.["{DR}"]["{key}"]\' | pulumi config set '
                f"gpudr:{key} -s {stack(DR)}"
            ) in text, text
        assert text.endswith(f"pulumi up -s {stack(DR)}"), text


def test_with_only_the_client_id_the_jobs_still_wait_for_the_tenant() -> None:
    client = copied_credentials()["azure_sts_client_id"]
    assert of_type(run(DR, azure_sts_client_id=client), JOB) == []


@pytest.mark.parametrize("mode", ["standby", "failover"])
def test_dr_stack_runs_with_the_azure_primary_region_unreachable(mode: str) -> None:
    mocks = GpudrMocks(default_region="us-east4", unreachable_regions=frozenset({"eastus"}))
    r = run(DR, mocks, mode=mode, **copied_credentials())
    assert len(of_type(r, JOB)) == 2
    assert not [x for x in r.resources if x.type.startswith("azure-native:")]
    assert not any(
        "eastus" in str(x.inputs.get("region") or x.inputs.get("location") or "")
        for x in r.resources
    )
    # nothing from the primary's stack is read: no StackReference, no Azure lookup
    assert not [t for t, _ in r.calls if t.startswith("azure-native:")]
