"""How a run's agents end (orchestrator.run.stop_order), with real processes playing them
(tests/integration/scripted_agents.py): senders are stopped first; once every one has
reported, the receivers are told how much was sent, to hear it out; the monitor goes last.
A receiver is stopped instead when a sender did not report (the count is not known), or
when a repeated interrupt hurries the end."""

from __future__ import annotations

import pytest

from sixnines.orchestrator.run.stop_order import StopOrder
from tests.integration.scripted_agents import Script, scripted

pytestmark = pytest.mark.integration


def test_senders_first_then_receivers_hear_out_what_was_sent_then_the_monitor(tmp_path):
    with scripted(tmp_path, {
            "producer-0": Script("producer", {"stop": "done"}, sent=3),
            "producer-1": Script("producer", {"stop": "done"}, sent=4),
            "consumer-0": Script("consumer", {"finish": "done"}, received=7),
            "monitor": Script("monitor", {"stop": "done"})}) as run:
        StopOrder(run.agents).stop("test")
        assert all(agent.done is not None for agent in run.agents.all())
        told = run.told()
    assert sorted(told[:2]) == ["producer-0 stop", "producer-1 stop"]
    assert told[2:] == ["consumer-0 finish 7", "monitor stop"]


@pytest.mark.parametrize("why", ["a sender died", "hurried"])
def test_receivers_are_stopped_when_what_was_sent_is_not_known_or_we_are_hurried(tmp_path,
                                                                                why):
    dies = why == "a sender died"
    with scripted(tmp_path, {
            "producer-0": Script("producer", {"stop": "exit" if dies else "done"}, sent=3),
            "consumer-0": Script("consumer", {"stop": "done", "finish": "done"})}) as run:
        order = StopOrder(run.agents)
        if not dies:
            order.hurry()
        order.stop("test")
        run.until_finished()
        told = run.told()
    # A sender that died has ended before the receiver is told anything; hurried, both are
    # told at once, and which of two processes notes it first is a race.
    if dies:
        assert told == ["producer-0 stop", "consumer-0 stop"]
    else:
        assert sorted(told) == ["consumer-0 stop", "producer-0 stop"]
