"""Driver-side rules of spark_jobs/summarize.py (saturation, clock pairs, hlog check): pure
Python on small tables and files, no Spark session needed."""

from __future__ import annotations

import numpy as np

from sixnines.formats import hdr
from sixnines.formats.hlog import write_hlog
from sixnines.formats.summary import Cpu, CpuSide, Figures
from sixnines.spark_jobs.summarize import (
    ClockPairs,
    MetricCounts,
    clock_pairs,
    clock_warnings,
    hlog_agreement,
    read_log,
    saturation_warnings,
    write_hgrm,
)


def figures(lag_p99_us: float) -> Figures:
    return Figures(p99=lag_p99_us)


def test_a_large_send_lag_is_flagged():
    warnings = saturation_warnings(figures(5_000), 1000.0, {"rate": 1000, "schedule": "fixed"})
    assert len(warnings) == 1 and "send lag p99 is 5,000 µs" in warnings[0]


def test_a_shortfall_in_rate_is_flagged():
    warnings = saturation_warnings(figures(10), 800.0, {"rate": 1000, "schedule": "fixed"})
    assert len(warnings) == 1 and "sent 800 msg/s of the 1,000" in warnings[0]


def test_on_schedule_is_quiet():
    assert saturation_warnings(figures(10), 999.0, {"rate": 1000, "schedule": "poisson"}) == []


def test_a_closed_loop_waits_on_purpose():
    assert saturation_warnings(figures(50_000), 10.0, {"rate": 1000, "schedule": "closed"}) == []


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
    agrees, notes = hlog_agreement(hlogs, spark_counts, {})
    assert agrees is False and len(notes) == 2  # latency and service_time differ
    agrees, notes = hlog_agreement(hlogs, spark_counts, {"c": 3})
    assert agrees is True
    assert notes == ["agent c: hlog latency and service_time check not applicable: 3 of its "
                     "deliveries came from a producer on another clock (raw in its hlog, left "
                     "out or offset-corrected here)"]
    agrees, notes = hlog_agreement({"c": hlogs["c"]}, spark_counts, {"c": 3})
    assert agrees is None and len(notes) == 1


def test_hgrm_footer_is_in_microseconds_like_its_values(tmp_path):
    """hdrhistogram leaves the standard deviation of this output in ns; ours is in µs."""
    values = np.array([1_000_000, 3_000_000], dtype=np.int64)  # 1 ms and 3 ms
    metric = MetricCounts(counts=hdr.counts_of(values), total=4e6, max=3_000_000)
    path = tmp_path / "latency.hgrm"
    write_hgrm(path, metric)
    footer = next(line for line in path.read_text().splitlines() if line.startswith("#[Mean"))
    mean, stddev = (float(part.split("=")[1].strip(" ]")) for part in footer.split(","))
    assert abs(mean - 2000) < 2 and abs(stddev - 1000) < 2


def test_senders_blocked_by_the_system_are_not_called_a_saturated_generator():
    """Lagging with the senders' loops mostly idle (blocked in send calls): the system
    pushed back; busy loops, or no CPU figures: the generator set the pace."""
    def cpu(cores: float) -> Cpu:
        return Cpu(sender=CpuSide(us_per_message=Figures(), cores=cores, empty_intervals=0),
                   receiver=None, broker=None, interval_ms=1000.0, notes=[])
    params = {"rate": 1000, "schedule": "fixed", "producers": 2}
    blocked = saturation_warnings(figures(5_000), 800.0, params, cpu(0.3))
    assert [w.split(":")[0] for w in blocked] == ["system pushed back"] * 2
    assert "the senders' loops used 0.30 core(s)" in blocked[0]
    for busy in (cpu(1.9), None):
        assert all(w.startswith("generator saturated: ")
                   for w in saturation_warnings(figures(5_000), 800.0, params, busy))
