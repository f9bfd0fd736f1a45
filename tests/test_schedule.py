"""Open-loop schedules (agents/schedule.py)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from sixnines.agents.schedule import NS, Pieces, intended_offsets, message_count, touched


@pytest.mark.parametrize(
    ("rate", "phase_ns"), [(1000.0, 0), (1000.0, 123_456), (7.0, 5), (250_000.0, 1)]
)
def test_fixed_is_phase_plus_i_over_rate(rate, phase_ns):
    count = 10_000
    offsets = intended_offsets("fixed", rate, count, phase_ns)
    assert offsets.dtype == np.int64
    assert len(offsets) == count
    expected = [phase_ns + int(Fraction(i * NS) / Fraction(rate)) for i in range(count)]
    assert offsets.tolist() == expected
    assert offsets[0] == phase_ns
    assert (np.diff(offsets) > 0).all()


def test_fixed_grid_is_exact_when_i_over_rate_is_whole_ns():
    rate = 3
    offsets = intended_offsets("fixed", float(rate), 200, phase_ns=0)
    exact = [int(Fraction(i * NS, rate)) for i in range(200)]
    assert offsets.tolist() == exact


def test_fixed_is_monotonic_over_a_long_run():
    offsets = intended_offsets("fixed", 333_333.0, 1_000_000, phase_ns=17)
    assert (np.diff(offsets) >= 0).all()
    assert offsets[-1] == 17 + int(Fraction(999_999 * NS, 333_333))


def test_closed_uses_the_fixed_grid():
    fixed = intended_offsets("fixed", 1234.0, 5000, phase_ns=99, seed=1)
    closed = intended_offsets("closed", 1234.0, 5000, phase_ns=99, seed=2)
    assert np.array_equal(fixed, closed)


def test_poisson_starts_at_phase_and_never_goes_back():
    offsets = intended_offsets("poisson", 10_000.0, 50_000, phase_ns=777, seed=3)
    assert offsets.dtype == np.int64
    assert len(offsets) == 50_000
    assert offsets[0] == 777
    assert (np.diff(offsets) >= 0).all()


def test_poisson_gaps_are_exponential_with_mean_one_over_rate():
    rate = 50_000.0
    offsets = intended_offsets("poisson", rate, 200_000, phase_ns=0, seed=11)
    gaps = np.diff(offsets).astype(np.float64)
    mean = gaps.mean()
    assert mean == pytest.approx(NS / rate, rel=0.03)
    # exponential: standard deviation equals the mean (coefficient of variation 1)
    assert gaps.std() / mean == pytest.approx(1.0, abs=0.03)
    # not a grid: many distinct gaps, some far above the mean
    assert len(np.unique(gaps)) > 10_000
    assert gaps.max() > 5 * mean


def test_poisson_is_reproducible_by_seed():
    a = intended_offsets("poisson", 1000.0, 10_000, phase_ns=5, seed=123)
    b = intended_offsets("poisson", 1000.0, 10_000, phase_ns=5, seed=123)
    c = intended_offsets("poisson", 1000.0, 10_000, phase_ns=5, seed=124)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_poisson_phase_shifts_the_whole_schedule():
    a = intended_offsets("poisson", 1000.0, 1000, phase_ns=0, seed=8)
    b = intended_offsets("poisson", 1000.0, 1000, phase_ns=1_000_000, seed=8)
    assert np.abs(b - a - 1_000_000).max() <= 1  # float truncation may move a value by 1 ns


@pytest.mark.parametrize("schedule", ["uniform", "", "Fixed", "POISSON"])
def test_unknown_schedule_is_refused(schedule):
    with pytest.raises(ValueError, match="schedule"):
        intended_offsets(schedule, 1000.0, 10)


@pytest.mark.parametrize(
    ("rate", "span_ns", "count"),
    [
        (1000.0, NS, 1000),
        (1000.0, 2 * NS + NS // 2, 2500),
        (333.3, NS, 333),  # truncates
        (1.0, NS // 2, 1),  # at least one message
        (0.001, NS, 1),
        (1_000_000.0, 3 * NS, 3_000_000),
    ],
)
def test_message_count(rate, span_ns, count):
    assert message_count(rate, span_ns) == count


def test_touched_is_filled():
    array = touched(1000, np.int32, fill=-7)
    assert array.dtype == np.int32
    assert array.shape == (1000,)
    assert (array == -7).all()
    assert (touched(10) == 0).all()
    assert touched(10).dtype == np.int64


def whole_run(schedule: str, rate: float, count: int, phase_ns: int, seed: int) -> np.ndarray:
    """The schedule as agents made it whole before recording went piecewise."""
    if schedule == "poisson":
        gaps = np.random.default_rng(seed).exponential(NS / rate, size=count)
        gaps[0] = 0.0
        return np.cumsum(gaps).astype(np.int64) + phase_ns
    if float(rate).is_integer():
        return np.arange(count, dtype=np.int64) * NS // int(rate) + phase_ns
    return (np.arange(count, dtype=np.float64) * NS / rate).astype(np.int64) + phase_ns


@pytest.mark.parametrize(("schedule", "rate"), [
    ("fixed", 1_000_000.0), ("fixed", 333_333.3), ("poisson", 1_000_000.0), ("poisson", 77.7)])
def test_pieces_make_exactly_the_whole_run_s_schedule(schedule, rate):
    count, piece = 3_000_017, 100_003  # a long schedule in uneven pieces
    pieces = Pieces(schedule, rate, count, phase_ns=17, seed=5)
    buffer = np.empty(piece, np.int64)
    made = []
    while n := pieces.fill(buffer):
        made.append(buffer[:n].copy())
    assert [len(m) for m in made[:-1]] == [piece] * (len(made) - 1)
    assert np.array_equal(np.concatenate(made), whole_run(schedule, rate, count, 17, 5))
    assert pieces.fill(buffer) == 0  # done
