"""A run's distribution from its merged buckets: robust centre and spread, log-binned
histogram, humps, nines.

Everything here works on HDR bucket counts (`formats.hdr`, at most COUNTS_LEN numbers), never
on raw values, so it costs the same for a thousand messages or a billion.

Lower median and robust deviation (mean |x − median|) come from the per-bucket counts and
exact raw sums the per-agent passes return (agent_pass.Buckets), plus, where the caller
has them, the exact value counts inside the one bucket holding the median (`Detail`, the
second pass: agent_pass.median_detail). Every bucket wholly below or above the median
contributes exactly: Σ|x − m| = c·m − s below, s − c·m above. Only the median's own bucket
needs its values; with them both figures are exact, without them its values are taken at
the bucket's mean, an error of at most one bucket width (< 0.1 % of the median).

The histogram re-bins the HDR counts into log-spaced bins (PER_DECADE per decade from
LOW_NS): one representation for hlogs and raw data (docs/design.md), and the humps detector
below reads it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sixnines.formats import hdr

PER_DECADE = 20
LOW_NS = 1_000  # the first bin starts at 1 µs and also holds anything faster
NINES = (0.0, 0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999, 0.999999)  # series.json "nines" axis

# humps: see `humps` for the rule
KERNEL = np.array([1.0, 4.0, 6.0, 4.0, 1.0]) / 16.0  # binomial, σ = 1 bin (×1.12 in value)
MIN_PROMINENCE_SHARE = 0.10  # of the highest smoothed peak
MIN_DIP_SHARE = 0.25  # of the peak's own height: the valley must drop at least this far
MIN_SIGNIFICANCE = 4.0  # peak over valley, in Poisson standard deviations


# --- lower median and robust deviation -------------------------------------------------------


@dataclass(frozen=True)
class Detail:
    """Value counts inside one HDR bucket: distinct raw values (ascending) and their counts."""

    values: np.ndarray
    counts: np.ndarray


def median_bucket(counts: np.ndarray) -> tuple[int, int]:
    """(bucket index, 1-based rank within it) of the lower median, the ⌈n/2⌉-th smallest
    value: a sample, never an average of two."""
    cumulative = np.cumsum(counts)
    rank = (int(cumulative[-1]) + 1) // 2
    bucket = int(np.searchsorted(cumulative, rank, side="left"))
    return bucket, rank - int(cumulative[bucket] - counts[bucket])


def bucket_range(bucket: int) -> tuple[int | None, int | None]:
    """Raw values `hdr.bucket_indices` puts in a bucket (None: unbounded). The first
    bucket also holds the negative values clipped to 0, the last those above hdr.HIGHEST."""
    top = int(hdr.bucket_indices(np.array([hdr.HIGHEST]))[0])
    low = None if bucket == 0 else int(hdr.value_from_index(bucket))
    high = None if bucket >= top else int(hdr.highest_equivalent(bucket))
    return low, high


def robust_centre(counts: np.ndarray, sums: np.ndarray, detail: Detail | None = None
                  ) -> tuple[float, float]:
    """(lower median, mean |x − lower median|) in the values' unit; counts must not be empty.

    counts/sums: per HDR bucket, sums of the raw values. detail: the value counts of the
    median's bucket (exact result) or None (that bucket's values taken at their mean).
    """
    bucket, rank = median_bucket(counts)
    if detail is None or int(detail.counts.sum()) != int(counts[bucket]):
        median = float(sums[bucket] / counts[bucket])
        inside = 0.0
    else:
        median = float(detail.values[np.searchsorted(np.cumsum(detail.counts), rank)])
        inside = float(np.sum(detail.counts * np.abs(detail.values - median)))
    below = median * float(counts[:bucket].sum()) - float(sums[:bucket].sum())
    above = float(sums[bucket + 1:].sum()) - median * float(counts[bucket + 1:].sum())
    return median, (below + above + inside) / float(counts.sum())


# --- log-binned histogram --------------------------------------------------------------------

BINS = math.ceil(PER_DECADE * math.log10(hdr.HIGHEST / LOW_NS))


def _bin_of_buckets() -> np.ndarray:
    """The log bin of every HDR bucket, by the bucket's midpoint. A bucket is at most 1/1024
    of its value wide against bins 12 % wide, so only a bucket straddling an edge is
    placed by its midpoint rather than split."""
    index = np.arange(hdr.COUNTS_LEN)
    middle = (hdr.value_from_index(index) + hdr.highest_equivalent(index)) / 2.0
    position = PER_DECADE * np.log10(np.maximum(middle, LOW_NS) / LOW_NS)
    return np.minimum(np.floor(position), BINS - 1).astype(np.int64)


BIN_OF_BUCKET = _bin_of_buckets()


def log_histogram(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(edges in ns, counts) of the log bins, empty bins dropped at both ends (len(edges) =
    len(counts) + 1; both empty for an empty histogram)."""
    binned = np.bincount(BIN_OF_BUCKET, weights=counts, minlength=BINS).astype(np.int64)
    used = np.flatnonzero(binned)
    if len(used) == 0:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    first, last = int(used[0]), int(used[-1])
    edges = LOW_NS * 10.0 ** (np.arange(first, last + 2) / PER_DECADE)
    return edges, binned[first:last + 1]


