"""The Azure primary's side of Azure -> GCP DR, run through the real program under mocks and
asserted on what it registered: the federated reader identity Storage Transfer Service signs in
as, and the VPN between the Azure gateway and the GCP DR site's HA VPN gateway.

The site config is built by hand (the Azure primary of tests/components/azure/test_azure_site.py,
here protected by a GCP site in us-east4 that pulls checkpoints and datasets), so these tests
pin the components independently of the planner."""

from __future__ import annotations

import dataclasses
import ipaddress
from typing import Any

import pulumi
import pytest

from components.azure.arm import STORAGE_BLOB_DATA_READER
from components.azure.network import gateway_subnet_cidr, nodes_subnet_cidr
from components.azure.site import AzureSite, AzureSiteArgs
from gpudr.app.offline import mocks_gcp
from gpudr.app.offline.mocks import Registration
from gpudr.app.offline.mocks_azure import OFFLINE_SUBSCRIPTION, OFFLINE_TENANT
from gpudr.app.offline.run import StackRun
from gpudr.contract.site import AzureStsReader, LinkConfig, PeerConfig, SiteConfig
from tests.components.azure.test_azure_site import (
    IDENTITY,
    REPLICATED,
    ROLE,
    STORAGE_ACCOUNT,
    account,
    depends_on,
    named,
    of_type,
    resource_group,
    run,
    site_config,
)

DR_PROJECT = "gpudr-offline-dr"
DR_REGION = "us-east4"
DR_NETWORK = "gpudr-llm-gcpe4"
DR_ASN = 64601
SITE_ASN = 64600  # site_config's transit_gateway_asn
SKU = "VpnGw2AZ"
READER = "gpudr-llm-gcpe4-sts-reader"
SOURCES = tuple(account("eus", c) for c in REPLICATED)  # checkpoints, datasets

FEDERATION = "azure-native:managedidentity:FederatedIdentityCredential"
SUBNET = "azure-native:network:Subnet"
PUBLIC_IP = "azure-native:network:PublicIPAddress"
GATEWAY = "azure-native:network:VirtualNetworkGateway"
LOCAL_GATEWAY = "azure-native:network:LocalNetworkGateway"
CONNECTION = "azure-native:network:VirtualNetworkGatewayConnection"
PASSWORD = "random:index/randomPassword:RandomPassword"
EXTERNAL_GATEWAY = "gcp:compute/externalVpnGateway:ExternalVpnGateway"
TUNNEL = "gcp:compute/vPNTunnel:VPNTunnel"
ROUTER_INTERFACE = "gcp:compute/routerInterface:RouterInterface"
ROUTER_PEER = "gcp:compute/routerPeer:RouterPeer"

# Google's guide "Create HA VPN connections between Google Cloud and Azure": per tunnel,
# (Azure's BGP address, Google's), in Azure's APIPA range 169.254.21.0 - 169.254.22.255.
BGP = (("169.254.21.1", "169.254.21.2"), ("169.254.22.1", "169.254.22.2"))
GCMAES256_POLICY = {
    "ikeEncryption": "AES256",
    "ikeIntegrity": "SHA256",
    "dhGroup": "DHGroup14",
    "ipsecEncryption": "GCMAES256",
    "ipsecIntegrity": "GCMAES256",
    "pfsGroup": "PFS14",
    "saLifeTimeSeconds": 10800,
    "saDataSizeKilobytes": 102400000,
}


