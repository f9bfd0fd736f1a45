"""The control channel of a run's agents (orchestrator.run.channel) with real processes
(tests/integration/scripted_agents.py): each agent's lines arrive as its messages with
their sender, a `done` is recorded on the agent, and a line that does not decode or an end
of output without a report is that agent's failure, naming its log."""

from __future__ import annotations

import time

import pytest

from sixnines.formats import protocol as p
from tests.integration.scripted_agents import Script, scripted

pytestmark = pytest.mark.integration


def test_each_agent_s_lines_are_its_messages_or_its_failure(tmp_path):
    with scripted(tmp_path, {
            "talker": Script("producer", {"stop": "done"}, sent=5),
            "garbler": Script("consumer", {}, says=("not a message",)),
            "quitter": Script("consumer", {"stop": "exit"})}) as run:
        channel, by_id = run.agents.channel, run.agents.by_id
        assert run.until_finished([by_id["garbler"]]) == [("garbler", None)]
        assert "bad control message" in by_id["garbler"].failure
        for agent_id in ("talker", "quitter"):
            assert by_id[agent_id].send(p.Stop(reason="test"))
        found = run.until_finished([by_id["talker"], by_id["quitter"]])
        assert ("talker", "done") in found and ("quitter", None) in found
        talker, quitter = by_id["talker"], by_id["quitter"]
        assert talker.done is not None and talker.failure is None and talker.sent == 5
        assert quitter.done is None and quitter.failure == (
            f"exited (code 3) without reporting its results; see {quitter.out_dir}/agent.log")
        rest = []  # what is left: ends of output of agents that finished
        while (event := channel.next(time.monotonic() + 0.5)) != (None, None):
            rest.append(event)
        assert all(message is None and agent.finished for message, agent in rest), rest
