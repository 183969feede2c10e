"""The private path of an on-premises site's uploads into Azure (components/azure/private_blob.py),
under a recording monitor: a Blob private endpoint per replica account in its own subnet, the
privatelink zone that answers for them linked to the DR network, and the DNS resolver whose
fixed inbound address on-premises DNS forwards to."""

from __future__ import annotations

import pulumi
import pytest

from components.azure.private_blob import PrivateBlobPath, PrivateBlobPathArgs
from gpudr.app.offline.mocks import GpudrMocks, RecordingMonitor, Registration
from gpudr.contract.azure_onprem import upload_subnets

SUBSCRIPTION = "00000000-0000-0000-0000-0000000000aa"
GROUP = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg-dr"
VNET_ID = f"{GROUP}/providers/Microsoft.Network/virtualNetworks/gpudr-iad-training-eus"
ACCOUNTS = {
    c: f"{GROUP}/providers/Microsoft.Storage/storageAccounts/iad{c[:4]}"
    for c in ("checkpoints", "weights", "datasets")
}
ENDPOINT = "azure-native:network:PrivateEndpoint"
ZONE_GROUP = "azure-native:network:PrivateDnsZoneGroup"
ZONE = "azure-native:privatedns:PrivateZone"
ZONE_LINK = "azure-native:privatedns:VirtualNetworkLink"
RESOLVER = "azure-native:dnsresolver:DnsResolver"
INBOUND = "azure-native:dnsresolver:InboundEndpoint"
SUBNET = "azure-native:network:Subnet"
NSG = "azure-native:network:NetworkSecurityGroup"


@pytest.fixture
def monitor() -> RecordingMonitor:
    mocks = GpudrMocks(default_region="eastus")
    recording = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project="gpudr", stack="test", preview=True, monitor=recording)
    return recording


def registered(monitor: RecordingMonitor, typ: str) -> list[Registration]:
    return [r for r in monitor.registrations if r.type == typ]


def path(cidr: str = "10.52.0.0/16") -> PrivateBlobPath:
    return PrivateBlobPath(
        "t-uploads",
        PrivateBlobPathArgs(
            resource_group_name="rg-dr",
            location="eastus",
            network_name="gpudr-iad-training-eus",
            network_id=VNET_ID,
            network=pulumi.CustomResource("test:index:Network", "vnet", {}),
            cidr=cidr,
            onprem_cidr="10.50.0.0/16",
            accounts=ACCOUNTS,
            tags={"gpudr:system": "iad-training"},
        ),
    )


@pulumi.runtime.test
def test_each_replica_account_is_reached_by_a_blob_private_endpoint_named_by_the_zone(
    monitor: RecordingMonitor,
) -> pulumi.Output[None]:
    component = path()

    def check(endpoints: dict[str, str]) -> None:
        assert set(endpoints) == set(ACCOUNTS)
        subnets = {r.inputs["subnetName"]: r for r in registered(monitor, SUBNET)}
        assert subnets["blob-endpoints"].inputs["addressPrefix"] == "10.52.255.160/27"
        made = registered(monitor, ENDPOINT)
        assert len(made) == len(ACCOUNTS)
        for endpoint in made:
            (connection,) = endpoint.inputs["privateLinkServiceConnections"]
            assert connection["groupIds"] == ["blob"], endpoint.urn
            assert connection["privateLinkServiceId"] in ACCOUNTS.values(), endpoint.urn
            assert endpoint.inputs["subnet"]["id"] == subnets["blob-endpoints"].id, endpoint.urn
        (zone,) = registered(monitor, ZONE)
        assert zone.inputs["privateZoneName"] == "privatelink.blob.core.windows.net", zone.urn
        (link,) = registered(monitor, ZONE_LINK)
        assert link.inputs["virtualNetwork"]["id"] == VNET_ID, link.urn
        assert link.inputs["registrationEnabled"] is False, link.urn
        # other accounts' names (no record in this zone) resolve publicly, not NXDOMAIN
        assert link.inputs["resolutionPolicy"] == "NxDomainRedirect", link.urn
        groups = registered(monitor, ZONE_GROUP)
        # each endpoint's A record is kept in the zone by its own zone group
        assert sorted(g.inputs["privateEndpointName"] for g in groups) == sorted(
            e.outputs["name"] for e in made
        )
        for group in groups:
            (config,) = group.inputs["privateDnsZoneConfigs"]
            assert config["privateDnsZoneId"] == zone.id, group.urn

    return component.endpoints.apply(check)