def primary(**changes: Any) -> SiteConfig:
    """The Azure primary, its checkpoints and datasets pulled by a GCP DR site over a VPN."""
    base = site_config("eus")
    buckets = tuple(
        dataclasses.replace(
            b, replication=(), mechanism="sts" if b.data_class in REPLICATED else b.mechanism
        )
        for b in base.buckets
    )
    cfg = dataclasses.replace(
        base,
        buckets=buckets,
        peers=(
            PeerConfig(
                site="gcpe4",
                region=DR_REGION,
                role="dr",
                cidr="10.26.0.0/16",
                account=None,
                transit_gateway_name="",
                cloud="gcp",
                project=DR_PROJECT,
                network_name=DR_NETWORK,
                asn=DR_ASN,
            ),
        ),
        links=(
            LinkConfig(
                kind="vpn",
                peer_site="gcpe4",
                capacity_gbps=2.5,
                required_gbps=0.7,
                headroom=1.25,
                tunnels=2,
                gateway_sku=SKU,
            ),
        ),
        azure_sts_readers=(
            AzureStsReader(
                identity_name=READER,
                dr_site="gcpe4",
                gcp_project=DR_PROJECT,
                storage_accounts=SOURCES,
            ),
        ),
    )
    return dataclasses.replace(cfg, **changes)


_RUN: list[StackRun] = []


def standby() -> StackRun:
    if not _RUN:
        _RUN.append(run(primary()))
    return _RUN[0]


def secret(value: Any) -> bool:
    """Whether a recorded input was sent as a secret (the engine's secret signature)."""
    return isinstance(value, dict) and value.get(pulumi.runtime.rpc._special_sig_key) == (
        pulumi.runtime.rpc._special_secret_sig
    )


def by_index(r: StackRun, typ: str) -> list[Registration]:
    """Resources of one type, in tunnel order (their names end in -0, -1)."""
    return sorted(of_type(r, typ), key=lambda x: x.name)


def ha_vpn() -> dict[str, Any]:
    """The DR site's HA VPN gateway, as the mocks answer its lookup by name."""
    return mocks_gcp.lookup(
        "gcp:compute/getHcVpnGateway:getHcVpnGateway",
        {"name": f"{DR_NETWORK}-havpn", "project": DR_PROJECT, "region": DR_REGION},
    )


# --- the federated reader ---------------------------------------------------------------------


def test_reader_identity_trusts_only_the_dr_projects_transfer_agent() -> None:
    r = standby()
    identity = named(r, IDENTITY, "gcpe4-reader")
    assert identity.inputs["resourceName"] == READER, identity.urn
    assert identity.inputs["location"] == "eastus", identity.urn
    (federation,) = of_type(r, FEDERATION)
    agent = mocks_gcp.lookup(
        "gcp:storage/getTransferProjectServiceAccount:getTransferProjectServiceAccount",
        {"project": DR_PROJECT},
    )
    assert federation.inputs["issuer"] == "https://accounts.google.com", federation.urn
    assert federation.inputs["subject"] == agent["subjectId"], federation.urn
    assert federation.inputs["audiences"] == ["api://AzureADTokenExchange"], federation.urn
    assert federation.inputs["resourceName"] == identity.outputs["name"], federation.urn
    assert depends_on(r, federation, identity), federation.urn
    # the subject is looked up in the DR project, not guessed
    token = "gcp:storage/getTransferProjectServiceAccount:getTransferProjectServiceAccount"
    assert any(t == token and a.get("project") == DR_PROJECT for t, a in r.calls), r.calls


def test_reader_may_only_read_blobs_in_the_source_accounts() -> None:
    r = standby()
    identity = named(r, IDENTITY, "gcpe4-reader")
    grants = [
        x for x in of_type(r, ROLE) if x.inputs["principalId"] == identity.outputs["principalId"]
    ]
    accounts = {x.inputs["accountName"]: x for x in of_type(r, STORAGE_ACCOUNT)}
    assert sorted(x.inputs["scope"] for x in grants) == sorted(accounts[a].id for a in SOURCES), [
        x.urn for x in grants
    ]
    for x in grants:
        assert x.inputs["roleDefinitionId"] == (
            f"/subscriptions/{OFFLINE_SUBSCRIPTION}/providers/Microsoft.Authorization/"
            f"roleDefinitions/{STORAGE_BLOB_DATA_READER}"
        ), x.urn
        assert x.inputs["principalType"] == "ServicePrincipal", x.urn
        account_ = next(a for a in accounts.values() if a.id == x.inputs["scope"])
        assert depends_on(r, x, account_), x.urn
    # the weights account is dual-written, never pulled: no grant on it
    assert accounts[account("eus", "weights")].id not in {x.inputs["scope"] for x in grants}


