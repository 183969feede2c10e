"""How many GPU nodes a pool runs: one rule for every cloud."""

from __future__ import annotations

from dataclasses import dataclass

from gpudr.stackconfig import PoolConfig


@dataclass(frozen=True)
class PoolSize:
    min_size: int
    desired_size: int
    max_size: int


def pool_size(pool: PoolConfig, failover: bool) -> PoolSize:
    """Node counts for a pool: the primary runs full; a DR pool holds its pattern's standby size
    (0 for pilot light, the warm fraction, all for active-active) with the ceiling at the
    primary's size, and runs full once the DR stack is switched to failover."""
    if pool.pattern in ("primary", "active-active") or failover:
        return PoolSize(pool.nodes, pool.nodes, pool.nodes)
    return PoolSize(pool.standby_nodes, pool.standby_nodes, max(pool.nodes, 1))
