"""What an agent reports for the live view's disk outlook (agents.disk), from a real
recorder writing real chunks."""

from __future__ import annotations

import numpy as np

from sixnines.agents.disk import DiskGauge
from sixnines.agents.recording import ReceiptPool, Recorder
from sixnines.formats.chunks import read_index
from sixnines.formats.layout import CHUNK_INDEX, HLOG_FILE


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
