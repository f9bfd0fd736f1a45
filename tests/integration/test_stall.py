"""The CTRL+Z test: freeze the broker for a known time and check what the report says.

An open-loop sender keeps sending during a stall of S seconds, so every message due in the
stall waits for the broker to resume: its latency is (resume − intended), spread evenly
between S and 0. The report's percentiles must follow that analytic curve. A closed-loop
requester (the classic benchmark mistake) sends nothing while it waits, records a single
slow sample, and reports a tail as if nothing had happened: coordinated omission.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

from sixnines.spark_jobs.analyze import analyze_run
from tests.integration.support import RecordingView, execute, external_broker, points

pytestmark = pytest.mark.integration

RATE = 1000
STALL_S = 1.0
STALL_AFTER_WARMUP_S = 1.5
SCENARIO = """
name: stall
systems: [{{name: relay, driver: tcp, broker: {{external: "{address}"}}}}]
workload:
  mode: {mode}
  schedule: {schedule}
  message_size: 64
  rate: {rate}
  duration: 5s
  warmup: 500ms
  drain: 5s
"""


def run_with_stall(tmp_path, mode: str, schedule: str) -> tuple[dict, tuple[int, int]]:
    """Run against a relay this test owns; SIGSTOP it inside the measured window."""
    with external_broker("tcp") as (relay, address):
        text = SCENARIO.format(address=address, mode=mode, schedule=schedule, rate=RATE)
        point = points(text)[0]
        view = RecordingView()
        stall: list[int] = []

        def freeze() -> None:
            while view.at_ns is None:
                time.sleep(0.001)
            stop_at = view.at_ns + int((0.5 + STALL_AFTER_WARMUP_S) * 1e9)
            time.sleep(max(0.0, (stop_at - time.perf_counter_ns()) / 1e9))
            os.kill(relay.pid, signal.SIGSTOP)
            stall.append(time.perf_counter_ns())
            time.sleep(STALL_S)
            stall.append(time.perf_counter_ns())
            os.kill(relay.pid, signal.SIGCONT)

        freezer = threading.Thread(target=freeze, daemon=True)
        freezer.start()
        manifest = execute(point, tmp_path / point.run_id, view)
        freezer.join(5)
    return manifest, (stall[0], stall[1])


def expected_latencies(intended_ns: np.ndarray, stall: tuple[int, int]) -> np.ndarray:
    """The open-loop model: a message due while the broker is frozen is delivered when it
    resumes; every other message is delivered at once (base latency ignored)."""
    stopped, resumed = stall
    frozen = (intended_ns >= stopped) & (intended_ns < resumed)
    return np.where(frozen, resumed - intended_ns, 0)


def test_open_loop_reports_the_stall_as_the_schedule_saw_it(tmp_path, spark):
    manifest, stall = run_with_stall(tmp_path, "one-way", "fixed")
    assert manifest["status"] == "ok", manifest["problems"]
    summary = analyze_run(spark, tmp_path / manifest["run_id"])
    assert summary["lost"] == 0 and summary["sent"] == summary["received"] == 5 * RATE

    # the model, evaluated on the same intended times the producer used
    producer = next(a for a in manifest["agents"] if a["role"] == "producer")
    t0 = producer["t0_ns"]
    intended = t0 + np.arange(int(5.5 * RATE)) * (1_000_000_000 // RATE)
    measured = intended[intended >= t0 + 500_000_000]
    model_us = expected_latencies(measured, stall) / 1000
    stall_us = (stall[1] - stall[0]) / 1000

    # Tolerance: the stall's edges are known to ~1 ms (signal delivery, the relay's next
    # wake-up), the base latency on this 2-core VM is up to a few ms in the tail, and HDR
    # buckets are exact to 0.1 %: 5 % of the stall covers all three with room to spare,
    # while a coordinated-omission error would be off by ~100 % at p90/p99.
    tolerance_us = 0.05 * stall_us
    reported = summary["latency_us"]
    for key, pct in (("p90", 90), ("p99", 99), ("p99.9", 99.9)):
        expected = np.percentile(model_us, pct, method="higher")
        assert abs(reported[key] - expected) <= tolerance_us, (key, reported[key], expected)
    # the max is the first message frozen: it waited the whole stall
    assert abs(reported["max"] - stall_us) <= tolerance_us
    # below the stalled fraction (1 s of 5 s = 20 %), latency stays at the base
    assert reported["p50"] < 0.02 * stall_us


def test_closed_loop_hides_the_stall(tmp_path, spark):
    manifest, stall = run_with_stall(tmp_path, "round-trip", "closed")
    assert manifest["status"] == "ok", manifest["problems"]
    summary = analyze_run(spark, tmp_path / manifest["run_id"])
    stall_us = (stall[1] - stall[0]) / 1000
    reported = summary["latency_us"]
    # one request waited through the stall ...
    assert abs(reported["max"] - stall_us) <= 0.05 * stall_us
    # ... and every other one was sent after it, so the tail looks healthy: an open-loop
    # schedule would put p99 at ~0.95 S (see the test above); the closed loop reports a
    # small fraction of that.
    assert reported["p99"] < 0.1 * stall_us
    assert reported["p99.9"] < 0.5 * stall_us
