"""How far a run's latency p99 moved within the run, from the receivers' interval logs (one
HDR histogram per second each, already read for the hlog check): the seconds added over the
receivers, consecutive seconds pooled into windows of at least MIN_WINDOW_COUNT latencies,
and the spread of the windows' p99 (formats.summary.Steadiness has the figures).

A p99 from 2,000 latencies rests on 20 above it: sampling alone moves it by far less than
the factor of 2 between the quartiles that makes a run unsteady (UNSTEADY_SPREAD), so what
is flagged is the run's own behaviour (stalls, other load on the machine, a system that
changed pace), not the window size. Quartiles, not the extremes: one stalled second is a
tail the run's figures should show, not a reason to distrust them.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from sixnines.formats import hdr
from sixnines.formats.hlog import Interval
from sixnines.formats.summary import Steadiness

MIN_WINDOW_COUNT = 2_000  # latencies a window's p99 rests on (20 above it)
MIN_WINDOWS = 4  # fewer say nothing about quartiles
UNSTEADY_SPREAD = 1.0  # upper quartile of the windows' p99 > 2 × the lower: unsteady
P99 = 99.0
NS_PER_US = 1000.0


def _seconds(logs: Iterable[list[Interval]]) -> list[tuple[float, float, np.ndarray, np.ndarray]]:
    """Each interval of the run (agents' logs added per start, to the ms of the stamps:
    every agent's intervals start on the same grid since its t0), in time order: (start s,
    length s, bucket indices, counts)."""
    by_start: dict[int, list[Interval]] = {}
    for log in logs:
        for item in log:
            by_start.setdefault(round(item.start_s * 1000), []).append(item)
    return [(start / 1000, max(item.length_s for item in items),
             np.concatenate([item.indices for item in items]),
             np.concatenate([item.values for item in items]))
            for start, items in sorted(by_start.items())]


def _p99(indices: np.ndarray, counts: np.ndarray) -> float:
    """The p99 of sparse counts (indices may repeat), as hdr.percentile_values gives it."""
    order = np.argsort(indices, kind="stable")
    cumulative = np.cumsum(counts[order])
    target = max(int(P99 * int(cumulative[-1]) / 100 + 0.5), 1)
    at = int(np.searchsorted(cumulative, target, side="left"))
    return float(hdr.highest_equivalent(int(indices[order][at])))


def windows(seconds: list[tuple[float, float, np.ndarray, np.ndarray]]
            ) -> list[tuple[float, float]]:
    """(length s, p99 ns) of each window: consecutive seconds pooled until they hold
    MIN_WINDOW_COUNT latencies; a short remainder joins the last window."""
    pooled: list[list[int]] = []  # indices into seconds
    held = MIN_WINDOW_COUNT
    for index, (_, _, _, counts) in enumerate(seconds):
        if held >= MIN_WINDOW_COUNT:
            pooled.append([])
            held = 0
        pooled[-1].append(index)
        held += int(counts.sum())
    if held < MIN_WINDOW_COUNT and pooled:
        remainder = pooled.pop()
        if not pooled:
            return []
        pooled[-1] += remainder
    return [(sum(seconds[i][1] for i in window),
             _p99(np.concatenate([seconds[i][2] for i in window]),
                  np.concatenate([seconds[i][3] for i in window])))
            for window in pooled]


def steadiness(logs: Iterable[list[Interval]]) -> Steadiness | None:
    """The run's steadiness from its receivers' measured headline-latency intervals (one
    list per agent); None with fewer than MIN_WINDOWS windows."""
    found = windows(_seconds(logs))
    if len(found) < MIN_WINDOWS:
        return None
    lengths = np.array([length for length, _ in found])
    p99 = np.array([value for _, value in found]) / NS_PER_US
    low, median, high = np.percentile(p99, [25, 50, 75])
    spread = float(high / max(low, hdr.LOWEST / NS_PER_US) - 1)
    return Steadiness(windows=len(found), window_s=round(float(lengths.mean()), 3),
                      p99_low_us=float(low), p99_median_us=float(median),
                      p99_high_us=float(high), p99_max_us=float(p99.max()),
                      spread=round(spread, 4), unsteady=spread > UNSTEADY_SPREAD)
