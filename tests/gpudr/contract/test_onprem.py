"""The on-premises facts the planner and the program share (gpudr/contract/onprem.py): each
written once, and each reader agrees with it."""

from __future__ import annotations

import pytest

from gpudr.contract.onprem import (
    DATASYNC_ACTIVATION_PORT,
    DATASYNC_ENDPOINT_PORTS,
    NFS_PORT,
    NFS_STORAGE_KINDS,
    OBJECT_STORAGE_KINDS,
    PORTMAPPER_PORT,
)
from gpudr.core.design import datasync_mode
from gpudr.core.enums import StorageKind
from gpudr.core.spec import parse_endpoint
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
