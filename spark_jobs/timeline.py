"""report/series.json `timeline` of a run counted per interval (faults, a rate shape, a
backlog: run_merge.interval_grid): latency percentiles and the receive rate per interval
over the run (spark_jobs.intervals), consecutive intervals pooled when there are more than
series.MAX_POINTS of them, so the plot shows what each fault, step, ramp, burst or drain
did."""

from __future__ import annotations

from typing import Any

import numpy as np

from sixnines.spark_jobs.intervals import KEY_SHIFT, NO_LATENCY, IntervalCounts, log_bin_high
from sixnines.spark_jobs.series import MAX_POINTS

SHOWN = {"p50_us": 0.5, "p99_us": 0.99}


def pooled(bins: int) -> int:
    """How many intervals one point of the timeline holds."""
    return max(1, -(-bins // MAX_POINTS))


def _percentiles(counts: IntervalCounts, pool: int, points: int) -> dict[str, np.ndarray]:
    """Per point, each SHOWN percentile (upper edge of its coarse bin, ns; NaN: none)."""
    keys, found = counts.latency_keys, counts.latency_counts  # sorted by interval, then bin
    point = (keys >> KEY_SHIFT) // pool
    high = log_bin_high(keys & ((1 << KEY_SHIFT) - 1))
    totals = np.bincount(point, weights=found, minlength=points)
    cumulative = np.cumsum(found)
    before = np.concatenate([[0], np.cumsum(totals)[:-1]])
    shown = {}
    for name, p in SHOWN.items():
        at = np.searchsorted(cumulative, before + np.ceil(p * totals))
        values = np.full(points, np.nan)
        used = totals > 0
        values[used] = high[np.minimum(at[used], len(high) - 1)]
        shown[name] = values
    return shown


def timeline_json(counts: IntervalCounts | None, width_ns: int) -> dict[str, list] | None:
    """{"t_s", "p50_us", "p99_us", "max_us", "received_msg_s"}: per point (its start,
    seconds from the measured start), latency of the messages intended in it and the
    receipts per second in it (nulls where nothing was timed); None without intervals."""
    if counts is None:
        return None
    bins = len(counts.latency_max)
    pool = pooled(bins)
    points = -(-bins // pool)
    padded = np.full(points * pool, NO_LATENCY, np.int64)
    padded[:bins] = counts.latency_max
    highest = padded.reshape(points, pool).max(axis=1).astype(np.float64)
    highest[highest == NO_LATENCY] = np.nan
    shown = {name: np.fmin(values, highest) for name, values in
             _percentiles(counts, pool, points).items()}
    received = np.bincount(np.arange(bins) // pool, weights=counts.counts["received"],
                           minlength=points)

    def us(values: np.ndarray) -> list[float | None]:
        return [None if np.isnan(value) else float(value) / 1000 for value in values]

    return {"t_s": (np.arange(points) * pool * width_ns / 1e9).tolist(),
            **{name: us(values) for name, values in shown.items()},
            "max_us": us(highest),
            "received_msg_s": (received * 1e9 / (pool * width_ns)).tolist()}


def document(counts: IntervalCounts | None, width_ns: int) -> dict[str, Any]:
    """series.json's `timeline` key, present only for a run counted per interval."""
    found = timeline_json(counts, width_ns)
    return {} if found is None else {"timeline": found}
