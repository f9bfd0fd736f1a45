"""A run cut into short intervals of its measured time, each counted on its own: what the
figures of its faults are computed from (spark_jobs.faults; docs/design.md, "Faults:
intervals, band and recovery"). The counts do not depend on when the faults happened, so
the agents' passes (spark_jobs.agent_pass, on Spark or in the sidecar while the run goes)
fold them before the faults' times are known, and each fault's figures are taken from
them at the end.

Time is the controller's, from the measured start: a message's intended time less the
end of its producer's warm-up (both on the producer's clock, RunContext.warmup_ends),
a receipt's receive time likewise once moved onto its producer's clock (the latency's
own correction; receipts the analysis cannot time, `excluded`, are placed nowhere), on
the run's grid (spark_jobs.grid).

Per interval, by intended time: messages sent and requests (the schedule), receipts timed
(count, exact max latency, and a coarse histogram of latency: LOG_BINS_PER_DOUBLING bins
per doubling, kept sparse), reordered receipts, receipts matched as first deliveries or
duplicates (delivery_pass.Matching), and the deliveries of unknown fate a watched
receiver misses (`late`, delivery_pass.missed); where producers recorded what the
system acknowledged (RunContext.acknowledged), the sends acknowledged and their first
deliveries; by receive time: receipts (the receive
rate). Every count adds and every
maximum takes the larger, so batches, agents and closed chunks merge in any order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sixnines.spark_jobs.agent_rows import (
    EXCLUDED,
    Rows,
    RunContext,
    acknowledged_rows,
    per_producer,
)
from sixnines.spark_jobs.grid import Grid

LOG_BINS_PER_DOUBLING = 32
KEY_SHIFT = 16  # a histogram key's interval · 2^16 + bin: bins (< 2^12) fit below
#: counted by intended time (the schedule's order), and by receive time
BY_INTENDED = ("sent", "requests", "timed", "reordered", "unique", "duplicated", "late",
               "acknowledged", "acknowledged_delivered")
BY_RECEIPT = ("received",)
NO_LATENCY = np.iinfo(np.int64).min


def log_bin(latency_ns: np.ndarray) -> np.ndarray:
    """The coarse latency bin of each value (bin b holds [2^(b/32), 2^((b+1)/32)) ns; a
    value under 1 ns in bin 0)."""
    return np.floor(np.log2(np.maximum(latency_ns, 1).astype(np.float64))
                    * LOG_BINS_PER_DOUBLING).astype(np.int64)


def log_bin_high(bins: np.ndarray) -> np.ndarray:
    """The upper edge (ns) of each coarse bin."""
    return np.exp2((bins + 1) / LOG_BINS_PER_DOUBLING)


@dataclass
class IntervalCounts:
    """One agent's (or a run's, merged) counts per interval (see the module doc);
    `latency`: the coarse latency histogram, sparse, as keys interval · 2^16 + bin with
    their counts."""

    counts: dict[str, np.ndarray]
    latency_max: np.ndarray
    latency_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    latency_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @classmethod
    def empty(cls, grid: Grid) -> IntervalCounts:
        return cls({name: np.zeros(grid.bins, np.int64) for name in BY_INTENDED + BY_RECEIPT},
                   np.full(grid.bins, NO_LATENCY, np.int64))

    def add(self, name: str, where: np.ndarray) -> None:
        """One more for each interval index given (−1: none)."""
        inside = where[where >= 0]
        self.counts[name] += np.bincount(inside, minlength=len(self.latency_max))

    def add_latency(self, where: np.ndarray, latency: np.ndarray) -> None:
        inside = where >= 0
        where, latency = where[inside], latency[inside]
        self.add("timed", where)
        np.maximum.at(self.latency_max, where, latency)
        keys, counts = np.unique((where << KEY_SHIFT) + log_bin(latency), return_counts=True)
        self._add_histogram(keys, counts)

    def _add_histogram(self, keys: np.ndarray, counts: np.ndarray) -> None:
        keys = np.concatenate([self.latency_keys, keys])
        counts = np.concatenate([self.latency_counts, counts])
        self.latency_keys, inverse = np.unique(keys, return_inverse=True)
        self.latency_counts = np.bincount(inverse, weights=counts).astype(np.int64)

    def merge(self, other: IntervalCounts) -> IntervalCounts:
        """Both added up (self changed, and returned)."""
        for name, values in other.counts.items():
            self.counts[name] += values
        np.maximum(self.latency_max, other.latency_max, out=self.latency_max)
        self._add_histogram(other.latency_keys, other.latency_counts)
        return self

    def histogram(self, first: int, end: int) -> tuple[np.ndarray, np.ndarray]:
        """(coarse bins, counts) of the latencies intended in intervals [first, end)."""
        inside = ((self.latency_keys >> KEY_SHIFT) >= first) & \
            ((self.latency_keys >> KEY_SHIFT) < end)
        bins = self.latency_keys[inside] & ((1 << KEY_SHIFT) - 1)
        used, inverse = np.unique(bins, return_inverse=True)
        return used, np.bincount(inverse, weights=self.latency_counts[inside]).astype(np.int64)


def merged(parts: list[IntervalCounts | None]) -> IntervalCounts | None:
    known = [part for part in parts if part is not None]
    if not known:
        return None
    total = IntervalCounts({name: values.copy() for name, values in known[0].counts.items()},
                           known[0].latency_max.copy(), known[0].latency_keys,
                           known[0].latency_counts)
    for part in known[1:]:
        total.merge(part)
    return total


def planned_interval(rows: Rows, grid: Grid, warmup_ends: dict[int, int] | None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(each row's interval by intended time, −1 outside the grid or of a producer not
    placed; each row's producer's measured start on its clock): a row's times count from
    its producer's measured start."""
    start, placed = per_producer(rows.producer_id, warmup_ends or {})
    planned = grid.index(rows.intended - start)
    planned[~placed] = -1
    return planned, start


