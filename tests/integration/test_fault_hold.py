"""The holder of a fault on a host (launchers.fault_hold) as a real process, its fault a
file (`touch` to apply, `rm` to undo), so every way it ends is seen without a test bed:
told to undo, its input gone, SIGTERM (the guard), its own deadline, a fault that cannot
be applied, an undo command that fails before others, and a holder stopped before its
fault was applied."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sixnines.orchestrator.launchers.fault_hold import HELD, READY, UNDONE

pytestmark = pytest.mark.integration


def holder(fault: Path, deadline_s: float = 30.0, apply: list[list[str]] | None = None,
           undo: list[list[str]] | None = None) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-m", "sixnines.orchestrator.launchers.fault_hold",
         "--deadline", str(deadline_s), json.dumps(apply or [["touch", str(fault)]]),
         json.dumps(undo or [["rm", "-f", str(fault)]])],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == READY
    return process


def applied(process: subprocess.Popen, fault: Path) -> None:
    process.stdin.write("go\n")
    process.stdin.flush()
    assert process.stdout.readline().strip() == HELD
    assert fault.exists()


@pytest.mark.parametrize("ending", ["undo", "end of input", "SIGTERM", "SIGHUP"])
def test_the_fault_is_taken_away_however_the_holder_is_told(tmp_path, ending):
    fault = tmp_path / "fault"
    process = holder(fault)
    applied(process, fault)
    if ending == "undo":
        process.stdin.write("undo\n")
        process.stdin.flush()
    elif ending == "end of input":
        process.stdin.close()
    else:
        process.send_signal(getattr(signal, ending))
    assert process.stdout.readline().strip() == UNDONE
    assert process.wait(10) == 0
    assert not fault.exists()


def test_its_deadline_takes_the_fault_away_with_no_word_from_anyone(tmp_path):
    fault = tmp_path / "fault"
    process = holder(fault, deadline_s=0.5)
    began = time.monotonic()
    applied(process, fault)
    assert process.stdout.readline().strip() == UNDONE  # its input still open
    assert 0.4 <= time.monotonic() - began < 5
    assert process.wait(10) == 0
    assert not fault.exists()


def test_a_fault_that_cannot_be_applied_is_said_and_half_of_it_undone(tmp_path):
    fault = tmp_path / "fault"
    process = holder(fault, apply=[["touch", str(fault)], ["false"]])
    process.stdin.write("go\n")
    process.stdin.flush()
    answer = process.stdout.readline().strip()
    assert answer.startswith("failed ") and "false" in answer and "exit 1" in answer
    assert process.wait(10) == 1
    assert not fault.exists()  # the first command's part undone


def test_every_undo_command_runs_though_one_before_it_fails(tmp_path):
    """A rule already gone (its removal fails) must not keep the next from being removed:
    the answer names the first failure, and the fault is gone all the same."""
    fault = tmp_path / "fault"
    process = holder(fault, undo=[["false"], ["rm", "-f", str(fault)]])
    applied(process, fault)
    process.stdin.write("undo\n")
    process.stdin.flush()
    answer = process.stdout.readline().strip()
    assert answer.startswith("failed false (exit 1)"), answer
    assert process.wait(10) == 1
    assert not fault.exists()


def test_a_holder_stopped_before_its_fault_undoes_nothing(tmp_path):
    fault = tmp_path / "fault"
    fault.touch()  # not the holder's: it must not be removed
    process = holder(fault)
    process.stdin.close()
    assert process.stdout.readline().strip() == UNDONE
    assert process.wait(10) == 0
    assert fault.exists()


def test_a_command_missing_on_the_host_is_said_before_anything_is_done(tmp_path):
    process = subprocess.Popen(
        [sys.executable, "-m", "sixnines.orchestrator.launchers.fault_hold", "--deadline",
         "30", json.dumps([["sixnines-no-such-nft", "x"]]), json.dumps([["true"]])],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == (
        "failed sixnines-no-such-nft not found on this host")
    assert process.wait(10) == 1

