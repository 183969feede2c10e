"""The AWS -> Azure DR link, run through the real program under mocks for both stacks and
asserted on what each registered: the Azure DR site's active-active gateway (its anchor), and
the AWS primary's customer gateways, VPN connections on its transit gateway, and the local
network gateways and connections it declares next to the DR site's gateway.

The site configs come from the planner (a plan whose weights are dual-written over the VPN), so
the link the tests see is the one `gpudr generate` writes."""

from __future__ import annotations

import copy
import ipaddress

import pytest

from components.azure.vpn import AWS_TUNNEL_CIDRS
from gpudr.app.offline.mocks import GpudrMocks, Registration
from gpudr.app.offline.run import StackRun, run_stack
from gpudr.build.stackconfig import stack_config_values
from gpudr.core.design import Design, design
from gpudr.core.spec import parse_plan
from tests.components.azure.test_cross_cloud import secret
from tests.gpudr.core.test_design_links import AWS_AZURE

GATEWAY = "azure-native:network:VirtualNetworkGateway"
PUBLIC_IP = "azure-native:network:PublicIPAddress"
SUBNET = "azure-native:network:Subnet"
LOCAL_GATEWAY = "azure-native:network:LocalNetworkGateway"
CONNECTION = "azure-native:network:VirtualNetworkGatewayConnection"
CGW = "aws:ec2/customerGateway:CustomerGateway"
VPN = "aws:ec2/vpnConnection:VpnConnection"
PASSWORD = "random:index/randomPassword:RandomPassword"
# Microsoft's guide "How to connect AWS and Azure using a BGP-enabled VPN gateway": per Azure
# instance, the AWS tunnels' inside CIDRs; AWS takes .1 (.5), Azure .2 (.6).
GUIDE = {
    0: (("169.254.21.0/30", "169.254.21.2"), ("169.254.22.0/30", "169.254.22.2")),
    1: (("169.254.21.4/30", "169.254.21.6"), ("169.254.22.4/30", "169.254.22.6")),
}
# Nothing in the primary's region (us-east-1) is reachable when the DR stack must deploy.
PRIMARY_REGION = AWS_AZURE["sites"]["use1"]["region"]


def _design() -> Design:
    raw = copy.deepcopy(AWS_AZURE)
    raw["data"]["weights"]["size"] = "720GB"  # 2 Gbps with headroom: VpnGw3AZ
    return design(parse_plan(raw))


_RUNS: dict[str, StackRun] = {}


def stack(site: str, mocks: GpudrMocks | None = None) -> StackRun:
    d = _design()
    cfg = d.plan.sites[site]
    if mocks is not None:
        return run_stack(site, stack_config_values(d, cfg), mocks)
    if site not in _RUNS:
        region = cfg.region
        _RUNS[site] = run_stack(
            site, stack_config_values(d, cfg), GpudrMocks(default_region=region)
        )
    return _RUNS[site]


def of_type(r: StackRun, typ: str) -> list[Registration]:
    return sorted((x for x in r.resources if x.type == typ), key=lambda x: x.urn)


def test_the_dr_site_owns_an_active_active_az_gateway_with_the_aws_tunnels_apipa_addresses() -> (
    None
):
    r = stack("wus")
    (gateway,) = of_type(r, GATEWAY)
    i = gateway.inputs
    assert i["virtualNetworkGatewayName"] == "gpudr-xaz-wus-vpngw", gateway.urn  # found by name
    assert i["resourceGroupName"] == "gpudr-xaz-wus", gateway.urn
    assert i["sku"] == {"name": "VpnGw3AZ", "tier": "VpnGw3AZ"}, gateway.urn
    assert (i["gatewayType"], i["vpnType"], i["vpnGatewayGeneration"]) == (
        "Vpn",
        "RouteBased",
        "Generation2",
    )
    assert i["activeActive"] is True and i["enableBgp"] is True, gateway.urn
    bgp = i["bgpSettings"]
    assert bgp["asn"] == 64601, gateway.urn  # the DR site's, not AWS's 64600
    assert [
        (p["ipconfigurationId"].rsplit("/", 1)[1], p["customBgpIpAddresses"])
        for p in bgp["bgpPeeringAddresses"]
    ] == [
        ("ipconfig-0", [GUIDE[0][0][1], GUIDE[0][1][1]]),
        ("ipconfig-1", [GUIDE[1][0][1], GUIDE[1][1][1]]),
    ]
    assert all(p["ipconfigurationId"].startswith(gateway.id) for p in bgp["bgpPeeringAddresses"])
    ips = of_type(r, PUBLIC_IP)
    assert [ip.inputs["publicIpAddressName"] for ip in ips] == [
        "gpudr-xaz-wus-vpngw-0",
        "gpudr-xaz-wus-vpngw-1",
    ]
    for ip in ips:
        assert ip.inputs["zones"] == ["1", "2", "3"], ip.urn  # zone-redundant
        assert ip.inputs["publicIPAllocationMethod"] == "Static", ip.urn
    assert any(x.inputs["subnetName"] == "GatewaySubnet" for x in of_type(r, SUBNET))
    # The DR stack joins nothing: no tunnel, no key, no AWS resource of the link.
    assert not of_type(r, CONNECTION) and not of_type(r, LOCAL_GATEWAY)
    assert not of_type(r, PASSWORD) and not of_type(r, VPN)


