"""Runs across SSH hosts on the test bed (deploy/testbed): the broker on one host, a
producer/consumer pair on each of two others, everything started, measured, fetched,
verified and torn down by one controller; and what happens when a host dies mid-run.

The hosts are network namespaces on this machine, so they share its kernel clock: the
runs are same-clock, and the offset each agent's pings estimate must be within the
uncertainty the pings claim (the true offset is 0).
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from sixnines.formats.chunks import read_index
from sixnines.orchestrator.controller import run_scenario
from sixnines.orchestrator.launchers.base import LaunchError
from sixnines.orchestrator.launchers.ssh import SshLauncher
from sixnines.orchestrator.scenario.hosts import Inventory, LinkShaping
from sixnines.orchestrator.scenario.model import load_scenario
from sixnines.spark_jobs.analyze import analyze_run
from tests.integration.testbed import Testbed, pids_in_namespaces, testbed

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bed() -> Testbed:
    with testbed(3) as made:
        yield made


def scenario_file(tmp_path: Path, bed: Testbed, *, placement: str | None, systems: str,
                  duration: str = "2s", known_hosts: str | None = None) -> Path:
    inventory = bed.inventory
    if known_hosts is not None:  # the bed's inventory, with another known_hosts file
        inventory = tmp_path / "hosts.yaml"
        inventory.write_text(bed.inventory.read_text().replace(
            str(bed.hosts[0].known_hosts), known_hosts))
    text = textwrap.dedent(f"""\
        name: multihost
        systems: {systems}
        workload: {{message_size: 256, rate: 2000, duration: {duration}, warmup: 0s,
                    producers: 2, consumers: 2}}
        inventory: {inventory}
        output: {tmp_path / "runs"}
        """)
    if placement:
        text += f"placement: {placement}\n"
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    return path


def run(path: Path):
    console = Console(file=io.StringIO(), width=200)
    outcome = run_scenario(load_scenario(path), path, output=None, spark_master=None,
                           console=console)
    return outcome, console.file.getvalue()


def manifests(outcome) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(outcome.results_dir.glob("*/manifest.json"))]


def processes_left(bed: Testbed) -> list[int]:
    """Processes in the hosts' namespaces other than their own sshd listeners."""
    listeners = {int((bed.dir / host.name / "sshd.pid").read_text()) for host in bed.hosts}
    return [pid for pid in pids_in_namespaces(bed.netns_inodes) if pid not in listeners]


SYSTEMS = "[{name: tcp, driver: tcp}, {name: redis, driver: redis, broker: {recipe: redis}}]"


def test_three_hosts_give_the_results_of_a_local_run(bed, tmp_path, spark):
    path = scenario_file(tmp_path, bed, systems=SYSTEMS,
                         placement="{broker: h1, agents: [h2, h3]}")
    outcome, log = run(path)
    assert outcome.statuses == ["ok", "ok"], log
    for manifest in manifests(outcome):
        assert manifest["broker"]["host"] == "h1"
        assert manifest["broker"]["address"].startswith(bed.hosts[0].address + ":")
        assert set(manifest["hosts"]) == {"h1", "h2", "h3"}
        placed = {agent["id"]: agent["host"] for agent in manifest["agents"]}
        assert placed == {"consumer-0": "h2", "producer-0": "h2",
                          "consumer-1": "h3", "producer-1": "h3"}
        for agent in manifest["agents"]:
            assert agent["host_facts"]["hostname"] == f"{bed.prefix}-{agent['host']}"
            assert all(a["verified"] for a in agent["artifacts"].values())
            clock = agent["clock"]  # one kernel: same clock, and the estimate agrees
            assert clock["same_clock_as_controller"] and clock["offset_ns"] == 0
            assert abs(clock["estimated_offset_ns"]) <= clock["uncertainty_ns"]
    # the same scenario on this machine alone, for the shape of the results
    (tmp_path / "local").mkdir()
    local, log = run(scenario_file(tmp_path / "local", bed, systems=SYSTEMS, placement=None))
    assert local.statuses == ["ok", "ok"], log
    for remote_dir, local_dir in zip(sorted(outcome.results_dir.glob("0*")),
                                     sorted(local.results_dir.glob("0*")), strict=True):
        remote_summary = analyze_run(spark, remote_dir)
        local_summary = analyze_run(spark, local_dir)
        assert remote_summary.keys() == local_summary.keys()
        assert remote_summary["latency_us"].keys() == local_summary["latency_us"].keys()
        for summary in (remote_summary, local_summary):
            assert (summary["sent"], summary["received"], summary["lost"]) == (4000, 8000, 0)
            assert summary["latency_pairs"]["same_clock"] == 8000
            assert summary["hlog_agrees"] is True
    # nothing left on the hosts: processes, run files, broker data
    assert processes_left(bed) == []
    remote_runs = Path("/var/tmp/sixnines/runs/multihost") / outcome.results_dir.name
    assert not list(remote_runs.glob("*/agents/*")) and not list(remote_runs.glob("*/broker"))


