"""The intervals a run with faults is counted in (spark_jobs.grid)."""

from __future__ import annotations

import numpy as np

from sixnines.spark_jobs.grid import MAX_INTERVALS, RESOLUTION_NS, Grid

S = 10**9


def test_intervals_are_10_ms_until_a_run_would_need_too_many():
    assert Grid.over(6 * S) == Grid(RESOLUTION_NS, 600)
    assert Grid.over(6 * S + 1).bins == 601  # the last one partly covered
    hour = Grid.over(3600 * S)
    assert hour.width_ns == RESOLUTION_NS * 8 and hour.bins <= MAX_INTERVALS
    assert Grid.over(hour.width_ns * MAX_INTERVALS).width_ns == hour.width_ns


def test_times_outside_the_grid_have_no_interval():
    grid = Grid(10, 3)
    assert grid.index(np.array([-1, 0, 9, 10, 29, 30])).tolist() == [-1, 0, 0, 1, 2, -1]
