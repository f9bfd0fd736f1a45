"""`sixnines collect` on runs whose hosts cannot be reached: one line per host saying why,
the files left where they are, exit 1, no traceback (the hosts are a closed port and a
Docker URL nobody serves; no process is started)."""

from __future__ import annotations

import json
from pathlib import Path

from sixnines.formats.integrity import read_manifest
from sixnines.formats.manifest import AgentEntry
from sixnines.orchestrator.results.collect import unfetched_hosts
from sixnines.orchestrator.run.manifest import new_manifest, write_manifest
from sixnines.orchestrator.scenario.matrix import expand
from sixnines.orchestrator.scenario.model import parse_scenario
from tests.faults.support import SMALL_RUN, failed_cleanly, line_with, sixnines


def killed_run(run_dir: Path, host: str, contact: dict | None) -> Path:
    """What a killed controller leaves: a `running` manifest naming a remote agent."""
    run_dir.mkdir(parents=True)
    agent = AgentEntry(id="producer-0", role="producer", host=host,
                       files_at={"dir": "/var/tmp/sixnines/runs/x/agents/producer-0",
                                 "container": "0123456789abcdef"})
    manifest = new_manifest(expand(parse_scenario(SMALL_RUN))[0], "faults").model_copy(
        update=dict(run_id=run_dir.name, placement={"broker": "local", "agents": [host]},
                    cross_host_latency=False, cpu_sample_ns=1_000_000_000,
                    throughput_window=100, monitor=None, agents=[agent],
                    hosts={host: {"contact": contact} if contact else {}}))
    write_manifest(run_dir, manifest)
    return run_dir


def test_an_unreachable_ssh_host_is_named_and_its_files_stay(tmp_path):
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text("")
    run_dir = killed_run(tmp_path / "r" / "01", "h2", {
        "kind": "ssh", "address": "127.0.0.1", "port": 1, "user": "root", "key": "",
        "known_hosts": str(known_hosts), "workdir": "/var/tmp/sixnines"})
    err = failed_cleanly(sixnines("collect", run_dir))
    line = line_with(err, "host h2 unreachable", "producer-0", "cannot connect")
    assert "root@127.0.0.1:1" in line
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "failed"  # recovered: nothing of its own is here
    assert any("sixnines collect" in problem for problem in manifest["problems"])


def test_an_unreachable_container_engine_is_named(tmp_path):
    run_dir = killed_run(tmp_path / "r" / "01", "pods", {
        "kind": "container", "docker": f"unix://{tmp_path}/nobody.sock", "session": "s"})
    err = failed_cleanly(sixnines("collect", run_dir.parent))
    line_with(err, "host pods unreachable", "no Docker API answers")


def test_a_manifest_without_contacts_says_so(tmp_path):
    run_dir = killed_run(tmp_path / "r" / "01", "h2", None)
    err = failed_cleanly(sixnines("collect", run_dir))
    line_with(err, "host h2", "does not say how to reach it")


def test_report_is_told_which_hosts_still_hold_files(tmp_path):
    run_dir = killed_run(tmp_path / "r" / "01", "h2", None)
    assert unfetched_hosts(run_dir) == ["h2"]
    collected = read_manifest(run_dir)
    collected.agents[0].files_at = None  # what collect records once they are here
    write_manifest(run_dir, collected)
    assert unfetched_hosts(run_dir) == []
