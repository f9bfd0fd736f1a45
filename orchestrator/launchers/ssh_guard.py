"""The guard (launchers.guard) on an SSH host: nothing the controller starts there outlives
the controller, however it ends.

sshd gives no signal to the processes of a session without a terminal when the connection
drops: a broker goes on serving, and an agent stops only because its input ends. So every
process group the launcher starts on the host is registered with a guard running there in
a session of its own, with the recipes' clean-up commands. sshd closes the guard's input
as soon as the controller's connection ends (the controller killed: its kernel closes the
socket), and the guard stops what is registered. When the connection just vanishes (no FIN
ever comes: the controller's machine suspended, its network gone), the guard hears no
heartbeat for `SILENCE_S` (formats.protocol: 4 s) and does the same. Either way every
process is gone within `SILENCE_S` + `guard.GRACE_S`, most within a second of the guard
acting.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable

import paramiko

from sixnines.formats.protocol import HEARTBEAT_S, SILENCE_S
from sixnines.orchestrator.launchers.guard import READY, Guard, LineSink

logger = logging.getLogger(__name__)

START_TIMEOUT_S = 30.0


class SshGuard(Guard):
    """The controller's end of one host's guard: the guard's session is opened on first
    use (`open_session` returns its input), and a thread sends heartbeats until `close`."""

    def __init__(self, open_session: Callable[[list[str]], paramiko.Channel],
                 python: Callable[[], str]) -> None:
        super().__init__()
        self._open_session = open_session
        self._python = python
        self._channel: paramiko.Channel | None = None
        self._input: LineSink | None = None
        self._closed = threading.Event()  # of the session now open
        self._ended = False

    def _pipe(self) -> LineSink:
        if self._ended:
            raise OSError("the guard's session was closed with the launcher")
        if self._input is None:
            argv = [self._python(), "-m", "sixnines.orchestrator.launchers.guard",
                    "--silence", str(SILENCE_S)]
            self._channel = self._open_session(argv)
            self._await_ready(self._channel)
            self._input = self._channel.makefile_stdin("w")
            self._closed = threading.Event()
            threading.Thread(target=self._beat, args=(self._input, self._closed),
                             name="guard-heartbeat", daemon=True).start()
        return self._input

    @staticmethod
    def _await_ready(channel: paramiko.Channel) -> None:
        """Until the guard says it runs: a host where it cannot (no such module in the
        host's `python`) is an error, not processes left without protection."""
        channel.settimeout(START_TIMEOUT_S)
        try:
            first = channel.makefile("r").readline().strip()
        except TimeoutError:
            first = ""
        if first != READY:
            error = channel.makefile_stderr("r").read(2000).decode(errors="replace") \
                if channel.exit_status_ready() else "no answer"
            channel.close()
            raise OSError(f"its guard did not start: {first} {error}".strip()[:500])
        channel.settimeout(None)

    def _beat(self, pipe: LineSink, closed: threading.Event) -> None:
        """Heartbeats into one session's `pipe` until it is `closed` or its host is gone."""
        while not closed.wait(HEARTBEAT_S):
            with self._lock:
                if closed.is_set():
                    return
                try:
                    pipe.write('{"beat": 1}\n')
                    pipe.flush()
                except (OSError, paramiko.SSHException) as exc:  # runs notice a lost host
                    logger.debug("guard heartbeat stopped: %s", exc)
                    return

    def close(self) -> None:
        """End the guard's session: the guard stops whatever is still registered (nothing,
        when every process was stopped and released) and exits."""
        with self._lock:
            self._ended = True
            self._closed.set()
            if self._channel is not None:
                with contextlib.suppress(OSError, paramiko.SSHException):
                    self._channel.shutdown_write()
                    self._channel.close()
            self._channel = self._input = None
