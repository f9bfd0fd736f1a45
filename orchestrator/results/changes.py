"""Change points in a series of nights: where a figure moved to a new level and stayed there,
told from the noise every night carries and from the series' own drift.

A change is reported only when both hold (docs/design.md, "Change points over nights"):

1. *The detector finds it.* Binary segmentation (the `ruptures` library; absolute-deviation
   cost, so one wild night does not drag a segment's level) splits the nights' log values
   while one more level is worth its price, a penalty scaled to the series' own
   night-to-night spread (PELT, the exact search, was ~9× slower on a year of nights and
   found no more steps). Every segment holds at least MIN_NIGHTS nights: one night alone,
   a spike, can never be a level.
2. *The step is beyond the noise.* The levels (weighted medians of the two segments, in
   log space) differ by more than
   - the nights' own sampling bands (`Night.low`/`high`, as `sixnines compare` computes
     them): the typical upper band of the nights before and lower band of the nights after
     (the other two for a drop), added in quadrature, so a tail percentile resting on a
     dozen samples, whose band is wide, never alarms;
   - SPREAD_SIGMAS standard errors of that difference from the series' measured
     night-to-night spread (a robust deviation of successive nights), so a machine that
     drifts ±15 % from night to night does not page anyone after three nights, while a
     sustained +20 % on a steadier one does;
   - and MIN_RELATIVE.
   A boundary that fails is dropped, its two segments joined, and its neighbours judged
   again on the joined levels, until every boundary left passes.

Nights without a value are left out (their indices kept). An unsteady night (its own
intervals disagreed, formats.summary.Steadiness) and a night of status other than ok
count half in every level and in the nights a new level needs (MIN_WEIGHT): they cannot
make a change alone, and they delay one by a night or two rather than hide it (a
regression that makes every night unsteady is still found).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sixnines.formats.errors import SixninesError

MIN_NIGHTS = 3  # nights in every segment: a spike (one night) is never a level
MIN_WEIGHT = 2.0  # weight of the nights at a new level before it is reported
DOUBTFUL_WEIGHT = 0.5  # an unsteady night's, or one of status other than ok
PENALTY = 1.0  # the detector's price of a new segment, in units of ln(nights) × the spread
SPREAD_SIGMAS = 3.0  # standard errors of the level difference the drift may explain
MIN_RELATIVE = 0.02  # no change below 2 %, whatever the spread (a spread of 0 included)
MEDIAN_VARIANCE = math.pi / 2  # a median's variance over a mean's, for normal noise
EXTRA = "changes"  # the pyproject extra that installs the detector


class DetectorMissing(SixninesError):
    """The change point library is not installed."""


@dataclass(frozen=True)
class Night:
    """One night's figure of one series."""

    night: str  # the night's id (its results directory name)
    value: float | None  # None: no figure that night (failed, not comparable)
    low: float | None  # the sampling band, absolute values
    high: float | None
    unsteady: bool = False
    status: str = "ok"


@dataclass(frozen=True)
class Change:
    """A new level from nights[index] on."""

    index: int  # first night at the new level (index into the nights)
    before: float  # level before (weighted median of the segment)
    after: float  # level after
    relative: float  # after / before - 1
    direction: str  # "regression" | "improvement"


@dataclass(frozen=True)
class _Series:
    """The nights with a value, in log space: where each is in the nights given, its
    weight and its band's half widths below and above (log ratios)."""

    where: np.ndarray
    y: np.ndarray
    weight: np.ndarray
    down: np.ndarray
    up: np.ndarray

    @classmethod
    def of(cls, nights: Sequence[Night]) -> _Series:
        kept = [(i, n) for i, n in enumerate(nights) if n.value is not None and n.value > 0]
        values = np.array([n.value for _, n in kept], float)

        def half_width(bound: list[float | None], sign: float) -> np.ndarray:
            return np.array([max(sign * math.log(b / v), 0.0) if b and b > 0 else 0.0
                             for b, v in zip(bound, values, strict=True)])

        return cls(np.array([i for i, _ in kept], int), np.log(values),
                   np.array([DOUBTFUL_WEIGHT if n.unsteady or n.status != "ok" else 1.0
                             for _, n in kept]),
                   half_width([n.low for _, n in kept], -1.0),
                   half_width([n.high for _, n in kept], 1.0))


def spread(y: np.ndarray) -> float:
    """The night-to-night standard deviation of log values, robustly: the median absolute
    deviation of successive differences, which a step moves in one difference only."""
    if len(y) < 3:
        return 0.0
    steps = np.diff(y)
    return float(1.4826 * np.median(np.abs(steps - np.median(steps))) / math.sqrt(2))


def weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    """The value below which half the weight lies (the mean of the two at a tie)."""
    order = np.argsort(values)
    values, cumulative = values[order], np.cumsum(weights[order])
    half = cumulative[-1] / 2
    at = int(np.searchsorted(cumulative, half))
    if math.isclose(cumulative[at], half) and at + 1 < len(values):
        return float((values[at] + values[at + 1]) / 2)
    return float(values[at])


class SortedL1Cost:
    """ruptures' absolute-deviation cost (its "l1": a segment's summed distance from its
    median), with a sorted list where ruptures calls np.median: a month of nights asks for
    ~60 segments' costs of a few dozen values each, where numpy's per-call overhead is most
    of the time (1.2 ms against 0.14 ms a series; docs/performance.md, "History of
    nights"). A cost ruptures takes is one its BaseCost accepts (`_breakpoints` registers
    this one)."""

    model = "l1"
    min_size = 2

    def fit(self, signal: np.ndarray) -> SortedL1Cost:
        self.signal = signal.reshape(len(signal), -1)
        self.values = self.signal[:, 0].tolist()
        return self

    def error(self, start: int, end: int) -> float:
        part = sorted(self.values[start:end])
        middle = len(part) // 2
        median = part[middle] if len(part) % 2 else (part[middle - 1] + part[middle]) / 2
        return math.fsum(abs(value - median) for value in part)


def load_detector() -> Any:
    """The `ruptures` module, SortedL1Cost registered as a cost it takes; DetectorMissing
    when it is not installed. Imported on first use: it costs ~0.5 s (scipy)."""
    try:
        import ruptures
        from ruptures.base import BaseCost
    except ImportError as error:
        raise DetectorMissing(f"change points need the `ruptures` library: install "
                              f"sixnines[{EXTRA}]") from error
    BaseCost.register(SortedL1Cost)
    return ruptures


def _breakpoints(y: np.ndarray, sigma: float) -> list[int]:
    """Where the detector starts new segments (indices into y)."""
    scale = max(sigma, MIN_RELATIVE / 4)
    found = load_detector().Binseg(custom_cost=SortedL1Cost(), min_size=MIN_NIGHTS,
                                   jump=1).fit(y).predict(pen=PENALTY * math.log(len(y)) * scale)
    return [int(end) for end in found[:-1]]


def _tolerance(series: _Series, before: slice, after: slice, rising: bool,
               sigma: float) -> float:
    """How far (log ratio) the level after must be from the level before to be a change."""
    into, out_of = (series.up, series.down) if rising else (series.down, series.up)
    band = math.hypot(float(np.median(into[before])), float(np.median(out_of[after])))
    weights = (float(series.weight[before].sum()), float(series.weight[after].sum()))
    drift = SPREAD_SIGMAS * sigma * math.sqrt(MEDIAN_VARIANCE * sum(1 / w for w in weights))
    return max(band, drift, math.log1p(MIN_RELATIVE))


def _judged(series: _Series, bounds: list[int], sigma: float
            ) -> list[tuple[float, float, float]]:
    """For each inner boundary: (level before, level after, how far past its tolerance
    the step is, as a ratio: > 1 passes)."""
    found = []
    for start, cut, end in zip(bounds, bounds[1:], bounds[2:], strict=False):
        before, after = slice(start, cut), slice(cut, end)
        level_before = weighted_median(series.y[before], series.weight[before])
        level_after = weighted_median(series.y[after], series.weight[after])
        step = level_after - level_before
        tolerance = _tolerance(series, before, after, step > 0, sigma)
        enough = series.weight[after].sum() >= MIN_WEIGHT
        found.append((level_before, level_after, abs(step) / tolerance if enough else 0.0))
    return found


def find_changes(nights: Sequence[Night], higher_is_worse: bool = True) -> list[Change]:
    """The changes of level in a series of nights, oldest first (the module doc has the
    rule). `higher_is_worse`: latency (a rise is a regression), not throughput."""
    series = _Series.of(nights)
    if len(series.y) < 2 * MIN_NIGHTS:
        return []
    sigma = spread(series.y)
    bounds = [0, *_breakpoints(series.y, sigma), len(series.y)]
    while True:
        judged = _judged(series, bounds, sigma)
        if not judged:
            return []
        weakest = min(range(len(judged)), key=lambda i: judged[i][2])
        if judged[weakest][2] > 1:
            break
        del bounds[weakest + 1]
    changes = []
    for cut, (level_before, level_after, _) in zip(bounds[1:], judged, strict=False):
        relative = math.exp(level_after - level_before) - 1
        worse = (relative > 0) == higher_is_worse
        changes.append(Change(int(series.where[cut]), math.exp(level_before),
                              math.exp(level_after), relative,
                              "regression" if worse else "improvement"))
    return changes
