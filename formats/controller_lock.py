"""The lock a run's controller holds on its run directory while the run goes, so that no
other command takes a run still going for one whose controller died: `sixnines report`
would recover it (orchestrator.results.recovery) and write `failed` into a manifest the run then
overwrites, and `collect` would fetch files still being written.

An flock on `controller.lock` in the run directory: the kernel releases it when the
controller's process ends, however it ends (SIGKILL, its machine gone), so a lock nobody
holds means no live controller, and a file left behind by a killed one means nothing.
The file holds the controller's pid, for the message that names it. The descriptor is
not inherited by the processes the controller starts (O_CLOEXEC), which must not keep a
dead controller's lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from sixnines.formats.layout import LOCK_FILE

PID_BYTES = 32  # more than any pid's digits: what is read of a file from elsewhere


@contextlib.contextmanager
def holding(run_dir: Path) -> Iterator[None]:
    """The run directory locked for the block (the controller's, for the run's life); the
    file is removed when the block ends, the lock with it."""
    path = run_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with contextlib.suppress(OSError):  # a full disk: the lock holds all the same
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        yield
    finally:
        with contextlib.suppress(OSError):
            path.unlink()
        os.close(fd)


def holder(run_dir: Path) -> int | None:
    """The pid of the live controller holding the run directory's lock (0 when its file
    does not say), None when no process holds it. A lock file that is not a plain file
    (a FIFO, a link: a results directory from elsewhere) is held by nobody."""
    try:
        fd = os.open(run_dir / LOCK_FILE,
                     os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.read(fd, PID_BYTES).decode("ascii", "replace").strip()
            return int(text) if text.isdigit() else 0
        return None
    finally:
        os.close(fd)

