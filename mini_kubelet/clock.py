"""A virtual clock: time moves only when the caller says so, so every run gives the same timeline.

Upstream: k8s.io/utils/clock/testing FakeClock (what the kubelet's eviction tests drive the manager
with). The real kubelet reads the wall clock; the mini kubelet never does, and never sleeps.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

# --8<-- [start:constants]
EVICTION_MONITORING_PERIOD = timedelta(seconds=10)  # pkg/kubelet/kubelet.go evictionMonitoringPeriod
DEFAULT_START = datetime(2023, 1, 1, tzinfo=timezone.utc)  # an arbitrary, fixed origin
# --8<-- [end:constants]


def _as_timedelta(amount: float | int | timedelta) -> timedelta:
    if isinstance(amount, timedelta):
        return amount
    return timedelta(seconds=amount)


# --8<-- [start:Clock]
class Clock:
    """A clock that stands still until advanced; now() is the same datetime until advance() or step().

    Upstream: k8s.io/utils/clock/testing FakeClock
    """

    def __init__(self, start: datetime = DEFAULT_START, period: timedelta = EVICTION_MONITORING_PERIOD):
        self._now = start
        self.start = start
        self.period = period  # how far step() moves: one eviction-manager housekeeping pass

    def now(self) -> datetime:
        """The current virtual time.

        Upstream: k8s.io/utils/clock/testing FakePassiveClock.Now
        """
        return self._now

    def since(self, moment: datetime) -> timedelta:
        """Virtual time elapsed since moment.

        Upstream: k8s.io/utils/clock/testing FakePassiveClock.Since
        """
        return self._now - moment

    def advance(self, amount: float | int | timedelta) -> datetime:
        """Move the clock forward by amount (seconds or a timedelta) and return the new time.

        Upstream: k8s.io/utils/clock/testing FakeClock.Step
        """
        delta = _as_timedelta(amount)
        if delta < timedelta(0):
            raise ValueError(f"a clock cannot go backwards: {delta}")
        self._now += delta
        return self._now

    def step(self) -> datetime:
        """Move the clock forward by one housekeeping period (10 s by default).

        Upstream: pkg/kubelet/eviction/eviction_manager.go Start (the 10 s sleep between passes)
        """
        return self.advance(self.period)

    def elapsed(self) -> timedelta:
        """Virtual time since the clock was created.

        Upstream: none (a course helper for timelines)
        """
        return self._now - self.start
# --8<-- [end:Clock]
