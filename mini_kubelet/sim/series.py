"""Values over time in a scenario: Go durations, and a Series (steps or a ramp) read at any second.

Upstream: none (a course tool); durations are written the way time.ParseDuration reads them, as in
every duration of a KubeletConfiguration.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Any

PAGE_SIZE = 4096  # a ramp of bytes moves in pages, so numbers print the way a real node's do (in Ki)
MAX_GO_DURATION = (2**63 - 1) // 10**9  # seconds: Go's Duration is int64 nanoseconds (about 292 years)

_DURATION = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}


# --8<-- [start:parse_duration]
def parse_duration(text: Any) -> int:
    """A Go duration ("1m30s", "-2h", "0") in whole seconds; ValueError otherwise.

    Upstream: time.ParseDuration (the format of every duration in a KubeletConfiguration)
    """
    string = str(text) if isinstance(text, (str, int)) and not isinstance(text, bool) else None
    if string is None or not string:
        raise ValueError(f"invalid duration {text!r}")
    sign, rest = (-1, string[1:]) if string[0] == "-" else (1, string.lstrip("+"))
    if rest == "0":
        return 0
    total, pos = 0.0, 0
    while pos < len(rest):
        match = _DURATION.match(rest, pos)
        if not match or match.group(1) in ("", "."):
            raise ValueError(f'invalid duration "{string}" (write it like 90s, 2m or 1h30m)')
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
        if total > MAX_GO_DURATION:
            raise ValueError(f'invalid duration "{string}" (out of range: Go durations stop at about 292 years)')
    if not rest or total != int(total):
        raise ValueError(f'invalid duration "{string}" (the replay counts whole seconds)')
    return sign * int(total)
# --8<-- [end:parse_duration]


def format_duration(seconds: int) -> str:
    """Seconds as a short duration: 0s, 45s, 2m, 2m10s, 1h5m.

    Upstream: none (Go's Duration.String would print 2m10s as "2m10s" and 2m as "2m0s")
    """
    sign, seconds = ("-" if seconds < 0 else ""), abs(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours}h" if hours else "", f"{minutes}m" if minutes else "", f"{secs}s" if secs else ""]
    return sign + ("".join(parts) or "0s")


# --8<-- [start:Series]
@dataclass
class Series:
    """A value over time: steps (each value holds from its time on, 0 before the first) or a ramp."""

    points: list[tuple[int, int]]
    ramp: bool = False
    unit: int = 1  # a ramp moves in whole units: 4096 for bytes (a page or a disk block), 1 for counts

    def at(self, t: int) -> int:
        """The value at t seconds (a ramp is a straight line between points, flat after the last).

        Upstream: none (a course tool)
        """
        value, previous = 0, None
        for when, amount in self.points:
            if t < when:
                if self.ramp and previous is not None:
                    (t0, v0) = previous
                    return v0 + (amount - v0) * (t - t0) // (when - t0) // self.unit * self.unit
                return value
            value, previous = amount, (when, amount)
        return value
# --8<-- [end:Series]

    def at_each(self, times: list[int]) -> list[int]:
        """at(t) for each of the times, given in increasing order: each run of times between two points at once."""
        points, values, k = self.points, [], 0
        if len(times) < 8 or any(a[0] >= b[0] for a, b in zip(points, points[1:])):
            return [self.at(t) for t in times]  # few times, or points out of order (at() reads them as they come)
        whens = [when for when, _ in points]
        while k < len(times):
            i = bisect_right(whens, times[k])  # the first point after times[k]
            j = bisect_left(times, whens[i], k) if i < len(points) else len(times)  # times[k:j] come before it
            if i == 0:
                values += [0] * (j - k)
            elif i == len(points) or not self.ramp:
                values += [points[i - 1][1]] * (j - k)
            else:
                (t0, v0), (t1, v1), unit = points[i - 1], points[i], self.unit
                values += [v0 + (v1 - v0) * (t - t0) // (t1 - t0) // unit * unit for t in times[k:j]]
            k = j
        return values
