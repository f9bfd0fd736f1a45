"""The live view's disk outlook (orchestrator.run.progress) and what agents report for it
(agents.disk), the latter from a real recorder writing real chunks."""

from __future__ import annotations

import io
import time
from types import SimpleNamespace

import numpy as np

from sixnines.agents.disk import DiskGauge
from sixnines.agents.recording import ReceiptPool, Recorder
from sixnines.formats.chunks import read_index
from sixnines.formats.layout import CHUNK_INDEX, HLOG_FILE
from sixnines.orchestrator.plan.agents import AgentPlan
from sixnines.orchestrator.run.progress import ProgressView, seconds_until_full

MB = 1_000_000


def test_a_host_is_expected_full_only_before_the_run_ends():
    assert seconds_until_full(10 * MB, 20 * MB, 10.0, 60.0) == 20.0  # 1 MB/s, 50 s to go
    assert seconds_until_full(10 * MB, 60 * MB, 10.0, 60.0) is None  # fills after the end
    assert seconds_until_full(10 * MB, -1, 10.0, 60.0) is None  # free space unknown
    assert seconds_until_full(10 * MB, 1, 0.5, 60.0) is None  # no rate before a second


def test_the_view_warns_once_per_host_that_will_fill_up():
    out = io.StringIO()
    view = ProgressView(1, out)
    plans = [AgentPlan("producer-0", "producer", 1000, 0, 0, 1000, 0, host="small"),
             AgentPlan("consumer-0", "consumer", 0, 0, 0, 0, 1000, host="small"),
             AgentPlan("consumer-1", "consumer", 0, 0, 1, 0, 1000, host="big")]
    view.begin_run(SimpleNamespace(index=1, run_id="r"), plans)
    view.started(0, 60 * 10**9)
    view.started_mono = time.monotonic() - 10  # ten seconds into a minute-long run
    view.progress("producer-0", 0, 0, 4 * MB, 25 * MB)
    view.progress("consumer-0", 0, 0, 6 * MB, 20 * MB)  # together 1 MB/s, 20 MB left
    view.progress("consumer-1", 0, 0, 6 * MB, 900 * MB)
    view.progress("consumer-0", 0, 0, 6 * MB, 20 * MB)
    assert view.disks() == {"small": (10 * MB, 20 * MB), "big": (6 * MB, 900 * MB)}
    warnings = [line for line in out.getvalue().splitlines() if "warning" in line]
    assert len(warnings) == 1 and "small will run out of disk in about 20 s" in warnings[0]


def test_the_gauge_counts_closed_chunks_and_the_interval_log(tmp_path, streaming):
    def describe(chunk):
        n = chunk.rows
        return {"producer_id": chunk.producer_id[:n], "seq": chunk.seq[:n],
                "size": np.full(n, 64, np.int32), "intended_ns": chunk.intended[:n],
                "sent_ns": chunk.sent[:n], "recv_ns": chunk.recv[:n],
                "consumer_id": chunk.consumer_id[:n],
                "rx_index": np.arange(chunk.start, chunk.start + n),
                "warmup": np.zeros(n, bool)}, {"latency": (chunk.intended[:n], chunk.seq[:n] + 1)}

    recorder = Recorder(tmp_path, describe, 0, "gauge", lambda: 0)
    pool = ReceiptPool(100, recorder)
    recorder.start(0)
    gauge = DiskGauge(tmp_path)
    box = pool.first()
    for _ in range(5):
        box.seq[:100] = np.arange(100)
        box.intended[:100] = np.arange(100) * 10**7
        box = pool.turn(box, 100)
    recorder.finish()
    chunks = read_index(tmp_path)
    assert len(chunks) == 5
    expected = sum(c["bytes"] for c in chunks) + (tmp_path / HLOG_FILE).stat().st_size
    with open(tmp_path / CHUNK_INDEX, "a") as index:
        index.write('{"file": "messages-000006.parquet", "rows"')  # being appended
    assert gauge.written() == expected
    assert gauge.written() == expected  # counted once
    assert gauge.free() > 0
