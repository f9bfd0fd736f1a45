"""A system under test that stops answering, with real processes: the builtin relay frozen
(SIGSTOP) in the middle of a run and resumed only after the consumer's drain has run out.
What it still held when the drain ended is not known to be lost: the run is partial, the
messages sent after the consumer's last delivery are `unknown`, and a problem line says
what happened and what to do."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from sixnines.formats.chunks import message_files
from tests.faults.processes import Sixnines, still_alive_after
from tests.faults.test_interrupts import manifest_of, started

pytestmark = pytest.mark.integration

FROZEN_AFTER_S = 5.0  # from the start message: sending starts 0.5 s in
RESUME_BY_S = 60.0  # whatever happens, the relay is resumed by then
SCENARIO = """
name: faults
systems: [{name: sut, driver: tcp}]
workload: {message_size: 64, rate: 1000, duration: 10s, warmup: 0s, drain: 2s}
"""


def rows(folder: Path) -> int:
    return sum(pq.read_metadata(path).num_rows for path in message_files(folder))


def test_a_broker_stalled_past_the_drain_leaves_what_it_held_unknown(tmp_path):
    (tmp_path / "s.yaml").write_text(SCENARIO)
    controller = Sixnines("run", "s.yaml", "--output", "out", cwd=tmp_path)
    run_dir = started(tmp_path, controller)
    relay = controller.wait_for_descendant("broker tcp", timeout_s=10)
    time.sleep(FROZEN_AFTER_S)
    os.kill(relay, signal.SIGSTOP)
    frozen = time.monotonic()
    try:  # resumed once the consumer has heard its drain out and reported
        done = run_dir / "agents" / "consumer-0" / "done.json"
        while not done.exists() and time.monotonic() < frozen + RESUME_BY_S:
            time.sleep(0.1)
        assert done.exists(), controller.stderr
    finally:
        os.kill(relay, signal.SIGCONT)
    tree = controller.snapshot()
    code, _, err = controller.finish()
    assert still_alive_after(tree, 5) == {}
    assert code == 1, err  # partial
    assert "Traceback" not in err
    console = " ".join(err.split())  # however the console wrapped its lines
    assert "agent consumer-0: no delivery for " in console
    assert "; its drain of 2 s ran out first: " in console and "lengthen `drain`" in console
    manifest = manifest_of(run_dir)
    consumer = next(e for e in manifest["agents"] if e["id"] == "consumer-0")
    assert consumer["status"] == "ok" and consumer["drain_ended_ns"] > 0
    sent, received = (rows(run_dir / "agents" / name) for name in ("producer-0", "consumer-0"))
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    print(f"relay frozen: {sent:,} sent, {received:,} received, {summary['unknown']:,} "
          f"unknown, {summary['lost']} lost")
    assert summary["status"] == "partial"
    assert (summary["sent"], summary["received"], summary["delivered"]) == (
        sent, received, received)
    assert (summary["lost"], summary["unknown"]) == (0, sent - received)
    assert sent - received > 1000  # the sends of at least the run's last second (when it
    # froze moves with the machine's load; the five seconds planned give ~5,000)
    (line,) = [p for p in summary["problems"] if p.startswith("agent consumer-0: ")]
    quiet = float(line.split("no delivery for ")[1].split(" s ")[0])
    assert quiet > 2 * 2  # longer than the drain before the drain began
