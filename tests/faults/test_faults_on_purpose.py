"""Faults on purpose (the scenario's `faults:`), with real processes and answers known by
construction: the builtin relay paused 1 s delays messages by about 1 s and loses none
(its per-fault figures say so too); a Redis server killed and started again by its recipe
is reconnected to, the outage counted; a consumer killed leaves the run partial with its
data kept; a controller SIGKILLed while the broker is paused leaves nothing behind."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from tests.faults.processes import Sixnines, still_alive_after
from tests.faults.support import sixnines

pytestmark = pytest.mark.integration

BOUND_S = 8.0  # every process gone this long after the controller (the guard's grace: 4 s)


def scenario(tmp_path: Path, faults: str, system: str = "{name: sut, driver: tcp}",
             rate: int = 1000, duration: str = "3s") -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(f"""
name: faults
systems: [{system}]
workload: {{message_size: 64, rate: {rate}, duration: {duration}, warmup: 0.5s, drain: 2s}}
faults:
{faults}
""")
    return path


def ran(tmp_path: Path, path: Path) -> tuple[int, dict, dict]:
    """`sixnines run` of `path`: its exit code, the run's manifest and its summary."""
    done = sixnines("run", path, "--output", "out", cwd=tmp_path)
    assert "Traceback" not in done.stderr, done.stderr
    results = tmp_path / done.stdout.strip().splitlines()[-1]
    run_dir = next(results.glob("01-*"))
    manifest = json.loads((run_dir / "manifest.json").read_text())
    summary = json.loads((results / "summary.json").read_text())["runs"][0]
    return done.returncode, manifest, summary


def measured(manifest: dict, ns: int | None) -> float | None:
    """An absolute controller time as seconds from the measured start."""
    start = manifest["started_at_ns"] + manifest["workload"]["warmup_ns"]
    return None if ns is None else (ns - start) / 1e9


def test_the_relay_paused_a_second_delays_by_a_second_and_loses_nothing(tmp_path):
    path = scenario(tmp_path, "  - {at: 1s, action: pause, target: broker, for: 1s}")
    code, manifest, summary = ran(tmp_path, path)
    assert code == 0 and manifest["status"] == "ok", manifest["problems"]
    [fault] = manifest["faults"]
    assert (fault["action"], fault["target"], fault["outcome"]) == ("pause", "broker", "done")
    times = [measured(manifest, fault[key]) for key in ("issued_ns", "effective_ns",
                                                       "undone_ns")]
    assert 1.0 <= times[0] <= times[1] < 1.5 and 2.0 <= times[2] < 2.5, times
    assert fault["restarted_ns"] is None
    assert summary["lost"] == summary["unknown"] == summary["duplicated"] == 0
    assert summary["delivered"] == summary["sent"] > 0
    assert summary["latency_us"]["max"] >= 0.9e6  # the first message held the whole second
    # the per-fault figures of the same run: the window's messages all delivered, the
    # first of them a second late, and latency back inside the band after it
    [figures] = summary["faults"]
    assert (figures["index"], figures["outcome"]) == (0, "done")
    assert figures["max_in_window_us"] >= 0.9e6
    window = figures["delivery"]
    assert window["sent"] == window["delivered"] > 0 and window["lost"] == window["unknown"] == 0
    assert figures["backlog"] > 0 and figures["recovered"] is True


def test_redis_killed_and_restarted_is_reconnected_to(tmp_path):
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server not installed (deploy/setup.sh --test installs it)")
    path = scenario(tmp_path, "  - {at: 1s, action: kill, target: broker, restart_after: 0.5s}",
                    system="{name: sut, driver: redis, broker: {recipe: redis}}", rate=2000)
    code, manifest, summary = ran(tmp_path, path)
    assert code == 0 and manifest["status"] == "ok", manifest["problems"]
    [fault] = manifest["faults"]
    issued, effective, undone, restarted = (measured(manifest, fault[key]) for key in (
        "issued_ns", "effective_ns", "undone_ns", "restarted_ns"))
    assert 1.0 <= issued <= effective < undone <= restarted, fault
    assert undone >= 1.5 and fault["outcome"] == "done"
    assert fault["note"].startswith("started again as process ")
    # the broker CPU monitor followed the restarted server to the end
    assert manifest["monitor"]["status"] == "ok" and manifest["monitor"]["notes"] == []
    for agent in manifest["agents"]:  # both clients lost their connection and came back
        assert agent["reconnects"]["count"] == 1, agent
        assert agent["reconnects"]["outages"][0]["down_ns"] > 0
    # what the dead server held is lost; everything is accounted once
    assert summary["delivered"] + summary["lost"] + summary["unknown"] == summary["sent"]
    assert summary["duplicated"] == 0
    # the messages due while it was down went out once the producer was back: delivered
    # late, or lost when the consumer subscribed again after them (pub/sub keeps nothing)
    assert summary["latency_us"]["max"] >= 0.3e6 or summary["lost"] > 0
    [figures] = summary["faults"]  # the window's accounting: each message once
    window = figures["delivery"]
    assert window["delivered"] + window["lost"] + window["unknown"] == window["sent"] > 0


