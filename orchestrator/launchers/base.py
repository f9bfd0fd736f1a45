"""One way to start and stop a process whose stdin/stdout carry line-based messages.

Template method, as in invoke/fabric runners: `Process` owns the reader thread, the line
queue, timeouts and orderly teardown; a launcher's process class implements a few
primitives (`_write`, `_readline`, `poll`, `signal`). Local subprocesses now; SSH sessions
and container attachments plug in the same way.
"""

from __future__ import annotations

import queue
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

EOF_LINE = None


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


@dataclass(frozen=True)
class Completed:
    argv: list[str]
    code: int | None  # None: killed at the timeout
    output: str  # stdout and stderr together


class Launcher(ABC):
    """Where processes run (this machine, an SSH host, a container engine)."""

    host: str

    @abstractmethod
    def start(self, argv: Sequence[str], name: str, log_path: Path,
              inbox: queue.Queue | None = None, env: dict[str, str] | None = None) -> Process:
        """Start `argv` (with `env` added to the environment); its stderr goes to
        `log_path`."""

    @abstractmethod
    def run(self, argv: Sequence[str], env: dict[str, str] | None = None,
            timeout_s: float = 60.0) -> Completed:
        """Run `argv` to completion (setup, checks, version queries)."""
