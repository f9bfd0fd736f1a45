"""A run's steadiness (spark_jobs/steadiness.py) from interval histograms as the agents' hlogs
hold them: seconds added over receivers, pooled into windows, the quartiles of the windows'
p99 and the flag they raise."""

from __future__ import annotations

import numpy as np
import pytest

from sixnines.formats import hdr
from sixnines.formats.hlog import Interval
from sixnines.spark_jobs.steadiness import MIN_WINDOW_COUNT, steadiness, windows

RNG_SEED = 5


def second(start_s: float, latencies_ns: np.ndarray) -> Interval:
    counts = hdr.counts_of(latencies_ns.astype(np.int64))
    used = np.flatnonzero(counts)
    return Interval("latency", start_s, 1.0, used, counts[used])


def log(seconds: int, per_second: int, slow_from: int | None = None, factor: float = 1.0,
        seed: int = RNG_SEED) -> list[Interval]:
    """An agent's measured seconds of lognormal latencies around 100 µs; from `slow_from`
    on, `factor` times slower."""
    rng = np.random.default_rng(seed)
    return [second(2.0 + s, rng.lognormal(np.log(100_000), 0.5, per_second)
                   * (factor if slow_from is not None and s >= slow_from else 1.0))
            for s in range(seconds)]


def test_a_steady_run_is_steady():
    found = steadiness([log(20, 2000)])
    assert found is not None and not found.unsteady
    assert found.windows == 20 and found.window_s == 1.0
    assert found.spread < 0.2
    assert found.p99_low_us <= found.p99_median_us <= found.p99_high_us <= found.p99_max_us


def test_a_run_that_changed_pace_halfway_is_unsteady():
    found = steadiness([log(20, 2000, slow_from=10, factor=3.0)])
    assert found is not None and found.unsteady and found.spread > 1.5


def test_one_stalled_second_does_not_make_a_run_unsteady():
    seconds = log(20, 2000)
    seconds[7] = second(9.0, np.full(2000, 50_000_000))
    found = steadiness([seconds])
    assert found is not None and not found.unsteady
    assert found.p99_max_us == pytest.approx(50_000, rel=1e-3)


def test_receivers_add_per_second_and_short_seconds_pool():
    """Two receivers of 600 latencies a second: 1,200 a second, so windows of 2 seconds
    (2,400 ≥ MIN_WINDOW_COUNT), the p99 of both receivers' values together."""
    first, other = log(12, 600, seed=1), log(12, 600, seed=2)
    found = windows([(i.start_s, 1.0, np.concatenate([i.indices, j.indices]),
                      np.concatenate([i.values, j.values])) for i, j in zip(first, other,
                                                                           strict=True)])
    assert [length for length, _ in found] == [2.0] * 6
    together = first[0].counts + first[1].counts + other[0].counts + other[1].counts
    assert found[0][1] == hdr.percentile_values(together, [99.0])[0]
    assert steadiness([first, other]).windows == 6


def test_too_few_windows_say_nothing():
    assert steadiness([log(3, MIN_WINDOW_COUNT)]) is None
    assert steadiness([]) is None
    assert steadiness([log(20, 100)]) is None  # 2,000 latencies in all: one window