def test_no_sas_token_account_key_or_secret_is_made_for_the_reader() -> None:
    r = standby()
    assert not [t for t, _ in r.calls if "list" in t.lower()], r.calls  # listKeys, listSAS...
    for x in of_type(r, STORAGE_ACCOUNT):
        assert x.inputs["allowSharedKeyAccess"] is False, x.urn
    # the only secrets the stack holds are the VPN keys
    assert {x.type for x in r.resources if "password" in x.type.lower()} == {PASSWORD}


def test_a_reader_account_outside_the_site_is_refused() -> None:
    (reader,) = primary().azure_sts_readers
    cfg = primary(
        azure_sts_readers=(dataclasses.replace(reader, storage_accounts=("gpudrelsewhere",)),)
    )
    with pytest.raises(ValueError, match="gpudrelsewhere are not data accounts of this site"):
        run(cfg)


@pulumi.runtime.test
def test_transfer_credentials_name_the_reader_for_each_dr_site() -> pulumi.Output[None]:
    site = AzureSite("eus", AzureSiteArgs(config=primary(), failover=False))

    def check(args: list[Any]) -> None:
        urn, credentials = args
        assert list(credentials) == ["gcpe4"], urn
        assert set(credentials["gcpe4"]) == {"azure_sts_client_id", "azure_tenant_id"}, urn
        assert credentials["gcpe4"]["azure_tenant_id"] == OFFLINE_TENANT, urn
        assert len(credentials["gcpe4"]["azure_sts_client_id"]) == 36, urn  # a GUID

    return pulumi.Output.all(site.urn, site.transfer_credentials).apply(check)


@pulumi.runtime.test
def test_transfer_credentials_are_empty_without_a_reader() -> pulumi.Output[None]:
    site = AzureSite("wus", AzureSiteArgs(config=site_config("wus"), failover=False))
    return site.transfer_credentials.apply(lambda c: None if c == {} else pytest.fail(str(c)))


# --- the VPN ----------------------------------------------------------------------------------


def test_gateway_subnet_is_reserved_after_the_node_subnet() -> None:
    r = standby()
    subnets = {x.inputs["subnetName"]: x for x in of_type(r, SUBNET)}
    gateway_subnet = subnets["GatewaySubnet"]
    cidr = site_config("eus").cidr
    assert gateway_subnet.inputs["addressPrefix"] == gateway_subnet_cidr(cidr) == "10.10.255.192/26"
    assert not ipaddress.ip_network(gateway_subnet_cidr(cidr)).overlaps(
        ipaddress.ip_network(nodes_subnet_cidr(cidr))
    )
    assert gateway_subnet.inputs["virtualNetworkName"] == "gpudr-llm-eus", gateway_subnet.urn
    # Azure refuses concurrent changes to one virtual network
    assert depends_on(r, gateway_subnet, subnets["aks-nodes"]), gateway_subnet.urn


def test_gateway_subnet_needs_room_outside_the_node_subnet() -> None:
    with pytest.raises(ValueError, match="larger than a /20"):
        gateway_subnet_cidr("10.10.0.0/20")
    with pytest.raises(ValueError, match="larger than a /20"):
        run(primary(cidr="10.10.0.0/20"))


