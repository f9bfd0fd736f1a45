"""HDR histogram bucket math, vectorised: one representation for hlogs and raw timestamps.

Every latency in sixnines ends up as HDR bucket counts of a histogram tracking 1 ns .. 1 h
at 3 significant digits, so percentiles from an interval log and from raw per-message data
agree to the bucket. The index math mirrors HdrHistogram's `countsArrayIndex` /
`valueFromIndex` (Java `AbstractHistogram`, Python `hdrh.histogram`), specialised to the
lowest trackable value 1 (unit magnitude 0) and done on whole numpy arrays after the run:
`record_value` costs ~1.7 µs per call, these functions ~40 ns per value.
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np
from hdrh.histogram import HdrHistogram

LOWEST = 1
HIGHEST = 3_600_000_000_000  # one hour in nanoseconds
SIGNIFICANT_DIGITS = 3

SUB_BUCKET_HALF_COUNT_MAGNITUDE = 10  # ceil(log2(2 * 10**3)) - 1
SUB_BUCKET_HALF_COUNT = 1 << SUB_BUCKET_HALF_COUNT_MAGNITUDE
SUB_BUCKET_COUNT = 2 * SUB_BUCKET_HALF_COUNT
SUB_BUCKET_MASK = SUB_BUCKET_COUNT - 1
BUCKET_COUNT = 32  # smallest k with SUB_BUCKET_COUNT << (k - 1) > HIGHEST
COUNTS_LEN = (BUCKET_COUNT + 1) * SUB_BUCKET_HALF_COUNT

PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99, 99.999, 99.9999)
PercentileKey = Literal["p50", "p90", "p99", "p99.9", "p99.99", "p99.999", "p99.9999"]
PERCENTILE_KEYS: tuple[PercentileKey, ...] = get_args(PercentileKey)


def _bit_length(values: np.ndarray) -> np.ndarray:
    """Bit length of positive int64 values below 2**53 (exact through float64): the
    float's exponent field, read in place (half the time of `np.frexp`)."""
    return (values.astype(np.float64).view(np.int64) >> 52) - 1022


def bucket_indices(values: np.ndarray) -> np.ndarray:
    """Counts-array index of each value (HdrHistogram `countsArrayIndex`).

    Values must lie in [0, HIGHEST]; callers clip and count the rest (see `clip`).
    """
    v = np.asarray(values, dtype=np.int64)
    bucket = _bit_length(v | SUB_BUCKET_MASK) - (SUB_BUCKET_HALF_COUNT_MAGNITUDE + 1)
    sub_bucket = v >> bucket
    return ((bucket + 1) << SUB_BUCKET_HALF_COUNT_MAGNITUDE) + sub_bucket - SUB_BUCKET_HALF_COUNT


def clip(values: np.ndarray) -> tuple[np.ndarray, int, int]:
    """Values limited to the trackable range, with how many were below 0 and above HIGHEST.

    A negative latency means two clocks were mixed; one above an hour means a hung run.
    Neither may vanish silently (hdrh's `record_value` just returns False), so both are
    counted and reported beside the figures.
    """
    v = np.asarray(values, dtype=np.int64)
    negative = int(np.count_nonzero(v < 0))
    too_large = int(np.count_nonzero(v > HIGHEST))
    if negative or too_large:
        v = np.clip(v, 0, HIGHEST)
    return v, negative, too_large


def counts_of(values: np.ndarray) -> np.ndarray:
    """HDR counts array (length COUNTS_LEN) of values already within [0, HIGHEST]."""
    return np.bincount(bucket_indices(values), minlength=COUNTS_LEN).astype(np.int64)


def value_from_index(index: np.ndarray | int) -> np.ndarray:
    """Lowest value of each counts-array index (HdrHistogram `valueFromIndex`)."""
    idx = np.asarray(index, dtype=np.int64)
    bucket = (idx >> SUB_BUCKET_HALF_COUNT_MAGNITUDE) - 1
    sub_bucket = (idx & (SUB_BUCKET_HALF_COUNT - 1)) + SUB_BUCKET_HALF_COUNT
    first = bucket < 0
    sub_bucket = np.where(first, sub_bucket - SUB_BUCKET_HALF_COUNT, sub_bucket)
    bucket = np.where(first, 0, bucket)
    return sub_bucket << bucket


def highest_equivalent(index: np.ndarray | int) -> np.ndarray:
    """Highest value that falls in each counts-array index (what HdrHistogram reports)."""
    idx = np.asarray(index, dtype=np.int64)
    bucket = np.maximum((idx >> SUB_BUCKET_HALF_COUNT_MAGNITUDE) - 1, 0)
    return value_from_index(idx) + (np.int64(1) << bucket) - 1


def percentile_values(counts: np.ndarray, percentiles=PERCENTILES) -> np.ndarray:
    """Value at each percentile, exactly as HdrHistogram's `getValueAtPercentile`."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(len(percentiles), dtype=np.int64)
    cumulative = np.cumsum(counts)
    targets = [max(int(min(p, 100.0) * total / 100 + 0.5), 1) for p in percentiles]
    indices = np.searchsorted(cumulative, targets, side="left")
    return highest_equivalent(indices)


def max_index(counts: np.ndarray) -> int:
    nonzero = np.flatnonzero(counts)
    return int(nonzero[-1]) if len(nonzero) else 0


def to_hdrh(counts: np.ndarray) -> HdrHistogram:
    """An `hdrh` histogram holding exactly these counts, for encoding and interop."""
    histogram = HdrHistogram(LOWEST, HIGHEST, SIGNIFICANT_DIGITS)
    if histogram.counts_len != COUNTS_LEN:
        raise AssertionError("HDR layout differs from hdrh's; update formats/hdr.py")
    counts = np.asarray(counts, dtype=np.int64)
    nonzero = np.flatnonzero(counts)
    np.ctypeslib.as_array(histogram.counts)[nonzero] = counts[nonzero]
    if len(nonzero):
        histogram.set_internal_tacking_values(int(nonzero[0]), int(nonzero[-1]), int(counts.sum()))
    return histogram


def from_hdrh(histogram: HdrHistogram) -> np.ndarray:
    """The counts array of an `hdrh` histogram of our layout (e.g. decoded from an hlog)."""
    indices, values = nonzero_of_hdrh(histogram)
    counts = np.zeros(COUNTS_LEN, dtype=np.int64)
    counts[indices] = values
    return counts


def nonzero_of_hdrh(histogram: HdrHistogram) -> tuple[np.ndarray, np.ndarray]:
    """(indices, counts) of the nonzero counters of an `hdrh` histogram of our layout.

    Read through a numpy view of hdrh's ctypes counters: a `get_count_at_index` call per
    index costs ~4 ms a histogram, which made reading a 10-minute run's hlogs take minutes.
    A decoded payload may hold fewer counters than the layout (trailing zeros dropped).
    Only the counters between the smallest and the largest value it tracks are scanned:
    the whole array per interval was 40 % of reading an hlog."""
    if histogram.total_count == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    stored = min(histogram.counts_len, histogram.encoder.payload.counts_len, COUNTS_LEN)
    low, high = bucket_indices(np.clip([histogram.min_value, histogram.max_value], 0,
                                       HIGHEST))
    low, high = max(int(low), 0), min(int(high) + 1, stored)
    view = np.ctypeslib.as_array(histogram.counts)[low:high]
    indices = np.flatnonzero(view)
    return indices + low, view[indices].astype(np.int64)
