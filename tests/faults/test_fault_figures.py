"""A fault's figures true by construction, with real processes: a real `sixnines run`
through the builtin relay at 1,000 msg/s, the relay paused (SIGSTOP) for 1 s in the
middle of the measured time by this test, which records the fault in the run's manifest
as the run's fault executor does (times on the controller's clock: this process's
perf_counter_ns is the same CLOCK_MONOTONIC), then `sixnines report` analyses it again
(on Spark).

The open-loop model: a message intended while the relay is paused waits for it to
continue, so the largest latency of the paused window is the pause itself (≈ 1 s); none
is lost; once the relay continues it clears its backlog in a few intervals."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from sixnines.formats.lag import LagCause
from sixnines.orchestrator.results.console_tables import FAULT_COLUMNS
from tests.faults.processes import Sixnines, still_alive_after
from tests.faults.support import edit_manifest, sixnines
from tests.faults.test_interrupts import manifest_of, started

pytestmark = pytest.mark.integration

PAUSE_AT_S = 1.5  # from the measured start
PAUSE_S = 1.0
RATE = 1000
SCENARIO = f"""
name: faults
systems: [{{name: sut, driver: tcp}}]
workload: {{message_size: 64, rate: {RATE}, duration: 4s, warmup: 500ms, drain: 2s}}
"""


def pause(relay: int, measured_start_ns: int) -> dict:
    """The relay paused PAUSE_S at PAUSE_AT_S of the measured time: the fault's record."""
    planned = int(PAUSE_AT_S * 1e9)
    time.sleep(max(0.0, (measured_start_ns + planned - time.perf_counter_ns()) / 1e9))
    issued = time.perf_counter_ns()
    os.kill(relay, signal.SIGSTOP)
    effective = time.perf_counter_ns()
    try:
        time.sleep(PAUSE_S)
    finally:
        os.kill(relay, signal.SIGCONT)
    undone = time.perf_counter_ns()
    return {"index": 0, "action": "pause", "target": "broker", "at_ns": planned,
            "for_ns": int(PAUSE_S * 1e9), "issued_ns": issued, "effective_ns": effective,
            "undone_ns": undone, "restarted_ns": None, "outcome": "done", "note": None}


@pytest.fixture(scope="module")
def paused_run(tmp_path_factory) -> tuple[Path, dict, str]:
    """A real run whose relay this test paused, analysed again with its fault recorded:
    (run dir, its summary, the report's console output)."""
    tmp_path = tmp_path_factory.mktemp("paused")
    (tmp_path / "s.yaml").write_text(SCENARIO)
    controller = Sixnines("run", "s.yaml", "--output", "out", cwd=tmp_path)
    run_dir = started(tmp_path, controller)
    relay = controller.wait_for_descendant("broker tcp", timeout_s=10)
    manifest = manifest_of(run_dir)
    record = pause(relay, manifest["started_at_ns"] + manifest["workload"]["warmup_ns"])
    tree = controller.snapshot()
    code, _, err = controller.finish()
    assert still_alive_after(tree, 5) == {}
    assert code == 0, err
    edit_manifest(run_dir, lambda manifest: manifest.update(faults=[record]))
    done = sixnines("report", run_dir.parent)  # the results: its page too
    assert done.returncode == 0, done.stderr
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    return run_dir, summary, done.stderr


