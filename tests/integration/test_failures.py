"""When things go wrong: nothing is lost, nothing is left running, the user is told what.

Bad scenarios exit 2 with every problem and its line; an unreachable broker fails the run
with its name and address; a broker dying mid-run leaves partial data with the loss
counted; Ctrl-C tears everything down and keeps what was recorded.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from sixnines.formats.lag import LagCause
from sixnines.formats.summary import SATURATED_LAG_P99_US, SATURATED_RATE_SHARE
from sixnines.spark_jobs.analyze import analyze_run
from tests.faults.test_interrupts import recording
from tests.integration.support import RecordingView, execute, external_broker, points

pytestmark = pytest.mark.integration


def sixnines(*args: str, cwd: Path, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "sixnines", *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            **kwargs)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone for our purposes
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(")")[-1].split()[0] != "Z"


def test_a_malformed_scenario_is_refused_with_lines_and_no_traceback(tmp_path):
    (tmp_path / "bad.yaml").write_text(
        "name: bad\n"
        "systems:\n"
        "  - {name: tcp, driver: tcp, options: {nagle: true}}\n"
        "workload:\n"
        "  message_size: 10\n"
        "  rate: -5\n"
        "  duration: 10 parsecs\n")
    for command in ("validate", "run"):
        process = sixnines(command, "bad.yaml", cwd=tmp_path)
        _, err = process.communicate(timeout=60)
        assert process.returncode == 2, err
        assert "Traceback" not in err
        assert "bad.yaml:3: systems[0].options.nagle" in err
        assert "bad.yaml:5: workload.message_size" in err
        assert "bad.yaml:6: workload.rate" in err
        assert "bad.yaml:7: workload.duration" in err
        assert not (tmp_path / "runs").exists()  # nothing started


def test_an_unreachable_broker_fails_the_run_naming_it(tmp_path):
    import socket

    with socket.socket() as placeholder:  # a port nobody listens on
        placeholder.bind(("127.0.0.1", 0))
        port = placeholder.getsockname()[1]
    (tmp_path / "s.yaml").write_text(f"""
name: unreachable
systems: [{{name: my-relay, driver: tcp, broker: {{external: "127.0.0.1:{port}"}}}}]
workload: {{message_size: 64, rate: 100, duration: 1s, warmup: 0s}}
""")
    process = sixnines("run", "s.yaml", "--output", "out", cwd=tmp_path)
    _, err = process.communicate(timeout=300)
    assert process.returncode == 1
    assert f"127.0.0.1:{port}" in err and "cannot connect" in err
    assert "Traceback" not in err
    manifest_path = next((tmp_path / "out").glob("unreachable/*/01-my-relay/manifest.json"))
    manifest = json.loads(manifest_path.read_text())
    assert manifest["status"] == "failed"
    assert any(f"127.0.0.1:{port}" in problem for problem in manifest["problems"])


def test_a_broker_dying_mid_run_leaves_partial_data_with_the_loss_counted(tmp_path, spark):
    with external_broker("tcp") as (relay, address):
        point = points(f"""
name: dies
systems: [{{name: relay, driver: tcp, broker: {{external: "{address}"}}}}]
workload: {{message_size: 64, rate: 1000, duration: 4s, warmup: 0s, drain: 1s}}
""")[0]
        view = RecordingView()

        def kill_relay() -> None:
            while view.at_ns is None:
                time.sleep(0.001)
            time.sleep(2.0)
            relay.kill()

        threading.Thread(target=kill_relay, daemon=True).start()
        manifest = execute(point, tmp_path / "run", view)
    assert manifest["status"] == "partial"
    assert any("connection" in problem for problem in manifest["problems"])
    for agent in manifest["agents"]:
        assert all(file["verified"] for file in agent["artifacts"].values())
    summary = analyze_run(spark, tmp_path / "run")
    assert summary["status"] == "partial"
    assert 0 < summary["received"] < 4000
    assert summary["sent"] == summary["received"] + summary["lost"]


def test_ctrl_c_stops_everything_and_keeps_the_data(tmp_path):
    (tmp_path / "long.yaml").write_text("""
name: long
systems: [{name: tcp, driver: tcp}]
workload: {message_size: 64, rate: 1000, duration: 60s, warmup: 0s}
""")
    process = sixnines("run", "long.yaml", "--output", "out", cwd=tmp_path)
    deadline = time.monotonic() + 60
    while not (found := list((tmp_path / "out").glob("long/*/01-tcp"))):
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.1)
    run_dir = found[0]
    recording(run_dir, ("producer-0",))  # ready and sending
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "interrupted" in err and "sixnines report" in err
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "partial"
    assert any("Ctrl-C" in problem for problem in manifest["problems"])
    producer = next(a for a in manifest["agents"] if a["role"] == "producer")
    assert 0 < producer["sent"] < 60_000
    for agent in manifest["agents"]:
        assert all(file["verified"] for file in agent["artifacts"].values())
        assert not alive(agent["pid"]), agent["id"]
    assert not alive(manifest["broker"]["pid"])


def test_a_saturated_generator_is_flagged(tmp_path, spark):
    """Asked for far more than one process can send (it manages ~2.5M msg/s of 64 B at
    best here), the report says the generator (not the system) set the pace, instead of
    presenting its latency as the system's."""
    point = points("""
name: flood
systems: [{name: tcp, driver: tcp}]
workload: {message_size: 64, rate: 20M, duration: 50ms, warmup: 0s}
""")[0]
    execute(point, tmp_path / "run")
    summary = analyze_run(spark, tmp_path / "run")
    assert any("generator saturated" in warning for warning in summary["warnings"])


def kept_its_schedule(summary: dict) -> bool:
    """What the senders' own figures say: send-lag p99 within SATURATED_LAG_P99_US and at
    least SATURATED_RATE_SHARE of the rate sent."""
    return summary["send_lag_us"]["p99"] <= SATURATED_LAG_P99_US and \
        summary["send_rate"] >= SATURATED_RATE_SHARE * summary["params"]["rate"]


def test_a_run_that_kept_its_schedule_has_no_lag_warning(tmp_path, spark):
    """500 msg/s is nothing for one process, and a run whose senders kept their schedule
    is warned about no lag. A shared machine can hold a sender back for milliseconds
    (another job, the VM stalled): that run fell behind, and its warning must name what
    was measured. So runs until one kept its schedule (at most five); each is checked
    either way."""
    point = points("""
name: calm
systems: [{name: tcp, driver: tcp}]
workload: {message_size: 64, rate: 500, duration: 1s, warmup: 0s}
""")[0]
    for attempt in range(5):
        run_dir = tmp_path / f"run-{attempt}"
        execute(point, run_dir)
        summary = analyze_run(spark, run_dir)
        warned = [w for w in summary["warnings"] if w.startswith(tuple(LagCause))]
        if kept_its_schedule(summary):  # a crowded placement's note may stay: no lag
            assert all("(expect send-lag tails" in w for w in warned), summary["send_lag_us"]
            return
        assert any("send lag p99 is" in w or "msg/s scheduled" in w for w in warned), \
            (summary["send_lag_us"], summary["send_rate"], summary["warnings"])
    pytest.skip("no run of five kept a 500 msg/s schedule on this machine (too busy to "
                "judge a healthy run); each was warned of its lag")