# --- humps -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class HumpsFound:
    """Distinct modes of a distribution: count (1 = unimodal, 0 = no data), positions."""

    count: int
    modes_ns: tuple[float, ...]


def _smoothed(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Kernel-smoothed counts and their Poisson variance (Σ w² c), zeros beyond the ends."""
    padded = np.pad(counts.astype(np.float64), len(KERNEL) // 2)
    return (np.convolve(padded, KERNEL, mode="valid"),
            np.convolve(padded, KERNEL**2, mode="valid"))


def _peaks(s: np.ndarray) -> list[int]:
    """Local maxima (a plateau counts once, at its first bin)."""
    left = np.concatenate([[-np.inf], s[:-1]])
    right = np.concatenate([s[1:], [-np.inf]])
    return [int(i) for i in np.flatnonzero((s > left) & (s >= right))]


def _valley(s: np.ndarray, peak: int) -> int:
    """The bin its prominence is measured from: on each side, the lowest point before the
    signal rises above the peak (or ends); of the two, the higher one. Of two equal peaks
    the left one stands higher, so that only one of them can be a mode."""
    def lowest(indices: range, higher: Callable[[float], bool]) -> int:
        best = peak
        for j in indices:
            if higher(s[j]):
                break
            if s[j] < s[best]:
                best = j
        return best

    left = lowest(range(peak - 1, -1, -1), lambda v: v >= s[peak])
    right = lowest(range(peak + 1, len(s)), lambda v: v > s[peak])
    return left if s[left] >= s[right] else right


def _is_distinct(s: np.ndarray, var: np.ndarray, peak: int, highest: float) -> bool:
    valley = _valley(s, peak)
    prominence = s[peak] - s[valley]
    noise = math.sqrt(var[peak] + var[valley])
    return (prominence >= MIN_PROMINENCE_SHARE * highest
            and prominence >= MIN_DIP_SHARE * s[peak]
            and prominence >= MIN_SIGNIFICANCE * noise)


def _position(s: np.ndarray, peak: int) -> float:
    """The peak in bins, refined by a parabola through it and its neighbours (±½ bin)."""
    if 0 < peak < len(s) - 1:
        a, b, c = s[peak - 1], s[peak], s[peak + 1]
        curvature = a - 2 * b + c
        if curvature < 0:
            return peak + 0.5 + min(max(0.5 * (a - c) / curvature, -0.5), 0.5)
    return peak + 0.5


def humps(edges: np.ndarray, counts: np.ndarray) -> HumpsFound:
    """The distinct modes of a log-binned histogram (`log_histogram`).

    Rule: smooth the counts with a binomial kernel (σ = one bin, 0.05 decade) so that
    bin-to-bin Poisson noise and the HDR re-binning do not make peaks; take the local
    maxima of the result. The highest is always a mode. Another is a mode only when all of
    these hold for its prominence (its height above the valley separating it from higher
    ground, as in topography):
    - ≥ MIN_PROMINENCE_SHARE (10 %) of the highest peak: a tail bump of a few stalled
      messages is for the percentiles to show, not a second mode;
    - ≥ MIN_DIP_SHARE (25 %) of its own height: a real valley, not a shoulder;
    - ≥ MIN_SIGNIFICANCE (4) Poisson standard deviations of peak and valley: no modes
      out of sampling noise in small runs.
    A heavy but monotonic tail has no local maximum past the body, so it stays one mode.
    Positions: bin centres refined by a parabola, in ns.
    """
    if len(counts) == 0 or counts.sum() == 0:
        return HumpsFound(0, ())
    s, var = _smoothed(counts)
    highest = float(s.max())
    top = int(np.argmax(s))
    modes = [p for p in _peaks(s) if p == top or _is_distinct(s, var, p, highest)]
    width = 1.0 / PER_DECADE
    positions = tuple(float(edges[0] * 10.0 ** (_position(s, p) * width)) for p in modes)
    return HumpsFound(len(modes), positions)


# --- nines -----------------------------------------------------------------------------------


def nines(counts: np.ndarray, exact_max: int | None) -> list[int | None]:
    """Values at each of NINES (p = 0 is the smallest), as HdrHistogram reports them, none
    above the exact max; None for an empty histogram."""
    if exact_max is None or counts.sum() == 0:
        return [None] * len(NINES)
    values = hdr.percentile_values(counts, [100.0 * p for p in NINES])
    return [int(v) for v in np.minimum(values, exact_max)]
