"""spark_jobs.distribution on HDR counts built in numpy: robust centre and spread, the log
histogram, humps and nines. No Spark session needed."""

from __future__ import annotations

import numpy as np
import pytest

from sixnines.formats import hdr
from sixnines.spark_jobs import distribution as d


def _buckets(values) -> tuple[np.ndarray, np.ndarray]:
    """HDR counts and per-bucket raw sums, as the per-agent passes build them."""
    values = np.asarray(values, dtype=np.int64)
    index = hdr.bucket_indices(np.clip(values, 0, hdr.HIGHEST))
    sums = np.bincount(index, weights=values.astype(np.float64), minlength=hdr.COUNTS_LEN)
    return np.bincount(index, minlength=hdr.COUNTS_LEN).astype(np.int64), sums


def _detail(values) -> d.Detail:
    """The value counts of the lower median's bucket (what series.median_detail fetches)."""
    counts, _ = _buckets(values)
    low, high = d.bucket_range(d.median_bucket(counts)[0])
    inside = [v for v in values if (low is None or v >= low) and (high is None or v <= high)]
    distinct, n = np.unique(np.array(inside, dtype=np.int64), return_counts=True)
    return d.Detail(distinct, n)


def _log_counts(values) -> tuple[np.ndarray, np.ndarray]:
    counts, _ = _buckets(values)
    return d.log_histogram(counts)


# --- lower median and robust deviation -------------------------------------------------------


@pytest.mark.parametrize(("values", "median", "deviation"), [
    ([1, 2, 3, 4, 100], 3, (2 + 1 + 0 + 1 + 97) / 5),  # odd n: the middle one
    ([4, 1, 3, 2], 2, (1 + 0 + 1 + 2) / 4),  # even n: the lower of the middle two
    ([7], 7, 0.0),
    ([5, 5, 5, 900, 0], 5, (0 + 0 + 0 + 895 + 5) / 5),
])
def test_small_sets_by_hand(values, median, deviation):
    counts, sums = _buckets(values)
    assert d.robust_centre(counts, sums, _detail(values)) == (median, pytest.approx(deviation))
    # below 2,048 ns every HDR bucket holds one value: exact without the detail too
    assert d.robust_centre(counts, sums) == (median, pytest.approx(deviation))


def test_values_sharing_a_bucket_need_the_detail():
    """20,000–20,015 ns share one 16-ns bucket: only the value counts tell them apart."""
    values = [20_000, 20_003, 20_009, 20_015, 90_000]
    counts, sums = _buckets(values)
    assert d.median_bucket(counts) == (int(hdr.bucket_indices(np.array([20_000]))[0]), 3)
    median, deviation = d.robust_centre(counts, sums, _detail(values))
    assert median == 20_009
    assert deviation == pytest.approx((9 + 6 + 0 + 6 + 69_991) / 5)
    estimate, rough = d.robust_centre(counts, sums)  # the bucket's mean stands in for it
    assert estimate == pytest.approx(np.mean(values[:4]))
    assert abs(estimate - median) < 16 and abs(rough - deviation) < 16


def test_exact_on_a_large_random_set():
    rng = np.random.default_rng(4)
    values = rng.lognormal(np.log(80_000), 0.7, 100_001).astype(np.int64)
    counts, sums = _buckets(values)
    median, deviation = d.robust_centre(counts, sums, _detail(values))
    assert median == np.sort(values)[50_000]
    assert deviation == pytest.approx(np.mean(np.abs(values - median)), rel=1e-12)


def test_a_stale_detail_is_not_trusted():
    values = [20_000, 20_003, 20_009]
    counts, sums = _buckets(values)
    short = d.Detail(np.array([20_000]), np.array([1]))
    assert d.robust_centre(counts, sums, short) == d.robust_centre(counts, sums)


def test_bucket_range_edges():
    assert d.bucket_range(0) == (None, 0)  # negatives are clipped into the first bucket
    top = int(hdr.bucket_indices(np.array([hdr.HIGHEST]))[0])
    assert d.bucket_range(top)[1] is None  # as are values above an hour into the last
    index = int(hdr.bucket_indices(np.array([20_000]))[0])
    assert d.bucket_range(index) == (20_000, 20_015)


# --- log histogram ---------------------------------------------------------------------------


