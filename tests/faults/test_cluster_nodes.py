"""A broker of several nodes with one node paused or killed while the load goes on, with a
real NATS cluster started by its recipe (three nats-server processes on loopback, JetStream
streams of three replicas on file storage): clients fail over to the nodes that are up,
every message is accounted for, and the stream loses no message it acknowledged, even when
the node killed leads the stream (if it did lose one, the report would say so: these tests
would fail on that finding, naming it). Every node process the run started is gone when it
ends."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest

from tests.faults.test_acknowledged import NO_NATS, acknowledged, ran

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600), NO_NATS]

CLUSTER = ("{name: sut, driver: nats, broker: {recipe: nats, nodes: 3}, "
           "options: {mode: jetstream, storage: file, replicas: 3}}")
#: Elections take 4 to 9 s in NATS: each node is killed once the last one's are over.
#: Whichever node leads the stream, one of these kills is its leader's.
EACH_KILLED = """\
  - {at: 4s, action: kill, target: broker-0, restart_after: 0.5s}
  - {at: 10s, action: kill, target: broker-1, restart_after: 0.5s}
  - {at: 16s, action: kill, target: broker-2, restart_after: 0.5s}
"""
STARTED_AGAIN = re.compile(r"started again as process (\d+)")


def run_dir(tmp_path: Path) -> Path:
    return next((tmp_path / "out").glob("*/*/01-*"))


def node_pids(manifest: dict) -> list[int]:
    """Every node process the run started: first, and again after a kill."""
    first = [node["pid"] for node in manifest["broker"]["nodes"]]
    again = [int(found[1]) for fault in manifest.get("faults") or []
             if (found := STARTED_AGAIN.search(fault.get("note") or ""))]
    return first + again


def none_left(pids: list[int]) -> None:
    """Each of `pids` is gone; one that is not is killed, and the test fails."""
    alive = []
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        alive.append(pid)
        os.kill(pid, signal.SIGKILL)
    assert not alive, f"node processes left running: {alive}"


def went_through(code: int, manifest: dict, summary: dict) -> None:
    """The run went as planned through its faults. What a stream drops between leaders
    (no ack, never stored) never arrives, so the consumer waits out its drain; the
    analysis, which cannot tell that from a system still holding messages, may then call
    it partial (exit 1), saying so and nothing else (what was sent near the end, after
    deliveries late by an election, is unknown, the rest lost)."""
    assert manifest["status"] == "ok", manifest["problems"]
    assert summary["status"] in ("ok", "partial")
    assert code == (0 if summary["status"] == "ok" else 1), summary["problems"]
    assert all("unknown, not lost" in problem for problem in summary["problems"])


def accounted(summary: dict) -> None:
    """Every message sent is delivered, lost or of unknown fate; none that the stream
    acknowledged is missing, in the run or in any fault's window."""
    assert summary["delivered"] + summary["lost"] + summary["unknown"] == summary["sent"]
    assert summary["lost_acknowledged"] == 0, summary["problems"]
    assert not any("acknowledged" in problem for problem in summary["problems"])
    for fault in summary["faults"] or []:
        assert fault["delivery"]["lost_acknowledged"] == 0, fault


def test_a_cluster_without_faults_delivers_everything(tmp_path):
    code, _, manifest, summary = ran(
        tmp_path, CLUSTER, "{message_size: 64, rate: 300, duration: 3s, warmup: 0.5s, "
                           "drain: 5s}", faults="")
    try:
        assert code == 0 and manifest["status"] == "ok", manifest["problems"]
        nodes = manifest["broker"]["nodes"]
        assert [node["name"] for node in nodes] == ["broker-0", "broker-1", "broker-2"]
        assert manifest["broker"]["address"].split(",") == [
            f"127.0.0.1:{node['ports']['client']}" for node in nodes]
        assert summary["durability"]["label"] == "jetstream, file, R3"
        assert summary["lost"] == summary["unknown"] == summary["duplicated"] == 0
        assert summary["delivered"] == summary["sent"] > 0
        accounted(summary)
        assert summary["cpu"]["broker"]["cores"] > 0  # every node's CPU time, sampled
    finally:
        none_left(node_pids(manifest))


def test_each_node_killed_in_turn_loses_no_acknowledged_message(tmp_path):
    code, _, manifest, summary = ran(
        tmp_path, CLUSTER, "{message_size: 64, rate: 200, duration: 20s, warmup: 0.5s, "
                           "drain: 15s}", faults=EACH_KILLED)
    try:
        went_through(code, manifest, summary)
        for fault in manifest["faults"]:
            assert fault["outcome"] == "done", fault
            assert fault["restarted_ns"] > fault["undone_ns"] > fault["effective_ns"]
        # the stream had a leader killed (each node was, in turn): another was elected
        logs = "".join(log.read_text() for log in run_dir(tmp_path).glob("broker-*.log"))
        assert logs.count("JetStream cluster new stream leader for") >= 2
        # every agent's node was killed once at least: each connected again
        for agent in manifest["agents"]:
            assert agent["reconnects"]["count"] >= 1, agent
        assert sum(run["count"] for run in acknowledged(manifest)) > 0
        accounted(summary)
        figures = summary["faults"]
        assert [fault["target"] for fault in figures] == ["broker-0", "broker-1", "broker-2"]
        for fault in figures:  # (a window may hold no delivery: the stream dropped all)
            assert {"before", "during", "after", "max_in_window_us", "recovered",
                    "backlog"} <= fault.keys() and fault["delivery"]["sent"] > 0, fault
        assert figures[0]["before"]["count"] > 0
    finally:
        none_left(node_pids(manifest))


def test_a_node_paused_and_one_killed_for_good_leave_the_others_serving(tmp_path):
    code, _, manifest, summary = ran(
        tmp_path, CLUSTER, "{message_size: 64, rate: 200, duration: 8s, warmup: 0.5s, "
                           "drain: 15s}",
        faults="  - {at: 1s, action: pause, target: broker-1, for: 1s}\n"
               "  - {at: 4s, action: kill, target: broker-2}\n")
    try:
        went_through(code, manifest, summary)
        pause, kill = manifest["faults"]
        assert pause["outcome"] == kill["outcome"] == "done"
        assert pause["undone_ns"] - pause["effective_ns"] >= 0.9e9
        assert kill["restarted_ns"] is None  # stays down; the run goes on without it
        accounted(summary)
        # a node stopped for less than an election's time is waited for: nothing lost
        assert summary["faults"][0]["delivery"]["lost"] == 0, summary["faults"][0]
    finally:
        none_left(node_pids(manifest))
