"""kubernetes-api-not-public: no GPU cluster's Kubernetes API is open to the internet.

Whoever reaches the API server of a training or inference cluster can try every credential
leak against it, and the DR cluster is the one nobody watches until the day it matters. Each
cloud's default is open: an EKS cluster's public endpoint takes `0.0.0.0/0` when
`public_access_cidrs` is unset, and GKE and AKS public endpoints accept any address unless
authorized networks or IP ranges are set. A private endpoint, or a public one limited to named
ranges no wider than the configured prefix, passes. Every cluster is judged, tagged or not.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
)

from .common import (
    AKS_CLUSTER,
    EKS_CLUSTER,
    GKE_CLUSTER,
    canonical_type,
    config_number,
    config_schema,
    exempting,
    get,
    is_true,
    items,
    policy_config,
)

IPV4_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
SCHEMA = config_schema(
    min_prefix_v4={
        "type": "integer",
        "minimum": 1,
        "maximum": 32,
        "default": 16,
        "description": "An IPv4 range allowed to reach a public API is at most this wide (/N).",
    },
    min_prefix_v6={
        "type": "integer",
        "minimum": 1,
        "maximum": 128,
        "default": 48,
        "description": "An IPv6 range allowed to reach a public API is at most this wide (/N).",
    },
)


def _too_wide(cidrs: list[Any], config: Mapping[str, Any]) -> list[str]:
    """The ranges wider than allowed, and any that is not a range at all (fail closed)."""
    limits = {4: config_number(config, "min_prefix_v4"), 6: config_number(config, "min_prefix_v6")}
    out = []
    for cidr in cidrs:
        try:
            network = ipaddress.ip_network(str(cidr).strip(), strict=False)
        except ValueError:
            out.append(f"{cidr!r} (not a CIDR range)")
            continue
        if isinstance(network, ipaddress.IPv6Network) and network.subnet_of(IPV4_MAPPED):
            # ::ffff:a.b.c.d/N is the IPv4 range a.b.c.d/(N-96): judge it as that.
            prefix, version = network.prefixlen - 96, 4
        else:
            prefix, version = network.prefixlen, network.version
        if prefix < limits[version]:
            out.append(str(network))
    return out


def _eks(props: Mapping[str, Any], config: Mapping[str, Any]) -> str | None:
    vpc = props.get("vpcConfig")
    if get(vpc, "endpointPublicAccess") is False:
        return None
    cidrs = items(get(vpc, "publicAccessCidrs"))
    if not cidrs:
        return (
            "its public endpoint is on (endpoint_public_access unset or True) with no "
            "public_access_cidrs, which EKS reads as 0.0.0.0/0"
        )
    wide = _too_wide(cidrs, config)
    return f"its public endpoint accepts {', '.join(wide)}" if wide else None


def _gke(props: Mapping[str, Any], config: Mapping[str, Any]) -> str | None:
    # The DNS endpoint is a second way in, reachable from the internet when it allows external
    # traffic, whatever the IP endpoint's settings.
    if is_true(
        get(props, "controlPlaneEndpointsConfig", "dnsEndpointConfig", "allowExternalTraffic")
    ):
        return (
            "its DNS endpoint allows external traffic (dns_endpoint_config.allow_external_traffic)"
        )
    if is_true(get(props, "privateClusterConfig", "enablePrivateEndpoint")):
        return None
    networks = props.get("masterAuthorizedNetworksConfig")
    if not isinstance(networks, Mapping):
        return "its public endpoint has no master_authorized_networks_config: any address"
    if is_true(networks.get("gcpPublicCidrsAccessEnabled")):
        return "gcp_public_cidrs_access_enabled lets every Google Cloud address in"
    cidrs = [get(block, "cidrBlock") for block in items(networks.get("cidrBlocks"))]
    wide = _too_wide(cidrs, config)
    return f"its authorized networks include {', '.join(wide)}" if wide else None


def _aks(props: Mapping[str, Any], config: Mapping[str, Any]) -> str | None:
    profile = props.get("apiServerAccessProfile")
    if is_true(get(profile, "enablePrivateCluster")):
        return None
    ranges = items(get(profile, "authorizedIPRanges"))
    if not ranges:
        return "it is not private and api_server_access_profile.authorized_ip_ranges is empty"
    wide = _too_wide(ranges, config)
    return f"its authorized IP ranges include {', '.join(wide)}" if wide else None


CHECKS = {EKS_CLUSTER: _eks, GKE_CLUSTER: _gke, AKS_CLUSTER: _aks}
FIXES = {
    EKS_CLUSTER: "set vpc_config.endpoint_public_access=False (private endpoint), or "
    "public_access_cidrs to your operators' ranges",
    GKE_CLUSTER: "set private_cluster_config.enable_private_endpoint=True, or "
    "master_authorized_networks_config.cidr_blocks to your operators' ranges",
    AKS_CLUSTER: "set api_server_access_profile.enable_private_cluster=True, or "
    "authorized_ip_ranges to your operators' ranges",
}


def _validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
    resource_type = canonical_type(args.resource_type)
    check = CHECKS.get(resource_type)
    if check is None:
        return
    config = policy_config(SCHEMA, args)
    found = check(args.props, config)
    if found:
        exempting(report, config, args.urn)(
            f"{args.name} ({args.resource_type}) exposes its Kubernetes API to the internet: "
            f"{found}. {FIXES[resource_type]}.",
            None,
        )


kubernetes_api_not_public = ResourceValidationPolicy(
    name="kubernetes-api-not-public",
    description=(
        "No EKS, GKE or AKS cluster's API server is open to the internet: a private endpoint, "
        "or a public one limited to ranges no wider than /16 (IPv4) or /48 (IPv6)."
    ),
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    config_schema=SCHEMA,
    remediation_steps=(
        "Keep the API private (gpudr's default: `api_public_cidrs` unset in the plan) and reach "
        "it over the site's network; if operators need a public endpoint, list their egress "
        "ranges in the plan's api_public_cidrs (EKS public_access_cidrs, GKE "
        "master_authorized_networks_config, AKS authorized_ip_ranges), never 0.0.0.0/0 or ::/0."
    ),
    tags=["network", "access"],
)