@pulumi.runtime.test
def test_on_premises_dns_forwards_to_a_fixed_inbound_address_of_a_resolver_in_the_network(
    monitor: RecordingMonitor,
) -> pulumi.Output[None]:
    component = path()
    _, inbound_cidr, address = upload_subnets("10.52.0.0/16")

    def check(answer: str) -> None:
        assert answer == address == "10.52.255.148"
        (resolver,) = registered(monitor, RESOLVER)
        assert resolver.inputs["virtualNetwork"]["id"] == VNET_ID, resolver.urn
        (inbound,) = registered(monitor, INBOUND)
        (config,) = inbound.inputs["ipConfigurations"]
        assert config["privateIpAddress"] == address, inbound.urn
        assert config["privateIpAllocationMethod"] == "Static", inbound.urn
        subnets = {r.inputs["subnetName"]: r for r in registered(monitor, SUBNET)}
        dns = subnets["dns-inbound"]
        assert config["subnet"]["id"] == dns.id, inbound.urn
        assert dns.inputs["addressPrefix"] == inbound_cidr, dns.urn
        assert dns.inputs["delegations"] == [
            {"name": "dns-resolver", "serviceName": "Microsoft.Network/dnsResolvers"}
        ], dns.urn

    return component.inbound_address.apply(check)


@pytest.mark.parametrize(
    ("cidr", "endpoints", "inbound", "address"),
    [
        ("10.52.0.0/16", "10.52.255.160/27", "10.52.255.144/28", "10.52.255.148"),
        ("10.8.0.0/20", "10.8.15.160/27", "10.8.15.144/28", "10.8.15.148"),
        ("192.168.4.0/24", "192.168.4.160/27", "192.168.4.144/28", "192.168.4.148"),
    ],
)
def test_the_upload_subnets_sit_just_below_the_gateway_subnet(
    cidr: str, endpoints: str, inbound: str, address: str
) -> None:
    assert upload_subnets(cidr) == (endpoints, inbound, address)


@pytest.mark.parametrize("cidr", ["10.52.0.0/25", "10.52.0.0/28"])
def test_a_range_too_small_for_the_path_is_refused(cidr: str) -> None:
    with pytest.raises(ValueError, match="use a /24 or larger"):
        upload_subnets(cidr)


@pulumi.runtime.test
def test_the_subnets_admit_https_and_dns_from_on_premises_and_nothing_else(
    monitor: RecordingMonitor,
) -> pulumi.Output[None]:
    component = path()
    endpoints, inbound, _ = upload_subnets("10.52.0.0/16")

    def check(_: object) -> None:
        (nsg,) = registered(monitor, NSG)
        rules = {r["name"]: r for r in nsg.inputs["securityRules"]}
        https = rules["allow-onprem-https-to-endpoints"]
        assert (https["sourceAddressPrefix"], https["destinationAddressPrefix"]) == (
            "10.50.0.0/16",
            endpoints,
        ), nsg.urn
        assert (https["protocol"], https["destinationPortRange"]) == ("Tcp", "443"), nsg.urn
        dns = rules["allow-onprem-dns-to-resolver"]
        assert (dns["destinationAddressPrefix"], dns["destinationPortRange"]) == (inbound, "53")
        deny = rules["deny-internet-inbound"]
        assert (deny["access"], deny["sourceAddressPrefix"]) == ("Deny", "Internet"), nsg.urn
        assert max(r["priority"] for r in rules.values()) == deny["priority"], nsg.urn
        # On premises is inside the VirtualNetwork tag over ExpressRoute: Azure's default
        # AllowVnetInBound (65000) would admit every port from there. Denied after the allows.
        network = rules["deny-network-inbound"]
        assert (network["access"], network["sourceAddressPrefix"]) == ("Deny", "VirtualNetwork")
        assert (network["destinationAddressPrefix"], network["destinationPortRange"]) == ("*", "*")
        assert network["protocol"] == "*", nsg.urn
        allows = [r["priority"] for r in rules.values() if r["access"] == "Allow"]
        assert max(allows) < network["priority"] < deny["priority"], nsg.urn
        assert len({r["priority"] for r in rules.values()}) == len(rules), nsg.urn
        for subnet in registered(monitor, SUBNET):
            assert subnet.inputs["networkSecurityGroup"]["id"] == nsg.id, subnet.urn
        (endpoint_subnet,) = [
            s for s in registered(monitor, SUBNET) if s.inputs["subnetName"] == "blob-endpoints"
        ]
        # without network policies an NSG does not apply to private endpoints
        assert endpoint_subnet.inputs["privateEndpointNetworkPolicies"] == "Enabled"

    return component.inbound_address.apply(check)
