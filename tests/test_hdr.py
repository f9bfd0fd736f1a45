"""formats/hdr.py must agree with the hdrh package bucket for bucket and percentile for percentile.

hdrh mirrors Java HdrHistogram, so agreement here is what lets our vectorised counts be
encoded into hlogs and merged with histograms from any other HdrHistogram tool.
"""

from __future__ import annotations

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram

from sixnines.formats import hdr

PERCENTILES = [50.0, 90.0, 99.0, 99.9, 99.99, 99.999, 99.9999, 100.0]


def _powers_of_two() -> np.ndarray:
    powers = np.int64(1) << np.arange(42, dtype=np.int64)
    return np.concatenate([powers, powers - 1, powers + 1])


def _value_sets() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(20240611)
    lognormal = rng.lognormal(mean=11.0, sigma=3.0, size=100_000).astype(np.int64)
    return {
        "uniform_small": rng.integers(0, 5001, size=100_000, dtype=np.int64),
        "lognormal_ns_to_s": np.clip(lognormal, 0, hdr.HIGHEST),
        "powers_of_two": _powers_of_two()[_powers_of_two() <= hdr.HIGHEST],
        "near_highest": hdr.HIGHEST - rng.integers(0, 10**9, size=10_000, dtype=np.int64),
        "zero": np.zeros(1_000, dtype=np.int64),
        "mixed": np.concatenate([np.zeros(10, dtype=np.int64), np.array([1, 2047, 2048, 2049]),
                                 np.array([hdr.HIGHEST])]),
    }


VALUE_SETS = _value_sets()


def _recorded(values: np.ndarray) -> HdrHistogram:
    histogram = HdrHistogram(hdr.LOWEST, hdr.HIGHEST, hdr.SIGNIFICANT_DIGITS)
    for value in values.tolist():
        assert histogram.record_value(value)
    return histogram


@pytest.fixture(scope="module")
def recorded() -> dict[str, HdrHistogram]:
    assert sum(len(v) for v in VALUE_SETS.values()) <= 300_000  # keep record_value loops fast
    return {name: _recorded(values) for name, values in VALUE_SETS.items()}


def test_layout_matches_hdrh() -> None:
    reference = HdrHistogram(hdr.LOWEST, hdr.HIGHEST, hdr.SIGNIFICANT_DIGITS)
    assert reference.counts_len == hdr.COUNTS_LEN
    assert reference.sub_bucket_count == hdr.SUB_BUCKET_COUNT
    assert reference.bucket_count == hdr.BUCKET_COUNT


@pytest.mark.parametrize("name", sorted(VALUE_SETS))
def test_counts_equal_record_value(name: str, recorded: dict[str, HdrHistogram]) -> None:
    ours = hdr.counts_of(VALUE_SETS[name])
    assert ours.shape == (hdr.COUNTS_LEN,)
    np.testing.assert_array_equal(ours, hdr.from_hdrh(recorded[name]))


@pytest.mark.parametrize("name", sorted(VALUE_SETS))
def test_percentiles_equal_hdrh(name: str, recorded: dict[str, HdrHistogram]) -> None:
    ours = hdr.percentile_values(hdr.counts_of(VALUE_SETS[name]), PERCENTILES)
    theirs = [recorded[name].get_value_at_percentile(p) for p in PERCENTILES]
    assert ours.tolist() == theirs
    assert ours[-1] == recorded[name].get_max_value()


def test_percentiles_of_empty_counts_are_zero() -> None:
    empty = np.zeros(hdr.COUNTS_LEN, dtype=np.int64)
    assert hdr.percentile_values(empty, PERCENTILES).tolist() == [0] * len(PERCENTILES)


@pytest.mark.parametrize("name", sorted(VALUE_SETS))
def test_to_hdrh_round_trips(name: str, recorded: dict[str, HdrHistogram]) -> None:
    counts = hdr.counts_of(VALUE_SETS[name])
    histogram = hdr.to_hdrh(counts)
    assert histogram.get_total_count() == len(VALUE_SETS[name])
    assert histogram.get_max_value() == recorded[name].get_max_value()
    decoded = HdrHistogram.decode(histogram.encode())
    assert decoded.get_total_count() == len(VALUE_SETS[name])
    np.testing.assert_array_equal(hdr.from_hdrh(decoded), counts)
    # The payload hdrh itself produces decodes to the same counts.
    np.testing.assert_array_equal(hdr.from_hdrh(HdrHistogram.decode(recorded[name].encode())),
                                  counts)


def test_to_hdrh_of_empty_counts() -> None:
    histogram = hdr.to_hdrh(np.zeros(hdr.COUNTS_LEN, dtype=np.int64))
    assert histogram.get_total_count() == 0
    assert HdrHistogram.decode(histogram.encode()).get_total_count() == 0


def test_clip_counts_out_of_range_values() -> None:
    values = np.array([-5, -1, 0, 1, hdr.HIGHEST, hdr.HIGHEST + 1, 2**62], dtype=np.int64)
    clipped, negative, too_large = hdr.clip(values)
    assert (negative, too_large) == (2, 2)
    assert clipped.tolist() == [0, 0, 0, 1, hdr.HIGHEST, hdr.HIGHEST, hdr.HIGHEST]
    # hdrh drops such values silently (returns False): that is why clip counts them.
    histogram = HdrHistogram(hdr.LOWEST, hdr.HIGHEST, hdr.SIGNIFICANT_DIGITS)
    assert [histogram.record_value(int(v)) for v in values[[0, 6]]] == [False, False]


def test_clip_in_range_is_unchanged() -> None:
    values = np.array([0, 7, hdr.HIGHEST], dtype=np.int64)
    clipped, negative, too_large = hdr.clip(values)
    assert (negative, too_large) == (0, 0)
    np.testing.assert_array_equal(clipped, values)
