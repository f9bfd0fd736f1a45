"""Providing the system under test for a run: start a builtin broker in its own process
(never inside the controller or an agent), or use an external address as given."""

from __future__ import annotations

import json
import queue
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.launchers.base import Launcher, Process

READY_TIMEOUT_S = 15.0


class BrokerError(Exception):
    pass


@dataclass
class RunningBroker:
    system: str
    kind: str  # builtin | external
    address: str
    process: Process | None = None
    facts: dict = field(default_factory=dict)

    def exited(self) -> int | None:
        """Exit code if a broker sixnines started has died, else None."""
        return self.process.poll() if self.process is not None else None

    def stop(self) -> None:
        if self.process is not None:
            self.process.shutdown()

    def describe(self) -> dict:
        return {"system": self.system, "kind": self.kind, "address": self.address, **self.facts}


def broker_argv(driver: str, bind: str) -> list[str]:
    return [sys.executable, "-m", "orchestrator", "broker", driver, "--bind", bind]


def provide_broker(system, launcher: Launcher, log_path: Path) -> RunningBroker:
    """The broker of `system`, started and ready when it is builtin."""
    if system.broker.kind == "external":
        return RunningBroker(system.name, "external", system.broker.external)
    if system.broker.kind != "builtin":
        raise BrokerError(f"{system.name}: broker recipes are not supported yet")
    lines: queue.Queue = queue.Queue()
    process = launcher.start(broker_argv(system.driver, "127.0.0.1:0"),
                             f"broker-{system.name}", log_path, lines)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            _, line = lines.get(timeout=0.1)
        except queue.Empty:
            continue
        if line is None:
            process.shutdown()
            raise BrokerError(f"{system.name}: the builtin {system.driver} broker exited before "
                              f"it was ready (code {process.poll()}); see {log_path}")
        try:
            address = json.loads(line)["listening"]
        except (ValueError, KeyError, TypeError):
            continue
        facts = {"pid": getattr(process, "pid", None), "command": broker_argv(system.driver, "")}
        return RunningBroker(system.name, "builtin", address, process, facts)
    process.shutdown()
    raise BrokerError(f"{system.name}: the builtin {system.driver} broker was not ready within "
                      f"{READY_TIMEOUT_S:.0f} s; see {log_path}")
