"""Open-loop and saturation runs in the analysis (formats/load.py, spark_jobs/load.py,
summarize.py): which warnings apply and which interval-log tags are checked, without Spark."""

from __future__ import annotations

import numpy as np

from sixnines.formats import hdr
from sixnines.formats.hlog import write_hlog
from sixnines.formats.lag import lag_warnings
from sixnines.formats.load import load_of
from sixnines.formats.summary import Figures, RunSummary
from sixnines.formats.vocabulary import Load
from sixnines.spark_jobs.load import saturation_warnings
from sixnines.spark_jobs.summarize import hlog_agreement, read_log

FLOOD = {"rate": "max", "messages": 20_000, "duration_ns": 600 * 10**9, "schedule": "fixed"}
COUNTS = {"sent": 20_000, "warmup_sent": 0}


def test_the_load_of_a_run_is_told_by_its_rate():
    assert load_of(FLOOD) == Load.SATURATION
    assert load_of({"rate": 2000.0}) == load_of({}) == Load.OPEN_LOOP


def test_a_saturation_run_warns_about_the_cap_and_an_all_warm_up_run_only():
    assert saturation_warnings(COUNTS, FLOOD) == []
    (capped,) = saturation_warnings({"sent": 12_000, "warmup_sent": 500}, FLOOD)
    assert capped.startswith("time cap reached: 12,500 of the 20,000 messages sent")
    (warm,) = saturation_warnings({"sent": 0, "warmup_sent": 20_000}, FLOOD)
    assert warm.startswith("every message was sent within the warm-up")
    assert saturation_warnings({"sent": 5, "warmup_sent": 0}, {"rate": 2000.0}) == []


def test_no_generator_saturation_warning_without_a_schedule():
    lagging = Figures(p99=5000.0)
    flood = RunSummary(params=FLOOD, load=Load.SATURATION, send_lag_us=lagging, send_rate=10.0)
    assert lag_warnings(flood) == []
    scheduled = RunSummary(params={"rate": 2000.0}, load=Load.OPEN_LOOP, send_lag_us=lagging,
                           send_rate=10.0)
    (line,) = lag_warnings(scheduled)
    assert "send lag p99 is 5,000 µs" in line and "sent 10 msg/s of the 2,000" in line


def test_the_hlog_check_reads_the_saturation_tags_agents_write(tmp_path):
    values = np.array([900, 1_500, 80_000], np.int64)
    consumer, producer = tmp_path / "consumer.hlog", tmp_path / "producer.hlog"
    write_hlog(consumer, start_epoch_s=0.0, warmup_ns=0,
               series={"saturation_latency": (np.array([0, 5, 9]), values)})
    write_hlog(producer, start_epoch_s=0.0, warmup_ns=0, series={})  # no send lag
    hlogs = {"consumer-0": ("consumer", read_log(consumer, 0.0).counts()),
             "producer-0": ("producer", read_log(producer, 0.0).counts())}
    spark = {"consumer-0": {"saturation_latency": hdr.counts_of(values)}}
    assert hlog_agreement(hlogs, spark, {}, Load.SATURATION) == (True, [], [])
    spark["consumer-0"]["saturation_latency"] = hdr.counts_of(values[:2])
    agrees, _, notes = hlog_agreement(hlogs, spark, {}, Load.SATURATION)
    assert agrees is False and "hlog saturation_latency holds 3 values" in notes[0]