def test_a_consumer_killed_leaves_the_run_partial_with_its_data(tmp_path):
    path = scenario(tmp_path, "  - {at: 1s, action: kill, target: consumer-0}")
    code, manifest, summary = ran(tmp_path, path)
    assert code == 1 and manifest["status"] == "partial"
    [fault] = manifest["faults"]
    assert fault["outcome"] == "done" and fault["undone_ns"] is None
    assert 1.0 <= measured(manifest, fault["issued_ns"]) <= measured(
        manifest, fault["effective_ns"])
    consumer = next(a for a in manifest["agents"] if a["id"] == "consumer-0")
    assert consumer["status"] == "failed"
    assert summary["received"] > 0  # its chunks up to the kill were kept and analysed
    assert summary["lost"] == 0 and summary["unknown"] > 0  # the dead consumer's: unknown


def test_a_producer_killed_has_its_window_accounted_once(tmp_path):
    """What the consumer got of the killed producer's last messages, which its closed
    chunks do not hold, counts as sent in the run (spark_jobs.delivery) and in the fault's
    window alike: no window delivers more than was sent."""
    path = scenario(tmp_path, "  - {at: 1s, action: kill, target: producer-0}")
    code, manifest, summary = ran(tmp_path, path)
    assert code == 1 and manifest["status"] == "partial"
    assert summary["delivered"] + summary["lost"] + summary["unknown"] == summary["sent"] > 0
    [figures] = summary["faults"]
    window = figures["delivery"]
    assert window["lost"] >= 0 and window["unknown"] >= 0, window
    assert window["delivered"] + window["lost"] + window["unknown"] == window["sent"] > 0


def paused(tmp_path: Path, controller: Sixnines) -> Path:
    """The run directory, once its first fault (a pause) has taken effect."""
    deadline = time.monotonic() + 90
    while True:
        manifests = list((tmp_path / "out").glob("faults/*/01-sut/manifest.json"))
        faults = json.loads(manifests[0].read_text()).get("faults") if manifests else None
        if faults and faults[0].get("effective_ns"):
            return manifests[0].parent
        assert controller.process.poll() is None, controller.stderr
        assert time.monotonic() < deadline, controller.stderr
        time.sleep(0.1)


def test_a_controller_killed_during_a_pause_leaves_nothing_behind(tmp_path):
    """The guard resumes what it stops: the paused consumer acts on its SIGTERM (writes its
    account) instead of waiting, stopped, for the SIGKILL that follows."""
    path = scenario(tmp_path, "  - {at: 0.5s, action: pause, target: consumer-0, for: 20s}",
                    duration="30s")
    controller = Sixnines("run", str(path), "--output", "out", cwd=tmp_path)
    run_dir = paused(tmp_path, controller)
    tree = controller.snapshot()
    os.kill(controller.process.pid, signal.SIGKILL)
    controller.finish()
    assert still_alive_after(tree, BOUND_S) == {}
    assert (run_dir / "agents" / "consumer-0" / "done.json").is_file()


def test_an_interrupted_run_resumes_what_it_paused_before_it_stops(tmp_path):
    path = scenario(tmp_path, "  - {at: 0.5s, action: pause, target: consumer-0, for: 20s}",
                    duration="30s")
    controller = Sixnines("run", str(path), "--output", "out", cwd=tmp_path)
    run_dir = paused(tmp_path, controller)
    tree = controller.snapshot()
    controller.process.send_signal(signal.SIGTERM)
    code, _, err = controller.finish()
    assert code == 143 and "Traceback" not in err, err
    assert still_alive_after(tree, 1.0) == {}
    manifest = json.loads((run_dir / "manifest.json").read_text())
    [fault] = manifest["faults"]
    assert fault["note"] == "resumed as the run ended" and fault["undone_ns"] is not None
    assert manifest["status"] == "partial"
    consumer = next(a for a in manifest["agents"] if a["id"] == "consumer-0")
    assert consumer["received"] > 0 and consumer["artifacts"]  # resumed, it wrote its data
