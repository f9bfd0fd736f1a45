"""HdrHistogram's percentile distribution (.hgrm, what its plotter reads), from a counts array.

Byte for byte what the `hdrh` package's `output_percentile_distribution` writes for the same
histogram (tests/test_hgrm.py holds it to that against hdrh itself), with the bucket walks
done in numpy: hdrh walks every bucket in Python, three times (the percentile lines, the
mean, the standard deviation), about a second per histogram, which made the .hgrm files
half of a small scenario's whole analysis.

Lines come where HdrHistogram's percentile iterator puts them: at levels starting at 0 %
whose distance to 100 % shrinks by a tenth per line (`TICKS_PER_HALF_DISTANCE` lines per
halving), each at the first bucket whose cumulative share reaches it, then one last line at
100 %. The mean and standard deviation count each bucket at its middle value, as
HdrHistogram does.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterator

import numpy as np

from sixnines.formats.hdr import (
    BUCKET_COUNT,
    SIGNIFICANT_DIGITS,
    SUB_BUCKET_COUNT,
    highest_equivalent,
    max_index,
    value_from_index,
)

#: More than any .hgrm holds (a few hundred lines: one per percentile step out to 1 h at 3
#: digits): what a reader of one from elsewhere reads at most.
MAX_HGRM_BYTES = 4 * 1024 * 1024

TICKS_PER_HALF_DISTANCE = 5
_DIGITS = SIGNIFICANT_DIGITS
_LINE = f"%12.{_DIGITS}f %2.12f %10d %14.2f\n"
_LAST_LINE = f"%12.{_DIGITS}f %2.12f %10d\n"


def _levels() -> Iterator[float]:
    """The percentile levels of the lines, in HdrHistogram's floating-point steps."""
    level = 0.0
    while True:
        yield level
        gap = 100.0 - level
        if gap:
            half_distance = math.pow(2, (math.log(100 / gap) / math.log(2)) + 1)
            level += 100.0 / (TICKS_PER_HALF_DISTANCE * half_distance)


def percentile_lines(counts: np.ndarray) -> list[tuple[int, float, int]]:
    """(value reached, percentile level, count up to it) of each line."""
    counts = np.asarray(counts, dtype=np.int64)
    nonzero = np.flatnonzero(counts)
    if not len(nonzero):
        return []
    cumulative = np.cumsum(counts[nonzero])
    total = int(cumulative[-1])
    reached = 100.0 * cumulative.astype(np.float64) / total
    values = highest_equivalent(nonzero)
    last = len(nonzero) - 1
    lines = []
    for level in _levels():
        at = int(np.searchsorted(reached, level, side="left"))
        lines.append((int(values[at]), level, int(cumulative[at])))
        if at == last:
            break
    lines.append((int(values[last]), 100.0, total))
    return lines


def _middles(nonzero: np.ndarray) -> np.ndarray:
    """The middle value of each bucket, the value HdrHistogram counts it at."""
    low = value_from_index(nonzero)
    return low + ((highest_equivalent(nonzero) - low + 1) >> 1)


def mean_and_deviation(counts: np.ndarray) -> tuple[float, float]:
    """Mean and standard deviation as HdrHistogram computes them (0 when empty)."""
    counts = np.asarray(counts, dtype=np.int64)
    nonzero = np.flatnonzero(counts)
    if not len(nonzero):
        return 0.0, 0.0
    here, middles = counts[nonzero], _middles(nonzero)
    total = int(here.sum())
    mean = float(sum(map(operator.mul, here.tolist(), middles.tolist()))) / total
    deviation = middles.astype(np.float64) - mean
    squares = float(np.cumsum((deviation * deviation) * here)[-1])  # summed in order
    return mean, math.sqrt(squares / total)


def hgrm_text(counts: np.ndarray, unit: float, footer: str = "") -> str:
    """The percentile distribution of `counts`, values divided by `unit`, the standard
    deviation too (hdrh leaves it unscaled), then `footer`."""
    counts = np.asarray(counts, dtype=np.int64)
    out = [f"{'Value':>12} {'Percentile':>14} {'TotalCount':>10} {'1/(1-Percentile)':>14}\n\n"]
    for value, level, reached in percentile_lines(counts):
        if level != 100:
            out.append(_LINE % (value / unit, level / 100, reached, 1 / (1 - level / 100)))
        else:
            out.append(_LAST_LINE % (value / unit, level / 100, reached))
    mean, deviation = mean_and_deviation(counts)
    highest = int(highest_equivalent(max_index(counts))) if counts.any() else 0
    out.append(f"#[Mean    = {mean / unit:12.{_DIGITS}f}, "
               f"StdDeviation   = {deviation / unit:12.{_DIGITS}f}]\n")
    out.append(f"#[Max     = {highest / unit:12.{_DIGITS}f}, "
               f"TotalCount     = {float(counts.sum()):12.{_DIGITS}f}]\n")
    out.append(f"#[Buckets = {BUCKET_COUNT:12d}, SubBuckets     = {SUB_BUCKET_COUNT:12d}]\n")
    return "".join(out) + footer
