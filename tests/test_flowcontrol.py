"""Chapter 1: the per-container back-off behind CrashLoopBackOff, on the virtual clock.

The first five tests port k8s.io/client-go/util/flowcontrol/backoff_test.go as vendored with
Kubernetes 1.27 (TestBackoffWithJitter is left out: the kubelet's back-off has no jitter).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from mini_kubelet.clock import Clock
from mini_kubelet.flowcontrol import (
    BACK_OFF_PERIOD,
    MAX_CONTAINER_BACK_OFF,
    format_duration,
    new_back_off,
    new_container_back_off,
)

pytestmark = pytest.mark.ch1

STEP = timedelta(seconds=1)


def test_slow_backoff():
    """backoff_test.go#TestSlowBackoff: 0, 1, 2, 4 ... 32, then capped at 50; Reset clears it."""
    clock = Clock()
    b = new_back_off(STEP, 50 * STEP, clock)
    for expected in [0, 1, 2, 4, 8, 16, 32, 50, 50, 50]:
        clock.advance(STEP)
        assert b.get("_idSlow") == expected * STEP
        b.next("_idSlow", clock.now())
    b.next("_idSlow", clock.now())
    b.reset("_idSlow")
    assert b.get("_idSlow") == timedelta(0)


def test_backoff_reset():
    """backoff_test.go#TestBackoffReset: capped back-off, then 2 x max + 1 s later no longer in back-off."""
    clock = Clock()
    max_duration = 5 * STEP
    b = new_back_off(STEP, max_duration, clock)
    for _ in range(6):
        clock.advance(STEP)
        b.next("_idReset", clock.now())
    assert b.is_in_back_off_since("_idReset", clock.now())
    last_update = clock.now()
    clock.advance(2 * max_duration + STEP)
    assert not b.is_in_back_off_since("_idReset", last_update)


def test_backoff_high_water_mark():
    """backoff_test.go#TestBackoffHighWaterMark: max + 1 s of quiet is not enough to start over."""
    clock = Clock()
    max_duration = 5 * STEP
    b = new_back_off(STEP, max_duration, clock)
    for _ in range(6):
        clock.advance(STEP)
        b.next("_idHiWaterMark", clock.now())
    clock.advance(max_duration + STEP)
    b.next("_idHiWaterMark", clock.now())
    assert b.get("_idHiWaterMark") == max_duration


def test_backoff_gc():
    """backoff_test.go#TestBackoffGC: kept after max + 1 s, collected after 2 x (max + 1 s)."""
    clock = Clock()
    max_duration = 5 * STEP
    b = new_back_off(STEP, max_duration, clock)
    for _ in range(6):
        clock.advance(STEP)
        b.next("_idGC", clock.now())
    clock.advance(max_duration + STEP)
    b.gc()
    assert "_idGC" in b.per_item_backoff
    clock.advance(max_duration + STEP)
    b.gc()
    assert "_idGC" not in b.per_item_backoff


# backoff_test.go#TestIsInBackOffSinceUpdate: (tick in seconds, in back-off, delay in seconds)
SINCE_UPDATE = [
    (0, False, 0), (1, False, 1), (2, True, 2), (3, False, 2), (4, True, 4), (5, True, 4), (6, True, 4),
    (7, False, 4), (8, True, 8), (9, True, 8), (10, True, 8), (11, True, 8), (12, True, 8), (13, True, 8),
    (14, True, 8), (15, False, 8), (16, True, 10), (17, True, 10), (18, True, 10), (19, True, 10),
    (20, True, 10), (21, True, 10), (22, True, 10), (23, True, 10), (24, True, 10), (25, False, 10),
    (26, True, 10), (27, True, 10), (28, True, 10), (29, True, 10), (30, True, 10), (31, True, 10),
    (32, True, 10), (33, True, 10), (34, True, 10), (35, False, 10), (56, False, 0), (57, False, 1),
]


def test_is_in_back_off_since_update():
    """backoff_test.go#TestIsInBackOffSinceUpdate, tick by tick; Next is called whenever not in back-off."""
    clock = Clock()
    start = clock.now()
    b = new_back_off(STEP, 10 * STEP, clock)
    for tick, in_back_off, value in SINCE_UPDATE:
        clock.advance(start + tick * STEP - clock.now())
        assert b.is_in_back_off_since_update("_id", clock.now()) is in_back_off, f"tick {tick}"
        if in_back_off:
            assert b.get("_id") == value * STEP, f"tick {tick}"
        else:
            b.next("_id", clock.now())


def test_kubelet_constants():
    """pkg/kubelet/kubelet.go: backOffPeriod 10 s, MaxContainerBackOff 300 s."""
    assert (BACK_OFF_PERIOD, MAX_CONTAINER_BACK_OFF) == (timedelta(seconds=10), timedelta(seconds=300))


def test_crash_loop_sequence():
    """A container that crashes the moment it starts waits 10, 20, 40, 80, 160, 300, 300 s between starts.

    The kubelet's doBackOff: with the last exit at ts, refuse while IsInBackOffSince(key, ts), else
    Next(key, ts) and start; here the container is started the moment its back-off allows.
    """
    clock = Clock()
    b = new_container_back_off(clock)
    finished = clock.now()
    b.next("c", finished)  # the first restart is immediate
    gaps = []
    for _ in range(7):
        finished = clock.now()  # it crashes at once
        waited = timedelta(0)
        while b.is_in_back_off_since("c", finished):
            clock.advance(STEP)
            waited += STEP
        b.next("c", finished)
        gaps.append(int(waited.total_seconds()))
    assert gaps == [10, 20, 40, 80, 160, 300, 300]


def test_crash_loop_resets_after_twice_the_cap_of_quiet():
    """A container that ran more than 2 x 300 s before it crashed starts over at 10 s; 600 s exactly does not."""
    clock = Clock()
    b = new_container_back_off(clock)
    for _ in range(6):
        b.next("c", clock.now())
    assert b.get("c") == MAX_CONTAINER_BACK_OFF
    clock.advance(600)  # ran for exactly 2 x max: not expired (the comparison is strict)
    b.next("c", clock.now())
    assert b.get("c") == MAX_CONTAINER_BACK_OFF
    clock.advance(601)
    assert not b.is_in_back_off_since("c", clock.now())
    b.next("c", clock.now())
    assert b.get("c") == BACK_OFF_PERIOD


@pytest.mark.parametrize("seconds, text", [
    (0, "0s"), (10, "10s"), (40, "40s"), (80, "1m20s"), (160, "2m40s"), (300, "5m0s"), (3600, "1h0m0s"),
    (1.5, "1.5s"), (0.25, "250ms"),
])
def test_format_duration_like_go(seconds, text):
    """Go's time.Duration.String, as the back-off message prints it."""
    assert format_duration(timedelta(seconds=seconds)) == text
