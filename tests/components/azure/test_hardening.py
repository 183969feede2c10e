"""Issue 15's controls that cost nothing to run, on Azure: pinned on a primary (eus) and a DR site
(wus) built by hand (tests/components/azure/test_azure_site.py), on an Azure primary pulled by
Google's Storage Transfer Service (test_cross_cloud.py), and in a drill of the azure-two-region
example's DR site.

AKS: encryption at host on every pool, the system pool tainted CriticalAddonsOnly, patch and
node security upgrades, the Azure Policy add-on, Kubernetes secrets under the site's Key Vault
(KMS), disks under the site's data key (disk encryption set). Network: an NSG on the node subnet.
Key Vault: its firewall setting (and why it is not default-deny: see key_vault.py). Storage:
default-deny network rules admitting the site's node subnet, except the accounts Google reads."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from functools import cache
from typing import Any

import pytest

from components.azure.arm import (
    KEY_VAULT_CRYPTO_SERVICE_ENCRYPTION_USER,
    KEY_VAULT_CRYPTO_USER,
    READER,
)
from components.azure.gpu_cluster import POD_CIDR
from gpudr.app.offline.mocks import GpudrMocks, Registration
from gpudr.app.offline.run import StackRun, run_stack
from gpudr.build.drill import build_drill
from gpudr.core.design import design
from gpudr.core.spec import load_plan
from tests.components.azure.test_azure_site import (
    AKS,
    IDENTITY,
    KEY,
    POOL,
    ROLE,
    SITES,
    STORAGE_ACCOUNT,
    VAULT,
    depends_on,
    named,
    of_type,
    run,
    site_config,
    site_run,
)
from tests.components.azure.test_cross_cloud import primary
from tests.conftest import ROOT

NSG = "azure-native:network:NetworkSecurityGroup"
SUBNET = "azure-native:network:Subnet"
DES = "azure-native:compute:DiskEncryptionSet"
SITE_NAMES = ["eus", "wus"]
OTHER = {"eus": "wus", "wus": "eus"}

NOW = datetime(2025, 1, 31, 3, 12, tzinfo=UTC)


def nodes_cidr(site: str) -> str:
    return SITES[site][1].replace("/16", "/20")


@cache
def drill_run() -> StackRun:
    """A drill of azure-two-region's DR site, with its pools at the test size."""
    plan = load_plan(ROOT / "examples" / "azure-two-region.yaml")
    dr = next(s for s in plan.sites.values() if s.cloud == "azure" and s.role == "dr")
    s = build_drill(design(plan), dr.name, NOW, operator="user:drill@example.com")
    return run_stack(s.stack, s.config("capacity"), GpudrMocks(default_region=s.site.region))


@cache
def sts_run() -> StackRun:
    return run(primary())


def clusters(r: StackRun) -> list[Registration]:
    found = of_type(r, AKS)
    assert found, "no AKS cluster registered"
    return found


def all_runs() -> list[Any]:
    return [
        pytest.param(lambda: site_run("eus"), id="primary"),
        pytest.param(lambda: site_run("wus"), id="dr"),
        pytest.param(lambda: site_run("wus", "failover"), id="dr-failover"),
        pytest.param(drill_run, id="drill"),
    ]


# --- AKS: every site and the drill ------------------------------------------------------------


@pytest.mark.parametrize("get", all_runs())
def test_every_pool_encrypts_at_host(get: Any) -> None:
    r = get()
    for aks in clusters(r):
        for profile in aks.inputs["agentPoolProfiles"]:
            assert profile["enableEncryptionAtHost"] is True, aks.urn
    pools = of_type(r, POOL)
    assert pools
    for pool in pools:
        assert pool.inputs["enableEncryptionAtHost"] is True, pool.urn


@pytest.mark.parametrize("get", all_runs())
def test_system_pool_runs_only_critical_addons(get: Any) -> None:
    for aks in clusters(get()):
        (system,) = aks.inputs["agentPoolProfiles"]
        assert system["mode"] == "System", aks.urn
        assert system["nodeTaints"] == ["CriticalAddonsOnly=true:NoSchedule"], aks.urn


@pytest.mark.parametrize("get", all_runs())
def test_patch_and_node_security_upgrades_are_automatic(get: Any) -> None:
    for aks in clusters(get()):
        assert aks.inputs["autoUpgradeProfile"] == {
            "upgradeChannel": "patch",
            "nodeOSUpgradeChannel": "SecurityPatch",
        }, aks.urn


@pytest.mark.parametrize("get", all_runs())
def test_azure_policy_addon_is_on(get: Any) -> None:
    for aks in clusters(get()):
        assert aks.inputs["addonProfiles"] == {"azurepolicy": {"enabled": True}}, aks.urn


# --- AKS: the site's keys (sites only; a drill declares no key) -------------------------------


