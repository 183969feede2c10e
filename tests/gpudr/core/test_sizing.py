"""The sizing formulas against hand-computed cases (docs/sizing.md states each formula)."""

from __future__ import annotations

import math

import pytest

from gpudr.core import sizing

TB = 1e12


def ckpt(
    mechanism: str, size: float, interval: float, dedup: float, comp: float, rpo: float | None
) -> sizing.Flow:
    return sizing.checkpoint_flow(
        mechanism,
        size_b=size,
        interval_s=interval,
        dedup_ratio=dedup,
        compression_ratio=comp,
        rpo_s=rpo,
    )


def test_checkpoint_delta() -> None:
    # 2 TB x (1 - 0.6) / 3 = 0.2667 TB
    assert sizing.checkpoint_delta_bytes(2 * TB, 0.6, 3) == pytest.approx(2e12 * 0.4 / 3)


@pytest.mark.parametrize(
    ("rpo", "interval", "window"),
    [
        (4 * 3600, 2700, 2700),  # RPO far above the interval: the next checkpoint bounds it
        (3600, 2700, 900),  # 1 h RPO, 45 min interval: 15 min to replicate
        (2700, 2700, 0),  # RPO equal to the interval leaves no time to replicate
    ],
)
def test_checkpoint_window(rpo: float, interval: float, window: float) -> None:
    assert sizing.checkpoint_window_s(rpo, interval) == window


def test_required_gbps() -> None:
    # 266.67 GB in 2700 s: 266.67e9 * 8 / 2700 / 1e9 = 0.7901 Gbps
    assert sizing.required_gbps(2e12 * 0.4 / 3, 2700) == pytest.approx(0.790123, rel=1e-5)
    assert math.isinf(sizing.required_gbps(1.0, 0))
    assert sizing.required_gbps(0, 0) == 0


def test_checkpoint_flow_uses_tighter_window() -> None:
    f = ckpt("crr-rtc", 2 * TB, 2700, 0.6, 3, 3600)
    # window = min(3600 - 2700, 2700) = 900 s -> 266.67e9 * 8 / 900 = 2.370 Gbps
    assert f.required_gbps == pytest.approx(2.370370, rel=1e-5)
    assert f.steady_gbps == pytest.approx(0.790123, rel=1e-5)
    assert f.base_rpo_s == 2700


def test_weights_and_datasets_flows() -> None:
    dual = sizing.weights_flow("dual-write", 150e9, 0, publish_window_s=3600)
    assert dual.required_gbps == pytest.approx(150e9 * 8 / 3600 / 1e9)  # 0.333 Gbps
    rtc = sizing.weights_flow("crr-rtc", 150e9, 1800, 3600)
    assert rtc.required_gbps == pytest.approx(150e9 * 8 / 1800 / 1e9)  # 0.667 Gbps
    d = sizing.dataset_flow("crr-rtc", 1 * TB)
    # 0.0926 Gbps, at the precision the tags carry (whole kbit/s): 92,593 kbps
    assert d.steady_gbps == 92_593 / 1e6
    assert d.burst_bytes == 0


CKPT = ckpt("crr-rtc", 2 * TB, 2700, 0.6, 3, 4 * 3600)


@pytest.mark.parametrize(
    ("capacity", "others", "rpo", "guaranteed"),
    [
        # 5 Gbps, 0.0926 Gbps of datasets: 266.67 GB drains in 266.67e9*8/4.907e9 = 434.7 s,
        # inside RTC's 15 min: RPO = 45 min + 15 min.
        (5.0, 0.0926, 3600.0, True),
        # 1 Gbps default quota: 266.67e9*8/0.9074e9 = 2351 s > 900 s: RPO = 2700 + 2351.
        (1.0, 0.0926, 2700 + 2e12 * 0.4 / 3 * 8 / (0.9074e9), False),
    ],
)
def test_achieved_rpo_rtc(capacity: float, others: float, rpo: float, guaranteed: bool) -> None:
    est = sizing.achieved_rpo(CKPT, 900, False, capacity, others)
    assert est.estimated_s == pytest.approx(rpo, rel=1e-4)
    assert est.guaranteed is guaranteed