def test_a_paused_relay_costs_its_pause_in_latency_and_nothing_lost(paused_run):
    _, summary, _ = paused_run
    (fault,) = summary["faults"]
    print(json.dumps(fault, indent=1))
    assert (fault["action"], fault["target"], fault["outcome"]) == ("pause", "broker", "done")
    assert fault["effective_s"] == pytest.approx(PAUSE_AT_S, abs=0.1)
    assert fault["end_s"] - fault["effective_s"] == pytest.approx(PAUSE_S, abs=0.1)
    assert 0.9e6 <= fault["max_in_window_us"] <= 1.3e6
    assert fault["during"]["max_us"] == fault["max_in_window_us"]
    delivery = fault["delivery"]
    assert delivery["sent"] == pytest.approx(RATE * PAUSE_S, rel=0.05)
    assert (delivery["lost"], delivery["unknown"]) == (0, 0)
    assert delivery["delivered"] == delivery["sent"]
    # the window's intervals hold it, and the accounting the interval in flight before it
    assert fault["during"]["count"] + fault["interval_ms"] * RATE / 1000 >= delivery["sent"]
    # the open-loop model: the window's latencies spread evenly from the pause down to 0
    assert fault["during"]["p50_us"] == pytest.approx(PAUSE_S * 1e6 / 2, rel=0.2)
    lagged = any(warning.startswith(tuple(LagCause)) for warning in summary["warnings"])
    for calm in ("before", "after"):
        assert fault[calm]["count"] > 500
        if not lagged:  # a sender behind its schedule: the machine's latency, not the relay's
            assert fault[calm]["p99_us"] < PAUSE_S * 1e6 / 10, calm
    assert fault["recovered"] is True
    assert fault["recovered_s"] <= 0.2  # a few 10 ms intervals
    assert fault["backlog"] == pytest.approx(RATE * PAUSE_S, rel=0.2)
    assert fault["drained_s"] <= 0.5
    assert fault["dip_msg_s"] == 0
    interval_s = fault["interval_ms"] / 1000  # the dip's interval may hold the start
    assert fault["effective_s"] - interval_s <= fault["dip_at_s"] <= fault["end_s"]
    assert fault["rate_before_msg_s"] == pytest.approx(RATE, rel=0.2)


def test_the_timeline_shows_the_pause(paused_run):
    run_dir, summary, _ = paused_run
    timeline = json.loads((run_dir / "report" / "series.json").read_text())["timeline"]
    (fault,) = summary["faults"]
    width_s = fault["interval_ms"] / 1000
    at = [i for i, t in enumerate(timeline["t_s"])
          if fault["effective_s"] <= t and t + width_s <= fault["end_s"]]
    assert len(at) >= 0.9 * PAUSE_S / width_s
    arrived = sum(timeline["received_msg_s"][i] * width_s for i in at)
    assert arrived <= 0.01 * RATE * PAUSE_S, arrived  # what was in flight when it stopped
    assert sum(timeline["received_msg_s"][i] == 0 for i in at) >= 0.9 * len(at)
    # the messages in flight when it hit, intended just before it, waited as long
    highest = max(v for v in timeline["max_us"] if v is not None)
    assert fault["max_in_window_us"] <= highest <= fault["max_in_window_us"] + 20_000


def test_the_console_and_the_report_page_show_the_fault(paused_run):
    run_dir, summary, console = paused_run
    (fault,) = summary["faults"]
    header = next(line for line in console.splitlines() if FAULT_COLUMNS[0] in line
                  and "recovered" in line)
    assert header
    row = next(line for line in console.splitlines() if " pause " in line)
    assert "broker" in row and f"{fault['at_s']:g}" in row
    report = run_dir.parent / "report"
    page = (report / "index.html").read_text()
    assert "fault 0: pause broker" in page  # the window's shade, labelled
    assert "0: recovered +" in page  # its recovery marked
    assert '<td class="label">pause</td>' in page  # the fault table
    scripts = sorted(path.name for path in report.glob("*-timeline*.gp"))
    assert scripts == ["run-01-sut-timeline.gp"]  # latency and receive rate on one plot
    script = (report / scripts[0]).read_text()
    assert " rect from " in script and "'fault 0: pause broker'" in script
    assert "'received msg/s'" in script and "'intended msg/s'" in script
    if shutil.which("gnuplot"):
        drawn = subprocess.run(["gnuplot", scripts[0]], cwd=report, capture_output=True,
                               text=True, timeout=60)
        assert drawn.returncode == 0 and not drawn.stderr, drawn.stderr
        assert (report / scripts[0].replace(".gp", ".png")).stat().st_size > 0
