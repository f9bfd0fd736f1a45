"""The controller's end of a fault held on a host by a process of its own
(launchers.fault_hold): a partition or a slow link (launchers.link_faults), a broker's data
disk frozen or full (launchers.data_disks).

Why a process on the host rather than commands sent at the fault's time: it is started,
checked and registered with the host's guard before the measured run, so at the fault's
time one line goes over a channel already open; and it owns the undoing in every case
(the fault's end, the run's end, the controller's end, its own deadline). The host's guard
also holds the undo commands themselves, run after it has stopped what the controller left,
so a holder killed before it could undo still leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import json
import queue
import time
from pathlib import Path

from sixnines.orchestrator.launchers.base import EOF_LINE, Launcher, LaunchError
from sixnines.orchestrator.launchers.fault_hold import HELD, READY, UNDONE

MODULE = "sixnines.orchestrator.launchers.fault_hold"
#: The holder undoes at the latest this long after the fault's planned end.
DEADLINE_MARGIN_S = 10.0
ANSWER_TIMEOUT_S = 30.0
DRAIN_TIMEOUT_S = 5.0  # a stopped holder's output ends in milliseconds

Commands = list[list[str]]


class HeldFault:
    """The controller's end of one holder: started (and ready) at once, `apply` and `undo`
    at the fault's times, `close` whatever happened before. `tool` says what does the
    fault there (nftables, iptables, tc, ...), for its record."""

    def __init__(self, launcher: Launcher, name: str, commands: tuple[Commands, Commands],
                 for_s: float, log_path: Path, tool: str | None = None) -> None:
        apply, undo = commands
        self.launcher = launcher
        self.tool = tool
        self.label = f"{name} on host {launcher.host}"
        self.process = launcher.start(
            [launcher.python, "-m", MODULE, "--deadline", f"{for_s + DEADLINE_MARGIN_S:.3f}",
             json.dumps(apply), json.dumps(undo)], name, log_path)
        self.held = False
        self._output_ended = False
        self._guarded: list[int] = []
        try:
            self._expect(READY)
            # the host's guard undoes it too, after stopping what the controller left: a
            # holder killed before it could undo (its SIGKILL after the grace) leaves no
            # rule, qdisc or frozen disk behind (undoing what is gone fails harmlessly)
            self._guarded = [token for command in undo
                             if (token := launcher.on_controller_exit(command)) is not None]
        except LaunchError:
            self.close()
            raise

    def apply(self) -> None:
        """Put the fault in place; returns once it is (LaunchError: it is not)."""
        if not self.process.write_line("go"):
            raise LaunchError(f"{self.label}: its holder is gone")
        self._expect(HELD)
        self.held = True

    def undo(self) -> None:
        """Take the fault away; returns once it is gone (LaunchError: removal failed). The
        holder exits then; `close` waits for that."""
        if not self.process.write_line("undo"):
            raise LaunchError(f"{self.label}: its holder is gone")
        self._expect(UNDONE)
        self.held = False

    def close(self) -> None:
        """The holder stopped, undoing what it still holds (it also undoes on its input's
        end or the guard's signal, should the answer not come)."""
        if self.held:
            with contextlib.suppress(LaunchError):
                self.undo()
        self.process.shutdown()
        self._drain()
        for token in self._guarded:
            self.launcher.cancel_on_exit(token)
        self._guarded = []

    def _drain(self) -> None:
        """Its output read to the end: a line left queued holds the process (a cycle),
        and paramiko's files complain when the garbage collector meets them late."""
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        with contextlib.suppress(queue.Empty):
            while not self._output_ended:
                self._next_line(deadline)

    def _expect(self, answer: str) -> None:
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while True:
            try:
                line = self._next_line(deadline)
            except queue.Empty:
                raise LaunchError(f"{self.label}: no {answer!r} from its holder within "
                                  f"{ANSWER_TIMEOUT_S:.0f} s") from None
            if line == answer:
                return
            if line is EOF_LINE or line.startswith("failed"):
                why = "its holder ended" if line is EOF_LINE else line.removeprefix("failed ")
                raise LaunchError(f"{self.label}: {why}")

    def _next_line(self, deadline: float) -> str | None:
        """The holder's next line (EOF_LINE at the end of its output); queue.Empty when
        none came by `deadline`."""
        _, line = self.process.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        self._output_ended = self._output_ended or line is EOF_LINE
        return line
