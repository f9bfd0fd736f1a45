"""One way to start and stop a process whose stdin/stdout carry line-based messages, on
this machine, on an SSH host or in a container.

Template method, as in invoke/fabric runners: `Process` owns the reader thread, the line
queue, timeouts and orderly teardown; a launcher's process class implements a few
primitives (`_write`, `_readline`, `poll`, `terminate`, `kill`, `fetch`). A `Launcher` is
one host: it checks and prepares the host (`prepare`), says where files and servers go on
it (`workdir`, `address`, `python`), starts processes and runs commands there.
"""

from __future__ import annotations

import queue
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from sixnines.formats.errors import SixninesError

if TYPE_CHECKING:  # bundle.py needs the `remote` extra, which local runs do without
    from sixnines.orchestrator.launchers.bundle import Bundle

EOF_LINE = None
#: What a shell takes as a variable name: anything else on an `env` line is shell code.
class LineLog(queue.Queue):
    """An inbox whose lines go to a log file instead of memory: for a process whose
    output nobody reads (a recipe's broker, Redis for one, logs on its stdout), so its
    words are kept beside its stderr and a chatty one does not grow the controller."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self._path = path
        self._log: IO[str] | None = None

    def put(self, item: tuple[Process, str | None], block: bool = True,
            timeout: float | None = None) -> None:
        line = item[1]
        if line is EOF_LINE:
            if self._log is not None:
                self._log.close()
            return
        if self._log is None:
            self._log = open(self._path, "a", encoding="utf-8", errors="replace")  # noqa: SIM115
        self._log.write(line + "\n")
        self._log.flush()


class Process(ABC):
    """A started process. Lines it prints arrive on `lines` (None once its output ends);
    `inbox` may be shared by several processes so one loop can wait on all of them."""

    def __init__(self, name: str, inbox: queue.Queue | None = None) -> None:
        self.name = name
        self.lines: queue.Queue = inbox if inbox is not None else queue.Queue()
        self._reader: threading.Thread | None = None

    def _start_reader(self) -> None:
        def pump() -> None:
            while True:
                line = self._readline()
                if not line:
                    self.lines.put((self, EOF_LINE))
                    return
                self.lines.put((self, line.rstrip("\n")))

        self._reader = threading.Thread(target=pump, name=f"read-{self.name}", daemon=True)
        self._reader.start()

    # -- primitives --------------------------------------------------------------------
    @abstractmethod
    def _write(self, text: str) -> None: ...

    @abstractmethod
    def _readline(self) -> str:
        """One line of output ('' at end of output)."""

    @abstractmethod
    def poll(self) -> int | None:
        """Exit code, or None while running."""

    @abstractmethod
    def terminate(self) -> None:
        """Ask the process (and everything it started) to stop."""

    @abstractmethod
    def kill(self) -> None:
        """Stop the process (and everything it started) now."""

    @abstractmethod
    def fetch(self, remote_dir: str, local_dir: Path) -> None:
        """Copy the directory `remote_dir`, where this process wrote its files, into
        `local_dir` on the controller (a no-op when they are the same place)."""

    def suspend(self) -> None:
        """Stop the process and everything it started (SIGSTOP) until `resume`: a pause
        on purpose (orchestrator.run.faults). LaunchError where this launcher cannot."""
        raise LaunchError(f"{self.name}: cannot be paused where it runs")

    def resume(self) -> None:
        """Let it go on after `suspend` (SIGCONT)."""
        raise LaunchError(f"{self.name}: cannot be resumed where it runs")

    def suspended(self) -> bool | None:
        """Whether it is stopped now (None: this launcher cannot tell)."""
        return None

    def files_at(self, remote_dir: str) -> dict[str, str]:
        """Where this process's files in `remote_dir` stay once the process is gone, for
        the manifest (`sixnines collect` fetches them from there)."""
        return {"dir": remote_dir}

    # -- shared behaviour --------------------------------------------------------------
    def write_line(self, line: str) -> bool:
        """Send one line; False when the process no longer reads its input."""
        try:
            self._write(line + "\n")
            return True
        except (BrokenPipeError, OSError, ValueError):
            return False

    def wait(self, timeout_s: float) -> int | None:
        deadline = time.monotonic() + timeout_s
        while (code := self.poll()) is None and time.monotonic() < deadline:
            time.sleep(0.02)
        return code

    def shutdown(self, grace_s: float = 5.0) -> int | None:
        """Terminate, wait up to `grace_s`, then kill: never leaves the process behind."""
        if self.poll() is None:
            self.terminate()
            if self.wait(grace_s) is None:
                self.kill()
                self.wait(grace_s)
        return self.poll()


def shutdown_all(processes: Sequence[Process], grace_s: float = 5.0) -> None:
    """`Process.shutdown` of many at once: all are asked to stop together and share one
    grace period, so stopping N agents takes seconds, not N times as long."""
    for process in processes:
        if process.poll() is None:
            process.terminate()
    deadline = time.monotonic() + grace_s
    while any(process.poll() is None for process in processes) and \
            time.monotonic() < deadline:
        time.sleep(0.02)
    for process in processes:
        process.shutdown(grace_s=1.0)


@dataclass(frozen=True)
class Completed:
    argv: list[str]
    code: int | None  # None: killed at the timeout
    output: str  # stdout and stderr together


class LaunchError(SixninesError):
    """A host cannot be used: unreachable, unknown host key, no Python, bootstrap failed.
    The message names the host and says what to do."""


class Launcher(ABC):
    """Where processes run (this machine, an SSH host, a container engine)."""

    host: str  # the host's name in the scenario ("local": the controller's machine)
    address: str  # where servers on this host listen and are reached by the others
    python: str  # an interpreter on the host with sixnines installed
    #: The agent bundle `prepare` installs, when `needs_bundle`: the fleet builds it once
    #: and hands it to every such host before they prepare in parallel.
    bundle: Bundle | None = None

    @property
    def needs_bundle(self) -> bool:
        """Whether `prepare` installs this checkout's bundle (`bundle`) on the host."""
        return False

    def prepare(self) -> dict:
        """Check the host and make it ready (install sixnines where needed); the facts
        found (Python version, free disk, ...) go into the manifest. Raises LaunchError."""
        return {}

    def contact(self) -> dict[str, str | int]:
        """How a later command reaches this host again (`sixnines collect`), for the
        manifest: addresses and file names, never a secret. Empty for this machine."""
        return {}

    def connect(self) -> None:  # noqa: B027 (this machine needs no connection)
        """Reach the host now (LaunchError if it cannot be reached), so that a host that
        is gone is found once, not once per thing to do there."""

    # -- files a process left behind (`sixnines collect`) ------------------------------------
    # `files_at` comes from a manifest, which may have been edited: a launcher touches only
    # the regular files directly in a folder under its own work directory (LaunchError
    # otherwise), and writes each into `local_dir` whole under its own name (formats.atomic:
    # a link waiting there is replaced, never followed).

    def read_left_file(self, files_at: dict[str, str], name: str, max_bytes: int
                       ) -> bytes | None:
        """The content of the regular file `name` a process left at `files_at` (its
        `Process.files_at`), None when there is none; LaunchError when it is larger than
        `max_bytes` or cannot be read (unreachable host)."""
        raise LaunchError(f"host {self.host}: its processes' files cannot be fetched later")

    def fetch_left_files(self, files_at: dict[str, str], local_dir: Path) -> list[str]:
        """Copy every regular file a process left at `files_at` into `local_dir`, with no
        process to ask: it is gone, and so is its controller; their names. Raises
        LaunchError (unreachable host, files gone)."""
        raise LaunchError(f"host {self.host}: its processes' files cannot be fetched later")

    def discard_left_files(self, files_at: dict[str, str], names: list[str]) -> list[str]:
        """Remove those of the files at `files_at` (fetched, and verified here), nothing
        else; the names of the files still there."""
        return []

    def workdir(self, key: str, local_dir: Path) -> str:
        """Where the files of `key` (`<scenario>/<stamp>/<run-id>/...`, whose controller
        copy is `local_dir`) are written on this host."""
        return str(local_dir)

    @abstractmethod
    def write_file(self, path: str, content: str) -> None:
        """Create (or replace) a text file on the host, with its parent directories."""

    def close(self) -> None:  # noqa: B027 (most launchers hold nothing to release)
        """Release connections; processes are stopped by their own handles first."""

    def on_controller_exit(self, argv: Sequence[str], env: dict[str, str] | None = None
                           ) -> int | None:
        """Have `argv` run on the host if the controller ends (even killed) before
        `cancel_on_exit(token)`: clean-up for what stopping a process group misses, such
        as a daemon a broker started. None where the host has no such guard."""
        return None

    def cancel_on_exit(self, token: int) -> None:  # noqa: B027 (see on_controller_exit)
        """The clean-up registered as `token` is done (or no longer needed)."""

    @abstractmethod
    def start(self, argv: Sequence[str], name: str, log_path: Path,
              inbox: queue.Queue | None = None, env: dict[str, str] | None = None) -> Process:
        """Start `argv` (with `env` added to the environment); its stderr goes to
        `log_path`."""

    @abstractmethod
    def run(self, argv: Sequence[str], env: dict[str, str] | None = None,
            timeout_s: float = 60.0) -> Completed:
        """Run `argv` to completion (setup, checks, version queries)."""

    def start_beside(self, target: Process, argv: Sequence[str], name: str, log_path: Path,
                     inbox: queue.Queue | None = None) -> tuple[Process, int]:
        """Start `argv` where it sees the processes of `target` (started by this launcher),
        and the pid that names target's process group there (the broker monitor's
        `target_pid`). Here: on the same host, where `target.pid` leads its own group."""
        pid = getattr(target, "pid", None)
        if pid is None:
            raise LaunchError(f"host {self.host}: the process id of {target.name} is unknown")
        return self.start(argv, name, log_path, inbox), pid