def first_counts(rows: Rows, run: RunContext, requester: bool, reordered: np.ndarray
                 ) -> IntervalCounts:
    """What an agent's batch counts per interval alone: its sends (and requests), those
    the system acknowledged, its timed receipts' latency by intended time and count by
    receive time, its reordered receipts (`reordered`: their mask,
    delivery_pass.reordered_mask)."""
    grid = run.grid
    assert grid is not None  # a run counted per interval (run_merge.interval_grid)
    counts = IntervalCounts.empty(grid)
    planned, start = planned_interval(rows, grid, run.warmup_ends)
    sending = rows.sender & rows.measured
    counts.add("sent", planned[sending])
    if run.acknowledged:
        acked = acknowledged_rows(rows.producer_id, rows.seq, run.acknowledged)
        counts.add("acknowledged", planned[sending & acked])
    if requester:
        counts.add("requests", planned[sending])
    counts.add("reordered", planned[reordered])
    timed = rows.timed & rows.measured & (rows.pair != EXCLUDED) & (planned >= 0)
    recv = rows.recv[timed] - rows.correction[timed]
    counts.add("received", grid.index(recv - start[timed]))
    counts.add_latency(planned[timed], recv - rows.intended[timed])
    return counts


def counted_at(grid: Grid, warmup_ends: dict[int, int] | None, producer: np.ndarray,
               times: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Per interval of `times` (each on its producer's clock), how many fall in it (or the
    sum of their `weights`)."""
    start, placed = per_producer(producer, warmup_ends or {})
    where = grid.index(times - start)
    keep = placed & (where >= 0)
    return np.bincount(where[keep], weights=None if weights is None else weights[keep],
                       minlength=grid.bins).astype(np.int64)


def late_at(run: RunContext, producer: np.ndarray, intended: np.ndarray,
            missing: np.ndarray) -> np.ndarray:
    """Per interval of their intended times, the deliveries a watched receiver misses
    that may have come after its records end (delivery_pass.missed: unknown, not lost)."""
    assert run.grid is not None
    return counted_at(run.grid, run.warmup_ends, producer, intended, missing)
