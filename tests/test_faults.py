"""The figures of a fault (spark_jobs.faults) from a run's counts per interval, on series
built from a queue model whose answers are known: a FIFO server of fixed capacity
stopped for a while under an open-loop schedule, or a receiver that stops for good."""

from __future__ import annotations

import numpy as np
import pytest

from sixnines.formats.manifest import Manifest
from sixnines.spark_jobs import delivery, faults
from sixnines.spark_jobs.grid import Grid
from sixnines.spark_jobs.intervals import IntervalCounts

S = 10**9
STARTED, WARMUP = 50 * S, S // 2
ORIGIN = STARTED + WARMUP  # the measured start on the controller's clock
RATE = 1000
DURATION, DRAIN = 3 * S, S
BASE_NS = 100_000


def served(stopped: tuple[int, int] | None, capacity: float) -> tuple[np.ndarray, np.ndarray]:
    """(intended, received) ns from the measured start: a message every 1/RATE s into a
    FIFO server taking BASE_NS per message and at most `capacity` msg/s, which holds
    everything from stopped[0] to stopped[1]."""
    intended = np.arange(0, DURATION, S // RATE, dtype=np.int64)
    received = np.empty_like(intended)
    free = 0
    for i, t in enumerate(intended):
        start = max(t, free)
        if stopped is not None and stopped[0] <= start < stopped[1]:
            start = stopped[1]
        free = start + int(S / capacity)
        received[i] = start + BASE_NS
    return intended, received


def counted(intended: np.ndarray, received: np.ndarray, got: np.ndarray | None = None
            ) -> IntervalCounts:
    """The counts per interval the analysis would give of these messages (`got`: those
    delivered; the others never arrive)."""
    grid = Grid.over(DURATION + DRAIN)
    got = np.ones(len(intended), bool) if got is None else got
    counts = IntervalCounts.empty(grid)
    counts.add("sent", grid.index(intended))
    counts.add("unique", grid.index(intended[got]))
    counts.add("received", grid.index(received[got]))
    counts.add_latency(grid.index(intended[got]), (received - intended)[got])
    return counts


def manifest(*records: dict) -> Manifest:
    return Manifest.model_validate({
        "started_at_ns": STARTED,
        "workload": {"warmup_ns": WARMUP, "duration_ns": DURATION, "drain_ns": DRAIN},
        "faults": [{"index": i, "action": "pause", "target": "broker", "outcome": "done",
                    **record} for i, record in enumerate(records)]})


def pause(at: int, end: int) -> dict:
    return {"at_ns": at, "for_ns": end - at, "issued_ns": ORIGIN + at,
            "effective_ns": ORIGIN + at, "undone_ns": ORIGIN + end}


def figures(run: Manifest, counts: IntervalCounts) -> list:
    found = faults.fault_figures(run, counts, Grid.over(DURATION + DRAIN).width_ns,
                                 delivery.Expected(consumers=1))
    assert found is not None
    return found


def test_a_paused_server_with_spare_capacity_recovers_when_its_backlog_is_gone():
    """Paused 1.0 → 1.5 s at 1,000 msg/s with room for 2,000: the 500 messages held are
    served 0.5 s after it continues, so latency is back to its usual 100 µs then."""
    stopped = (S, 3 * S // 2)
    (fault,) = figures(manifest(pause(*stopped)), counted(*served(stopped, 2 * RATE)))
    assert (fault.effective_s, fault.end_s, fault.interval_ms) == (1.0, 1.5, 10.0)
    assert fault.max_in_window_us == pytest.approx(500_000 + BASE_NS / 1000, abs=1)
    # held message k (1 ms apart) is served at 1.5 s + k / 2 ms: 500 down to 250 ms
    assert fault.during.p50_us == pytest.approx(375_000, rel=0.03)
    before, after = fault.before, fault.after  # a coarse bin holds the server's 100 µs
    assert BASE_NS / 1000 <= before.p50_us <= before.p99_us <= BASE_NS / 1000 * 1.03
    assert after.p50_us <= BASE_NS / 1000 * 1.03  # two thirds of it after the recovery
    assert after.max_us == pytest.approx(245_000 + BASE_NS / 1000)  # held till its end
    assert (fault.before.from_s, fault.before.to_s) == (0.0, 0.99)  # but the last one
    assert (fault.after.from_s, fault.after.to_s) == (1.51, 3.0)
    assert fault.band_us == pytest.approx(BASE_NS / 1000 + 1000)  # the floor: + 1 ms
    assert fault.recovered is True
    assert fault.recovered_s == pytest.approx(0.5, abs=0.011)
    assert fault.backlog == pytest.approx(500, abs=2)
    assert fault.drained_s == pytest.approx(0.5, abs=0.011)
    assert fault.rate_before_msg_s == RATE
    assert fault.dip_msg_s == 0 and 1.0 <= fault.dip_at_s < 1.5
    # the window's messages and the in-flight interval's before it (10 ms at 1k msg/s)
    assert fault.delivery.model_dump() == {"sent": 520, "delivered": 520, "lost": 0,
                                           "unknown": 0, "duplicated": 0, "reordered": 0,
                                           "lost_acknowledged": None}


def test_a_server_too_slow_to_catch_up_never_recovers():
    """Room for exactly the rate: what the pause held is never worked off."""
    stopped = (S, 3 * S // 2)
    (fault,) = figures(manifest(pause(*stopped)), counted(*served(stopped, RATE)))
    assert (fault.recovered, fault.recovered_s) == (False, None)
    assert fault.after.p50_us == pytest.approx(500_000, rel=0.03)
    assert fault.drained_s == pytest.approx(DURATION / S + 0.5 - 1.5, abs=0.02)


def test_what_a_receiver_that_stops_for_good_misses_in_the_window_is_lost():
    """Nothing intended from 2 s on arrives: the window runs to the end of the measured
    time (the fault has no end) and every message in it is lost, counted once."""
    intended, received = served(None, 2 * RATE)
    got = intended < 2 * S
    record = {"at_ns": 2 * S, "action": "kill", "target": "consumer-0",
              "effective_ns": ORIGIN + 2 * S}
    (fault,) = figures(manifest(record), counted(intended, received, got))
    assert fault.end_s is None and fault.after.count == 0
    assert (fault.during.from_s, fault.during.to_s) == (2.0, 3.0)
    # and the in-flight interval's, which arrived
    assert fault.delivery.model_dump() == {"sent": 1010, "delivered": 10, "lost": 1000,
                                           "unknown": 0, "duplicated": 0, "reordered": 0,
                                           "lost_acknowledged": None}
    assert fault.max_in_window_us is None
    assert (fault.recovered, fault.recovered_s) == (False, None)
    assert fault.backlog == 0 and fault.drained_s == 0.0  # lost, not waited for
    assert fault.dip_msg_s == 0


def test_a_second_fault_takes_its_band_from_after_the_first():
    stopped = (S, S + S // 5)
    second = (2 * S, 2 * S + S // 5)
    intended, received = served(stopped, 4 * RATE)
    later = served(second, 4 * RATE)[1]
    received = np.where(intended >= 3 * S // 2, later, received)
    first, other = figures(manifest(pause(*stopped), pause(*second)),
                           counted(intended, received))
    assert (first.after.from_s, first.after.to_s) == (1.21, 2.0)
    assert (other.before.from_s, other.before.to_s) == (1.2, 1.99)
    assert first.recovered and other.recovered


def test_a_fault_that_never_took_effect_has_no_figures():
    record = {"at_ns": S, "outcome": "failed", "note": "the broker had exited"}
    (fault,) = figures(manifest(record), counted(*served(None, 2 * RATE)))
    assert fault.note == "the broker had exited" and fault.during is None
    assert fault.as_json()["outcome"] == "failed" and "recovered" not in fault.as_json()


def test_no_timed_message_before_a_fault_gives_no_band():
    intended, received = served((0, S // 2), 2 * RATE)
    (fault,) = figures(manifest(pause(0, S // 2)), counted(intended, received))
    assert fault.before.count == 0
    assert (fault.band_us, fault.recovered, fault.recovered_s) == (None, None, None)
    assert "no band" in fault.note


def _maxima(values: list[int | None]) -> IntervalCounts:
    counts = IntervalCounts.empty(Grid(10, len(values)))
    for index, value in enumerate(values):
        if value is not None:
            counts.add_latency(np.array([index]), np.array([value]))
    return counts


def test_the_band_is_twice_the_usual_interval_max_and_at_least_a_millisecond_above():
    busy = _maxima([10_000_000] * 99 + [12_000_000])
    assert faults.band_ns(busy, (0, 100)) == 24_000_000  # the upper 1 %: the highest
    quick = _maxima([100_000] * 100)
    assert faults.band_ns(quick, (0, 100)) == 1_100_000
    assert faults.band_ns(_maxima([None] * 5), (0, 5)) is None


def test_recovery_needs_its_run_of_intervals_inside_and_empty_ones_do_not_break_it():
    high, low = 5_000_000, 100_000
    counts = _maxima([high, low, low, high, *[low, None] * 12, high])
    assert faults.RECOVERY_INTERVALS == 10
    assert faults.recovered_at(counts, 0, 28, 1_000_000) == 4
    assert faults.recovered_at(counts, 0, 4, 1_000_000) is None  # the last one high
    short = _maxima([high, high, low, low])  # the next fault comes first: fewer suffice
    assert faults.recovered_at(short, 0, 4, 1_000_000) == 2
    assert faults.recovered_at(_maxima([high] * 12), 0, 12, 1_000_000) is None
    gone = _maxima([low, low, *[None] * 20])  # nothing arrives after the second
    assert faults.recovered_at(gone, 1, 22, 1_000_000) is None
    assert faults.recovered_at(gone, 1, 8, 1_000_000) == 1


def test_a_broker_killed_loses_by_the_kill_what_it_held_before_the_kill_was_seen():
    """SIGKILL acts when it is sent; the controller sees the process reaped 40 ms later.
    What the broker held (intended from 10 ms before the signal) and everything intended
    until it came back is the kill's: its window starts at the signal, its accounting in
    the interval before it."""
    intended, received = served(None, 2 * RATE)
    got = (intended < 2 * S - S // 100) | (intended >= 2 * S + S // 2)
    record = {"at_ns": 2 * S, "action": "kill", "for_ns": S // 2, "issued_ns": ORIGIN + 2 * S,
              "effective_ns": ORIGIN + 2 * S + 40_000_000, "restarted_ns": ORIGIN + 5 * S // 2}
    (fault,) = figures(manifest(record), counted(intended, received, got))
    assert fault.during.from_s == 2.0 and fault.effective_s == pytest.approx(2.04)
    assert fault.delivery.lost == 510 and fault.delivery.sent == 520
