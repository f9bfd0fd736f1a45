"""Reconnecting outside the loops (agents.reconnects): a loop that breaks is run again once
its connections are back, each outage counted; trying again is bounded by the system's
`reconnect`, the role's work being over, and the run stopping."""

from __future__ import annotations

import pytest

from sixnines.agents.reconnects import Reconnects
from sixnines.agents.roles import Control
from sixnines.drivers.base import DriverError

NS = 1_000_000_000


class Flaky:
    """A loop whose connection breaks `breaks` times, and a connect refused `refusals`
    times before each success."""

    def __init__(self, breaks: int, refusals: int) -> None:
        self.breaks, self.refusals, self.refused, self.runs = breaks, refusals, 0, 0

    def loop(self) -> None:
        self.runs += 1
        if self.runs <= self.breaks:
            raise DriverError("connection lost")

    def connect(self) -> None:
        if self.refused < self.refusals:
            self.refused += 1
            raise DriverError("cannot connect (refused)")
        self.refused = 0


def test_a_broken_loop_goes_on_once_connected_again_and_each_outage_is_counted():
    flaky, reconnects = Flaky(breaks=2, refusals=2), Reconnects(5 * NS, connections=3)
    reconnects.run(flaky.loop, Control(), flaky.connect, lambda: False)
    assert flaky.runs == 3 and not reconnects.gave_up
    extra = reconnects.extra()["reconnects"]
    assert extra["count"] == 2 and extra["connections"] == 3
    assert all(outage["down_ns"] > 0 for outage in extra["outages"])


def test_nothing_is_reported_when_no_connection_broke():
    reconnects = Reconnects(5 * NS, connections=1)
    reconnects.run(Flaky(0, 0).loop, Control(), Flaky(0, 0).connect, lambda: False)
    assert reconnects.extra() == {}


def test_off_the_first_loss_ends_the_role():
    flaky, reconnects = Flaky(breaks=1, refusals=0), Reconnects(0, connections=1)
    with pytest.raises(DriverError, match=r"^connection lost$"):
        reconnects.run(flaky.loop, Control(), flaky.connect, lambda: False)
    assert reconnects.gave_up and flaky.runs == 1


def test_a_system_not_back_within_the_limit_is_given_up_saying_so():
    flaky, reconnects = Flaky(breaks=1, refusals=10**9), Reconnects(NS // 5, connections=1)
    with pytest.raises(DriverError, match=r"not back within 0.2 s .*cannot connect"):
        reconnects.run(flaky.loop, Control(), flaky.connect, lambda: False)
    assert reconnects.gave_up


@pytest.mark.parametrize("why", ["over", "stopping"])
def test_trying_again_ends_with_the_work_or_the_run(why):
    control = Control()
    if why == "stopping":
        control.stop("told to")
    flaky, reconnects = Flaky(breaks=1, refusals=10**9), Reconnects(60 * NS, connections=1)
    with pytest.raises(DriverError, match=r"^connection lost$"):
        reconnects.run(flaky.loop, control, flaky.connect, lambda: why == "over")
    assert flaky.refused == 0  # not one attempt more
    # its work over, the connection was lost for good; stopped, the stop ended its records
    # (what it then missed is of unknown fate, as at any stop: agents.main)
    assert reconnects.gave_up == (why == "over")