def test_achieved_rpo_edges() -> None:
    # CRR without RTC guarantees nothing.
    assert sizing.achieved_rpo(CKPT, None, False, math.inf, 0).estimated_s is None
    # Steady load above the path: the backlog grows without bound.
    starved = sizing.achieved_rpo(CKPT, 900, False, 0.5, 0.0)
    assert starved.estimated_s == math.inf and not starved.guaranteed
    # Synchronous: loss is only what replication cannot remove.
    dual = sizing.weights_flow("dual-write", 150e9, 0, 3600)
    assert sizing.achieved_rpo(dual, 0, True, 50, 0).estimated_s == 0


PARAMS = sizing.RtoParams(
    detection_s=300,
    traffic_shift_s=60,
    infra_create_s=1200,
    gpu_node_boot_s=600,
    gpu_capacity_wait_s=5400,
    warm_scale_up_s=1800,
    restart_s=600,
    read_gbps_per_node=10,
)
WORKING = 2 * TB / 3  # latest checkpoint as stored


@pytest.mark.parametrize(
    ("pattern", "kind", "reserved", "total"),
    [
        # 300 + 1200 + (600 + 5400) + 666.7e9*8/(16*10e9)=33.3 + 600
        ("backup-restore", "training", False, 8133.33),
        ("pilot-light", "training", False, 6933.33),
        # a capacity reservation removes the wait for capacity
        ("pilot-light", "training", True, 1533.33),
        ("warm-standby", "training", False, 2733.33),
        # reserved: the missing nodes only boot (600 s), no 30 min scale-up
        ("warm-standby", "training", True, 1533.33),
        ("active-active", "training", False, 933.33),
        # service: every node loads the whole working set itself: 150e9*8/10e9 = 120 s
        ("active-active", "service", False, 360.0),
        ("warm-standby", "service", False, 300 + 1800 + 120 + 600 + 60),
    ],
)
def test_rto_stages(pattern: str, kind: str, reserved: bool, total: float) -> None:
    working = 150e9 if kind == "service" else WORKING
    stages = sizing.rto_stages(
        pattern, kind, nodes=16, working_set_b=working, reserved=reserved, params=PARAMS
    )
    assert sizing.rto_total(stages) == pytest.approx(total, abs=0.01)


@pytest.mark.parametrize(
    ("pattern", "nodes", "fraction", "standing"),
    [
        ("pilot-light", 16, 0.2, 0),
        ("warm-standby", 16, 0.2, 4),
        ("warm-standby", 16, 0.25, 4),
        ("warm-standby", 3, 0.2, 1),
        ("active-active", 16, 0.2, 16),
        ("backup-restore", 16, 0.2, 0),
    ],
)
def test_standing_nodes(pattern: str, nodes: int, fraction: float, standing: int) -> None:
    assert sizing.standing_nodes(pattern, nodes, fraction) == standing


PORTS = {1: 0.30, 10: 2.25, 100: 22.50, 400: 85.00}
LAG = {1: 4, 10: 4, 100: 2, 400: 2}  # AWS: 4 ports below 100G, 2 at 100G and 400G


@pytest.mark.parametrize(
    ("need", "speed", "ports"),
    [
        (0.4, 1, 2),  # two diverse 1G ports are the cheapest floor
        (12, 10, 2),  # 1G would need 12 ports, 6 per location: over the LAG limit
        (45, 10, 5),  # 5 x 10G ($11.25/h) beats 2 x 100G ($45/h)
        (85, 100, 2),  # 9 x 10G is 5 per location: over the limit
        (300, 100, 3),  # 3 x 100G, 2 at one location ($67.50/h) beats 2 x 400G ($170/h)
        (500, 400, 2),  # 5 x 100G is 3 per location: over the 2-port LAG limit at 100G
    ],
)
def test_size_direct_connect(need: float, speed: int, ports: int) -> None:
    plan = sizing.size_direct_connect(need, PORTS, 2, LAG, locations=2)
    assert (plan.port_gbps, plan.ports) == (speed, ports)
    assert plan.capacity_gbps >= need