def test_the_dr_stack_plans_with_the_primary_region_unreachable() -> None:
    r = stack(
        "wus", GpudrMocks(default_region="westus", unreachable_regions=frozenset({PRIMARY_REGION}))
    )
    assert len(of_type(r, GATEWAY)) == 1


def test_the_primary_joins_the_gateway_with_two_vpn_connections_on_its_transit_gateway() -> None:
    r, dr = stack("use1"), stack("wus")
    dr_ips = [ip.outputs["ipAddress"] for ip in of_type(dr, PUBLIC_IP)]
    cgws = of_type(r, CGW)
    assert [c.inputs["ipAddress"] for c in cgws] == dr_ips  # one per Azure instance, in order
    assert all(c.inputs["bgpAsn"] == "64601" for c in cgws)
    vpns = of_type(r, VPN)
    assert len(vpns) == 2
    (tgw,) = [x for x in r.resources if x.type.endswith("transitGateway:TransitGateway")]
    for n, v in enumerate(vpns):
        i = v.inputs
        assert i["customerGatewayId"] == cgws[n].id, v.urn
        assert i["transitGatewayId"] == tgw.id and i["region"] == PRIMARY_REGION, v.urn
        assert i["staticRoutesOnly"] is False and i["type"] == "ipsec.1", v.urn
        assert (i["tunnel1InsideCidr"], i["tunnel2InsideCidr"]) == (GUIDE[n][0][0], GUIDE[n][1][0])
        for t in ("tunnel1", "tunnel2"):
            assert i[f"{t}IkeVersions"] == ["ikev2"], v.urn
            assert i[f"{t}Phase1EncryptionAlgorithms"] == ["AES256"], v.urn
            assert i[f"{t}Phase1IntegrityAlgorithms"] == ["SHA2-256"], v.urn
            assert i[f"{t}Phase1DhGroupNumbers"] == [14], v.urn
            assert i[f"{t}Phase2EncryptionAlgorithms"] == ["AES256-GCM-16"], v.urn
            assert i[f"{t}Phase2DhGroupNumbers"] == [14], v.urn
            assert i[f"{t}Phase2LifetimeSeconds"] == 3600, v.urn
            assert i[f"{t}StartupAction"] == "start", v.urn
            assert secret(i[f"{t}PresharedKey"]), v.urn  # generated, and a secret in state
    # Letters only: AWS refuses a key starting with 0, and takes no other special character.
    keys = of_type(r, PASSWORD)
    assert len(keys) == 4
    for k in keys:
        assert (k.inputs["length"], k.inputs["special"], k.inputs["numeric"]) == (32, False, False)


def test_inside_cidrs_are_in_azures_apipa_range_and_outside_awss_reserved_ones() -> None:
    low, high = ipaddress.ip_address("169.254.21.0"), ipaddress.ip_address("169.254.22.255")
    reserved = [ipaddress.ip_network(f"169.254.{n}.0/30") for n in range(6)]
    reserved.append(ipaddress.ip_network("169.254.169.252/30"))
    cidrs = [ipaddress.ip_network(c) for pair in AWS_TUNNEL_CIDRS for c in pair]
    assert len(set(cidrs)) == 4
    assert all(c.prefixlen == 30 and low <= c[0] and c[-1] <= high for c in cidrs)
    assert not any(c.overlaps(x) for c in cidrs for x in reserved)


