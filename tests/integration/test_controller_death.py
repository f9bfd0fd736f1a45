"""A controller SIGKILLed mid-run, with its broker and agents on this machine, on SSH hosts
(the test bed's network namespaces) and in containers: within 5 s nothing it started runs
on any host, the agents closed their chunks on the way out, and `sixnines collect` then
`sixnines report` give a partial run with the data recorded up to the kill.

Each test prints the time from the kill to the last process gone (`-s` shows it)."""

from __future__ import annotations

import json
import signal
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import docker
import pytest

from sixnines.formats.chunks import read_index
from sixnines.formats.protocol import SILENCE_S
from sixnines.orchestrator.launchers.guard import GRACE_S
from tests.faults.processes import Sixnines, alive, command_line
from tests.faults.test_interrupts import (
    BOUND_S,
    assert_data_on_disk_accounted,
    manifest_of,
    started,
)
from tests.integration.containers import BASE_IMAGE
from tests.integration.testbed import Testbed, pids_in_namespaces, testbed

pytestmark = pytest.mark.integration

#: Chunks of at most 4096 records: a producer at 1000 msg/s closes one every ~1 s.
STREAMING = {"SIXNINES_CHUNK_ROWS": "4096"}


@pytest.fixture(scope="module")
def bed() -> Testbed:
    with testbed(3) as made:
        yield made


def scenario(tmp_path: Path, hosts: str = "", system: str = "driver: tcp") -> Path:
    """Named as test_interrupts expects (`faults`, system `sut`, output `out`)."""
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: faults
        systems: [{{name: sut, {system}}}]
        workload: {{message_size: 64, rate: 2000, duration: 60s, warmup: 0s, drain: 2s,
                    producers: 2, consumers: 2}}
        """) + hosts)
    return path


def seconds_until(done: Callable[[], bool], limit_s: float) -> float:
    """How long until `done()` held (checked every 20 ms), at most `limit_s`."""
    began = time.monotonic()
    while not done() and time.monotonic() - began < limit_s:
        time.sleep(0.02)
    return time.monotonic() - began


def kill_mid_run(tmp_path: Path, path: Path, elsewhere: Callable[[], list[str]],
                 how: signal.Signals = signal.SIGKILL) -> Path:
    """Start `sixnines run`, kill it (`how`) 3 s into the schedule, and check that nothing
    it started still runs within BOUND_S: here (its process tree) nor `elsewhere()` (on
    the hosts); the run directory."""
    controller = Sixnines("run", str(path), "--output", "out", "--no-analysis", cwd=tmp_path,
                          env=STREAMING)
    run_dir = started(tmp_path, controller, timeout_s=600)
    time.sleep(3)
    tree = controller.snapshot()

    def left() -> list[str]:
        return [command_line(pid) for pid in tree if alive(pid)] + elsewhere()

    assert len(left()) >= 4, left()  # at least broker and agents (and a monitor)
    controller.process.send_signal(how)
    elapsed = seconds_until(lambda: not left(), 3 * BOUND_S)
    print(f"\nkill-to-gone {path.parent.name} ({how.name}): {elapsed:.2f} s")
    controller.finish()
    assert left() == []
    assert elapsed < BOUND_S
    assert manifest_of(run_dir)["status"] == "running"  # what the controller left
    return run_dir


def collect_and_report(tmp_path: Path, run_dir: Path, fetched: list[str]) -> dict:
    """`sixnines collect` (fetching `fetched`' files), then `sixnines report`: the run is
    partial, with every agent's data up to the kill; the manifest."""
    collect = Sixnines("collect", str(run_dir.parent), cwd=tmp_path)
    code, _, err = collect.finish(timeout_s=300)
    assert code == 0, err
    assert "Traceback" not in err
    for agent in fetched:
        assert agent in err, err
    again = Sixnines("collect", str(run_dir.parent), cwd=tmp_path)
    code, _, err = again.finish(timeout_s=300)
    assert code == 0 and "nothing to fetch" in err, err  # what is here is not asked for
    manifest = manifest_of(run_dir)
    assert manifest["status"] == "partial"
    assert any("controller stopped before the run ended" in p for p in manifest["problems"])
    assert_data_on_disk_accounted(run_dir)
    for agent in manifest["agents"]:  # each closed its last chunk on the way out
        folder = run_dir / "agents" / agent["id"]
        assert agent["status"] == "partial", agent
        assert sum(chunk["rows"] for chunk in read_index(folder)) == \
            (agent["sent"] if agent["role"] == "producer" else agent["received"]) > 0

    report = Sixnines("report", str(run_dir.parent), cwd=tmp_path)
    code, _, err = report.finish(timeout_s=600)
    assert code == 1, err  # partial
    assert "Traceback" not in err
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["status"] == "partial"
    assert summary["received"] > 0 and summary["latency_us"]["count"] > 0
    return manifest


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGHUP], ids=["sigkill", "sighup"])
def test_local(tmp_path, how):
    """Broker and agents on this machine: the guard and the agents' end of input. SIGHUP
    is the controller's terminal gone (the SSH session to its machine dropped): it dies
    of it as of SIGKILL."""
    run_dir = kill_mid_run(tmp_path, scenario(tmp_path), elsewhere=list, how=how)
    collect_and_report(tmp_path, run_dir, fetched=[])


