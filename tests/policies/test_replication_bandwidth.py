"""replication-bandwidth: needs recomputed from tags against quotas and DR links."""

from __future__ import annotations

from typing import Any

import pytest

from gpudr.contract.tags import Tag, gcp_labels
from policies.common import (
    AWS_VPN_CONNECTION,
    AZ_VNET_PEERING,
    AZ_VPN_CONNECTION,
    AZ_VPN_GATEWAY,
    DX_CONNECTION,
    GCP_INTERCONNECT,
    GCP_INTERCONNECT_ATTACHMENT,
    GCP_VPN_TUNNEL,
    TGW_PEERING,
)
from policies.replication_bandwidth import replication_bandwidth
from tests.policies.builders import AZURE_CHECKPOINTS, CHECKPOINTS, DATASETS, WEIGHTS, azure, s3
from tests.policies.builders import gcs as gcs_bucket
from tests.policies.harness import Res, check, run_stack

# 3 TB of weights published within 1 h: 6.67 Gbps, 8.33 Gbps with headroom.
BIG_WEIGHTS = {**WEIGHTS, "burst-bytes": "3000000000000"}


def bucket(facts: dict[str, str], name: str = "checkpoints") -> Res:
    return s3(name, facts)["bucket"]


@pytest.mark.parametrize(
    ("facts", "config", "expected"),
    [
        # 790 Mbps (2 TB x 0.4 / 3 every 45 min) x 1.25 = 988 Mbps
        pytest.param({}, None, None, id="rtc-within-asserted-5-gbps"),
        pytest.param({"quota-mbps": "1000"}, None, None, id="rtc-within-1-gbps"),
        pytest.param({"quota-mbps": "900"}, None, "above the 900 Mbps", id="rtc-above-quota"),
        pytest.param(
            {"quota-mbps": "900"}, {"headroom": 1.1}, None, id="rtc-fits-with-less-headroom"
        ),
        pytest.param(
            {"quota-mbps": "900", "required-mbps": "1.000"},
            None,
            "988 Mbps with headroom",
            id="recomputed-not-read-from-required-mbps",
        ),
        # RPO 1h15m: the 45 min interval leaves 30 min per checkpoint: 1.19 Gbps
        pytest.param(
            {"rpo-s": "4500", "quota-mbps": "1000"},
            None,
            "need 1.19 Gbps",
            id="tight-rpo-raises-the-need",
        ),
        pytest.param(
            {"quota-mbps": None, "steady-kbps": "900000"},
            None,
            "above the 1.00 Gbps rate",
            id="rtc-default-quota-1-gbps",
        ),
        pytest.param(
            {"dr-role": "data-replica", "quota-mbps": "100"}, None, None, id="rtc-replica-side"
        ),
        pytest.param(
            {"dr-role": "data-replica", "mechanism": "datasync", "quota-mbps": "900"},
            None,
            "rate asserted for datasync",
            id="datasync-on-the-replica",
        ),
        pytest.param(
            {"mechanism": "datasync", "quota-mbps": "900"}, None, None, id="datasync-source-side"
        ),
        pytest.param({"steady-kbps": None}, None, "without the tags", id="missing-sizing-tag"),
    ],
)
def test_quota_bound(
    facts: dict[str, str | None], config: dict[str, Any] | None, expected: str | None
) -> None:
    merged = {k: v for k, v in {**CHECKPOINTS, **facts}.items() if v is not None}
    b = bucket(merged)
    check(run_stack(replication_bandwidth, [b], config), b, expected)


def test_classes_on_one_mechanism_share_its_quota() -> None:
    """The README's case: checkpoints and datasets on S3 RTC need 1.10 Gbps with headroom,
    above the default 1 Gbps quota, though each alone fits."""
    ckpt = bucket({**CHECKPOINTS, "quota-mbps": "1000"})
    data = bucket({**DATASETS, "quota-mbps": "1000"}, "datasets")
    found = run_stack(replication_bandwidth, [ckpt, data])
    assert sorted(u for _, u in found if u) == sorted([ckpt.urn, data.urn])
    assert all("need 883 Mbps" in m and "1.10 Gbps with headroom" in m for m, _ in found)


