"""A receiver SIGKILLed mid-run leaves no messages.parquet: what it got is not known.

Its expected deliveries are `unknown`, never lost (nor "lost 0"), and named in a problem
line; `lost` counts only the receivers that left data; the run is partial. One-way: every
connection of a consumer expects every message (fan-out). Round trip: a requester is its
own receiver, so one that dies takes its requests with it.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from sixnines.spark_jobs.analyze import analyze_run
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
    """The process whose stderr is `log` (each agent's goes to its agent.log)."""
    for stderr in Path("/proc").glob("[0-9]*/fd/2"):
        try:
            if os.readlink(stderr) == str(log):
                return int(stderr.parent.parent.name)
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return None


def run_killing(scenario: str, agent: str, run_dir: Path) -> tuple[dict, int]:
    """A real run whose `agent` is SIGKILLed KILL_AFTER_S into sending; (manifest, pid)."""
    view, killed = RecordingView(), []

    def kill() -> None:
        while view.at_ns is None:
            time.sleep(0.01)
        time.sleep(KILL_AFTER_S)
        pid = pid_logging_to(run_dir / "agents" / agent / "agent.log")
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)

    killer = threading.Thread(target=kill, daemon=True)
    killer.start()
    manifest = execute(points(scenario)[0], run_dir, view)
    killer.join(5)
    assert killed, f"{agent} was not found to kill"
    return manifest, killed[0]


def entry(manifest: dict, agent: str) -> dict:
    return next(a for a in manifest["agents"] if a["id"] == agent)


def test_a_dead_consumer_s_deliveries_are_unknown_not_lost(tmp_path, spark):
    manifest, pid = run_killing(ONE_WAY, "consumer-1", tmp_path / "run")
    dead = entry(manifest, "consumer-1")
    assert (dead["pid"], dead["status"]) == (pid, "failed")
    assert not (tmp_path / "run" / "agents" / "consumer-1" / "messages.parquet").exists()
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
    manifest, _ = run_killing(ROUND_TRIP, "requester-1", tmp_path / "run")
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