def test_size_direct_connect_impossible() -> None:
    with pytest.raises(ValueError, match="needs more than"):
        sizing.size_direct_connect(5000, PORTS, 2, LAG, locations=2)


def test_cheapest_prefers_cost_then_speed_then_more_standing() -> None:
    options = [
        ("backup-restore", 0.0, True, 7000.0),
        ("pilot-light", 0.0, True, 7000.0),
        ("warm-standby", 100.0, True, 2000.0),
        ("active-active", 500.0, True, 100.0),
    ]
    assert sizing.cheapest(options) == "pilot-light"
    assert sizing.cheapest([("warm-standby", 1.0, False, 1.0)]) is None


def test_scheduled_transfer_picks_the_longest_interval_that_keeps_headroom() -> None:
    # 266.67 GB checkpoint deltas every 45 min on a 10 Gbps transfer path, others 0.0926 Gbps:
    # 9.907 Gbps free. A run every 3 h holds 4 checkpoints, every 2 h up to 3.
    # 3 h: 2700 + 10800 + (4 x 266.67e9 x 8 / 9.907e9 = 861 s) x 1.25 = 14576 s > 4 h
    # 2 h: 2700 + 7200 + (3 x 266.67e9 x 8 / 9.907e9 = 646 s) x 1.25 = 10708 s <= 4 h
    s = sizing.scheduled_transfer(CKPT, 4 * 3600, 10.0, 0.0926, headroom=1.25)
    assert s.interval_s == 7200 and s.fits
    assert s.run_bytes == 3 * 266_666_666_666
    assert s.transfer_s == pytest.approx(3 * 266.666666666e9 * 8 / 9.9074e9, rel=1e-6)
    assert s.estimated_rpo_s == pytest.approx(2700 + 7200 + s.transfer_s)


@pytest.mark.parametrize(
    ("flow", "interval", "expected"),
    [
        # The case: a 2 TB checkpoint every 2 h pulled hourly copies 2 TB in the run
        # after it lands, not the 1 TB the steady rate suggests.
        (ckpt("sts", 2 * TB, 7200, 0, 1, 8 * 3600), 3600, 2e12),
        # 45 min checkpoints pulled every 2 h: up to three land in one run.
        (CKPT, 7200, 3 * 266_666_666_666),
        # Exactly four in 3 h: the steady rate over the interval, the same figure.
        (CKPT, 10800, 4 * 266_666_666_666),
        # Datasets change steadily: the rate over the interval.
        (sizing.dataset_flow("sts", 1 * TB), 7200, 92_593e3 / 8 * 7200),
        # Weights are published whenever: at least one whole publish per run.
        (sizing.weights_flow("sts", 150e9, 6 * 3600, 3600), 3600, 150e9),
    ],
)
def test_run_bytes_is_the_most_one_run_can_copy(
    flow: sizing.Flow, interval: int, expected: float
) -> None:
    assert sizing.run_bytes(flow, interval) == pytest.approx(expected, rel=1e-9)


def test_scheduled_transfer_edges() -> None:
    # no RPO target: a daily copy
    assert sizing.scheduled_transfer(CKPT, None, 10.0, 0.0).interval_s == 86400
    # even 1 h misses a 1 h RPO after a 45 min interval: shortest interval, fits=False
    tight = sizing.scheduled_transfer(CKPT, 3600, 10.0, 0.0)
    assert tight.interval_s == 3600 and not tight.fits
    # weights have no steady load: one run carries one publish
    w = sizing.weights_flow("sts", 150e9, 6 * 3600, 3600)
    assert sizing.scheduled_transfer(w, 6 * 3600, 10.0, 0.0).run_bytes == 150e9
