"""Nothing the controller starts on this machine outlives it, however it ends.

Every process group the controller starts here (agents, brokers, short commands, the Spark
analysis with its JVM) is registered with one small guard process. The guard runs in its
own session, so a terminal's Ctrl-C does not reach it, and reads its registrations from a
pipe whose only writer is the controller. When that pipe closes — the controller exited,
or died of anything, SIGKILL included — the guard stops every group still registered
(SIGTERM and SIGCONT, so that a group paused on purpose acts on it, then SIGKILL
after `GRACE_S`), runs the clean-up commands still registered (a
recipe's stop commands, for daemons that left the group) and exits. A controller that
ends normally has released everything it stopped itself, so the guard has nothing to do.

    controller ──{"watch": pgid} / {"release": pgid}──────────────▶ guard
               ──{"on_exit": id, "argv": [...], "env": {...}} / {"cancel": id}──▶

Agents also stop on their own when their control channel closes (and write their data
first): the guard's SIGTERM asks the same, its SIGKILL is the bound.

On an SSH host the same guard runs in a session of its own (launchers.ssh): sshd closes its
input when the controller's connection ends. A connection that just vanishes (the
controller's machine suspended, its network gone) sends no FIN, so there the controller
also sends a heartbeat each `formats.protocol.HEARTBEAT_S`, and a guard started with
`--silence S` takes S seconds without any line as the controller's end.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from typing import IO, Protocol

GRACE_S = 4.0  # SIGTERM to SIGKILL: agents write their data in this time
COMMAND_TIMEOUT_S = 10.0
KILLED_WAIT_S = 1.0  # SIGKILLed processes are gone in milliseconds
READY = "guard ready"  # its first line of output: it runs and listens


class LineSink(Protocol):
    """Where a guard's registrations are written: a pipe here, an SSH channel there."""

    def write(self, text: str, /) -> object: ...
    def flush(self) -> object: ...


class Guard:
    """The controller's end: registrations sent to the guard process on this machine,
    started on first use. One per controller process (`GUARD`); a subclass reaches a guard
    elsewhere by overriding `_pipe`."""

    def __init__(self) -> None:
        self._process: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self._next_id = 0

    def watch(self, pgid: int) -> None:
        """Stop process group `pgid` if the controller ends before `release(pgid)`."""
        self._send({"watch": pgid})

    def release(self, pgid: int) -> None:
        self._send({"release": pgid})

    def on_exit(self, argv: Sequence[str], env: dict[str, str] | None = None) -> int:
        """Run `argv` (with `env` added) if the controller ends before `cancel(id)`."""
        with self._lock:
            self._next_id += 1
            command_id = self._next_id
        self._send({"on_exit": command_id, "argv": list(argv), "env": env or {}})
        return command_id

    def cancel(self, command_id: int) -> None:
        self._send({"cancel": command_id})

    def _send(self, message: dict) -> None:
        line = json.dumps(message) + "\n"
        with self._lock:
            pipe = self._pipe()
            pipe.write(line)
            pipe.flush()

    def _pipe(self) -> LineSink:
        """The guard's input, the guard started if it is not running (under `_lock`)."""
        if self._process is None or self._process.poll() is not None:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "sixnines.orchestrator.launchers.guard"],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                start_new_session=True)
        stdin = self._process.stdin
        assert stdin is not None  # stdin=PIPE
        return stdin


GUARD = Guard()


def _alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a reused id now owned by someone else: not ours
        return False
    return True


def stop_groups(groups: set[int], grace_s: float = GRACE_S) -> None:
    """SIGTERM every group, SIGKILL those still there after `grace_s`, and wait (briefly)
    until they are gone: the clean-up commands that follow may refuse to act while they
    live (`epmd -kill` while a node is still registered)."""
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
            os.killpg(pgid, signal.SIGCONT)  # one paused on purpose acts on it only then
    _wait_gone(groups, grace_s)
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    _wait_gone(groups, KILLED_WAIT_S)


def _wait_gone(groups: set[int], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while any(_alive(g) for g in groups) and time.monotonic() < deadline:
        time.sleep(0.05)


def _run_command(argv: list[str], env: dict[str, str]) -> None:
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(argv, env={**os.environ, **env}, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=COMMAND_TIMEOUT_S, check=False)


def lines_until_silent(stream: IO[str], silence_s: float | None) -> Iterator[str]:
    """The lines of `stream` until it ends or, with `silence_s`, until none came for that
    long (the read goes on in a thread of its own, which cannot be interrupted)."""
    if silence_s is None:
        yield from stream
        return
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    while True:
        try:
            line = lines.get(timeout=silence_s)
        except queue.Empty:
            return
        if line is None:
            return
        yield line


def main(argv: Sequence[str] | None = None) -> int:
    """The guard process: collect registrations until the controller's pipe closes (or
    falls silent, with --silence), then clean up what is still registered."""
    parser = argparse.ArgumentParser(prog="python -m sixnines.orchestrator.launchers.guard")
    parser.add_argument("--silence", type=float, metavar="S",
                        help="take S seconds without a line (heartbeats included) as the "
                        "controller's end")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    print(READY, flush=True)  # a remote controller waits for it (launchers.ssh_guard)
    groups: set[int] = set()
    commands: dict[int, tuple[list[str], dict[str, str]]] = {}
    for line in lines_until_silent(sys.stdin, args.silence):
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if "watch" in message:
            groups.add(message["watch"])
        elif "release" in message:
            groups.discard(message["release"])
        elif "on_exit" in message:
            commands[message["on_exit"]] = (message["argv"], message["env"])
        elif "cancel" in message:
            commands.pop(message["cancel"], None)
    stop_groups(groups)
    for argv, env in commands.values():
        _run_command(argv, env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
