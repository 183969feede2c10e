"""replication-bandwidth: the rate each data class needs to hold its RPO fits what carries it.

The need is recomputed from the raw sizing facts each data bucket carries as tags (burst,
steady rate, checkpoint interval, publish window, RPO), never from the planner's answer
(`gpudr:required-mbps`):

    window = publish window                      (dual write)
           = min(RPO - interval, interval)       (with a checkpoint interval)
           = RPO                                 (otherwise, with an RPO)
    need   = max(steady rate, burst x 8 / window)   (the steady rate alone without a window)

Two kinds of carrier:

- Quota-bound mechanisms (S3 RTC, Storage Transfer Service, DataSync, GCS turbo and default
  dual-region replication): the classes on one mechanism in a stack share the rate quota the
  user asserts (`gpudr:quota-mbps`; S3 RTC's SLA is void above it). Checked where the mechanism
  runs: S3 RTC on the source, pulls on the replica, a dual-region bucket in its owner's stack.
- Dual writes cross the DR link: their needs are summed and compared with the link capacity
  registered in the same stack (Direct Connect ports with their largest location down,
  transit gateway peering, VPN tunnels capped by an Azure VPN gateway's SKU, Cross-Cloud
  Interconnect connections with one edge availability domain down; VPC/VNet peering has no
  provisioned limit). A link is owned by one of the two stacks, so the stack without it has
  nothing to compare with.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from gpudr.contract.tags import Tag
from gpudr.core import sizing
from gpudr.core.enums import FROM_ONPREM, LinkKind

from .common import (
    AWS_VPC_PEERING,
    AWS_VPN_CONNECTION,
    AZ_VNET_PEERING,
    AZ_VPN_CONNECTION,
    AZ_VPN_GATEWAY,
    DX_CONNECTION,
    GCP_INTERCONNECT,
    GCP_INTERCONNECT_ATTACHMENT,
    GCP_NETWORK_PEERING,
    GCP_VPN_TUNNEL,
    QUOTA_BOUND,
    TGW_PEERING,
    DataClass,
    Stack,
    UnknownGuard,
    config_number,
    config_schema,
    data_class,
    default_quota_mbps,
    describe,
    exempting,
    get,
    gpudr_tag,
    items,
    mbps,
    need_mbps,
    number,
    policy_config,
)

SCHEMA = config_schema(
    headroom={
        "type": "number",
        "minimum": 1,
        "default": sizing.default_headroom(),
        "description": "Factor applied to the summed need before comparing with capacity.",
    },
    tgw_peering_gbps={
        "type": "number",
        "minimum": 0.001,
        "default": sizing.default_tgw_peering_gbps(),
        "description": "Capacity of one transit gateway peering attachment (Gbps).",
    },
    vpn_tunnel_gbps={
        "type": "number",
        "minimum": 0.001,
        "default": sizing.ha_vpn_tunnel_gbps(),
        "description": (
            "Capacity of one AWS <-> GCP VPN tunnel (Gbps): AWS site-to-site VPN's 1.25 Gbps "
            "per tunnel, the slower end. Azure <-> GCP tunnels run at the Azure gateway "
            "SKU's per-tunnel rate."
        ),
    },
    azure_vpn_gateway_gbps={
        "type": "object",
        "additionalProperties": {"type": "number"},
        "default": sizing.azure_vpn_skus(),
        "description": "Aggregate throughput of an Azure VPN gateway by SKU name (Gbps).",
    },
)

# Quota-bound mechanisms are checked where they run: S3 RTC replication is configured on the
# source; scheduled pulls run at the DR site, on the replica.
RUNS_ON = {
    "crr-rtc": "data-source",
    "sts": "data-replica",
    "datasync": "data-replica",
    "azcopy": "data-replica",
    # One dual-region bucket, owned by the DR site's stack, replicates itself.
    "gcs-turbo": "data-dual-region",
    "gcs-dual-region": "data-dual-region",
    # From on premises: the tasks at the DR site share the WAN bandwidth committed to DR.
    "datasync-agent": "data-replica",
    "sts-agent": "data-replica",
    "storage-mover": "data-replica",
}
# What raises each bound, where it is not a vendor's quota. From on premises the asserted rate
# is the least of three bounds, and nothing registered says which one holds (the committed WAN
# is not a resource): the three, and where `gpudr plan` names the one that binds.
RAISE = {
    "datasync-agent": (
        "Raise the bound that holds (`gpudr plan` names it): the WAN bandwidth committed to DR "
        "(wan_committed_gbps of the on-premises site), the link's ports x port speed (add ports "
        "or tunnels), or the agents x per-agent rate (add agents, or with a measured rate raise "
        "quotas.datasync_agent_gbps)"
    ),
    "sts-agent": (
        "Raise the bound that holds (`gpudr plan` names it): the WAN bandwidth committed to DR "
        "(wan_committed_gbps of the on-premises site; the agent pool's limit follows it), the "
        "Interconnect's circuits or attachments x their speed, or the agents x per-agent rate "
        "(add agents, or with a measured rate raise quotas.sts_agent_gbps)"
    ),
    "storage-mover": (
        "Raise the bound that holds (`gpudr plan` names it): the WAN bandwidth committed to DR "
        "(wan_committed_gbps of the on-premises site), the ExpressRoute circuit's bandwidth, or "
        "the agents x per-agent rate (add agents, or with a measured rate raise "
        "quotas.storage_mover_agent_gbps)"
    ),
}
# Google's link types (an Interconnect's `linkType`) by port speed, Gbps.
_LINK_TYPE_GBPS = {
    "LINK_TYPE_ETHERNET_10G_LR": 10.0,
    "LINK_TYPE_ETHERNET_100G_LR": 100.0,
    "LINK_TYPE_ETHERNET_400G_LR4": 400.0,
}
_BANDWIDTH = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(M|G)bps\s*$", re.I)
_GCP_ATTACHMENT = re.compile(r"^BPS_(\d+)(M|G)$")


def _dx_gbps(value: object) -> float | None:
    match = _BANDWIDTH.match(value) if isinstance(value, str) else None
    if not match:
        return None
    return float(match.group(1)) * (1.0 if match.group(2).upper() == "G" else 1e-3)


def _interconnect_gbps(value: object) -> float | None:
    match = _GCP_ATTACHMENT.match(value) if isinstance(value, str) else None
    if not match:
        return None
    return float(match.group(1)) * (1.0 if match.group(2) == "G" else 1e-3)


def _link_capacity_gbps(stack: Stack, config: Mapping[str, Any]) -> tuple[float, list[str]] | None:
    """The DR link capacity registered in this stack and what it is made of; None when the stack
    registers no link (the other site's stack owns it)."""
    parts: list[str] = []
    total = 0.0
    found = False
    peerings = stack.of_type(GCP_NETWORK_PEERING, AZ_VNET_PEERING, AWS_VPC_PEERING)
    if peerings:
        return math.inf, [f"{peerings[0].name} (peering: no provisioned limit)"]
    cci = _cci_capacity(stack)
    if cci is not None:
        found = True
        total += cci[0]
        parts.append(cci[1])
    dx = _dx_capacity(stack, cross_cloud=cci is not None)
    if dx is not None:
        found = True
        total += dx[0]
        parts.append(dx[1])
    tgw = config_number(config, "tgw_peering_gbps")
    for attachment in stack.of_type(TGW_PEERING):
        found = True
        total += tgw
        parts.append(f"{attachment.name} {tgw:g} Gbps")
    for attachment in stack.of_type(GCP_INTERCONNECT_ATTACHMENT):
        if _in_cci(attachment):
            continue  # a Cross-Cloud Interconnect's: judged with its connections above
        found = True
        gbps = _interconnect_gbps(attachment.props.get("bandwidth")) or 0.0
        total += gbps
        parts.append(f"{attachment.name} {gbps:g} Gbps")
    vpn = _vpn_capacity(stack, config)
    if vpn is not None:
        found = True
        total += vpn[0]
        parts.append(vpn[1])
    return (total, parts) if found else None


def _in_cci(resource: PolicyResource) -> bool:
    return gpudr_tag(resource.resource_type, resource.props, Tag.LINK) == (
        LinkKind.CROSS_CLOUD_INTERCONNECT
    )


def _cci_capacity(stack: Stack) -> tuple[float, str] | None:
    """A Cross-Cloud Interconnect registered in this stack, as the planner sizes it: each end
    with one edge availability domain down (`sizing.surviving_gbps`), Google's connections
    (those with a remote location) by their Interconnect location, the AWS LAG ports by the
    location each is cross-connected to (`gpudr:edge-domain`); the link carries the lesser
    end, and an end in one domain, or missing, carries nothing."""
    google: dict[str, float] = {}
    for interconnect in stack.of_type(GCP_INTERCONNECT):
        props = interconnect.props
        if not props.get("remoteLocation"):
            continue  # a Dedicated Interconnect (an on-premises link), not a cross-cloud one
        speed = _LINK_TYPE_GBPS.get(str(props.get("linkType")), 0.0)
        where = str(props.get("location")).rsplit("/", 1)[-1]
        google[where] = google.get(where, 0.0) + speed * (
            number(props.get("requestedLinkCount")) or 0
        )
    aws: dict[str, float] = {}
    for conn in stack.of_type(DX_CONNECTION):
        if _in_cci(conn):
            where = str(gpudr_tag(conn.resource_type, conn.props, Tag.EDGE_DOMAIN))
            aws[where] = aws.get(where, 0.0) + (_dx_gbps(conn.props.get("bandwidth")) or 0.0)
    if not google and not aws:
        return None
    ends = {"Google connections": google, "AWS LAG ports": aws}
    left = min(sizing.surviving_gbps(list(by.values())) for by in ends.values())
    shown = "; ".join(
        f"{end} {', '.join(f'{g:g} Gbps at {w}' for w, g in sorted(by.items())) or 'none'}"
        for end, by in ends.items()
    )
    return left, f"Cross-Cloud Interconnect ({shown}): {left:g} Gbps with one edge domain down"


def _dx_capacity(stack: Stack, cross_cloud: bool = False) -> tuple[float, str] | None:
    """The Direct Connect ports registered in this stack, as the planner sizes them: with two
    or more locations, what is left when the one with the most capacity fails
    (`sizing.surviving_gbps`); at one location, every port. In a stack ordering a Cross-Cloud
    Interconnect, a port that names no link is not counted: a Cross-Cloud Interconnect's port
    whose tags were stripped would otherwise count whole, with no edge domain allowed to fail."""
    by_location: dict[str, float] = {}
    names: list[str] = []
    for conn in stack.of_type(DX_CONNECTION):
        if _in_cci(conn):
            continue  # a Cross-Cloud Interconnect's AWS end: judged with it
        if cross_cloud and gpudr_tag(conn.resource_type, conn.props, Tag.LINK) is None:
            continue
        gbps = _dx_gbps(conn.props.get("bandwidth")) or 0.0
        where = str(conn.props.get("location"))
        by_location[where] = by_location.get(where, 0.0) + gbps
        names.append(f"{conn.name} {gbps:g} Gbps at {where}")
    if not names:
        return None
    if len(by_location) < 2:
        return sum(by_location.values()), ", ".join(names)
    left = sizing.surviving_gbps(list(by_location.values()))
    return left, f"{', '.join(names)}: {left:g} Gbps with the largest location down"


def _vpn_capacity(stack: Stack, config: Mapping[str, Any]) -> tuple[float, str] | None:
    """The VPN tunnels registered in this stack, at their per-tunnel rate (as the planner sizes
    them: `sizing.ha_vpn_gbps`, `sizing.azure_vpn_gbps`), and what they are."""
    gcp_tunnels = len(stack.of_type(GCP_VPN_TUNNEL))
    tunnels = gcp_tunnels
    if not tunnels:
        # Only the AWS end registered: two tunnels per site-to-site VPN connection, and where
        # this stack also declares Azure's side (AWS -> Azure), only those Azure connects.
        tunnels = 2 * len(stack.of_type(AWS_VPN_CONNECTION))
        azure = len(stack.of_type(AZ_VPN_CONNECTION))
        if tunnels and azure:
            tunnels = min(tunnels, azure)
    gateways = stack.of_type(AZ_VPN_GATEWAY)
    if not tunnels and gateways:
        # An Azure DR site's anchor (AWS -> Azure): the AWS primary's stack declares the
        # tunnels; the gateway terminates one per custom APIPA BGP address it holds.
        tunnels = sum(
            len(items(get(p, "customBgpIpAddresses")))
            for g in gateways
            for p in items(get(g.props, "bgpSettings", "bgpPeeringAddresses"))
        )
    if not tunnels:
        return None
    tunnel = config_number(config, "vpn_tunnel_gbps")
    vpn, what = tunnels * tunnel, f"{tunnels} VPN tunnels x {tunnel:g} Gbps"
    skus = config.get("azure_vpn_gateway_gbps")
    for gateway in gateways:
        sku = get(gateway.props, "sku", "name")
        if not isinstance(sku, str):
            continue
        aggregate = number(skus.get(sku)) if isinstance(skus, Mapping) else None
        # GCP's tunnels registered here: an Azure primary's VPN to GCP (GCP's per-tunnel
        # figure); otherwise the peer's end is AWS's, vpn_tunnel_gbps (1.25 by default).
        peer_gbps = None if gcp_tunnels else tunnel
        cap = sizing.azure_vpn_gbps(sku, tunnels, aggregate, peer_tunnel_gbps=peer_gbps)
        if cap is None and aggregate is not None:
            cap = min(vpn, aggregate)  # a SKU gpudr has no per-tunnel figure for
        if cap is not None:
            vpn, what = cap, f"{tunnels} VPN tunnels through {gateway.name} ({sku}): {cap:g} Gbps"
    if not gateways and len(stack.of_type(AZ_VPN_CONNECTION)):
        # The AWS primary's end of AWS -> Azure: the gateway (and its SKU) is the DR stack's and
        # only looked up here. Count no more than the capacity the link was sized for (the DR
        # stack refuses a gateway whose SKU carries less); a connection without it counts 0.
        planned = [
            number(get(c.props, "tags", "gpudr:capacity-gbps"))
            for c in stack.of_type(AWS_VPN_CONNECTION)
        ]
        cap = min((p if p is not None else 0.0) for p in planned) if planned else 0.0
        if cap < vpn:
            vpn, what = cap, f"{what}, capped at the Azure gateway's planned {cap:g} Gbps"
    return vpn, what


def _check_quotas(
    classes: list[tuple[PolicyResource, DataClass]], headroom: float, report: ReportViolation
) -> None:
    for mechanism in (*QUOTA_BOUND, *FROM_ONPREM):
        group = [
            (b, d) for b, d in classes if d.mechanism == mechanism and d.role == RUNS_ON[mechanism]
        ]
        if not group:
            continue
        need = sum(need_mbps(d) for _, d in group)
        asserted = [d.quota_mbps for _, d in group if d.quota_mbps is not None]
        quota = min(asserted) if asserted else default_quota_mbps(mechanism) or 0.0
        if sizing.fits(need * headroom / 1000, quota / 1000):
            continue
        names = ", ".join(f"{d.data_class} {mbps(need_mbps(d))}" for _, d in group)
        for bucket, _d in group:
            report(
                f"{describe(bucket)}: the {mechanism} classes of this stack need {mbps(need)} "
                f"({names}), {mbps(need * headroom)} with headroom {headroom:g}, above the "
                f"{mbps(quota)} rate asserted for {mechanism}"
                + (" (S3 RTC's 15-minute SLA is void above it)" if mechanism == "crr-rtc" else "")
                + ". "
                + RAISE.get(
                    mechanism,
                    "Raise the quota (for S3 RTC ask AWS support, then set quotas."
                    f"{QUOTA_BOUND.get(mechanism)} in the plan)",
                )
                + ", reduce the bursts (dedup, compression), or relax the RPO; then regenerate "
                "the stack.",
                bucket.urn,
            )


def _check_link(
    stack: Stack,
    classes: list[tuple[PolicyResource, DataClass]],
    config: Mapping[str, Any],
    headroom: float,
    report: ReportViolation,
) -> None:
    dual = [(b, d) for b, d in classes if d.mechanism == "dual-write"]
    if not dual:
        return
    capacity = _link_capacity_gbps(stack, config)
    if capacity is None:
        # The DR link belongs to the other site's stack (e.g. transit gateway peering is owned
        # by the primary, Direct Connect by the DR site): it is checked there.
        return
    gbps, parts = capacity
    need = sum(need_mbps(d) for _, d in dual)
    if sizing.fits(need * headroom / 1000, gbps):
        return
    names = ", ".join(f"{d.data_class} {mbps(need_mbps(d))}" for _, d in dual)
    for bucket, _d in dual:
        report(
            f"{describe(bucket)}: the dual-written classes of this stack need {mbps(need)} "
            f"({names}), {mbps(need * headroom)} with headroom {headroom:g}, over a DR link of "
            f"{mbps(gbps * 1000)} ({'; '.join(parts)}). Raise the link (more or faster Direct "
            "Connect ports or Cross-Cloud Interconnect connections, more tunnels or a larger "
            "VPN gateway SKU; `gpudr plan` sizes it), "
            "widen the publish window, or replicate the class asynchronously.",
            bucket.urn,
        )


def _validate(args: StackValidationArgs, report: ReportViolation) -> None:
    config = policy_config(SCHEMA, args)
    report = exempting(report, config)
    headroom = config_number(config, "headroom")
    stack = Stack(args.resources)
    guard = UnknownGuard()
    classes: list[tuple[PolicyResource, DataClass]] = []
    for bucket in stack.data_buckets():
        with guard.check():
            d = data_class(bucket)
            if isinstance(d, str):
                report(d, bucket.urn)
            else:
                classes.append((bucket, d))
    with guard.check():
        _check_quotas(classes, headroom, report)
    with guard.check():
        _check_link(stack, classes, config, headroom, report)
    guard.raise_first()


replication_bandwidth = StackValidationPolicy(
    name="replication-bandwidth",
    description=(
        "The bandwidth each data class needs for its RPO, recomputed from its tags, fits what "
        "carries it with headroom: the asserted rate quota of S3 RTC, Storage Transfer Service "
        "or DataSync, or the DR link (Direct Connect, transit gateway peering, VPN) for dual "
        "writes."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=SCHEMA,
    remediation_steps=(
        "Run `gpudr plan` on the plan spec: it shows each class's need and each path's "
        "capacity. Raise the quota you assert (quotas: in the plan, after AWS support raised "
        "it), enlarge the DR link (ports, tunnels, gateway SKU), cut the bursts (dedup_ratio, "
        "compression_ratio), widen the weights publish window, or relax the RPO; then "
        "`gpudr generate` and deploy."
    ),
    tags=["replication", "bandwidth", "rpo"],
)
