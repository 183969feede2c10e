"""The on-premises facts the planner and the program share (gpudr/contract/onprem.py), and the
link facts the planner computes once into the stack config (`OnPremSource.link_gbps`,
`vpn_connections`): each written once, and each reader agrees with it."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpudr.build.stackconfig import build_site_configs
from gpudr.contract.onprem import (
    DATASYNC_ACTIVATION_PORT,
    DATASYNC_ENDPOINT_PORTS,
    NFS_PORT,
    NFS_STORAGE_KINDS,
    OBJECT_STORAGE_KINDS,
    PORTMAPPER_PORT,
)
from gpudr.contract.site import SiteConfig
from gpudr.core.design import datasync_mode, design, vpn_connections
from gpudr.core.enums import StorageKind
from gpudr.core.spec import parse_endpoint, parse_plan
from gpudr.docs import onprem_runbook
from tests.conftest import ROOT

EXAMPLE = ROOT / "examples" / "onprem-to-aws.yaml"


@pytest.mark.parametrize(
    ("kind", "nfs", "objects", "mode", "endpoint"),
    [
        (StorageKind.NFS, True, False, "enhanced", "10.40.8.10:/exports/ml"),
        (StorageKind.LUSTRE, True, False, "enhanced", "mds1.dc1.lan:/lustre"),
        (StorageKind.S3_COMPATIBLE, False, True, "basic", "https://minio.dc1.lan:9000/ml-data"),
        (StorageKind.HDFS, False, False, "basic", "hdfs://nn1.dc1.lan:8020/ml"),
    ],
)
def test_each_storage_kind_is_read_one_way_and_the_planner_agrees(
    kind: StorageKind, nfs: bool, objects: bool, mode: str, endpoint: str
) -> None:
    # A plain string, as the stack config carries it, and the enum, as the planner does.
    assert (kind.value in NFS_STORAGE_KINDS, kind in NFS_STORAGE_KINDS) == (nfs, nfs)
    assert (kind.value in OBJECT_STORAGE_KINDS, kind in OBJECT_STORAGE_KINDS) == (objects, objects)
    assert datasync_mode(kind) == mode  # Enhanced mode reads NFS only
    assert (parse_endpoint(kind, endpoint).port is None) == nfs  # host:/export, no port


@pytest.mark.parametrize(
    ("ranges", "text"),
    [
        (((443, 443),), "TCP 443"),
        (((1024, 1064),), "TCP 1024-1064"),
        (DATASYNC_ENDPOINT_PORTS, "TCP 443 and TCP 1024-1064"),
    ],
)
def test_the_runbook_writes_port_ranges_as_tcp_text(
    ranges: tuple[tuple[int, int], ...], text: str
) -> None:
    assert onprem_runbook.tcp_ports(ranges) == text


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        (onprem_runbook.ENDPOINT_PORTS, "TCP 443 and TCP 1024-1064"),
        (onprem_runbook.ACTIVATION_PORT, "TCP 80"),
        (
            onprem_runbook.NFS_PORTS,
            "TCP 2049 (NFS v4.1); NFS v3 also needs TCP/UDP 111 and the server's mountd port",
        ),
    ],
)
def test_the_runbooks_port_text_is_the_contracts_numbers(written: str, expected: str) -> None:
    assert written == expected


def test_the_port_numbers_are_ports() -> None:
    for low, high in DATASYNC_ENDPOINT_PORTS:
        assert 0 < low <= high < 65536, (low, high)
    for port in (DATASYNC_ACTIVATION_PORT, NFS_PORT, PORTMAPPER_PORT):
        assert 0 < port < 65536, port


def _plan_with_link(link: dict[str, Any], committed_gbps: float) -> Any:
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["sites"]["fra1"]["link"] = link
    raw["sites"]["fra1"]["wan_committed_gbps"] = committed_gbps
    return parse_plan(raw)


DX = {"kind": "direct-connect", "location": "EqFA5", "bgp_asn": 65010, "vlan": 410}
VPN = {"kind": "vpn", "bgp_asn": 65010, "address": "145.40.66.7"}


@pytest.mark.parametrize(
    ("link", "committed", "link_gbps", "connections"),
    [
        ({**DX, "port_gbps": 10, "ports": 1}, 8, 10.0, 0),
        ({**DX, "port_gbps": 10, "ports": 2}, 8, 20.0, 0),
        ({**DX, "port_gbps": 100, "ports": 4}, 8, 400.0, 0),
        ({**VPN, "ports": 2}, 1, 2.5, 1),
        ({**VPN, "ports": 4}, 1, 5.0, 2),
        ({**VPN, "ports": 8}, 1, 10.0, 4),
    ],
)
def test_the_stack_config_carries_the_planners_link_capacity_and_vpn_connections(
    link: dict[str, Any], committed: float, link_gbps: float, connections: int
) -> None:
    plan = _plan_with_link(link, committed)
    cfg = build_site_configs(design(plan))["euc1"]
    source = cfg.onprem
    assert source is not None
    assert source.link_gbps == link_gbps == plan.onprem["fra1"].link.capacity_gbps
    expected = vpn_connections(source.ports) if link["kind"] == "vpn" else 0
    assert source.vpn_connections == connections == expected
    # Through the stack file and back, as the program reads it (numbers come back as floats).
    data = cfg.to_dict()
    data["onprem"]["vpn_connections"] = float(data["onprem"]["vpn_connections"])
    back = SiteConfig.from_dict(data).onprem
    assert back == source and isinstance(back.vpn_connections, int)