def test_vpn_gateway_is_active_active_route_based_with_the_planned_sku_and_bgp() -> None:
    r = standby()
    (gateway,) = of_type(r, GATEWAY)
    i = gateway.inputs
    assert (i["gatewayType"], i["vpnType"], i["vpnGatewayGeneration"]) == (
        "Vpn",
        "RouteBased",
        "Generation2",
    ), gateway.urn
    assert i["sku"] == {"name": SKU, "tier": SKU}, gateway.urn
    assert i["activeActive"] is True and i["enableBgp"] is True, gateway.urn
    assert i["location"] == "eastus", gateway.urn
    subnet = next(x for x in of_type(r, SUBNET) if x.inputs["subnetName"] == "GatewaySubnet")
    ips = by_index(r, PUBLIC_IP)
    configs = i["ipConfigurations"]
    assert [c["publicIPAddress"]["id"] for c in configs] == [x.id for x in ips], gateway.urn
    assert {c["subnet"]["id"] for c in configs} == {subnet.id}, gateway.urn
    # custom APIPA addresses, one per instance, on the gateway's own IP configurations
    bgp = i["bgpSettings"]
    assert bgp["asn"] == SITE_ASN, gateway.urn
    assert [
        (p["ipconfigurationId"], p["customBgpIpAddresses"]) for p in bgp["bgpPeeringAddresses"]
    ] == [
        (f"{gateway.id}/ipConfigurations/{c['name']}", [BGP[n][0]]) for n, c in enumerate(configs)
    ]
    for x in ips:
        assert x.inputs["sku"] == {"name": "Standard", "tier": "Regional"}, x.urn
        assert x.inputs["publicIPAllocationMethod"] == "Static", x.urn
        assert x.inputs["zones"] == ["1", "2", "3"], x.urn  # zone-redundant


def test_two_tunnels_one_per_ha_vpn_interface_to_each_azure_instance() -> None:
    r = standby()
    ips = by_index(r, PUBLIC_IP)
    (external,) = of_type(r, EXTERNAL_GATEWAY)
    assert external.inputs["redundancyType"] == "TWO_IPS_REDUNDANCY", external.urn
    assert external.inputs["interfaces"] == [
        {"id": n, "ipAddress": x.outputs["ipAddress"]} for n, x in enumerate(ips)
    ], external.urn
    assert external.inputs["project"] == DR_PROJECT, external.urn
    tunnels = by_index(r, TUNNEL)
    assert len(tunnels) == 2, [x.urn for x in tunnels]
    for n, t in enumerate(tunnels):
        i = t.inputs
        assert i["vpnGateway"] == ha_vpn()["selfLink"], t.urn
        assert i["vpnGatewayInterface"] == n == i["peerExternalGatewayInterface"], t.urn
        assert i["peerExternalGateway"] == external.outputs["selfLink"], t.urn
        assert i["ikeVersion"] == 2, t.urn
        assert i["router"] == f"{DR_NETWORK}-router", t.urn
        assert (i["project"], i["region"]) == (DR_PROJECT, DR_REGION), t.urn


def test_bgp_over_link_local_30s_on_both_ends() -> None:
    r = standby()
    tunnels = by_index(r, TUNNEL)
    interfaces = by_index(r, ROUTER_INTERFACE)
    peers = by_index(r, ROUTER_PEER)
    locals_ = by_index(r, LOCAL_GATEWAY)
    assert len(interfaces) == len(peers) == len(locals_) == 2
    for n, (azure_ip, google_ip) in enumerate(BGP):
        interface, peer, local = interfaces[n], peers[n], locals_[n]
        assert interface.inputs["ipRange"] == f"{google_ip}/30", interface.urn
        assert interface.inputs["vpnTunnel"] == tunnels[n].outputs["name"], interface.urn
        assert ipaddress.ip_address(azure_ip) in ipaddress.ip_network(f"{google_ip}/30", False)
        assert peer.inputs["peerIpAddress"] == azure_ip, peer.urn
        assert peer.inputs["peerAsn"] == SITE_ASN, peer.urn
        assert peer.inputs["interface"] == interface.outputs["name"], peer.urn
        assert peer.inputs["router"] == f"{DR_NETWORK}-router", peer.urn
        # Azure's view of HA VPN interface n: its address and the Cloud Router's BGP speaker
        assert local.inputs["gatewayIpAddress"] == ha_vpn()["vpnInterfaces"][n]["ipAddress"]
        assert local.inputs["bgpSettings"] == {"asn": DR_ASN, "bgpPeeringAddress": google_ip}
        assert local.inputs["location"] == "eastus", local.urn


