"""The manifest as a run keeps it (orchestrator.run.record), with real processes playing its
agents (tests/integration/scripted_agents.py): written while they run (each `running`), then
concluded: `ok` when every agent reported so, `partial` naming an agent that died (and a
monitor that died mid-run, whose samples stop there), `failed` when no agent recorded
anything."""

from __future__ import annotations

import json

import pytest

from sixnines.formats.manifest import Clock
from sixnines.orchestrator.plan.cpus import CpuPlacement
from sixnines.orchestrator.run.stop_order import StopOrder
from tests.integration.scripted_agents import Script, Scripted, scripted

pytestmark = pytest.mark.integration

REPORTS = {"stop": "done", "finish": "done"}


def _concluded(run: Scripted) -> dict:
    """The run's manifest written while its agents run, then once they ended and the run
    was concluded (as the runner does); the one on disk at the end."""
    record, cpus = run.record, CpuPlacement()
    record.write(run.agents, cpus)
    manifest = run.agents.run_dir / "manifest.json"
    assert {entry["status"] for entry in json.loads(manifest.read_text())["agents"]} == {
        "running"}
    StopOrder(run.agents).stop("test")
    run.until_finished()
    record.write(run.agents, cpus)
    record.conclude(run.agents, cpus)
    record.write(run.agents, cpus, final=True)
    return json.loads(manifest.read_text())


def test_a_run_whose_agents_all_reported_is_ok(tmp_path):
    with scripted(tmp_path, {"producer-0": Script("producer", REPORTS, sent=3),
                             "consumer-0": Script("consumer", REPORTS, received=3),
                             "monitor": Script("monitor", REPORTS)}) as run:
        manifest = _concluded(run)
    assert manifest["status"] == "ok" and manifest["problems"] == []
    assert [(entry["id"], entry["status"], entry["sent"], entry["received"])
            for entry in manifest["agents"]] == [("producer-0", "ok", 3, 0),
                                                 ("consumer-0", "ok", 0, 3)]
    assert manifest["monitor"]["status"] == "ok"


def test_an_agent_or_monitor_that_died_leaves_the_run_partial_and_named(tmp_path):
    with scripted(tmp_path, {"producer-0": Script("producer", REPORTS, sent=3),
                             "consumer-0": Script("consumer", {"finish": "exit"}),
                             "monitor": Script("monitor", {"stop": "exit"})}) as run:
        run.agents.monitor.clock = Clock()  # it answered the clock pings: it was running
        manifest = _concluded(run)
    assert manifest["status"] == "partial"
    consumer = next(entry for entry in manifest["agents"] if entry["id"] == "consumer-0")
    assert consumer["status"] == "failed"
    assert any(problem.startswith("consumer-0 on host local: exited (code 3) without "
                                  "reporting its results") for problem in manifest["problems"])
    assert any(problem.startswith("the broker CPU monitor died during the run")
               for problem in manifest["problems"])
    assert manifest["monitor"]["status"] == "failed"
    assert any(note.startswith("monitor on host local: exited")
               for note in manifest["monitor"]["notes"])  # its own trouble: a note


def test_a_run_in_which_no_agent_recorded_anything_failed(tmp_path):
    with scripted(tmp_path, {"producer-0": Script("producer", {"stop": "exit"}),
                             "consumer-0": Script("consumer", {"stop": "exit"})}) as run:
        manifest = _concluded(run)
    assert manifest["status"] == "failed"
    assert {entry["status"] for entry in manifest["agents"]} == {"failed"}