@pytest.mark.parametrize("system", ["driver: tcp", "driver: redis, broker: {recipe: redis}"],
                         ids=["builtin", "redis"])
def test_ssh_hosts(bed, tmp_path, system):
    """Broker on h1, agents on h2 and h3: the hosts' guards, sshd closing the agents'
    input; nothing but each host's sshd listener is left in the namespaces. A recipe's
    broker reads no input: only h1's guard stops it."""
    listeners = {int((bed.dir / host.name / "sshd.pid").read_text()) for host in bed.hosts}

    def left() -> list[str]:
        return [command_line(pid) for pid in pids_in_namespaces(bed.netns_inodes)
                if pid not in listeners]

    path = scenario(tmp_path, f"inventory: {bed.inventory}\n"
                              "placement: {broker: h1, agents: [h2, h3]}\n", system)
    run_dir = kill_mid_run(tmp_path, path, left)
    remote = manifest_of(run_dir)["agents"]
    assert all(entry["files_at"]["dir"].startswith("/var/tmp/sixnines/") for entry in remote)
    manifest = collect_and_report(tmp_path, run_dir, fetched=[e["id"] for e in remote])
    for entry in remote:  # the remote copies went once they were safe here
        assert not Path(entry["files_at"]["dir"]).exists()
    assert all(entry.get("files_at") is None for entry in manifest["agents"])


def freeze_mid_run(tmp_path: Path, path: Path, ours: Callable[[], list[str]]) -> Path:
    """Start `sixnines run`, freeze it (SIGSTOP: its laptop's lid closed) 3 s into the
    schedule, and check that `ours()` (what it started, elsewhere) empties within the
    silence bound plus the agents' time to write; then kill it. The run directory."""
    controller = Sixnines("run", str(path), "--output", "out", "--no-analysis", cwd=tmp_path,
                          env=STREAMING)
    run_dir = started(tmp_path, controller, timeout_s=600)
    time.sleep(3)
    assert len(ours()) >= 4, ours()
    controller.process.send_signal(signal.SIGSTOP)
    try:
        elapsed = seconds_until(lambda: not ours(), SILENCE_S + GRACE_S + BOUND_S)
        print(f"\nfrozen-to-gone {path.parent.name}: {elapsed:.2f} s")
        assert ours() == []
        assert elapsed < SILENCE_S + GRACE_S
    finally:
        controller.process.kill()
        controller.finish()
    return run_dir


def test_a_controller_that_falls_silent_is_taken_for_dead_on_ssh_hosts(bed, tmp_path):
    """Its connections stay open, no FIN comes, but the heartbeats stop, and each host's
    guard stops everything there."""
    listeners = {int((bed.dir / host.name / "sshd.pid").read_text()) for host in bed.hosts}

    def ours() -> list[str]:
        """What runs in the hosts besides sshd (whose sessions wait for the frozen end)."""
        return [line for pid in pids_in_namespaces(bed.netns_inodes)
                if pid not in listeners and not (line := command_line(pid)).startswith("sshd")]

    path = scenario(tmp_path, f"inventory: {bed.inventory}\n"
                              "placement: {broker: h1, agents: [h2, h3]}\n")
    run_dir = freeze_mid_run(tmp_path, path, ours)
    collect_and_report(tmp_path, run_dir, fetched=[e["id"] for e in
                                                   manifest_of(run_dir)["agents"]])


def container_scenario(tmp_path: Path, docker_host: str) -> Path:
    return scenario(tmp_path, textwrap.dedent(f"""\
        hosts:
          - {{name: pods, docker: "{docker_host}", base_image: "{BASE_IMAGE}"}}
        placement: {{broker: pods, agents: [pods]}}
        """))


@pytest.mark.parametrize("how", ["killed", "frozen"])
def test_containers(docker_host, tmp_path, how):
    """Broker and agents in containers. Killed: their input ends with the attach
    connection. Frozen (the connection could be to an engine on another machine, where
    it would stay open): the heartbeats on their input stop. Either way the agents write
    their data first, and the broker leaves once its CPU monitor wrote its samples."""
    client = docker.DockerClient(base_url=docker_host)

    def left() -> list[str]:
        return [c.name for c in client.containers.list(filters={"label": "sixnines=1"})]

    path = container_scenario(tmp_path, docker_host)
    try:
        if how == "killed":
            run_dir = kill_mid_run(tmp_path, path, left)
        else:
            run_dir = freeze_mid_run(tmp_path, path, left)
        left_behind = manifest_of(run_dir)
        agents, monitor = left_behind["agents"], left_behind["monitor"]
        collect_and_report(tmp_path, run_dir, fetched=[e["id"] for e in agents])
        remaining = {c.id for c in client.containers.list(all=True,
                                                          filters={"label": "sixnines=1"})}
        collected = manifest_of(run_dir)["monitor"]
        assert collected["artifacts"]["cpu.parquet"]["verified"], collected  # in time
        assert not remaining & {e["files_at"]["container"] for e in [*agents, monitor]}
    finally:
        leftovers = client.containers.list(all=True, filters={"label": "sixnines=1"})
        for container in sorted(leftovers, key=lambda c: c.attrs["Created"], reverse=True):
            container.remove(force=True)  # a monitor before the broker whose PIDs it shares
        client.close()