def test_connections_use_bgp_ikev2_and_gcmaes256() -> None:
    r = standby()
    (gateway,) = of_type(r, GATEWAY)
    locals_ = by_index(r, LOCAL_GATEWAY)
    connections = by_index(r, CONNECTION)
    assert len(connections) == 2, [x.urn for x in connections]
    for n, c in enumerate(connections):
        i = c.inputs
        assert (i["connectionType"], i["connectionProtocol"]) == ("IPsec", "IKEv2"), c.urn
        assert i["enableBgp"] is True, c.urn
        assert i["usePolicyBasedTrafficSelectors"] is False, c.urn
        assert i["virtualNetworkGateway1"] == {"id": gateway.id}, c.urn
        assert i["localNetworkGateway2"] == {"id": locals_[n].id}, c.urn
        assert i["ipsecPolicies"] == [GCMAES256_POLICY], c.urn
        assert [x["customBgpIpAddress"] for x in i["gatewayCustomBgpIpAddresses"]] == [
            BGP[0][0],
            BGP[1][0],
        ], c.urn


def test_each_tunnels_shared_key_is_generated_and_sent_to_both_ends_as_a_secret() -> None:
    r = standby()
    passwords = by_index(r, PASSWORD)
    assert len(passwords) == 2
    for n, (tunnel, connection) in enumerate(
        zip(by_index(r, TUNNEL), by_index(r, CONNECTION), strict=True)
    ):
        password = passwords[n]
        assert password.inputs["length"] >= 32 and password.inputs["special"] is False
        assert secret(tunnel.inputs["sharedSecret"]), tunnel.urn
        assert secret(connection.inputs["sharedKey"]), connection.urn
        assert tunnel.property_dependencies["sharedSecret"] == [password.urn], tunnel.urn
        assert connection.property_dependencies["sharedKey"] == [password.urn], connection.urn


def test_the_dr_sites_anchors_are_looked_up_not_declared() -> None:
    r = standby()
    declared = {x.type for x in r.resources}
    assert "gcp:compute/haVpnGateway:HaVpnGateway" not in declared
    assert "gcp:compute/router:Router" not in declared
    gcp = [x for x in r.resources if x.type.startswith("gcp:")]
    assert len(gcp) == 1 + 2 * 3, [x.urn for x in gcp]  # external gateway; tunnel, if, peer
    for x in gcp:
        assert x.inputs["project"] == DR_PROJECT, x.urn
        assert x.inputs.get("region", DR_REGION) == DR_REGION, x.urn


def test_azure_resources_stay_in_the_primarys_group_and_region() -> None:
    r = standby()
    for x in r.resources:
        if x.type.startswith("azure-native:network:") and "location" in x.inputs:
            assert x.inputs["location"] == "eastus", x.urn
            assert x.inputs["resourceGroupName"] == resource_group("eus"), x.urn


def test_vpn_only_from_an_azure_primary() -> None:
    """Nothing replicates into Azure from another cloud: there is no DR-side anchor on Azure."""
    with pytest.raises(ValueError, match="only from an Azure primary to a GCP DR site"):
        run(primary(role="dr"))


def test_no_vpn_link_no_gateway_and_the_reader_still_stands() -> None:
    r = run(primary(links=()))
    assert of_type(r, GATEWAY) == [] and of_type(r, TUNNEL) == []
    assert len(of_type(r, FEDERATION)) == 1


def test_vpn_to_a_non_gcp_peer_or_with_other_tunnel_counts_is_refused() -> None:
    (peer,) = primary().peers
    (link,) = primary().links
    with pytest.raises(ValueError, match="GCP DR site"):
        run(primary(peers=(dataclasses.replace(peer, cloud="aws"),)))
    with pytest.raises(ValueError, match="plans 4 tunnels"):
        run(primary(links=(dataclasses.replace(link, tunnels=4),)))
    with pytest.raises(ValueError, match="no gateway_sku"):
        run(primary(links=(dataclasses.replace(link, gateway_sku=None),)))
