"""Open-loop schedules: the intended send time of every message, fixed before the run.

Latency is measured from these times (docs/design.md rule 1), so they are computed up front and
never moved: a sender that falls behind sends late and keeps the intended time.
"""

from __future__ import annotations

import numpy as np

from sixnines.formats.vocabulary import Schedule

NS = 1_000_000_000


def message_count(rate: float, span_ns: int) -> int:
    """Messages in `span_ns` at `rate` msg/s (at least one)."""
    return max(1, int(rate * span_ns / NS))


def split(total: int, parts: int) -> list[int]:
    """`total` messages in `parts` shares that differ by at most one, larger ones first
    (`rate: max` has no schedule to divide: the count itself is shared out)."""
    return [total // parts + (k < total % parts) for k in range(parts)]


def intended_offsets(
    schedule: str, rate: float, count: int, phase_ns: int = 0, seed: int = 0
) -> np.ndarray:
    """Intended send times in ns relative to the start instant, as int64.

    fixed: `phase + i / rate`; poisson: exponential gaps of mean `1 / rate` (arrivals of a
    Poisson process), starting at `phase`; closed: the nominal fixed grid, which a
    closed-loop sender only uses as the earliest time for each request.
    """
    if schedule == Schedule.POISSON:
        gaps = np.random.default_rng(seed).exponential(NS / rate, size=count)
        gaps[0] = 0.0
        offsets = np.cumsum(gaps)
    elif schedule in (Schedule.FIXED, Schedule.CLOSED):
        if float(rate).is_integer():  # exact: floor(i * 1e9 / rate) in integers
            return np.arange(count, dtype=np.int64) * NS // int(rate) + phase_ns
        offsets = np.arange(count, dtype=np.float64) * NS / rate
    else:
        raise ValueError(f"unknown schedule {schedule!r}")
    return offsets.astype(np.int64) + phase_ns


def touched(count: int, dtype=np.int64, fill=0) -> np.ndarray:
    """A preallocated array whose pages are already mapped: a first touch of fresh memory
    costs ~12 µs per 4 KB page, which must not land inside the measuring loop."""
    array = np.empty(count, dtype=dtype)
    array.fill(fill)
    return array
