"""Per-key exponential back-off on the virtual clock: the crash-loop delays between container restarts.

Upstream: k8s.io/client-go/util/flowcontrol/backoff.go Backoff. The kubelet builds its container
back-off with NewBackOff(backOffPeriod, MaxContainerBackOff), which has no jitter, so none is modelled.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from mini_kubelet.clock import Clock

# --8<-- [start:constants]
BACK_OFF_PERIOD = timedelta(seconds=10)  # pkg/kubelet/kubelet.go backOffPeriod: the first delay
MAX_CONTAINER_BACK_OFF = timedelta(seconds=300)  # pkg/kubelet/kubelet.go MaxContainerBackOff: the cap
# --8<-- [end:constants]


@dataclass
class BackoffEntry:
    """The current delay of one key and when it was last moved on.

    Upstream: k8s.io/client-go/util/flowcontrol/backoff.go backoffEntry
    """

    backoff: timedelta
    last_update: datetime


# --8<-- [start:Backoff]
class Backoff:
    """Delays per key that double on each Next up to a cap, and start over after 2 x cap of quiet.

    Upstream: k8s.io/client-go/util/flowcontrol/backoff.go Backoff (NewBackOff, NewFakeBackOff)
    """

    def __init__(self, initial: timedelta, max_duration: timedelta, clock: Clock):
        self.clock = clock
        self.default_duration = initial
        self.max_duration = max_duration
        self.per_item_backoff: dict[str, BackoffEntry] = {}

    def get(self, key: str) -> timedelta:
        """The key's current delay, 0 if it has none.

        Upstream: k8s.io/client-go/util/flowcontrol/backoff.go Backoff.Get
        """
        entry = self.per_item_backoff.get(key)
        return entry.backoff if entry else timedelta(0)

    def next(self, key: str, event_time: datetime) -> None:
        """Move the key's delay on: the initial delay if new or expired, else double it, capped.

        Upstream: k8s.io/client-go/util/flowcontrol/backoff.go Backoff.Next
        """
        entry = self.per_item_backoff.get(key)
        if entry is None or has_expired(event_time, entry.last_update, self.max_duration):
            entry = self.per_item_backoff[key] = BackoffEntry(self.default_duration, self.clock.now())
        else:
            entry.backoff = min(entry.backoff * 2, self.max_duration)
        entry.last_update = self.clock.now()

    def reset(self, key: str) -> None:
        """Forget the key.

        Upstream: k8s.io/client-go/util/flowcontrol/backoff.go Backoff.Reset
        """
        self.per_item_backoff.pop(key, None)

    def is_in_back_off_since(self, key: str, event_time: datetime) -> bool:
        """Whether less than the key's delay has passed since event_time (never, once the entry expired).

        Upstream: k8s.io/client-go/util/flowcontrol/backoff.go Backoff.IsInBackOffSince
        """
        entry = self.per_item_backoff.get(key)
        if entry is None or has_expired(event_time, entry.last_update, self.max_duration):
            return False
        return self.clock.since(event_time) < entry.backoff

    def is_in_back_off_since_update(self, key: str, event_time: datetime) -> bool:
        """Whether event_time falls less than the key's delay after its last update.

        Upstream: k8s.io/client-go/util/flowcontrol/backoff.go Backoff.IsInBackOffSinceUpdate
        """
        entry = self.per_item_backoff.get(key)
        if entry is None or has_expired(event_time, entry.last_update, self.max_duration):
            return False
        return event_time - entry.last_update < entry.backoff

    def gc(self) -> None:
        """Drop the entries not updated for more than 2 x the cap (the kubelet calls this in housekeeping).

        Upstream: k8s.io/client-go/util/flowcontrol/backoff.go Backoff.GC
        """
        now = self.clock.now()
        for key in [k for k, e in self.per_item_backoff.items() if now - e.last_update > self.max_duration * 2]:
            del self.per_item_backoff[key]

    def delete_entry(self, key: str) -> None:
        """Forget the key (the same as reset).

        Upstream: k8s.io/client-go/util/flowcontrol/backoff.go Backoff.DeleteEntry
        """
        self.per_item_backoff.pop(key, None)
# --8<-- [end:Backoff]


def has_expired(event_time: datetime, last_update: datetime, max_duration: timedelta) -> bool:
    """Whether event_time is more than 2 x the cap after the last update: the entry starts over.

    Upstream: k8s.io/client-go/util/flowcontrol/backoff.go hasExpired
    """
    return event_time - last_update > max_duration * 2


def new_back_off(initial: timedelta, max_duration: timedelta, clock: Clock) -> Backoff:
    """A back-off with the given initial delay and cap, on the given clock.

    Upstream: k8s.io/client-go/util/flowcontrol/backoff.go NewBackOff (NewFakeBackOff in tests)
    """
    return Backoff(initial, max_duration, clock)


def new_container_back_off(clock: Clock) -> Backoff:
    """The kubelet's crash-loop back-off: 10 s first, doubling, capped at 300 s.

    Upstream: pkg/kubelet/kubelet.go NewMainKubelet (klet.backOff = flowcontrol.NewBackOff(backOffPeriod, MaxContainerBackOff))
    """
    return new_back_off(BACK_OFF_PERIOD, MAX_CONTAINER_BACK_OFF, clock)


def format_duration(d: timedelta) -> str:
    """A duration as Go's time.Duration.String prints it: 10s, 1m20s, 5m0s, 1.5s, 0s.

    Upstream: Go time.Duration.String (how the back-off message prints the delay)
    """
    micros = d // timedelta(microseconds=1)
    if micros == 0:
        return "0s"
    sign, micros = ("-", -micros) if micros < 0 else ("", micros)
    if micros < 1_000_000:  # Go prints sub-second values in ms or µs
        return sign + (f"{micros / 1000:g}ms" if micros >= 1000 else f"{micros}µs")
    hours, rest = divmod(micros, 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    seconds = f"{rest / 1_000_000:.6f}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}"
    return f"{sign}{minutes}m{seconds}" if minutes else sign + seconds
