"""Schedules of a shaped rate (formats/shape.py, agents/schedule.py `ShapedPieces`): how
many messages a shape gives, when each is due, lanes that keep their share, and Poisson
arrivals at the shape's rate."""

from __future__ import annotations

import numpy as np
import pytest

from sixnines.agents.schedule import NS, ShapedPieces, shaped_count
from sixnines.formats.shape import RateShape, Segment

MS = 1_000_000


def shape_of(*stretches: tuple[int, float, float], kind: str = "steps") -> RateShape:
    """Segments back to back from 0, each (length in ms, rate, to)."""
    segments, start = [], 0
    for length, rate, to in stretches:
        segments.append(Segment(start_ns=start, end_ns=start + length * MS, rate=rate, to=to))
        start += length * MS
    return RateShape(kind=kind, label="test", segments=segments)  # type: ignore[arg-type]


#: 0.5 s of warm-up at 500 msg/s, a step of 1 s at 500, a step of 1 s at 2,000
STEPS = shape_of((500, 500.0, 500.0), (1000, 500.0, 500.0), (1000, 2000.0, 2000.0))
SPAN_NS = 2_500 * MS


def lane_times(shape: RateShape, schedule: str, lane: int, lanes: int, seed: int = 0,
               span_ns: int = SPAN_NS) -> np.ndarray:
    count = shaped_count(shape, span_ns, lanes)
    out = np.empty(count, np.int64)
    assert ShapedPieces(schedule, shape, count, lane, lanes, seed=seed).fill(out) == count
    return out


def per_segment(times: np.ndarray, shape: RateShape) -> list[int]:
    edges = [s.start_ns for s in shape.segments] + [shape.segments[-1].end_ns]
    return np.histogram(times, bins=edges)[0].tolist()


def test_a_shape_gives_the_integral_of_its_rate_shared_equally_by_lanes():
    assert shaped_count(STEPS, SPAN_NS, 1) == 250 + 500 + 2000
    assert shaped_count(STEPS, SPAN_NS, 4) == 2750 // 4
    assert STEPS.mean(500 * MS, SPAN_NS) == pytest.approx(1250.0)
    assert STEPS.peak == 2000.0


def test_fixed_steps_send_each_step_s_rate_times_its_length():
    times = lane_times(STEPS, "fixed", 0, 1)
    assert per_segment(times, STEPS) == [250, 500, 2000]
    gaps = np.diff(times)
    assert set(gaps[:749].tolist()) == {2 * MS} and set(gaps[751:].tolist()) == {MS // 2}
    assert times[0] == 0 and np.all(gaps > 0)


def test_lanes_together_are_the_one_lane_schedule_interleaved():
    whole = lane_times(STEPS, "fixed", 0, 1)
    lanes = 6
    merged = np.sort(np.concatenate([lane_times(STEPS, "fixed", j, lanes) for j in range(lanes)]))
    assert np.array_equal(merged, whole[:len(merged)])
    # each lane keeps its share of every step
    for j in range(lanes):
        counts = per_segment(lane_times(STEPS, "fixed", j, lanes), STEPS)
        assert all(abs(c - e / lanes) <= 1 for c, e in zip(counts, [250, 500, 2000], strict=True))


def test_a_ramp_sends_the_area_under_it():
    ramp = shape_of((2000, 1000.0, 3000.0), kind="ramp")  # 1,000 → 3,000 msg/s over 2 s
    times = lane_times(ramp, "fixed", 0, 1, span_ns=2000 * MS)
    assert len(times) == 4000
    first, second = np.histogram(times, bins=[0, NS, 2 * NS])[0]
    assert (first, second) == (1500, 2500)  # ∫ 1000 + 1000 t: 1,500 then 2,500
    # the gap narrows with the rate: 1/1000 s at the start, 1/3000 s at the end
    gaps = np.diff(times)
    assert gaps[0] == pytest.approx(NS / 1000, rel=0.01)
    assert gaps[-1] == pytest.approx(NS / 3000, rel=0.01)


@pytest.mark.parametrize("schedule", ["fixed", "poisson"])
def test_pieces_make_exactly_the_whole_schedule(schedule):
    shape = shape_of((700, 900.0, 900.0), (1300, 900.0, 40_000.0), (500, 7000.0, 7000.0))
    count = shaped_count(shape, SPAN_NS, 3)
    whole = np.empty(count, np.int64)
    ShapedPieces(schedule, shape, count, 2, 3, seed=9).fill(whole)
    pieces = ShapedPieces(schedule, shape, count, 2, 3, seed=9)
    buffer, made = np.empty(997, np.int64), []
    while n := pieces.fill(buffer):
        made.append(buffer[:n].copy())
    assert np.array_equal(np.concatenate(made), whole)
    assert np.all(np.diff(whole) >= 0)


def test_poisson_within_a_shape_is_poisson_at_the_shape_s_rate():
    # 2 s at 2,000 msg/s then 2 s at 20,000, over 4 lanes: 44,000 arrivals expected
    shape = shape_of((2000, 2000.0, 2000.0), (2000, 20_000.0, 20_000.0))
    lanes = 4
    merged = np.sort(np.concatenate(
        [lane_times(shape, "poisson", j, lanes, seed=1000 + j, span_ns=4000 * MS)
         for j in range(lanes)]))
    low, high = per_segment(merged, shape)
    assert abs(low - 4000) < 4 * 4000 ** 0.5 and abs(high - 40_000) < 4 * 40_000 ** 0.5
    for start, rate in ((100 * MS, 2000.0), (2100 * MS, 20_000.0)):  # within each step
        inside = merged[(merged >= start) & (merged < start + 1800 * MS)]
        gaps = np.diff(inside).astype(np.float64)
        assert gaps.mean() == pytest.approx(NS / rate, rel=0.05)
        assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.05)  # exponential
    again = lane_times(shape, "poisson", 1, lanes, seed=1001, span_ns=4000 * MS)
    assert np.array_equal(again, lane_times(shape, "poisson", 1, lanes, seed=1001,
                                            span_ns=4000 * MS))
    assert not np.array_equal(again, lane_times(shape, "poisson", 1, lanes, seed=7,
                                                span_ns=4000 * MS))


def test_the_cumulative_rate_and_its_inverse_agree():
    shape = shape_of((300, 50.0, 50.0), (1000, 50.0, 5000.0), (700, 5000.0, 10.0))
    cumulative = shape.cumulative()
    times = np.linspace(0, 2000 * MS, 1001)
    assert np.allclose(cumulative.inverse(cumulative.at(times)), times, atol=1.0)
    total = 15 + 2525 + 1753.5
    assert float(cumulative.at(2000 * MS)) == pytest.approx(total)
    # past the end, the last rate holds
    assert float(cumulative.at(3000 * MS)) == pytest.approx(total + 10.0)


def test_a_closed_schedule_cannot_follow_a_shape():
    with pytest.raises(ValueError, match="no 'closed' schedule"):
        ShapedPieces("closed", STEPS, 10, 0, 1)