def test_azure_side_of_each_tunnel_is_declared_next_to_the_dr_gateway() -> None:
    r, dr = stack("use1"), stack("wus")
    (gateway,) = of_type(dr, GATEWAY)
    vpns = of_type(r, VPN)
    locals_ = sorted(of_type(r, LOCAL_GATEWAY), key=lambda x: int(x.name.rsplit("-", 1)[1]))
    connections = sorted(of_type(r, CONNECTION), key=lambda x: int(x.name.rsplit("-", 1)[1]))
    assert len(locals_) == len(connections) == 4
    for index, (local, conn) in enumerate(zip(locals_, connections, strict=True)):
        instance, tunnel = divmod(index, 2)
        vpn, t = vpns[instance].outputs, f"tunnel{tunnel + 1}"
        for x in (local, conn):
            # In the DR site's resource group and region, next to its gateway.
            assert x.inputs["resourceGroupName"] == "gpudr-xaz-wus", x.urn
            assert x.inputs["location"] == "westus", x.urn
        assert local.inputs["gatewayIpAddress"] == vpn[f"{t}Address"], local.urn
        assert local.inputs["bgpSettings"] == {
            "asn": 64600,  # the transit gateway's
            "bgpPeeringAddress": vpn[f"{t}VgwInsideAddress"],
        }, local.urn
        assert "addressPrefixes" not in (local.inputs.get("localNetworkAddressSpace") or {})
        c = conn.inputs
        assert c["virtualNetworkGateway1"] == {"id": gateway.id}, conn.urn  # found by name
        assert c["localNetworkGateway2"] == {"id": local.id}, conn.urn
        assert (c["connectionType"], c["connectionProtocol"]) == ("IPsec", "IKEv2"), conn.urn
        assert c["enableBgp"] is True and c["usePolicyBasedTrafficSelectors"] is False
        assert secret(c["sharedKey"]), conn.urn
        assert c["sharedKey"]["value"] == vpns[instance].inputs[f"{t}PresharedKey"]["value"]
        assert c["ipsecPolicies"] == [
            {
                "ikeEncryption": "AES256",
                "ikeIntegrity": "SHA256",
                "dhGroup": "DHGroup14",
                "ipsecEncryption": "GCMAES256",
                "ipsecIntegrity": "GCMAES256",
                "pfsGroup": "PFS2048",  # DH group 14 in Azure's table
                "saLifeTimeSeconds": 3600,  # AWS's phase 2 maximum
                "saDataSizeKilobytes": 102400000,
            }
        ], conn.urn
        # Azure's address in this tunnel's /30 on the instance it reaches; the other instance
        # names its first address (Microsoft's guide), never used by this tunnel.
        own = GUIDE[instance][tunnel][1]
        other = GUIDE[1 - instance][0][1]
        assert [
            (x["ipConfigurationId"], x["customBgpIpAddress"])
            for x in c["gatewayCustomBgpIpAddresses"]
        ] == [
            (f"{gateway.id}/ipConfigurations/ipconfig-{i}", own if i == instance else other)
            for i in range(2)
        ], conn.urn
        cidr = ipaddress.ip_network(GUIDE[instance][tunnel][0])
        assert ipaddress.ip_address(own) in cidr


def test_a_link_with_other_than_four_tunnels_is_refused() -> None:
    d = _design()
    for site in ("use1", "wus"):
        values = stack_config_values(d, d.plan.sites[site])
        cfg = values["gpudr:site"]
        cfg["links"] = [dict(link, tunnels=2) for link in cfg["links"]]
        with pytest.raises(Exception, match="plans 2 tunnels"):
            run_stack(site, values, GpudrMocks(default_region=d.plan.sites[site].region))


def test_the_dr_anchor_needs_its_gateway_sku() -> None:
    d = _design()
    values = stack_config_values(d, d.plan.sites["wus"])
    values["gpudr:site"]["links"] = [
        dict(link, gateway_sku=None) for link in values["gpudr:site"]["links"]
    ]
    with pytest.raises(Exception, match="no gateway_sku"):
        run_stack("wus", values, GpudrMocks(default_region="westus"))
