from __future__ import annotations

import pytest

from components.aws.network import SiteNetwork, SiteNetworkArgs, subnet_plan


def test_subnet_plan() -> None:
    private, public = subnet_plan("10.10.0.0/16", ["a", "b"])
    assert private == ["10.10.0.0/20", "10.10.16.0/20"] and public == "10.10.32.0/20"


@pytest.mark.parametrize("missing", ["transit_gateway_name", "transit_gateway_asn"])
def test_a_network_that_is_not_isolated_needs_its_transit_gateway(missing: str) -> None:
    gateway = {"transit_gateway_name": "gpudr-test-use1", "transit_gateway_asn": 64512}
    del gateway[missing]
    args = SiteNetworkArgs(
        region="us-east-1",
        cidr="10.10.0.0/16",
        azs=["us-east-1a"],
        peer_cidrs=[],
        dual_write_endpoint=False,
        tags={},
        flow_log_bucket="gpudr-test-use1-logs",
        **gateway,  # type: ignore[arg-type]
    )
    with pytest.raises(ValueError, match=f"{missing} is required unless isolated"):
        SiteNetwork("net", args)
