"""What a per-agent ordered pass would cost: a design measurement, not the product's path.

The analysis today is Spark SQL over every row: matching, reorder counting and the series
each shuffle or sort all rows, and the analysis-scale run goes at ~0.11M rows/s/core
(docs/performance.md). But an agent's record files already hold its streams whole and in
receive order, so the heavy per-row work could run as one ordered task per agent, in
numpy, leaving Spark to schedule the tasks and merge their small results. This script
times that task's core on one core, over a run `sixnines` left (or the analysis-scale
benchmark's run), against the baseline of only reading the same columns:

- senders: the send-lag HDR counts and each producer's seq extent (what matching needs
  of them when its seqs are contiguous);
- receivers: latency and service-time HDR counts, and per (connection, producer) stream
  in receive order the reordered receipts (seq below the running maximum) and the
  distinct messages (for duplicates and unique deliveries).

    .venv/bin/python benchmarks/bench_agent_pass.py RUN_DIR
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sixnines.formats import hdr
from sixnines.formats.chunks import message_files
from sixnines.formats.integrity import read_manifest
from sixnines.formats.vocabulary import Role

SENDER_COLUMNS = ["producer_id", "seq", "intended_ns", "sent_ns"]
RECEIVER_COLUMNS = [*SENDER_COLUMNS, "recv_ns", "consumer_id"]
STREAM_BITS = 40  # seq and stream rank packed in one int64 key


def _counts(values: np.ndarray) -> np.ndarray:
    return np.bincount(hdr.bucket_indices(np.clip(values, hdr.LOWEST, hdr.HIGHEST)),
                       minlength=hdr.COUNTS_LEN)


def sender_pass(table: pa.Table) -> int:
    """Send-lag counts and each producer's seq extent; returns the producers seen."""
    pid, seq = table["producer_id"].to_numpy(), table["seq"].to_numpy()
    _counts(table["sent_ns"].to_numpy() - table["intended_ns"].to_numpy())
    producers = np.unique(pid)
    for producer in producers:
        mine = seq[pid == producer]
        _ = mine.min(), mine.max(), len(mine)
    return len(producers)


def receiver_pass(table: pa.Table) -> tuple[int, int]:
    """Latency and service-time counts, then reordered and distinct receipts per stream
    in receive order (the files' order); returns (reordered, distinct)."""
    recv = table["recv_ns"].to_numpy()
    _counts(recv - table["intended_ns"].to_numpy())
    _counts(recv - table["sent_ns"].to_numpy())
    stream = (table["consumer_id"].to_numpy().astype(np.int64) << 32) \
        | table["producer_id"].to_numpy().astype(np.int64)
    order = np.argsort(stream, kind="stable")  # stable: receive order within a stream
    streams = stream[order]
    rank = np.cumsum(np.r_[0, np.diff(streams) != 0])
    keyed = (rank << STREAM_BITS) + table["seq"].to_numpy()[order]
    reordered = np.count_nonzero(keyed[1:] < np.maximum.accumulate(keyed)[:-1])
    distinct = 1 + np.count_nonzero(np.diff(np.sort(keyed))) if len(keyed) else 0
    return reordered, distinct


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    run_dir = parser.parse_args(argv).run_dir
    manifest = read_manifest(run_dir)
    agents = [(agent.role, message_files(run_dir / "agents" / agent.id))  # one-way runs
              for agent in manifest.agents if agent.role in (Role.PRODUCER, Role.CONSUMER)]
    read_s = pass_s = 0.0
    rows = 0
    for role, paths in agents:
        if not paths:
            continue
        columns = SENDER_COLUMNS if role == Role.PRODUCER else RECEIVER_COLUMNS
        began = time.perf_counter()
        table = pq.read_table(paths, columns=columns)
        read = time.perf_counter()
        if role == Role.CONSUMER:
            receiver_pass(table)
        else:
            sender_pass(table)
        pass_s += time.perf_counter() - read
        read_s += read - began
        rows += table.num_rows
    total = read_s + pass_s
    print(f"{len(agents)} agents, {rows:,} rows, one core: read {read_s:.1f} s (baseline), "
          f"read + pass {total:.1f} s ({total / read_s:.1f}× the read): "
          f"{rows / total / 1e6:.1f}M rows/s/core")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
