"""Driver-side rules of spark_jobs/summarize.py (time behind the schedule, clock pairs,
hlog check): pure Python on small tables and files, no Spark session needed."""

from __future__ import annotations

import numpy as np

from sixnines.formats import hdr
from sixnines.formats.hlog import write_hlog
from sixnines.spark_jobs.summarize import (
    ClockPairs,
    MetricCounts,
    behind_s,
    clock_pairs,
    clock_warnings,
    hlog_agreement,
    read_log,
    write_hgrm,
)

# --- clocks (docs/design.md rule 3) -------------------------------------------------------------

PAIR_FIELDS = ("agent_id", "same_clock", "cross_clock", "excluded", "clock_bound_ns")


def pairs_of(*rows: tuple) -> ClockPairs:
    """What clock_pairs merges: one agent_pass.clock_pairs row per receiving agent."""
    return clock_pairs([dict(zip(PAIR_FIELDS, row, strict=True)) for row in rows])


def test_clock_pairs_add_up_and_keep_the_widest_bound():
    pairs = pairs_of(("c0", 10, 5, 0, 5000), ("c1", 7, 3, 1, 1500), ("r", 4, 0, 0, None))
    assert pairs.totals == {"same_clock": 21, "cross_clock": 8, "excluded": 1}
    assert pairs.bound_ns == 5000
    assert pairs.off_clock == {"c0": 5, "c1": 4}


def test_no_cross_clock_delivery_no_bound():
    assert pairs_of() == ClockPairs({"same_clock": 0, "cross_clock": 0, "excluded": 0}, None, {})
    assert pairs_of(("c0", 3, 0, 2, None)).bound_ns is None


def test_left_out_deliveries_are_counted_with_the_way_in():
    [warning] = clock_warnings(pairs_of(("c0", 3, 0, 1200, None)), cross_host=False)
    assert warning.startswith("1,200 deliveries left out of latency and service time")
    assert "still counted as delivered" in warning
    assert "`cross_host_latency: true` in the scenario's placement" in warning


def test_after_opting_in_only_unrelated_clocks_are_left_out():
    [warning] = clock_warnings(pairs_of(("c0", 3, 5, 2, 900)), cross_host=True)
    assert warning.startswith("2 deliveries") and "no measured clock offset" in warning
    assert clock_warnings(pairs_of(("c0", 3, 5, 0, 900)), cross_host=True) == []
    assert clock_warnings(pairs_of(("c0", 3, 0, 0, None)), cross_host=False) == []


def test_hlog_check_leaves_out_receivers_timed_across_clocks(tmp_path):
    """A receiver's hlog holds its raw values; once Spark left some out it cannot agree."""
    offsets = np.arange(10, dtype=np.int64) * 1000
    raw = {"latency": np.full(10, 5000), "service_time": np.full(10, 4000)}
    write_hlog(tmp_path / "c.hlog", start_epoch_s=1.7e9, warmup_ns=0,
               series={tag: (offsets, values) for tag, values in raw.items()})
    write_hlog(tmp_path / "p.hlog", start_epoch_s=1.7e9, warmup_ns=0,
               series={"send_lag": (offsets, np.full(10, 30))})
    read = {agent: read_log(tmp_path / f"{agent}.hlog", 0.0) for agent in "cp"}
    assert [log.problem for log in read.values()] == [None, None]
    hlogs = {"c": ("consumer", read["c"].counts()), "p": ("producer", read["p"].counts())}
    spark_counts = {"c": {tag: hdr.counts_of(values[:7]) for tag, values in raw.items()},
                    "p": {"send_lag": hdr.counts_of(np.full(10, 30))}}
    agrees, skipped, differing = hlog_agreement(hlogs, spark_counts, {})
    assert agrees is False and len(differing) == 2 and not skipped  # latency, service_time
    agrees, skipped, differing = hlog_agreement(hlogs, spark_counts, {"c": 3})
    assert agrees is True and differing == []
    assert skipped == ["agent c: hlog latency and service_time check not applicable: 3 of "
                       "its deliveries came from a producer on another clock (raw in its "
                       "hlog, left out or offset-corrected here)"]
    agrees, skipped, differing = hlog_agreement({"c": hlogs["c"]}, spark_counts, {"c": 3})
    assert agrees is None and len(skipped) == 1 and differing == []


def test_hgrm_footer_is_in_microseconds_like_its_values(tmp_path):
    """hdrhistogram leaves the standard deviation of this output in ns; ours is in µs."""
    values = np.array([1_000_000, 3_000_000], dtype=np.int64)  # 1 ms and 3 ms
    metric = MetricCounts(counts=hdr.counts_of(values), total=4e6, max=3_000_000)
    path = tmp_path / "latency.hgrm"
    write_hgrm(path, metric)
    footer = next(line for line in path.read_text().splitlines() if line.startswith("#[Mean"))
    mean, stddev = (float(part.split("=")[1].strip(" ]")) for part in footer.split(","))
    assert abs(mean - 2000) < 2 and abs(stddev - 1000) < 2


def test_time_behind_is_the_late_sends_at_each_sender_s_rate():
    """A loop stalled 0.5 s at 1,000 msg/s leaves 499 sends over 1 ms late: 0.499 s behind;
    two senders sharing 2,000 msg/s, each stalled so, were behind 0.499 s each."""
    lags_ns = np.concatenate([np.full(9_000, 20_000), 1_000_000 + np.arange(1, 500) * 1_000_000,
                              np.full(501, 900_000)])
    late = MetricCounts(counts=hdr.counts_of(lags_ns), total=0.0, max=int(lags_ns.max()))
    assert behind_s(late, 1000.0, 1) == 0.499
    assert behind_s(late, 2000.0, 2) == 0.499
    assert behind_s(MetricCounts(), 1000.0, 1) is None
    assert behind_s(late, None, 1) is None
