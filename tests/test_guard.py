"""The guard process (orchestrator.launchers.guard) with a silence bound, as SSH hosts run
it: a controller that stops talking without closing the pipe (frozen, cut off) is taken
for gone, and heartbeats keep it from being so. Real processes: the guard and a `sleep`
in a process group of its own."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

from tests.faults.processes import alive

SILENCE_S = 0.5


def guard() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "sixnines.orchestrator.launchers.guard",
                             "--silence", str(SILENCE_S)], stdin=subprocess.PIPE, text=True)


def watched_sleep(guard_process: subprocess.Popen) -> subprocess.Popen:
    """A `sleep` in a group of its own, watched by the guard, and reaped as soon as it
    dies (as init reaps a dead controller's children): a zombie would count as alive."""
    sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    threading.Thread(target=sleeper.wait, daemon=True).start()
    tell(guard_process, {"watch": sleeper.pid})
    return sleeper


def tell(guard_process: subprocess.Popen, message: dict) -> None:
    guard_process.stdin.write(json.dumps(message) + "\n")
    guard_process.stdin.flush()


def test_a_silent_controller_is_taken_for_gone_though_its_pipe_is_open():
    keeper = guard()
    sleeper = watched_sleep(keeper)
    try:
        assert keeper.wait(SILENCE_S + 5) == 0
        assert sleeper.wait(1) is not None and not alive(sleeper.pid)
    finally:
        keeper.kill()
        sleeper.kill()


def test_heartbeats_keep_the_guard_waiting():
    keeper = guard()
    sleeper = watched_sleep(keeper)
    try:
        for _ in range(int(3 * SILENCE_S / 0.1)):
            tell(keeper, {"beat": 1})
            last_beat = time.monotonic()
            time.sleep(0.1)
        assert keeper.poll() is None and sleeper.poll() is None
        sleeper.wait(SILENCE_S + 5)
        assert SILENCE_S <= time.monotonic() - last_beat < SILENCE_S + 2
    finally:
        keeper.kill()
        sleeper.kill()
