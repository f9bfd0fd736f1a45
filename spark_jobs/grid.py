"""The intervals a run is counted in (spark_jobs.intervals; which runs:
run_merge.interval_grid): RESOLUTION_NS each from the measured start over the measured
time and the drain, widened by doubling when a run would need more than MAX_INTERVALS of
them (a run of over ~11 minutes)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RESOLUTION_NS = 10_000_000
MAX_INTERVALS = 1 << 16


@dataclass(frozen=True)
class Grid:
    """`bins` intervals of `width_ns` from the measured start."""

    width_ns: int
    bins: int

    @classmethod
    def over(cls, span_ns: int) -> Grid:
        """Intervals of RESOLUTION_NS, doubled until MAX_INTERVALS cover the span."""
        width = RESOLUTION_NS
        while -(-span_ns // width) > MAX_INTERVALS:
            width *= 2
        return cls(width, max(1, -(-span_ns // width)))

    def index(self, since_start: np.ndarray) -> np.ndarray:
        """Each time's interval; −1 outside the grid."""
        position = np.floor_divide(since_start, self.width_ns)
        return np.where((since_start >= 0) & (position < self.bins), position, -1)
