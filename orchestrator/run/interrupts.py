"""Ctrl-C and SIGTERM: both stop a run the same way, and repeating them never costs data.

The first interrupt raises `KeyboardInterrupt` where the controller is (`Terminated`, a
subclass, for SIGTERM), and the run winds down: agents are told to stop and write what they
recorded, every process is stopped, the files are collected, the manifest written. While
that happens, further interrupts are `held`: counted, and they shorten the waiting (the
`on_repeat` callback), but they do not raise, so they cannot cut the wind-down short and
leave data on disk unaccounted for.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass


class Terminated(KeyboardInterrupt):
    """SIGTERM: handled exactly as Ctrl-C, told apart only in words and exit code."""


#: How a user hears of each interrupt, and the exit code it ends with.
EXIT_CODES = {KeyboardInterrupt: 130, Terminated: 143}


def describe(interrupt: KeyboardInterrupt) -> str:
    return "terminated (SIGTERM)" if isinstance(interrupt, Terminated) else \
        "interrupted by the user (Ctrl-C)"


def exit_code(interrupt: KeyboardInterrupt) -> int:
    return EXIT_CODES[Terminated if isinstance(interrupt, Terminated) else KeyboardInterrupt]


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated


def install() -> None:
    """SIGTERM raises `Terminated` in the main thread, as SIGINT raises KeyboardInterrupt."""
    signal.signal(signal.SIGTERM, _raise_terminated)


@dataclass
class Held:
    """Interrupts received while held (`count`); `first` is the first of them."""

    count: int = 0
    first: KeyboardInterrupt | None = None


@contextlib.contextmanager
def held(on_repeat: Callable[[], None] = lambda: None) -> Iterator[Held]:
    """Within the block, SIGINT and SIGTERM are counted and call `on_repeat` instead of
    raising; the previous handlers are back afterwards."""
    record = Held()

    def hold(signum: int, frame: object) -> None:
        record.count += 1
        if record.first is None:
            record.first = Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
        on_repeat()

    if threading.current_thread() is not threading.main_thread():
        yield record  # signals reach the main thread only: nothing to hold here
        return
    previous = {signum: signal.signal(signum, hold) for signum in (signal.SIGINT,
                                                                   signal.SIGTERM)}
    try:
        yield record
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
