"""The bounded rings: order, overwrite, the minute roll-up and windows."""

from __future__ import annotations

import math

from roundhouse.core.metrics.ring import Ring, TieredRing


def test_ring_keeps_the_newest_rows_oldest_first() -> None:
    ring = Ring(fields=2, capacity=3)
    for t in range(5):
        ring.append(float(t), [t * 10.0, math.nan])
    assert len(ring) == 3
    times, (first, second) = ring.since(-1.0)
    assert times == [2.0, 3.0, 4.0]
    assert first == [20.0, 30.0, 40.0]
    assert all(math.isnan(v) for v in second)
    assert ring.last_t() == 4.0


def test_ring_since_keeps_only_later_rows() -> None:
    ring = Ring(fields=1, capacity=10)
    for t in range(4):
        ring.append(float(t), [1.0])
    times, _ = ring.since(1.5)
    assert times == [2.0, 3.0]


def test_tiered_ring_averages_each_finished_minute() -> None:
    ring = TieredRing(fields=2, seconds=120, minutes=10)
    for t in range(0, 130):
        ring.append(float(t), [float(t), math.nan])
    # Minutes 0 and 60 are finished; 120 is still open.
    times, (mean, missing) = ring.minutes.since(-1.0)
    assert times == [0.0, 60.0]
    assert mean == [29.5, 89.5]
    assert all(math.isnan(v) for v in missing)


def test_window_picks_seconds_within_the_hour_and_minutes_beyond() -> None:
    ring = TieredRing(fields=1, seconds=120, minutes=10)
    for t in range(0, 200):
        ring.append(float(t), [1.0])
    resolution, times, _ = ring.window(10, now=199.0)
    assert resolution == 1.0 and times == [float(t) for t in range(190, 200)]
    resolution, times, _ = ring.window(600, now=199.0)
    assert resolution == 60.0 and times == [0.0, 60.0, 120.0]


def test_ring_memory_is_bounded() -> None:
    ring = TieredRing(fields=12)
    for t in range(5000):
        ring.append(float(t), [0.0] * 12)
    assert len(ring.seconds) == 3600
    assert len(ring.minutes) <= 1440
