"""series.json's timeline of a run with faults (spark_jobs.timeline): latency and
receive rate per interval, pooled past the points a curve may have."""

from __future__ import annotations

import numpy as np

from sixnines.spark_jobs import timeline
from sixnines.spark_jobs.grid import Grid
from sixnines.spark_jobs.intervals import IntervalCounts

S = 10**9


def test_the_timeline_pools_intervals_past_its_points():
    grid = Grid.over(30 * S)  # 3,000 intervals: two per point
    counts = IntervalCounts.empty(grid)
    where = np.arange(grid.bins)
    counts.add_latency(where, (where + 1) * 1000)
    counts.add("received", where)
    found = timeline.timeline_json(counts, grid.width_ns)
    assert len(found["t_s"]) == 1500 and found["t_s"][1] == 0.02
    assert found["max_us"][:2] == [2.0, 4.0]
    assert found["received_msg_s"][0] == 100.0  # 2 receipts in 20 ms
    assert found["p99_us"][0] == found["max_us"][0]  # never above the exact max
    empty = IntervalCounts.empty(Grid(10, 3))
    assert timeline.timeline_json(empty, 10)["p50_us"] == [None] * 3
    assert timeline.timeline_json(None, 10) is None
