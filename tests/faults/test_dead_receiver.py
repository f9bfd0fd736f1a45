"""A receiver SIGKILLed mid-run reports nothing: what it got is not known.

Its expected deliveries are `unknown`, never lost (nor "lost 0"), and named in a problem
line; `lost` counts only the receivers that left data; the run is partial. The chunks a
consumer closed before the kill stay on disk, each listed in its index with a checksum
that matches (analysing them is the next step: the analysis leaves them out for now). One-way: every
connection of a consumer expects every message (fan-out). Round trip: a requester is its
own receiver, so one that dies takes its requests with it.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from sixnines.formats.chunks import read_index
from sixnines.formats.integrity import sha256_of
from sixnines.spark_jobs.analyze import analyze_run
from tests.faults.processes import parents
from tests.integration.support import RecordingView, execute, points

pytestmark = pytest.mark.integration

KILL_AFTER_S = 1.0
ONE_WAY = """
name: dies
systems: [{name: tcp, driver: tcp}]
workload: {message_size: 64, rate: 1000, duration: 3s, warmup: 0s, consumers: 2,
           connections: 2}
"""
ROUND_TRIP = """
name: dies
systems: [{name: tcp, driver: tcp}]
workload: {mode: round-trip, message_size: 64, rate: 1000, duration: 3s, warmup: 0s,
           producers: 2}
"""


def pid_logging_to(log: Path) -> int | None:
    """The agent whose stderr is `log` (each agent's goes to its agent.log), not its
    recorder's writer process, which shares it: the one whose parent does not."""
    pids = set()
    for stderr in Path("/proc").glob("[0-9]*/fd/2"):
        try:
            if os.readlink(stderr) == str(log):
                pids.add(int(stderr.parent.parent.name))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    parent = parents()
    agents = [pid for pid in pids if parent.get(pid) not in pids]
    return agents[0] if agents else None


def run_killing(scenario: str, agent: str, run_dir: Path, after_s: float = KILL_AFTER_S
                ) -> tuple[dict, int, int]:
    """A real run whose `agent` is SIGKILLed `after_s` into sending; (manifest, pid, the
    instant of the kill on the agents' clock)."""
    view, killed = RecordingView(), []

    def kill() -> None:
        while view.at_ns is None:
            time.sleep(0.01)
        time.sleep(after_s)
        pid = pid_logging_to(run_dir / "agents" / agent / "agent.log")
        killed.append((pid, time.perf_counter_ns()))
        os.kill(pid, signal.SIGKILL)

    killer = threading.Thread(target=kill, daemon=True)
    killer.start()
    manifest = execute(points(scenario)[0], run_dir, view)
    killer.join(5)
    assert killed, f"{agent} was not found to kill"
    return manifest, *killed[0]


def entry(manifest: dict, agent: str) -> dict:
    return next(a for a in manifest["agents"] if a["id"] == agent)


def test_a_dead_consumer_s_deliveries_are_unknown_not_lost(tmp_path, spark, monkeypatch):
    monkeypatch.setenv("SIXNINES_CHUNK_ROWS", str(1 << 19))  # agents stream their chunks
    manifest, pid, killed_ns = run_killing(ONE_WAY, "consumer-1", tmp_path / "run", 2.5)
    dead = entry(manifest, "consumer-1")
    assert (dead["pid"], dead["status"]) == (pid, "failed")
    folder = tmp_path / "run" / "agents" / "consumer-1"
    chunks = read_index(folder)  # closed about a second apart
    assert chunks
    for chunk in chunks:
        assert (sha256_of(folder / chunk["file"]), (folder / chunk["file"]).stat().st_size) == (
            chunk["sha256"], chunk["bytes"])
        assert pq.read_metadata(folder / chunk["file"]).num_rows == chunk["rows"]
    kept = pq.read_table([folder / c["file"] for c in chunks]).to_pandas()
    gap_s = (killed_ns - kept.recv_ns.max()) / 1e9
    print(f"consumer SIGKILLed: {len(kept):,} receipts kept in {len(chunks)} chunks, the "
          f"last {gap_s:.3f} s before the kill")
    assert 0 < gap_s < 1.5  # at most about a second of records lost
    summary = analyze_run(spark, tmp_path / "run")
    sent = summary["sent"]
    assert sent == entry(manifest, "producer-0")["sent"] > 0
    assert summary["status"] == "partial"
    assert summary["unknown"] == 2 * sent  # both connections of consumer-1 expected all
    assert summary["received"] + summary["lost"] == 2 * sent  # consumer-0's connections
    assert summary["lost"] == 0
    assert (f"agent consumer-1 (consumer, status failed) left no per-message records it "
            f"reported: the "
            f"{2 * sent:,} deliveries expected there are unknown") in " ".join(
                summary["problems"])


def test_a_dead_requester_takes_its_requests_with_it(tmp_path, spark):
    manifest, _, _ = run_killing(ROUND_TRIP, "requester-1", tmp_path / "run")
    summary = analyze_run(spark, tmp_path / "run")
    survivor = entry(manifest, "requester-0")
    assert summary["status"] == "partial"
    assert summary["sent"] == survivor["sent"]  # the dead one's requests are in no count
    assert (summary["received"], summary["lost"], summary["unknown"]) == (
        survivor["received"], 0, 0)
    assert any(problem.startswith("agent requester-1 (requester, status failed) left no "
                                  "per-message records it reported: its requests and "
                                  "their replies are in no count")
               for problem in summary["problems"])
