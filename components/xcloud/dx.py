"""Dedicated Direct Connect ports at one location, bundled in a link aggregation group: shared by
the AWS site's Direct Connect links (components/aws/links.py) and the AWS end of a GCP
Cross-Cloud Interconnect (cci.py), which a primary's stack of either cloud declares."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws


@dataclass(frozen=True)
class DxPorts:
    """Dedicated Direct Connect ports of one speed at one location."""

    base: str  # the AWS names' prefix: `{base}-lag-{index}`, `{base}-{index}-{port}`
    speed: str  # "10Gbps"
    location: str  # the Direct Connect location code
    count: int
    region: pulumi.Input[str]
    tags: dict[str, str]
    # Bundle even one port in a LAG: Cross-Cloud Interconnect for AWS requires LACP, which
    # only a LAG runs (defaults.yaml links.cross-cloud-interconnect).
    always_lag: bool = False


def dx_ports(name: str, index: int, p: DxPorts, opts: pulumi.ResourceOptions) -> pulumi.Output[str]:
    """The ports, in a link aggregation group when there are several (or `always_lag`), named
    `{name}-lag-{index}` and `{name}-port-{index}-{port}`; returns what a virtual interface is
    created on: the LAG, or the one connection."""
    lag: aws.directconnect.LinkAggregationGroup | None = None
    if p.count > 1 or p.always_lag:
        lag = aws.directconnect.LinkAggregationGroup(
            f"{name}-lag-{index}",
            name=f"{p.base}-lag-{index}",
            connections_bandwidth=p.speed,
            location=p.location,
            force_destroy=False,
            region=p.region,
            tags=p.tags,
            opts=opts,
        )
    first: pulumi.Output[str] | None = None
    for port in range(p.count):
        connection = aws.directconnect.Connection(
            f"{name}-port-{index}-{port}",
            name=f"{p.base}-{index}-{port}",
            bandwidth=p.speed,
            location=p.location,
            region=p.region,
            tags=p.tags,
            opts=opts,
        )
        first = first or connection.id
        if lag is not None:
            aws.directconnect.ConnectionAssociation(
                f"{name}-port-{index}-{port}-lag",
                connection_id=connection.id,
                lag_id=lag.id,
                region=p.region,
                opts=opts,
            )
    if lag is not None:
        return lag.id
    if first is None:
        raise ValueError(f"{name}: no Direct Connect port at {p.location}")
    return first
