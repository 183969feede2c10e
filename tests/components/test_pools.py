"""The one pool-sizing rule every cloud's GPU cluster uses."""

from __future__ import annotations

import pytest

from gpudr.contract.site import PoolConfig, PoolSize, pool_size


def pool(pattern: str, standby: int) -> PoolConfig:
    return PoolConfig(
        name="train",
        kind="training",
        gpu="h100",
        instance_type="p5.48xlarge",
        gpus_per_node=8,
        efa_interfaces=32,
        placement=True,
        pattern=pattern,
        nodes=16,
        standby_nodes=standby,
        reserved=False,
        rto_s=None,
    )


@pytest.mark.parametrize(
    ("pattern", "standby", "failover", "size"),
    [
        ("primary", 16, False, PoolSize(16, 16, 16)),
        ("pilot-light", 0, False, PoolSize(0, 0, 16)),
        ("pilot-light", 0, True, PoolSize(16, 16, 16)),
        ("warm-standby", 4, False, PoolSize(4, 4, 16)),
        ("warm-standby", 4, True, PoolSize(16, 16, 16)),
        ("active-active", 16, False, PoolSize(16, 16, 16)),
        ("backup-restore", 0, True, PoolSize(16, 16, 16)),
    ],
)
def test_pool_size(pattern: str, standby: int, failover: bool, size: PoolSize) -> None:
    assert pool_size(pool(pattern, standby), failover) == size
