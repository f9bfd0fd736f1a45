"""Connections made again after they broke, as production clients do (a broker restarted):
bounded in time, counted, and reported in the agent's `done`.

The send and receive loops know nothing of it: a broken connection ends a loop with
`DriverError` as before, the role makes its connections again (`Reconnects.recover`) and
runs the loop anew from where it stopped. Nothing is added to the loops themselves, so a
run whose connections never break pays nothing for it. Messages a loop was sending when
the connection broke are sent again on the new one (same sequence numbers, their intended
times unchanged, so the outage shows as their latency); what the old connection had
taken is lost or delivered, as the system did it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from sixnines.agents.streams import clock
from sixnines.drivers.base import DriverError

RETRY_S = 0.05  # between two attempts to connect


class Stopping(Protocol):
    """What `recover` asks of the run: whether it is being stopped (agents.roles.Control)."""

    stopping: bool


#: Whether the role has nothing left to do a connection would serve (its schedule is over,
#: its drain has run out): trying again ends there.
Over = Callable[[], bool]


class Reconnects:
    """An agent's reconnections: how long it may try (`limit_ns`, 0: never), and each
    outage it recovered from (when the connection broke, how long until all its
    connections were back), on the agent's clock."""

    def __init__(self, limit_ns: int, connections: int) -> None:
        self.limit_ns = limit_ns
        self.connections = connections
        self.outages: list[tuple[int, int]] = []  # (broke_ns, down_ns)
        #: The connection broke for good: the agent's records end there, by the system's
        #: doing, not by a stop (agents.main counts what followed as lost, not unknown).
        self.gave_up = False

    def recover(self, error: DriverError, control: Stopping, connect: Callable[[], None],
                over: Over) -> None:
        """Call `connect` (all of the agent's connections made anew) until it succeeds;
        raise `error` when reconnecting is off, or once the run is stopping, the role's
        work is `over` or `limit_ns` passed (saying so)."""
        broke = clock()
        self.gave_up = True
        if self.limit_ns <= 0:
            raise error
        deadline = broke + self.limit_ns
        last: DriverError = error
        while not control.stopping and not over() and clock() < deadline:
            try:
                connect()
            except DriverError as exc:
                last = exc
                time.sleep(RETRY_S)
                continue
            self.outages.append((broke, clock() - broke))
            self.gave_up = False
            return
        if control.stopping:  # the stop ended the records, not the system: what is still
            self.gave_up = False  # missing then is of unknown fate, as at any stop
            raise error
        if clock() < deadline:
            raise error
        raise DriverError(f"{error} (not back within {self.limit_ns / 1e9:g} s of trying "
                          f"to connect again: {last})")

    def run(self, loop: Callable[[], None], control: Stopping,
            connect: Callable[[], None], over: Over) -> None:
        """`loop` until it ends, the connections made again (`connect`) and the loop run
        anew each time one breaks, while `recover` allows."""
        while True:
            try:
                loop()
                return
            except DriverError as exc:
                self.recover(exc, control, connect, over)

    def extra(self) -> dict[str, object]:
        """For `done`: nothing when no connection broke."""
        if not self.outages:
            return {}
        return {"reconnects": {"count": len(self.outages), "connections": self.connections,
                               "outages": [{"at_ns": at, "down_ns": down}
                                           for at, down in self.outages]}}