@pytest.mark.parametrize(
    ("mechanism", "quota", "expected"),
    [
        # 790 Mbps x 1.25 = 988 Mbps within the assumed 10 Gbps a dual-region bucket replicates
        ("gcs-turbo", None, None),
        ("gcs-turbo", "900", "above the 900 Mbps rate asserted for gcs-turbo"),
        ("gcs-dual-region", "900", "above the 900 Mbps rate asserted for gcs-dual-region"),
        ("gcs-turbo", "1000", None),
    ],
)
def test_a_dual_region_bucket_replicates_within_its_quota(
    mechanism: str, quota: str | None, expected: str | None
) -> None:
    """Turbo and default replication of a dual-region bucket have a rate (quotas.gcs_turbo_gbps,
    quotas.gcs_dual_region_gbps): checked in the bucket's own stack, as the planner does."""
    facts = {**CHECKPOINTS, "mechanism": mechanism, "dr-role": "data-dual-region"}
    if quota is not None:
        facts["quota-mbps"] = quota
    b = gcs_bucket("checkpoints", facts)["bucket"]
    check(run_stack(replication_bandwidth, [b]), b, expected)


def test_gcp_labels_are_read_as_numbers() -> None:
    b = gcs_bucket(
        "checkpoints",
        {**CHECKPOINTS, "mechanism": "sts", "dr-role": "data-replica", "quota-mbps": "900"},
    )["bucket"]
    check(run_stack(replication_bandwidth, [b]), b, "above the 900 Mbps")


def link(resource_type: str, name: str, **inputs: Any) -> Res:
    return Res(resource_type, name, inputs)


def cci(gbps: int, locations: list[str], aws_speed: str | None = "10Gbps") -> list[Res]:
    """A Cross-Cloud Interconnect as components/xcloud/cci.py registers it: per location one
    Google connection (a remote location set) and one AWS LAG port tagged with that location."""
    out = []
    for i, where in enumerate(locations):
        tags = {Tag.LINK.key: "cross-cloud-interconnect", Tag.EDGE_DOMAIN.key: where}
        out.append(
            link(
                GCP_INTERCONNECT,
                f"interconnect-{i}",
                linkType=f"LINK_TYPE_ETHERNET_{gbps}G_LR",
                requestedLinkCount=1,
                location=f"https://www.googleapis.com/compute/v1/projects/p/global/"
                f"interconnectLocations/{where}",
                remoteLocation="aws-us-east-1",
                labels=gcp_labels(tags),
            )
        )
        if aws_speed is not None:
            out.append(
                link(
                    DX_CONNECTION, f"lag-port-{i}", bandwidth=aws_speed, location="EqDC2", tags=tags
                )
            )
    return out


def anchor(sku: str) -> Res:
    """An Azure DR site's gateway for an AWS primary: two APIPA addresses per instance."""
    addresses = [["169.254.21.2", "169.254.22.2"], ["169.254.21.6", "169.254.22.6"]]
    return link(
        AZ_VPN_GATEWAY,
        "vpngw",
        sku={"name": sku, "tier": sku},
        bgpSettings={"bgpPeeringAddresses": [{"customBgpIpAddresses": a} for a in addresses]},
    )


