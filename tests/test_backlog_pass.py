"""A backlog's figures from the merged counts per millisecond (spark_jobs.backlog_pass):
when it was gone, at what rates, and the verdict of a drain that does not make it within
its bound (the counts from real records: tests/integration/test_backlog.py)."""

from __future__ import annotations

import numpy as np
import pytest

from sixnines.formats.backlog import BacklogPlan
from sixnines.spark_jobs.backlog_pass import (
    LIVE_WINDOWS,
    MAX_TICKS,
    MS,
    BacklogPart,
    backlog_figures,
    tick_ns,
)

PLAN = BacklogPlan(build="1000 messages", release_ns=1_000_000_000,
                   drain_within_ns=1_000_000_000)


def part(send_per_ms: int, receive_per_ms: int, built_per_ms: int = 1) -> BacklogPart:
    """`built_per_ms` sends a ms in the first second, `send_per_ms` after it;
    `receive_per_ms` from the release (one consumer)."""
    sent = np.concatenate([np.full(1000, built_per_ms), np.full(1000, send_per_ms)])
    received = np.concatenate([np.zeros(1000, np.int64), np.full(1000, receive_per_ms)])
    built = 1000 * built_per_ms
    return BacklogPart(sent, received, built, 100 * built, None, [None] * LIVE_WINDOWS)


def test_a_backlog_is_gone_when_what_is_owed_falls_to_one_percent():
    """1 msg/ms in, 11 out: 1,000 owed lose 10 a ms, down to 10 (1 %) after 99 ms."""
    figures = backlog_figures(PLAN, part(1, 11), consumers=1, warmup_ns=0)
    assert figures.drained and figures.drained_at_s == pytest.approx(1.099)
    assert figures.drained_in_s == pytest.approx(0.099)
    assert figures.drain_rate == pytest.approx(11_000) and figures.send_rate == 1000
    assert figures.verdict == ("drained 1,000 messages in 0.099 s: consumers at 11,000 msg/s "
                               "while producers sent 1,000 msg/s")


def test_consumers_no_faster_than_producers_cannot_catch_up():
    figures = backlog_figures(PLAN, part(2, 2), consumers=1, warmup_ns=0)
    assert not figures.drained and figures.drained_at_s is None
    assert figures.left_messages == 1000
    assert figures.verdict == ("not drained within 1 s: consumers at 2,000 msg/s cannot catch "
                               "up with 2,000 msg/s (1,000 messages still queued)")


def test_consumers_faster_but_not_enough_are_told_how_much_longer():
    figures = backlog_figures(PLAN, part(1, 2, built_per_ms=3), consumers=1, warmup_ns=0)
    assert not figures.drained and figures.left_messages == 2000
    assert figures.verdict == ("not drained within 1 s: consumers at 2,000 msg/s gain only "
                               "1,000 msg/s on 1,000 msg/s (2,000 messages still queued, "
                               "about 2 s more)")


def test_every_consumer_must_drain_its_copy():
    """Two consumers, each receiving every message: their receipts count once each."""
    figures = backlog_figures(PLAN, part(1, 22), consumers=2, warmup_ns=0)
    assert figures.drained and figures.drain_rate == pytest.approx(11_000)


@pytest.mark.parametrize(("release_ns", "within_ns"), [
    (1_000_000_000, 1_000_000_000), (3_600_000_000_000, 7 * 86_400_000_000_000),
    (1 << 62, 1 << 62)])
def test_the_counts_stay_bounded_however_long_the_plan(release_ns, within_ns):
    """A ms while that fits MAX_TICKS; a long bound (or a manifest's hostile one) counts in
    wider ticks, never more than MAX_TICKS of them."""
    plan = BacklogPlan(build="1 messages", release_ns=release_ns, drain_within_ns=within_ns)
    tick = tick_ns(plan)
    assert -(-(release_ns + within_ns) // tick) <= MAX_TICKS
    assert tick == MS or -(-(release_ns + within_ns) // (tick // 2)) > MAX_TICKS


def test_a_drain_counted_in_wider_ticks_is_found_in_them():
    """A 20-minute bound is counted in 2 ms ticks: the drain's end falls on one."""
    plan = BacklogPlan(build="1000 messages", release_ns=1_000_000_000,
                       drain_within_ns=1_200_000_000_000)
    tick = tick_ns(plan)
    assert tick == 2 * MS
    length = -(-(plan.release_ns + plan.drain_within_ns) // tick)
    first = plan.release_ns // tick
    sent = np.zeros(length, np.int64)
    sent[:first] = 2  # 1000 before the release, none after
    received = np.zeros(length, np.int64)
    received[first:first + 100] = 10  # all of it in the 100 ticks after the release
    figures = backlog_figures(plan, BacklogPart(sent, received, 1000, 64_000, None,
                                                [None] * LIVE_WINDOWS),
                              consumers=1, warmup_ns=0)
    assert figures.drained and figures.drained_in_s == pytest.approx(0.198)
