"""Builtin brokers for the suite: `sixnines broker NAME` in a process of its own."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class BuiltinBroker:
    address: str
    process: subprocess.Popen


@contextmanager
def builtin_broker(name: str) -> Iterator[BuiltinBroker]:
    """The builtin broker of driver `name` on a free loopback port, stopped afterwards."""
    process = subprocess.Popen(
        [sys.executable, "-m", "sixnines", "broker", name, "--bind", "127.0.0.1:0"],
        stdout=subprocess.PIPE, text=True)
    announced = process.stdout
    assert announced is not None  # stdout=PIPE
    try:
        line = announced.readline()
        if not line:
            raise RuntimeError(f"the {name} broker exited before announcing itself "
                               f"(exit status {process.wait(10)})")
        yield BuiltinBroker(json.loads(line)["listening"], process)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGCONT)  # in case a test left it stopped
            process.terminate()
        process.wait(10)
        announced.close()


@contextmanager
def doomed_builtin(name: str) -> Iterator[tuple[str, Callable[[], None]]]:
    """A builtin broker as `Target.doomed` wants it: its address and a way to kill it."""
    with builtin_broker(name) as broker:
        yield broker.address, broker.process.kill