@pytest.mark.parametrize(
    ("links", "config", "expected"),
    [
        pytest.param([], None, None, id="link-owned-by-the-other-stack"),
        pytest.param([link(TGW_PEERING, "tgw")], None, None, id="tgw-peering-50-gbps"),
        pytest.param(
            [link(TGW_PEERING, "tgw")],
            {"tgw_peering_gbps": 5},
            "over a DR link of 5.00 Gbps",
            id="tgw-peering-configured-5-gbps",
        ),
        pytest.param(
            [link(DX_CONNECTION, f"dx-{i}", bandwidth="10Gbps") for i in range(2)],
            None,
            None,
            id="two-10g-direct-connect-ports",
        ),
        pytest.param(
            [link(DX_CONNECTION, f"dx-{i}", bandwidth="1Gbps") for i in range(2)],
            None,
            "Raise the link",
            id="two-1g-ports",
        ),
        # The 8.33 Gbps need must hold with the location with the most capacity down.
        pytest.param(
            [
                link(DX_CONNECTION, "dx-0", bandwidth="10Gbps", location="EqDC2"),
                link(DX_CONNECTION, "dx-1", bandwidth="1Gbps", location="EqSe2"),
            ],
            None,
            "1 Gbps with the largest location down",
            id="direct-connect-location-loss",
        ),
        pytest.param(
            [
                link(DX_CONNECTION, "dx-0", bandwidth="10Gbps", location="EqDC2"),
                link(DX_CONNECTION, "dx-1", bandwidth="10Gbps", location="EqSe2"),
            ],
            None,
            None,
            id="direct-connect-survives-a-location",
        ),
        pytest.param(
            [
                link(DX_CONNECTION, "dx-0", bandwidth="10Gbps", location="EqDC2"),
                link(DX_CONNECTION, "dx-1", bandwidth="1Gbps", location="EqDC2"),
            ],
            None,
            None,
            id="direct-connect-one-location-every-port",
        ),
        pytest.param(
            [link(DX_CONNECTION, "dx-hosted", bandwidth="500Mbps")],
            None,
            "dx-hosted 0.5 Gbps",
            id="hosted-connection",
        ),
        pytest.param(
            [link(GCP_VPN_TUNNEL, f"tunnel-{i}") for i in range(4)],
            None,
            "4 VPN tunnels x 1.25 Gbps",
            id="four-vpn-tunnels",
        ),
        pytest.param(
            [link(GCP_VPN_TUNNEL, f"tunnel-{i}") for i in range(4)],
            {"vpn_tunnel_gbps": 3},
            None,
            id="four-3g-tunnels-by-config",
        ),
        pytest.param(
            [link(AWS_VPN_CONNECTION, f"vpn-{i}") for i in range(2)],
            None,
            "4 VPN tunnels",
            id="aws-end-only",
        ),
        pytest.param(
            [
                *[link(GCP_VPN_TUNNEL, f"tunnel-{i}") for i in range(8)],
                link(AZ_VPN_GATEWAY, "vpngw", sku={"name": "VpnGw3AZ", "tier": "VpnGw3AZ"}),
            ],
            None,
            "8 VPN tunnels through vpngw (VpnGw3AZ): 2.5 Gbps",
            id="tunnels-capped-by-azure-gateway-sku",
        ),
        # Two tunnels through a VpnGw4AZ gateway carry 2 x 2.3 Gbps (Azure's per-tunnel figure
        # with GCMAES256), as the planner sizes them: the 6.67 Gbps publish needs more.
        pytest.param(
            [
                *[link(GCP_VPN_TUNNEL, f"tunnel-{i}") for i in range(2)],
                link(AZ_VPN_GATEWAY, "vpngw", sku={"name": "VpnGw4AZ", "tier": "VpnGw4AZ"}),
            ],
            None,
            "2 VPN tunnels through vpngw (VpnGw4AZ): 4.6 Gbps",
            id="azure-tunnels-at-the-skus-per-tunnel-rate",
        ),
        # AWS -> Azure, the Azure DR stack: its anchor gateway terminates one AWS tunnel per
        # custom APIPA address (four), each at AWS's 1.25 Gbps, capped by the SKU.
        pytest.param(
            [anchor("VpnGw5AZ")],
            None,
            "4 VPN tunnels through vpngw (VpnGw5AZ): 5 Gbps",
            id="azure-dr-anchor-at-awss-tunnel-rate",
        ),
        pytest.param(
            [anchor("VpnGw2AZ")], None, "(VpnGw2AZ): 1.25 Gbps", id="azure-dr-anchor-undersized"
        ),
        pytest.param(
            [anchor("VpnGw5AZ")], {"vpn_tunnel_gbps": 2.3}, None, id="azure-dr-anchor-carries-it"
        ),
        # AWS -> Azure, the AWS primary's stack: its tunnels count only where Azure connects.
        pytest.param(
            [
                *[link(AWS_VPN_CONNECTION, f"vpn-{i}") for i in range(2)],
                *[link(AZ_VPN_CONNECTION, f"conn-{i}") for i in range(2)],
            ],
            None,
            "2 VPN tunnels x 1.25 Gbps",
            id="aws-primary-two-azure-connections",
        ),
        # ... and never more than the Azure gateway was sized for (its SKU is the DR stack's).
        pytest.param(
            [
                *[
                    link(AWS_VPN_CONNECTION, f"vpn-{i}", tags={"gpudr:capacity-gbps": "1.25"})
                    for i in range(2)
                ],
                *[link(AZ_VPN_CONNECTION, f"conn-{i}") for i in range(4)],
            ],
            None,
            "4 VPN tunnels x 1.25 Gbps, capped at the Azure gateway's planned 1.25 Gbps",
            id="aws-primary-capped-at-the-planned-gateway",
        ),
        pytest.param([link(AZ_VNET_PEERING, "peering")], None, None, id="vnet-peering-unbounded"),
        # Cross-Cloud Interconnect: each end with one edge availability domain down.
        pytest.param(
            cci(10, ["iad-zone1-1", "iad-zone2-1"]), None, None, id="cci-survives-a-domain"
        ),
        # The AWS ports' tags stripped: they count neither as the link's end nor as another
        # Direct Connect link, so the link carries nothing.
        pytest.param(
            [
                *cci(10, ["iad-zone1-1", "iad-zone2-1"], aws_speed=None),
                *[
                    link(DX_CONNECTION, f"lag-port-{i}", bandwidth="10Gbps", location="EqDC2")
                    for i in range(2)
                ],
            ],
            None,
            "0 Gbps with one edge domain down",
            id="cci-aws-ports-untagged",
        ),
        pytest.param(
            cci(10, ["iad-zone1-1", "iad-zone1-1"]),
            None,
            "0 Gbps with one edge domain down",
            id="cci-undersized-both-in-one-domain",
        ),
        pytest.param(
            cci(100, ["iad-zone1-1", "iad-zone2-1"], aws_speed="1Gbps"),
            None,
            "AWS LAG ports 1 Gbps at iad-zone1-1, 1 Gbps at iad-zone2-1): 1 Gbps",
            id="cci-undersized-aws-end",
        ),
        pytest.param(
            cci(10, ["iad-zone1-1", "iad-zone2-1"], aws_speed=None),
            None,
            "AWS LAG ports none): 0 Gbps",
            id="cci-without-its-aws-end",
        ),
        # Its attachments are the same link: not counted again (2 x 10G would otherwise pass).
        pytest.param(
            [
                *cci(10, ["iad-zone1-1", "iad-zone1-1"]),
                link(
                    GCP_INTERCONNECT_ATTACHMENT,
                    "attachment",
                    bandwidth="BPS_10G",
                    labels=gcp_labels({Tag.LINK.key: "cross-cloud-interconnect"}),
                ),
            ],
            None,
            "0 Gbps with one edge domain down",
            id="cci-attachments-not-counted-twice",
        ),
    ],
)
def test_dual_write_link(
    links: list[Res], config: dict[str, Any] | None, expected: str | None
) -> None:
    b = bucket(BIG_WEIGHTS, "weights")
    check(run_stack(replication_bandwidth, [b, *links], config), b, expected)


