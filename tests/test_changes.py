"""Change points over nights (orchestrator/results/changes.py): steps found where they start,
noise of either kind (the nights' sampling bands, the series' own drift) never a change, a
spike never a level, nights without a figure skipped, unsteady nights counting half."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sixnines.orchestrator.results.changes import (
    MIN_NIGHTS,
    Change,
    Night,
    SortedL1Cost,
    find_changes,
    load_detector,
    spread,
    weighted_median,
)

NIGHTS = 30


def nights(values, band: float = 0.03, unsteady=()) -> list[Night]:
    """Nights of these values, each with a sampling band of ±`band` (log ratio)."""
    return [Night(f"night-{i:02d}", None if v is None else float(v),
                  None if v is None else v * math.exp(-band),
                  None if v is None else v * math.exp(band), unsteady=i in unsteady)
            for i, v in enumerate(values)]


def noisy(seed: int, count: int = NIGHTS, sigma: float = 0.05, level: float = 1000.0
          ) -> np.ndarray:
    """A steady series: lognormal night-to-night noise of `sigma`."""
    return level * np.exp(np.random.default_rng(seed).normal(0, sigma, count))


def with_step(values: np.ndarray, at: int, factor: float) -> np.ndarray:
    stepped = values.copy()
    stepped[at:] *= factor
    return stepped


@pytest.mark.parametrize("seed", range(5))
def test_a_sustained_step_is_found_at_the_night_it_starts(seed: int):
    """Found once three nights hold the new level (a chance dip of three nights before it
    may be called too: docs/accuracy.md counts such false alarms)."""
    values = with_step(noisy(seed, NIGHTS + MIN_NIGHTS), NIGHTS, 1.3)
    change = find_changes(nights(values))[-1]
    assert change.index == NIGHTS
    assert change.direction == "regression"
    assert change.relative == pytest.approx(0.3, abs=0.08)
    assert change.after / change.before - 1 == pytest.approx(change.relative)


def test_a_steady_series_has_no_change():
    assert find_changes(nights(noisy(1, 60))) == []


@pytest.mark.parametrize("seed", range(5))
def test_drift_of_15_percent_every_night_pages_nobody(seed: int):
    """A machine whose figure wanders ±15 % from night to night: no level change in 40
    nights, and no +20 % step called from three nights (it is within that drift)."""
    drifting = 1000 * (1 + np.random.default_rng(seed).uniform(-0.15, 0.15, 40))
    assert find_changes(nights(drifting)) == []
    assert spread(np.log(drifting)) > 0.05
    steady = noisy(seed, 40, sigma=0.02)
    assert find_changes(nights(with_step(steady, 37, 1.2)))[0].index == 37


def test_a_step_within_wide_sampling_bands_is_not_a_change():
    """A tail percentile resting on a dozen samples: its band is ±60 %, so +30 % is noise;
    the same nights with narrow bands do change."""
    values = with_step(noisy(3, 40, sigma=0.02), 30, 1.3)
    assert find_changes(nights(values, band=0.6)) == []
    assert [c.index for c in find_changes(nights(values, band=0.03))] == [30]


def test_a_spike_is_not_a_change():
    values = noisy(4, 40)
    values[20] *= 3
    values[38] *= 3  # one near the end too, where a segment would be shortest
    assert find_changes(nights(values)) == []


def test_nights_without_a_figure_are_skipped_and_indices_kept():
    values: list[float | None] = list(with_step(noisy(5, 40), 30, 1.5))
    for gap in (3, 12, 29, 31):
        values[gap] = None
    [change] = find_changes(nights(values))
    assert change.index == 30
    assert find_changes(nights([None] * 10)) == []


def test_too_few_nights_say_nothing():
    assert find_changes(nights([1000, 1000, 1000, 2000, 2000])) == []


def test_direction_follows_what_is_worse():
    values = with_step(noisy(6, 40), 30, 0.6)
    [latency] = find_changes(nights(values), higher_is_worse=True)
    [throughput] = find_changes(nights(values), higher_is_worse=False)
    assert latency.direction == "improvement" and throughput.direction == "regression"
    assert latency.relative == throughput.relative < -0.3
    rising = find_changes(nights(with_step(noisy(6, 40), 30, 1.6)), higher_is_worse=False)
    assert [c.direction for c in rising] == ["improvement"]


def test_unsteady_nights_count_half():
    """Three unsteady nights at a new level are not yet a change (weight 1.5 of the 2 it
    needs); a fourth makes it one; three steady ones do at once."""
    values = with_step(noisy(7, 34, sigma=0.03), 30, 1.5)
    steady = find_changes(nights(values[:33]))
    assert [c.index for c in steady] == [30]
    assert find_changes(nights(values[:33], unsteady={30, 31, 32})) == []
    later = find_changes(nights(values, unsteady={30, 31, 32, 33}))
    assert [c.index for c in later] == [30]


def test_two_steps_are_two_changes():
    values = with_step(with_step(noisy(8, 60, sigma=0.03), 20, 1.5), 40, 0.5)
    found = find_changes(nights(values))
    assert [(c.index, c.direction) for c in found] == [(20, "regression"),
                                                       (40, "improvement")]
    assert all(isinstance(c, Change) for c in found)


def test_weighted_median():
    assert weighted_median(np.array([1.0, 2.0, 3.0]), np.ones(3)) == 2.0
    assert weighted_median(np.array([1.0, 2.0]), np.ones(2)) == 1.5
    assert weighted_median(np.array([1.0, 2.0, 9.0]), np.array([1.0, 0.5, 0.5])) == 1.5


@pytest.mark.parametrize("count", [8, 30, 365])
def test_the_sorted_cost_segments_as_ruptures_own_l1_does(count: int):
    """SortedL1Cost is ruptures' "l1" made faster, not another cost: the same breakpoints
    on series with steps, spikes and noise of several sizes."""
    ruptures = load_detector()
    rng = np.random.default_rng(count)
    for trial in range(12):
        y = np.log(noisy(trial, count, sigma=(0.02, 0.05, 0.15)[trial % 3]))
        y[count // 3:] += (0.0, 0.1, 0.2, 0.5)[trial % 4]
        y[rng.integers(count)] += 0.7 * (trial % 2)
        penalty = math.log(count) * 0.05
        theirs = ruptures.Binseg(model="l1", min_size=MIN_NIGHTS, jump=1).fit(y).predict(
            pen=penalty)
        ours = ruptures.Binseg(custom_cost=SortedL1Cost(), min_size=MIN_NIGHTS, jump=1).fit(
            y).predict(pen=penalty)
        assert ours == theirs
