"""A real run's steadiness in its summary.json: `sixnines run` as a user runs it, and the
figure checked against the consumer's own interval log read independently (dense HDR counts
per second, HdrHistogram's percentile)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sixnines.formats import hdr
from sixnines.formats.hlog import read_hlog
from sixnines.formats.layout import HLOG_FILE, SUMMARY_FILE
from tests.faults.support import analysed

pytestmark = pytest.mark.integration

#: 3,000 latencies a second: each measured second is a window of its own
SCENARIO = """
name: steadiness
systems: [{name: tcp, driver: tcp}]
workload: {message_size: 64, rate: 3000, duration: 6s, warmup: 1s}
"""


def test_the_summary_holds_the_spread_of_the_seconds_p99(tmp_path: Path):
    results = analysed(tmp_path, SCENARIO)
    [run] = json.loads((results / SUMMARY_FILE).read_text())["runs"]
    assert run["status"] == "ok", run["problems"]
    [hlog] = list(results.glob(f"*/agents/consumer-*/{HLOG_FILE}"))
    seconds = [item for item in read_hlog(hlog).intervals
               if item.tag == "latency" and item.start_s >= 1.0]
    p99 = np.array([hdr.percentile_values(item.counts, [99.0])[0] for item in seconds]) / 1000
    assert all(item.values.sum() >= 2000 for item in seconds)
    low, median, high = np.percentile(p99, [25, 50, 75])
    found = run["steadiness"]
    assert found["windows"] == len(seconds) >= 5
    assert found["p99_low_us"] == pytest.approx(low)
    assert found["p99_median_us"] == pytest.approx(median)
    assert found["p99_high_us"] == pytest.approx(high)
    assert found["p99_max_us"] == pytest.approx(p99.max())
    assert found["spread"] == pytest.approx(high / low - 1, abs=1e-4)
    assert found["unsteady"] is bool(high / low - 1 > 1.0)