@pytest.mark.parametrize("site", SITE_NAMES)
def test_kubernetes_secrets_are_encrypted_with_the_sites_vault(site: str) -> None:
    r = site_run(site)
    vault = named(r, VAULT, "vault")
    kms_key = named(r, KEY, "kms-key")
    aks = named(r, AKS, "train")
    kms = aks.inputs["securityProfile"]["azureKeyVaultKms"]
    assert kms == {
        "enabled": True,
        "keyId": kms_key.outputs["keyUriWithVersion"],  # AKS names one version of the key
        "keyVaultNetworkAccess": "Public",
        "keyVaultResourceId": vault.id,
    }, aks.urn
    assert kms["keyId"].startswith(f"https://gpudr-llm-{site}-kv.vault.azure.net/keys/k8s-secrets/")
    # Workload identity stays on beside it.
    assert aks.inputs["securityProfile"]["workloadIdentity"] == {"enabled": True}, aks.urn
    # Its own key: the plugin encrypts and decrypts; the data key only wraps and unwraps.
    props = kms_key.inputs["properties"]
    assert props["keyOps"] == ["encrypt", "decrypt"], kms_key.urn
    assert (props["kty"], props["keySize"]) == ("RSA-HSM", 3072), kms_key.urn
    assert props["rotationPolicy"]["lifetimeActions"] == [
        {"action": {"type": "rotate"}, "trigger": {"timeAfterCreate": "P90D"}}
    ]
    assert kms_key.protect and kms_key.retain_on_delete, kms_key.urn
    data_key = named(r, KEY, "data-key")
    assert data_key.inputs["properties"]["keyOps"] == ["wrapKey", "unwrapKey"], data_key.urn
    # The cluster identity may encrypt and decrypt with that key only, before the cluster exists.
    identity = named(r, IDENTITY, "train-identity")
    grant = named(r, ROLE, "kms-access")
    assert grant.inputs["roleDefinitionId"].endswith(f"/{KEY_VAULT_CRYPTO_USER}"), grant.urn
    assert grant.inputs["scope"] == kms_key.id, grant.urn
    assert grant.inputs["principalId"] == identity.outputs["principalId"], grant.urn
    assert depends_on(r, aks, grant), aks.urn


@pytest.mark.parametrize("site", SITE_NAMES)
def test_node_disks_are_encrypted_with_the_sites_data_key(site: str) -> None:
    r = site_run(site)
    vault = named(r, VAULT, "vault")
    data_key = named(r, KEY, "data-key")
    des = named(r, DES, "disk-encryption-set")
    disk_identity = named(r, IDENTITY, "disk-identity")
    assert des.inputs["activeKey"] == {
        "keyUrl": data_key.outputs["keyUriWithVersion"],
        "sourceVault": {"id": vault.id},
    }, des.urn
    assert des.inputs["rotationToLatestKeyVersionEnabled"] is True, des.urn
    assert des.inputs["encryptionType"] == "EncryptionAtRestWithPlatformAndCustomerKeys"
    assert des.inputs["identity"] == {
        "type": "UserAssigned",
        "userAssignedIdentities": [disk_identity.id],
    }, des.urn
    assert des.inputs["location"] == SITES[site][0], des.urn
    assert des.protect and disk_identity.protect, des.urn
    # Its identity may use the data key (get, wrap, unwrap) and nothing else in the vault.
    crypto = named(r, ROLE, "disk-crypto")
    assert crypto.inputs["roleDefinitionId"].endswith(
        f"/{KEY_VAULT_CRYPTO_SERVICE_ENCRYPTION_USER}"
    )
    assert crypto.inputs["scope"] == data_key.id, crypto.urn
    assert crypto.inputs["principalId"] == disk_identity.outputs["principalId"], crypto.urn
    assert depends_on(r, des, crypto), des.urn
    # The cluster names it, and its identity may read it, before the cluster is created.
    aks = named(r, AKS, "train")
    assert aks.inputs["diskEncryptionSetID"] == des.id, aks.urn
    reader = named(r, ROLE, "disk-encryption-set-access")
    assert reader.inputs["roleDefinitionId"].endswith(f"/{READER}"), reader.urn
    assert reader.inputs["scope"] == des.id, reader.urn
    identity = named(r, IDENTITY, "train-identity")
    assert reader.inputs["principalId"] == identity.outputs["principalId"], reader.urn
    assert depends_on(r, aks, reader), aks.urn


def test_the_drill_declares_no_key_and_grants_nothing_on_one() -> None:
    r = drill_run()
    assert of_type(r, KEY) == [] and of_type(r, VAULT) == [] and of_type(r, DES) == []
    for aks in clusters(r):
        assert "azureKeyVaultKms" not in aks.inputs["securityProfile"], aks.urn
        assert "diskEncryptionSetID" not in aks.inputs, aks.urn
    for grant in of_type(r, ROLE):
        assert "Microsoft.KeyVault" not in grant.inputs["scope"], grant.urn