def test_dual_written_classes_add_up_on_the_link() -> None:
    """Dual-written checkpoints (790 Mbps) and weights (178 Mbps) need 1.21 Gbps with headroom:
    within a VpnGw2AZ gateway's 1.25 Gbps. Heavier weights (444 Mbps) push the sum past it."""
    ckpt = azure("checkpoints", AZURE_CHECKPOINTS)["account"]
    weights = azure("weights", {**WEIGHTS, "burst-bytes": "80000000000"})["account"]
    gateway = [
        link(GCP_VPN_TUNNEL, "t0"),
        link(GCP_VPN_TUNNEL, "t1"),
        link(AZ_VPN_GATEWAY, "gw", sku={"name": "VpnGw2AZ"}),
    ]
    assert run_stack(replication_bandwidth, [ckpt, weights, *gateway]) == []
    heavy = azure("weights", {**WEIGHTS, "burst-bytes": "200000000000"})["account"]
    found = run_stack(replication_bandwidth, [ckpt, heavy, *gateway])
    assert {u for _, u in found} == {ckpt.urn, heavy.urn}
    assert all("need 1.23 Gbps" in m and "(VpnGw2AZ): 1.25 Gbps" in m for m, _ in found), found


# A pull from on premises asserts the WAN rate committed to DR (gpudr:quota-mbps): 790 Mbps of
# checkpoints, 988 Mbps with headroom, against it; no vendor default stands in when it is absent.
ONPREM = {"dr-role": "data-replica", "mechanism": "datasync-agent"}


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        pytest.param({"quota-mbps": "8000"}, None, id="wan-8-gbps-carries-it"),
        pytest.param({"quota-mbps": "1000"}, None, id="wan-1-gbps-just-carries-it"),
        pytest.param(
            {"quota-mbps": "500"},
            "above the 500 Mbps rate asserted for datasync-agent. Raise the bound that holds",
            id="wan-undersized",
        ),
        pytest.param({"quota-mbps": None}, "above the 0 Mbps rate", id="wan-rate-absent"),
    ],
)
def test_wan_bound(facts: dict[str, str | None], expected: str | None) -> None:
    merged = {k: v for k, v in {**CHECKPOINTS, **ONPREM, **facts}.items() if v is not None}
    b = bucket(merged)
    check(run_stack(replication_bandwidth, [b], None), b, expected)
