"""CPU per message end to end: real runs with the builtin tcp relay (started by sixnines,
so a monitor samples it), one against a relay sixnines did not start, and one whose
monitor is killed mid-run; then the Spark analysis of each."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from sixnines.formats.layout import CPU_FILE
from sixnines.orchestrator.run.runner import RunSettings
from tests.integration.support import RecordingView, execute, external_broker, points

pytestmark = pytest.mark.integration

SETTINGS = RunSettings("cpu", cpu_sample_ns=100_000_000)  # 2 s runs: sample every 100 ms
WORKLOAD = """
workload: {message_size: 64, rate: 2000, duration: 2s, warmup: 500ms, drain: 2s}
"""


def _point(broker: str):
    return points(f"name: cpu\nsystems: [{{name: tcp, driver: tcp, broker: {broker}}}]"
                  + WORKLOAD)[0]


def _analysed(spark, run_dir: Path) -> tuple[dict, dict]:
    from sixnines.spark_jobs.analyze import analyze_runs

    (summary,) = analyze_runs([run_dir])
    return summary, json.loads((run_dir / "report" / "series.json").read_text())


@pytest.fixture(scope="module")
def started(tmp_path_factory) -> tuple[Path, dict]:
    run_dir = tmp_path_factory.mktemp("cpu") / "run"
    return run_dir, execute(_point("builtin"), run_dir, settings=SETTINGS)


def test_every_process_leaves_checksummed_samples(started):
    run_dir, manifest = started
    assert manifest["status"] == "ok", manifest["problems"]
    monitor = manifest["monitor"]
    assert monitor["status"] == "ok" and monitor["notes"] == []
    assert monitor["host"] == "local" and monitor["clock"]["offset_ns"] == 0
    for entry in [*manifest["agents"], monitor]:
        assert entry["artifacts"][CPU_FILE]["verified"], entry["id"]
        table = pq.read_table(run_dir / "agents" / entry["id"] / CPU_FILE).to_pydict()
        # from before t0 to the schedule's last send (2.5 s less one interval) or later; a
        # sampler competing with a busy-waiting loop for the GIL on a loaded CPU may wake
        # late, which only makes longer intervals
        assert table["t_ns"][0] <= entry["t0_ns"] < entry["t0_ns"] + 2_499_000_000 <= \
            table["t_ns"][-1]
        assert len(table["t_ns"]) >= 3
        assert table["cpu_ns"] == sorted(table["cpu_ns"])
        if entry["id"] == "monitor":
            assert set(table["messages"]) == {None}
        else:
            assert table["messages"][-1] in (entry["sent"], entry["received"])


def test_summary_and_series_hold_cpu_per_message(spark, started):
    run_dir, _ = started
    summary, series = _analysed(spark, run_dir)
    usage = summary["cpu"]
    assert usage["interval_ms"] == 100.0
    sender, receiver, broker = usage["sender"], usage["receiver"], usage["broker"]
    # ~20 intervals, fewer when a loaded machine keeps the sampler thread waiting
    assert sender["us_per_message"]["count"] > 0
    # a busy-waiting sender spends up to a core on 2000 msg/s: ≤ ~500 µs a message
    assert 10 < sender["us_per_message"]["lower_median"] < 1000
    assert 0.05 < sender["cores"] <= 1.2
    assert receiver["us_per_message"]["count"] > 10
    assert broker is not None and broker["cores"] > 0
    assert broker["us_per_message"]["count"] > 10
    # a light broker's interval is often 0 or 1 clock tick (10 ms): its median may be 0,
    # its mean is what counts
    assert 0 < broker["us_per_message"]["mean"] < sender["us_per_message"]["max"]
    for side in ("sender", "receiver", "broker"):
        curve = series["cpu"][side]
        assert len(curve["t_s"]) == len(curve["us_per_message"]) > 0
        assert min(curve["t_s"]) >= 0.5  # after the warm-up


def test_no_broker_cpu_for_a_broker_sixnines_did_not_start(spark, tmp_path):
    with external_broker("tcp") as (_, address):
        run_dir = tmp_path / "run"
        manifest = execute(_point(f"{{external: '{address}'}}"), run_dir, settings=SETTINGS)
    assert manifest["status"] == "ok" and manifest["monitor"] is None
    summary, _ = _analysed(spark, run_dir)
    assert summary["cpu"]["broker"] is None
    assert summary["cpu"]["sender"]["us_per_message"]["count"] > 0
    assert any("external" in note for note in summary["cpu"]["notes"])


class KillMonitor(RecordingView):
    """Kills the monitor as the agents start: the controller's only `-m sixnines.agents`
    child by then (it is started and ready before them)."""

    def begin_run(self, point, plans) -> None:
        super().begin_run(point, plans)
        for pid in filter(str.isdigit, os.listdir("/proc")):
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            if parent == os.getpid() and b"sixnines.agents" in cmdline:
                os.kill(int(pid), signal.SIGKILL)


def test_a_dead_monitor_is_a_note_not_a_failure(spark, tmp_path):
    run_dir = tmp_path / "run"
    manifest = execute(_point("builtin"), run_dir, KillMonitor(), SETTINGS)
    assert manifest["status"] == "ok", manifest["problems"]
    assert manifest["monitor"]["status"] == "failed"
    summary, _ = _analysed(spark, run_dir)
    assert summary["cpu"]["broker"] is None
    assert any("monitor" in note and "exited" in note for note in summary["cpu"]["notes"])
    assert summary["cpu"]["sender"]["us_per_message"]["count"] > 0
