"""Open-loop schedules: the intended send time of every message, fixed before the run.

Latency is measured from these times (docs/design.md rule 1), so they are computed up front and
never moved: a sender that falls behind sends late and keeps the intended time.
"""

from __future__ import annotations

import numpy as np

from sixnines.formats.shape import Cumulative, RateShape
from sixnines.formats.vocabulary import MAX_RATE, Schedule

NS = 1_000_000_000


def message_count(rate: float, span_ns: int) -> int:
    """Messages in `span_ns` at `rate` msg/s (at least one)."""
    return max(1, int(rate * span_ns / NS))


def split(total: int, parts: int) -> list[int]:
    """`total` messages in `parts` shares that differ by at most one, larger ones first
    (`rate: max` has no schedule to divide: the count itself is shared out)."""
    return [total // parts + (k < total % parts) for k in range(parts)]


class Pieces:
    """A schedule made piece by piece, in order, each piece into a buffer the caller owns:
    a run of any length holds only the pieces in hand (agents.recording). Concatenated,
    the pieces are exactly `intended_offsets` of the same arguments.

    fixed: `phase + i / rate`; poisson: exponential gaps of mean `1 / rate` (arrivals of a
    Poisson process), starting at `phase`, drawn from one generator piece after piece and
    summed on from the last time (a running sum is sequential, so the pieces add up to the
    whole run's sum bit for bit); closed: the nominal fixed grid, which a closed-loop sender
    only uses as the earliest time for each request; max (`rate: max`): zeros, which
    `OutStream.blast` replaces with send times.
    """

    def __init__(self, schedule: str, rate: float, count: int, phase_ns: int = 0,
                 seed: int = 0) -> None:
        if schedule not in (Schedule.POISSON, Schedule.FIXED, Schedule.CLOSED, MAX_RATE):
            raise ValueError(f"unknown schedule {schedule!r}")
        self.schedule, self.rate, self.count, self.phase_ns = schedule, rate, count, phase_ns
        self.rng = np.random.default_rng(seed)
        self.made = 0  # messages already given out
        self.last = 0.0  # poisson: the running sum of gaps so far

    def fill(self, out: np.ndarray) -> int:
        """Write the next piece (at most len(out) offsets, int64 ns) into `out`; returns
        how many (0: the schedule is done)."""
        n = min(len(out), self.count - self.made)
        if n <= 0:
            return 0
        first, piece = self.made, out[:n]
        if self.schedule == Schedule.POISSON:
            gaps = self.rng.exponential(NS / self.rate, size=n)
            gaps[0] = 0.0 if first == 0 else self.last + gaps[0]
            offsets = np.cumsum(gaps)
            self.last = float(offsets[-1])
            np.add(offsets.astype(np.int64), self.phase_ns, out=piece)
        elif self.schedule == MAX_RATE:
            piece.fill(0)
        elif float(self.rate).is_integer():  # exact: floor(i * 1e9 / rate) in integers
            numbers = np.arange(first, first + n, dtype=np.int64)
            np.add(numbers * NS // int(self.rate), self.phase_ns, out=piece)
        else:
            fractional = np.arange(first, first + n, dtype=np.float64)
            np.add((fractional * NS / self.rate).astype(np.int64), self.phase_ns, out=piece)
        self.made += n
        return n


class ShapedPieces(Pieces):
    """The schedule of one lane of a shaped run (formats.shape), piece by piece like
    `Pieces`. The run's messages are counted along the shape's Λ: lane j of L sends the
    messages due at Λ = j, j + L, j + 2L, … (fixed), or at Λ = j plus a running sum of
    exponential gaps of mean L (poisson: L such lanes together are a unit-rate Poisson
    process in Λ, so the run's arrivals are Poisson at the shape's rate). Λ⁻¹ then gives
    each message its time, so the lanes keep their share of the shape at every instant and
    interleave as lanes of a constant rate do."""

    def __init__(self, schedule: str, shape: RateShape, count: int, lane: int, lanes: int,
                 seed: int = 0) -> None:
        if schedule not in (Schedule.POISSON, Schedule.FIXED):
            raise ValueError(f"a shaped rate has no {schedule!r} schedule")
        super().__init__(schedule, 0.0, count, seed=seed)
        self.cumulative: Cumulative = shape.cumulative()
        self.lane, self.lanes = lane, lanes

    def fill(self, out: np.ndarray) -> int:
        n = min(len(out), self.count - self.made)
        if n <= 0:
            return 0
        first = self.made
        if self.schedule == Schedule.POISSON:
            gaps = self.rng.exponential(float(self.lanes), size=n)
            gaps[0] = float(self.lane) if first == 0 else self.last + gaps[0]
            due = np.cumsum(gaps)
            self.last = float(due[-1])
        else:
            due = self.lane + self.lanes * np.arange(first, first + n, dtype=np.float64)
        out[:n] = self.cumulative.inverse(due).astype(np.int64)
        self.made += n
        return n


def shaped_count(shape: RateShape, span_ns: int, lanes: int) -> int:
    """Messages each of `lanes` lanes sends over `span_ns` of the shape: an equal share of
    those due (Λ(span)), at least one."""
    return max(1, int(float(shape.cumulative().at(span_ns)) / lanes))


def intended_offsets(
    schedule: str, rate: float, count: int, phase_ns: int = 0, seed: int = 0
) -> np.ndarray:
    """Intended send times in ns relative to the start instant, as int64, all at once
    (`Pieces` says how each schedule is made)."""
    offsets = np.empty(count, dtype=np.int64)
    Pieces(schedule, rate, count, phase_ns, seed).fill(offsets)
    return offsets


def touched(count: int, dtype=np.int64, fill=0) -> np.ndarray:
    """A preallocated array whose pages are already mapped: a first touch of fresh memory
    costs ~12 µs per 4 KB page, which must not land inside the measuring loop."""
    array = np.empty(count, dtype=dtype)
    array.fill(fill)
    return array
