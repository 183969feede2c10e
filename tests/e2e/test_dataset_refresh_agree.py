"""The planner and the pack agree on datasets with a bulk refresh (issue 16): the refresh's
burst and period reach the pack as `gpudr:burst-bytes` and `gpudr:interval-s`, and the pack
rebuilds the same need (size x 8 / RPO beside the daily change) and the same RPO bound (a
refresh period is no data loss). One case per pair's mechanisms, both sides of the verdict."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.e2e.test_planner_and_pack_agree import DR, PRIMARY, _verdicts

pytestmark = pytest.mark.slow


def _plan(pair: tuple[str, str], mechanism: str, refresh: str, every: str, rpo: str) -> Any:
    return {
        "name": "prop",
        "sites": {
            "prim": dict(copy.deepcopy(PRIMARY[pair[0]]), role="primary"),
            "dr": dict(copy.deepcopy(DR[pair[1]]), role="dr", protects="prim"),
        },
        "quotas": {"s3_rtc_gbps": 5, "sts_gbps": 5, "datasync_gbps": 5},
        "data": {
            "datasets": {
                "size": "200TB",
                "daily_change": "1TB",
                "refresh": {"size": refresh, "every": every},
                "rpo": rpo,
                "replication": mechanism,
            }
        },
    }


@pytest.mark.parametrize(
    ("pair", "mechanism", "refresh", "every", "rpo", "met"),
    [
        # S3 RTC at 5 Gbps: 1 TB within 1 h needs 2.2 Gbps (x 1.25 headroom: 2.9): met; 10 TB
        # needs 22.3 Gbps: not.
        (("aws", "aws"), "crr-rtc", "1TB", "7d", "1h", True),
        (("aws", "aws"), "crr-rtc", "10TB", "7d", "1h", False),
        # A 100 TB weekly refresh within 24 h: 9.35 Gbps, above the 5 Gbps quota.
        (("aws", "aws"), "crr-rtc", "100TB", "7d", "24h", False),
        # Scheduled pulls at 5 Gbps: a 1 TB refresh copies in 27 min; within 6 h, met.
        (("aws", "gcp"), "sts", "1TB", "7d", "6h", True),
        (("gcp", "aws"), "datasync", "1TB", "1d", "6h", True),
        (("gcp", "aws"), "datasync", "20TB", "1d", "6h", False),
        # Turbo replication's own path.
        (("gcp", "gcp"), "gcs-turbo", "1TB", "7d", "1h", True),
        # A dual write (RPO above 0) over the DR link.
        (("azure", "azure"), "dual-write", "1TB", "7d", "1h", True),
    ],
)
def test_planner_and_pack_agree_on_a_refresh(
    pair: tuple[str, str], mechanism: str, refresh: str, every: str, rpo: str, met: bool
) -> None:
    d, planner, pack = _verdicts(_plan(pair, mechanism, refresh, every, rpo))
    assert pack == planner, [f.notes for f in d.flows]
    assert planner == {"datasets": met}, [f.notes for f in d.flows]