def test_log_histogram_bins_and_trims():
    # 1.5 µs and 1 ms: bins 3 (1.41–1.58 µs) and 60 (1.00–1.12 ms) of 20 a decade from 1 µs
    edges, counts = _log_counts([1_500, 1_500, 1_000_000])
    assert len(edges) == len(counts) + 1 == 60 - 3 + 2
    assert edges[0] == pytest.approx(1_000 * 10 ** (3 / 20))
    assert edges[-1] == pytest.approx(1_000 * 10 ** (61 / 20))
    assert counts[0] == 2 and counts[-1] == 1 and counts.sum() == 3


def test_log_histogram_keeps_every_value():
    rng = np.random.default_rng(1)
    values = rng.lognormal(np.log(50_000), 2.0, 20_000).astype(np.int64)
    edges, counts = _log_counts(values)
    assert counts.sum() == len(values)
    inside = (values >= edges[0]) & (values < edges[-1])
    assert inside.sum() >= len(values) - (values < d.LOW_NS).sum()


def test_log_histogram_of_nothing():
    edges, counts = d.log_histogram(np.zeros(hdr.COUNTS_LEN, dtype=np.int64))
    assert len(edges) == len(counts) == 0
    assert d.humps(edges, counts) == d.HumpsFound(0, ())


# --- humps -------------------------------------------------------------------------------------


def _humps(values) -> d.HumpsFound:
    return d.humps(*_log_counts(np.asarray(values).astype(np.int64)))


def _within_a_bin(found: float, truth: float) -> bool:
    return abs(np.log10(found / truth)) <= 1 / d.PER_DECADE


RNG = np.random.default_rng(2026)
N = 200_000


@pytest.mark.parametrize(("low_share", "high_mode"), [(0.7, 2_000_000), (0.9, 2_000_000),
                                                      (0.5, 150_000)])
def test_bimodal_is_flagged_with_both_modes(low_share, high_mode):
    """Log-normal modes sit at their medians on a log axis: 50 µs and high_mode."""
    low = int(low_share * N)
    values = np.concatenate([50_000 * RNG.lognormal(0, 0.2, low),
                             high_mode * RNG.lognormal(0, 0.2, N - low)])
    found = _humps(values)
    assert found.count == 2
    assert _within_a_bin(found.modes_ns[0], 50_000)
    assert _within_a_bin(found.modes_ns[1], high_mode)


@pytest.mark.parametrize("sigma", [0.2, 0.5, 1.5])
def test_log_normal_is_unimodal(sigma):
    found = _humps(80_000 * RNG.lognormal(0, sigma, N))
    assert found.count == 1
    assert _within_a_bin(found.modes_ns[0], 80_000) or sigma > 1  # wide: noisier top


def test_heavy_tails_are_unimodal():
    """A Pareto tail (α = 1.2, 5 % of the messages, out to seconds) and a log-Student-t
    (ν = 2: heavy on both sides) fall monotonically away from one body."""
    body = 50_000 * RNG.lognormal(0, 0.25, int(0.95 * N))
    pareto = 50_000 * (RNG.pareto(1.2, N - len(body)) + 1)
    assert _humps(np.concatenate([body, pareto])).count == 1
    log_t = 50_000 * np.exp(0.3 * RNG.standard_t(2, N))
    assert _humps(np.clip(log_t, 1, hdr.HIGHEST)).count == 1


def test_a_few_stalled_messages_are_not_a_mode():
    """0.5 % of the messages 30 ms late: a tail the percentiles show, not a second mode."""
    values = np.concatenate([50_000 * RNG.lognormal(0, 0.3, N - 1000),
                             30_000_000 * RNG.lognormal(0, 0.1, 1000)])
    assert _humps(values).count == 1


@pytest.mark.parametrize("n", [30, 120, 1000])
def test_small_samples_make_no_modes_out_of_noise(n):
    for seed in range(20):
        values = 40_000 * np.random.default_rng(seed).lognormal(0, 0.4, n)
        assert _humps(values).count == 1, seed


# --- nines -------------------------------------------------------------------------------------


def test_nines_from_the_smallest_to_the_max():
    values = np.arange(1, 1_000_001, dtype=np.int64)  # 1 ns .. 1 ms
    counts, _ = _buckets(values)
    got = d.nines(counts, exact_max=1_000_000)
    assert got[0] == 1 and got[1] == pytest.approx(500_000, rel=1e-3)
    assert got[-1] == pytest.approx(999_999, rel=1e-3) and max(got) <= 1_000_000
    assert got == sorted(got)
    assert d.nines(np.zeros(hdr.COUNTS_LEN, dtype=np.int64), None) == [None] * len(d.NINES)
