"""spark_jobs.cpu: CPU per message attributed to sample intervals, on hand-made cpu.parquet
files (agents.cpu.write_cpu) and manifests."""

from __future__ import annotations

from pathlib import Path

import pytest

from sixnines.agents.cpu import write_cpu
from sixnines.formats.manifest import Manifest
from sixnines.spark_jobs import cpu

MS = 1_000_000
WARMUP = 1000 * MS


def _write(run_dir: Path, agent: str, t0_ns: int, rows: list[tuple]) -> None:
    """rows: (ms since t0, CPU ms, messages[, loop ms on a CPU, loop ms waiting for one]);
    written on a clock that reads t0_ns at t0."""
    (run_dir / "agents" / agent).mkdir(parents=True)
    write_cpu(run_dir / "agents" / agent / "cpu.parquet",
              [(t0_ns + t * MS, c * MS, m, *(None if v is None else v * MS
                                             for v in (*loop, None, None)[:2]))
               for t, c, m, *loop in rows])


def _manifest(broker: str = "builtin", monitor: dict | None = None) -> Manifest:
    return Manifest.model_validate({"workload": {"warmup_ns": WARMUP}, "cpu_sample_ns": 100 * MS,
            "broker": {"kind": broker}, "monitor": monitor,
            "agents": [{"id": "producer-0", "role": "producer", "t0_ns": 7_000 * MS},
                       {"id": "consumer-0", "role": "consumer", "t0_ns": 50_000 * MS}]})


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    # the warm-up interval (4 ms a message) must not count; then 1 ms and 3 ms a message,
    # then an interval without messages (left out, counted, its CPU still in `cores`)
    _write(tmp_path, "producer-0", 7_000 * MS,
           [(500, 0, 0), (1000, 400, 100), (1100, 410, 110), (1200, 440, 120), (1300, 445, 120)])
    # another clock (t0 50 s on it): 40 messages between 1.0 s and 1.2 s after t0
    _write(tmp_path, "consumer-0", 50_000 * MS,
           [(900, 0, 0), (1000, 5, 0), (1100, 10, 20), (1200, 15, 40)])
    return tmp_path


def test_agents_cpu_per_message_over_measured_intervals(run_dir: Path) -> None:
    result = cpu.analyse(run_dir, _manifest(broker="external"))
    sender = result.summary().as_json()["sender"]
    figures = sender["us_per_message"]
    assert figures["count"] == 2
    assert figures["lower_median"] == 1000.0 and figures["max"] == 3000.0
    assert figures["mean"] == 2000.0
    assert sender["empty_intervals"] == 1
    assert sender["cores"] == pytest.approx(45 / 300)
    receiver = result.summary().as_json()["receiver"]
    assert receiver["us_per_message"]["count"] == 2  # [1.0, 1.1] and [1.1, 1.2]
    assert receiver["us_per_message"]["mean"] == 250.0  # 5 ms / 20 messages
    assert receiver["empty_intervals"] == 0  # [0.9, 1.0] is warm-up


def test_external_broker_has_no_cpu_and_says_so(run_dir: Path) -> None:
    summary = cpu.analyse(run_dir, _manifest(broker="external")).summary().as_json()
    assert summary["broker"] is None
    assert any("external" in note for note in summary["notes"])


def test_broker_cpu_over_the_consumers_messages(run_dir: Path) -> None:
    """The monitor's clock is a third one; every process lines up on its own t0."""
    _write(run_dir, "monitor", 90_000 * MS, [(950, 0, None), (1050, 10, None), (1150, 30, None)])
    monitor = {"id": "monitor", "role": "monitor", "t0_ns": 90_000 * MS, "notes": ["slow"]}
    result = cpu.analyse(run_dir, _manifest(monitor=monitor))
    broker = result.summary().as_json()["broker"]
    # [0.95, 1.05] is warm-up; [1.05, 1.15]: 20 ms over the consumer's 10 → 30 messages
    assert broker["us_per_message"]["count"] == 1
    assert broker["us_per_message"]["mean"] == pytest.approx(20 * 1000 / 20)
    assert broker["cores"] == pytest.approx(0.2)
    assert result.summary().as_json()["notes"] == ["slow"]
    series = result.series()
    assert series["broker"]["t_s"] == [pytest.approx(1.1)]
    assert series["sender"]["us_per_message"] == [pytest.approx(1000), pytest.approx(3000)]


def test_a_monitor_that_never_started_leaves_its_note(run_dir: Path) -> None:
    monitor = {"status": "failed", "notes": ["broker CPU monitor: not ready"]}
    summary = cpu.analyse(run_dir, _manifest(monitor=monitor)).summary().as_json()
    assert summary["broker"] is None and summary["notes"] == ["broker CPU monitor: not ready"]


def test_the_loops_account_covers_the_measured_time_whole(tmp_path: Path) -> None:
    """The interval the warm-up ends in counts for its measured half; what the loop was
    neither on a CPU nor waiting for one, it was blocked. An agent without the account
    (a file from before it, or the monitor) leaves its side without one."""
    _write(tmp_path, "producer-0", 7_000 * MS,
           [(500, 0, 0, 0, 0), (1500, 400, 100, 400, 100), (2500, 1300, 200, 1300, 100)])
    _write(tmp_path, "consumer-0", 50_000 * MS, [(900, 0, 0), (1900, 5, 20)])
    summary = cpu.analyse(tmp_path, _manifest(broker="external")).summary()
    assert summary.sender.loop.model_dump() == pytest.approx(
        {"running_s": 0.2 + 0.9, "waiting_s": 0.05, "blocked_s": 0.25 + 0.1})
    assert summary.sender.cores == pytest.approx(0.9)  # measured intervals alone, as before
    assert summary.receiver.loop is None
