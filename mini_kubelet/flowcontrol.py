"""Per-key exponential back-off on the virtual clock: the crash-loop delays between container restarts.

Upstream: k8s.io/client-go/util/flowcontrol/backoff.go Backoff. The kubelet builds its container
back-off with NewBackOff(backOffPeriod, MaxContainerBackOff), which has no jitter, so none is modelled.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Callable, Optional

from mini_kubelet import features

from mini_kubelet.clock import Clock

# --8<-- [start:constants]
BACK_OFF_PERIOD = timedelta(seconds=10)  # pkg/kubelet/kubelet.go backOffPeriod: the first delay
MAX_CONTAINER_BACK_OFF = timedelta(seconds=300)  # pkg/kubelet/kubelet.go MaxContainerBackOff: the cap
# --8<-- [end:constants]
# --8<-- [start:constants_v136]
REDUCED_INITIAL_CRASH_LOOP_BACK_OFF = timedelta(seconds=1)  # ReduceDefaultCrashLoopBackOffDecay (alpha, off)
REDUCED_MAX_CRASH_LOOP_BACK_OFF = timedelta(seconds=60)
MIN_CONTAINER_RESTART_PERIOD = timedelta(seconds=1)  # crashLoopBackOff.maxContainerRestartPeriod: 1 s to 300 s
CRASH_LOOP_BACK_OFF_RESET = timedelta(seconds=600)  # from 1.32 the kubelet's HasExpiredFunc: a flat 10 min
# --8<-- [end:constants_v136]


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
        # HasExpiredFunc (client-go from v0.32): when an entry starts over and is collected; None is 2 x the cap
        self.has_expired_func: Optional[Callable[[datetime, datetime, timedelta], bool]] = None

    def has_expired(self, event_time: datetime, last_update: datetime) -> bool:
        """Whether the entry starts over: has_expired_func if set, else more than 2 x the cap since its update.

        Upstream: k8s.io/client-go/util/flowcontrol/backoff.go Backoff.hasExpired (v0.32 and later)
        """
        if self.has_expired_func is not None:
            return self.has_expired_func(event_time, last_update, self.max_duration)
        return has_expired(event_time, last_update, self.max_duration)

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
        if entry is None or self.has_expired(event_time, entry.last_update):
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
        if entry is None or self.has_expired(event_time, entry.last_update):
            return False
        return self.clock.since(event_time) < entry.backoff

    def back_off_ends(self, key: str, event_time: datetime) -> Optional[datetime]:
        """When is_in_back_off_since(key, event_time) turns false for good (None: the entry is missing or expired)."""
        entry = self.per_item_backoff.get(key)
        if entry is None or self.has_expired(event_time, entry.last_update):
            return None
        return event_time + entry.backoff

    def is_in_back_off_since_update(self, key: str, event_time: datetime) -> bool:
        """Whether event_time falls less than the key's delay after its last update.

        Upstream: k8s.io/client-go/util/flowcontrol/backoff.go Backoff.IsInBackOffSinceUpdate
        """
        entry = self.per_item_backoff.get(key)
        if entry is None or self.has_expired(event_time, entry.last_update):
            return False
        return event_time - entry.last_update < entry.backoff

    def gc(self) -> None:
        """Drop the entries not updated for more than 2 x the cap (the kubelet calls this in housekeeping).

        Upstream: k8s.io/client-go/util/flowcontrol/backoff.go Backoff.GC
        """
        now = self.clock.now()
        for key in [k for k, e in self.per_item_backoff.items() if self.has_expired(now, e.last_update)]:
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


# --8<-- [start:new_crash_loop_back_off]
def new_crash_loop_back_off(max_container_restart_period: Optional[timedelta] = None) -> tuple[timedelta, timedelta]:
    """(cap, initial delay) of the crash-loop back-off, by the release's gates and the kubelet config.

    10 s doubling to 300 s; with ReduceDefaultCrashLoopBackOffDecay 1 s to 60 s; with KubeletCrashLoopBackOffMax
    the config's crashLoopBackOff.maxContainerRestartPeriod is the cap (its default, 300 s, even over the reduced
    60 s), and the first delay is never above it.
    Upstream: pkg/kubelet/kubelet.go newCrashLoopBackOff (as in a 1.35 copy; 1.32 had the config's cap alone, inline)
    """
    cap, initial = MAX_CONTAINER_BACK_OFF, BACK_OFF_PERIOD
    gate = features.DEFAULT_FEATURE_GATE
    if gate.enabled("ReduceDefaultCrashLoopBackOffDecay"):
        cap, initial = REDUCED_MAX_CRASH_LOOP_BACK_OFF, REDUCED_INITIAL_CRASH_LOOP_BACK_OFF
    if gate.enabled("KubeletCrashLoopBackOffMax"):
        cap = max_container_restart_period if max_container_restart_period is not None else MAX_CONTAINER_BACK_OFF
        initial = min(initial, cap)
    return cap, initial
# --8<-- [end:new_crash_loop_back_off]


def new_container_back_off(clock: Clock, max_container_restart_period: Optional[timedelta] = None) -> Backoff:
    """The kubelet's crash-loop back-off: 10 s first, doubling, capped at 300 s (v1.27).

    Later releases take their gates into account (new_crash_loop_back_off), and from 1.32 an entry starts
    over only after 10 minutes without a restart, whatever the cap (with the 300 s cap that was 2 x the cap).
    Upstream: pkg/kubelet/kubelet.go NewMainKubelet (klet.backOff = flowcontrol.NewBackOff(backOffPeriod,
    MaxContainerBackOff); from 1.32 with its HasExpiredFunc; later named klet.crashLoopBackOff)
    """
    cap, initial = new_crash_loop_back_off(max_container_restart_period)
    back_off = new_back_off(initial, cap, clock)
    if features.DEFAULT_FEATURE_GATE.changed("CrashLoopBackOffFlatReset"):
        back_off.has_expired_func = lambda event_time, last_update, _cap: event_time - last_update > CRASH_LOOP_BACK_OFF_RESET
    return back_off


def crash_loop_back_off_reset(max_container_restart_period: Optional[timedelta] = None) -> timedelta:
    """How long after its last update a container's back-off starts over: 2 x the cap (600 s in v1.27), 10 min from 1.32.

    Upstream: k8s.io/client-go/util/flowcontrol/backoff.go hasExpired (the kubelet's HasExpiredFunc from 1.32)
    """
    if features.DEFAULT_FEATURE_GATE.changed("CrashLoopBackOffFlatReset"):
        return CRASH_LOOP_BACK_OFF_RESET
    return new_crash_loop_back_off(max_container_restart_period)[0] * 2


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
