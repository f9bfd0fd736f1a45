"""The files of a run's agents brought to the controller (orchestrator.run.collection), with
real processes playing them on this machine (tests/integration/scripted_agents.py): each
file an agent announced is checked against its checksum (one changed since is a problem of
the run), and an agent whose report never arrived is taken from the done.json it kept."""

from __future__ import annotations

import pytest

from sixnines.orchestrator.run.collection import collect
from sixnines.orchestrator.run.stop_order import StopOrder
from tests.integration.scripted_agents import Script, scripted

pytestmark = pytest.mark.integration

FILES = {"data.bin": "what it recorded\n"}


def test_announced_files_are_verified_and_a_kept_done_json_stands_for_a_lost_report(
        tmp_path):
    with scripted(tmp_path, {
            "producer-0": Script("producer", {"stop": "kept"}, sent=3, files=FILES),
            "consumer-0": Script("consumer", {"stop": "done"}, received=3, files=FILES),
            }) as run:
        StopOrder(run.agents).stop("test")
        run.until_finished()
        producer, consumer = run.agents.by_id["producer-0"], run.agents.by_id["consumer-0"]
        assert producer.done is None and producer.failure  # it said nothing
        (consumer.out_dir / "data.bin").write_text("changed since\n")
        collect(run.agents)
    assert producer.done is not None and producer.failure is None
    assert (producer.done.status, producer.sent) == ("ok", 3)
    assert producer.artifacts["data.bin"].verified
    assert not consumer.artifacts["data.bin"].verified
    assert run.record.problems == [
        "consumer-0: data.bin is missing or does not match its checksum"]