def recorded(output: Path, agent: str, timeout_s: float = 120) -> bool:
    """Whether, within `timeout_s`, the run in `output` started and `agent` closed a chunk
    where it writes (`files_at`: the test bed's hosts share this file system): measuring,
    with something on disk, however busy the machine."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for path in output.glob("multihost/*/01-tcp/manifest.json"):
            try:
                manifest = json.loads(path.read_text())
            except ValueError:  # being replaced
                continue
            where = [a["files_at"]["dir"] for a in manifest["agents"]
                     if a["id"] == agent and a.get("files_at")]
            if "started_at_ns" in manifest and where and read_index(Path(where[0])):
                return True
        time.sleep(0.1)
    return False


def test_ctrl_c_stops_every_remote_process_and_keeps_their_data(bed, tmp_path):
    path = scenario_file(tmp_path, bed, systems="[{name: tcp, driver: tcp}]", duration="60s",
                         placement="{broker: h1, agents: [h2, h3]}")
    process = subprocess.Popen([sys.executable, "-m", "sixnines", "run", str(path),
                                "--no-analysis"], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert recorded(tmp_path / "runs", "producer-0"), "the run did not start"
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=90)
    assert process.returncode == 130, err
    (manifest_path,) = (tmp_path / "runs").glob("multihost/*/01-tcp/manifest.json")
    manifest = json.loads(manifest_path.read_text())
    assert manifest["status"] == "partial"
    assert any("Ctrl-C" in problem for problem in manifest["problems"])
    for agent in manifest["agents"]:  # each stopped, wrote its data, and it was fetched
        assert all(a["verified"] for a in agent["artifacts"].values()), agent["id"]
    assert 0 < sum(a["sent"] for a in manifest["agents"]) < 120_000
    deadline = time.monotonic() + 10
    while processes_left(bed) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_left(bed) == []


def test_a_host_that_dies_mid_run_leaves_the_others_data_marked_partial(bed, tmp_path, spark):
    path = scenario_file(tmp_path, bed, systems="[{name: tcp, driver: tcp}]", duration="8s",
                         placement="{broker: h1, agents: [h2, h3]}")
    h3 = bed.hosts[2]
    killed: list[int] = []

    def kill_h3_when_running() -> None:
        """Once h3's producer has recorded, kill every process in the host (its sshd
        sessions and the agents): the host is gone."""
        inode = {ino for name, ino in _namespaces(bed).items() if name.endswith(h3.name)}
        sshd = int((bed.dir / h3.name / "sshd.pid").read_text())
        if recorded(tmp_path / "runs", "producer-1"):
            for pid in pids_in_namespaces(inode):
                if pid != sshd:
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)

    killer = threading.Thread(target=kill_h3_when_running, daemon=True)
    killer.start()
    started = time.monotonic()
    outcome, log = run(path)
    elapsed = time.monotonic() - started
    killer.join(5)
    assert killed, "h3's producer never recorded"
    assert outcome.statuses == ["partial"], log
    assert elapsed < 60, f"the run took {elapsed:.0f} s after losing a host"
    (manifest,) = manifests(outcome)
    by_id = {agent["id"]: agent for agent in manifest["agents"]}
    assert {by_id["producer-1"]["status"], by_id["consumer-1"]["status"]} == {"failed"}
    assert any("on host h3" in problem for problem in manifest["problems"])
    for survivor in ("producer-0", "consumer-0"):
        assert by_id[survivor]["status"] == "ok"
        assert all(a["verified"] for a in by_id[survivor]["artifacts"].values())
    summary = analyze_run(spark, outcome.results_dir / manifest["run_id"])
    assert summary["status"] == "partial"
    assert summary["latency_us"]["count"] > 0  # h2's pair was measured and merged
    assert any("consumer-1" in note for note in summary["problems"])


def test_an_unknown_host_key_is_a_clear_error_not_a_prompt(bed, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    path = scenario_file(tmp_path, bed, systems="[{name: tcp, driver: tcp}]",
                         placement="{agents: [h2]}", known_hosts=str(empty))
    with pytest.raises(LaunchError, match=r"host h2 .*not in .*known_hosts.*ssh-keyscan"):
        run(path)
    done = subprocess.run([sys.executable, "-m", "sixnines", "run", str(path)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          stdin=subprocess.DEVNULL)
    assert done.returncode != 0
    assert "host key" in done.stdout + done.stderr and "Traceback" not in done.stderr


def test_a_host_link_is_capped_while_in_use_and_restored_after(bed):
    h2 = bed.hosts[1]
    spec = load_scenario_hosts(bed)["h2"]

    def qdisc() -> str:
        return subprocess.run(["ip", "netns", "exec", bed.namespace(h2), "tc", "qdisc", "show",
                               "dev", "eth0"], capture_output=True, text=True).stdout

    launcher = SshLauncher(spec.model_copy(update={"link": LinkShaping(rate="20mbit")}))
    try:
        assert launcher.prepare()["link"] == {"interface": "eth0", "rate": "20mbit"}
        assert "tbf" in qdisc() and "rate 20Mbit" in qdisc()
    finally:
        launcher.close()
    assert "tbf" not in qdisc()
    kernel_has_netem = bed.run("shape", "h3", "--delay", "5ms", check=False).returncode == 0
    bed.run("shape", "h3", "--clear")
    delayed = SshLauncher(spec.model_copy(update={"link": LinkShaping(rate="20mbit", delay="5ms")}))
    try:
        if kernel_has_netem:
            delayed.prepare()
            assert "netem" in qdisc()
        else:
            with pytest.raises(LaunchError, match=r"no netem \(sch_netem\)"):
                delayed.prepare()
    finally:
        delayed.close()
    assert "tbf" not in qdisc() and "netem" not in qdisc()


def load_scenario_hosts(bed: Testbed) -> dict:
    inventory = Inventory.model_validate(yaml.safe_load(bed.inventory.read_text()))
    return {host.name: host for host in inventory.hosts}


def _namespaces(bed: Testbed) -> dict[str, int]:
    from tests.integration.testbed import namespace_inodes

    return namespace_inodes(bed.prefix)