def test_a_site_without_clusters_declares_no_cluster_keys() -> None:
    r = run(dataclasses.replace(site_config("wus"), clusters=()))
    assert [x.name for x in of_type(r, KEY)] == ["wus-data-key"]
    assert of_type(r, DES) == []
    assert not [x for x in of_type(r, IDENTITY) if "disk" in x.name]


# --- Key Vault --------------------------------------------------------------------------------


@pytest.mark.parametrize("site", SITE_NAMES)
def test_vault_firewall_admits_trusted_services_and_stays_open_for_kms(site: str) -> None:
    """Not default-deny: AKS KMS with a public vault does not work behind the vault firewall
    (key_vault.VAULT_DEFAULT_ACTION). Trusted services (Storage, Disk Storage) bypass it."""
    vault = named(site_run(site), VAULT, "vault")
    assert vault.inputs["properties"]["networkAcls"] == {
        "defaultAction": "Allow",
        "bypass": "AzureServices",
        "ipRules": [],
        "virtualNetworkRules": [],
    }, vault.urn


# --- the node subnet's NSG --------------------------------------------------------------------


def rules(nsg: Registration) -> dict[str, dict[str, Any]]:
    return {x["name"]: x for x in nsg.inputs["securityRules"]}


def expected_rules(nodes: str, peers: dict[str, str]) -> dict[str, tuple[int, str, str, str]]:
    """name -> (priority, access, source, destination); every rule inbound, every port."""
    out = {
        "allow-nodes-to-nodes": (100, "Allow", nodes, nodes),
        "allow-nodes-to-pods": (110, "Allow", nodes, POD_CIDR),
        "allow-pods-to-pods": (120, "Allow", POD_CIDR, POD_CIDR),
        "allow-azure-load-balancer": (130, "Allow", "AzureLoadBalancer", nodes),
        "deny-internet-inbound": (4096, "Deny", "Internet", "*"),
    }
    for i, (site, cidr) in enumerate(sorted(peers.items())):
        out[f"allow-dr-link-{site}"] = (200 + 10 * i, "Allow", cidr, nodes)
    return out


def check_nsg(r: StackRun, nodes: str, peers: dict[str, str]) -> None:
    nsg = named(r, NSG, "nodes-nsg")
    got = {
        name: (x["priority"], x["access"], x["sourceAddressPrefix"], x["destinationAddressPrefix"])
        for name, x in rules(nsg).items()
    }
    assert got == expected_rules(nodes, peers), nsg.urn
    for name, x in rules(nsg).items():
        assert x["direction"] == "Inbound" and x["protocol"] == "*", (nsg.urn, name)
        assert (x["sourcePortRange"], x["destinationPortRange"]) == ("*", "*"), name
        assert x["description"], f"{name} has no description"
    subnet = named(r, SUBNET, "nodes")
    assert subnet.inputs["networkSecurityGroup"] == {"id": nsg.id}, subnet.urn
    assert subnet.inputs["serviceEndpoints"] == [{"service": "Microsoft.Storage.Global"}]
    assert depends_on(r, subnet, nsg), subnet.urn


@pytest.mark.parametrize("site", SITE_NAMES)
def test_node_subnet_nsg_admits_the_cluster_and_the_dr_link_and_denies_the_internet(
    site: str,
) -> None:
    r = site_run(site)
    check_nsg(r, nodes_cidr(site), {OTHER[site]: SITES[OTHER[site]][1]})
    assert named(r, NSG, "nodes-nsg").inputs["location"] == SITES[site][0]


def test_node_subnet_nsg_admits_a_gcp_peer_over_the_vpn() -> None:
    check_nsg(sts_run(), nodes_cidr("eus"), {"gcpe4": "10.26.0.0/16"})


def test_drill_node_subnet_nsg_admits_no_peer() -> None:
    r = drill_run()
    subnet = named(r, SUBNET, "nodes")
    check_nsg(r, subnet.inputs["addressPrefix"], {})


# --- storage accounts -------------------------------------------------------------------------


def open_with_bypass(x: Registration) -> None:
    # Not deny-by-default yet: cross-site dual writes, drill checksum reads and object
    # replication must reach the account until private endpoints exist (bucket.py).
    assert x.inputs["networkRuleSet"] == {
        "defaultAction": "Allow",
        "bypass": "AzureServices",
    }, x.urn


@pytest.mark.parametrize("site", SITE_NAMES)
def test_accounts_admit_networks_until_private_endpoints_exist(site: str) -> None:
    r = site_run(site)
    accounts = of_type(r, STORAGE_ACCOUNT)
    assert len(accounts) == 3
    for x in accounts:
        open_with_bypass(x)


def test_accounts_google_pulls_from_are_open_as_the_others() -> None:
    r = sts_run()
    for x in of_type(r, STORAGE_ACCOUNT):
        open_with_bypass(x)
