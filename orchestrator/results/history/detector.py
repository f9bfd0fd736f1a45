"""The change-point detector in a process of its own, started before the store is brought
up to date: importing the detector (ruptures and the parts of scipy it loads, ~0.5 s of
CPU, a quarter of a nightly update's budget) then runs on a second core while this one
reads the nights, and the series are judged there (docs/performance.md, "History of
nights"). The process serves until its pipe closes; it ignores Ctrl-C, which its parent
handles (closing the pipe ends it)."""

from __future__ import annotations

import signal
from collections.abc import Sequence
from multiprocessing import get_context
from multiprocessing.connection import Connection
from types import TracebackType

from sixnines.formats.errors import SixninesError
from sixnines.orchestrator.results.changes import Change, Night, find_changes, load_detector

#: One series to judge: its nights, and whether a higher figure is worse.
Job = tuple[list[Night], bool]


class DetectorProcess:
    """The detector's process (module docstring); `find` judges series there."""

    def __init__(self) -> None:
        context = get_context("fork")  # the detector's module is in memory already
        self._connection, theirs = context.Pipe()
        self._process = context.Process(target=_serve, args=(theirs, self._connection),
                                        daemon=True, name="sixnines-change-points")
        self._process.start()
        theirs.close()

    def find(self, jobs: Sequence[Job]) -> list[list[Change]]:
        """The changes of each series of `jobs`, in order (changes.find_changes)."""
        self._connection.send(list(jobs))
        answer = self._connection.recv()
        if isinstance(answer, SixninesError):
            raise answer
        return answer

    def close(self) -> None:
        self._connection.close()
        self._process.join()

    def __enter__(self) -> DetectorProcess:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()


def _serve(connection: Connection, parents: Connection) -> None:
    """Import the detector, then judge each batch of jobs sent until the pipe closes; a
    detector not installed is the answer to every batch. `parents`: the parent's end,
    which the fork copied and which would keep the pipe open."""
    parents.close()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not its parent's handler
    missing: SixninesError | None = None
    try:
        load_detector()
    except SixninesError as error:
        missing = error
    with connection:
        while True:
            try:
                jobs = connection.recv()
            except EOFError:
                return
            connection.send(missing or [find_changes(nights, worse) for nights, worse in jobs])
