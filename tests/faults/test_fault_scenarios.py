"""A scenario's `faults:` checked by `sixnines validate` as a user runs it: each fault that
cannot be done in every run is refused at its own line (FILE:LINE: faults[i].field:
message), exit 2, nothing started; a list that can be done passes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from sixnines.orchestrator.plan.agents import plan_agents
from sixnines.orchestrator.scenario.faults import agent_ids
from sixnines.orchestrator.scenario.workload import WorkloadPoint
from tests.faults.support import sixnines

HEAD = """\
name: f
systems:
  - {name: relay, driver: tcp}
workload: {message_size: 64, rate: 1000, duration: 4s, consumers: [1, 2]}
faults:
"""
FAULTS_LINE = 6  # the first fault's line


def validated(tmp_path: Path, faults: str, head: str = HEAD) -> tuple[int, list[str]]:
    path = tmp_path / "s.yaml"
    path.write_text(head + faults)
    done = sixnines("validate", path)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, [line.replace(f"{path}:", "") for line in
                             done.stderr.splitlines()]


def test_faults_every_run_can_do_pass(tmp_path):
    code, lines = validated(tmp_path, """\
  - {at: 1s, action: pause, target: broker, for: 500ms}
  - {at: 2s, action: kill, target: broker, restart_after: 1s, data: wipe}
  - {at: 1s, action: kill, target: consumer-0}
  - {at: 0, action: pause, target: producer-0, for: 4s}
""")
    assert code == 0, lines


@pytest.mark.parametrize(("fault", "expected"), [
    ("{at: 3s, action: pause, target: broker, for: 2s}",
     "faults[0].at: its end (5s) falls after the measured run (4s)"),
    ("{at: 5s, action: kill, target: consumer-0}",
     "faults[0].at: it (5s) falls after the measured run (4s)"),
    ("{at: 1s, action: kill, target: consumer-1}",
     "faults[0].target: no agent 'consumer-1' in the runs of system 'relay' (they have "
     "consumer-0, producer-0)"),
    ("{at: 1s, action: kill, target: broker}",
     "faults[0]: killing the broker needs `restart_after`"),
    ("{at: 1s, action: pause, target: broker}", "faults[0]: a pause needs `for`"),
    ("{at: 1s, action: kill, target: consumer-0, restart_after: 1s}",
     "faults[0]: only the broker or one of its nodes is started again"),
    ("{at: 1s, action: kill, target: broker-1, restart_after: 1s}",
     "faults[0].target: system 'relay' has a broker of one node: target it as broker "
     "(broker-1 names a node of a broker of several, `nodes: N`)"),
    ("{at: 1s, action: partition, target: {host: h2}, for: 1s}",
     "faults[0].target: no host 'h2' in `hosts` (they are none)"),
    ("{at: 1s, action: partition, target: {host: local}, for: 1s}",
     "faults[0].target: cannot partition host 'local' (local): a host's link is cut or "
     "slowed on SSH hosts only"),
    ("{at: 1s, action: partition, target: broker, for: 1s}",
     "faults[0]: partition targets a host's link: target: {host: NAME}"),
    ("{at: 1s, action: pause, target: {host: local}, for: 1s}",
     "faults[0]: pause targets the broker or an agent; a host's link is cut by partition"),
    ("{at: 1s, action: disk-stall, target: broker, for: 1s}",
     "faults[0].target: disk-stall needs the broker's data on a filesystem of its own, "
     "which only a recipe's broker has (`data_disk`): system 'relay' has a builtin broker"),
    ("{at: 1s, action: disk-full, target: consumer-0, for: 1s}",
     "faults[0]: disk-full targets the broker's data disk: target: broker"),
    ("{at: 1s, action: disk-stall, target: broker}", "faults[0]: a disk-stall needs `for`"),
    ("{at: 1s, action: pause, target: the-broker, for: 1s}",
     "faults[0].target: 'the-broker' is no target"),
    ("{at: -1s, action: pause, target: broker, for: 1s}", "faults[0].at: "),
])
def test_a_fault_no_run_can_do_is_refused_at_its_line(tmp_path, fault, expected):
    code, lines = validated(tmp_path, f"  - {fault}\n")
    assert code == 2
    assert any(line.startswith(f"{FAULTS_LINE}: {expected}") for line in lines), lines


def test_two_faults_on_one_target_at_once_are_refused(tmp_path):
    code, lines = validated(tmp_path, """\
  - {at: 1s, action: pause, target: broker, for: 1s}
  - {at: 1500ms, action: kill, target: broker, restart_after: 1s}
  - {at: 1s, action: kill, target: producer-0}
  - {at: 2s, action: pause, target: producer-0, for: 1s}
""")
    assert code == 2
    assert lines == [
        f"{FAULTS_LINE + 1}: faults[1].at: overlaps faults[0] on broker (one target, one "
        "fault at a time; a killed agent, or node not started again, stays dead)",
        f"{FAULTS_LINE + 3}: faults[3].at: overlaps faults[2] on producer-0 (one target, one "
        "fault at a time; a killed agent, or node not started again, stays dead)"]


CLUSTER = HEAD.replace("  - {name: relay, driver: tcp}", """\
  - name: js
    driver: nats
    broker: {recipe: nats, nodes: 3}
    options: {mode: jetstream, storage: file, replicas: 3}""")
CLUSTER_FAULTS_LINE = FAULTS_LINE + 3


def test_one_node_of_a_cluster_can_be_paused_killed_and_started_again(tmp_path):
    code, lines = validated(tmp_path, """\
  - {at: 0s, action: pause, target: broker-0, for: 1s}
  - {at: 1s, action: kill, target: broker-1, restart_after: 500ms}
  - {at: 1s, action: pause, target: broker-2, for: 500ms}
  - {at: 2s, action: kill, target: broker}
""".replace("target: broker}", "target: broker, restart_after: 1s}"), CLUSTER)
    assert code == 0, lines


def test_a_node_the_cluster_does_not_have_is_refused_at_its_line(tmp_path):
    code, lines = validated(tmp_path, """\
  - {at: 3s, action: kill, target: broker-3, restart_after: 500ms}
  - {at: 1s, action: kill, target: broker-2}
  - {at: 1500ms, action: pause, target: broker, for: 1s}
""", CLUSTER)
    assert code == 2
    assert lines == [
        f"{CLUSTER_FAULTS_LINE}: faults[0].target: no node 'broker-3' in the broker of "
        "system 'js': its 3 nodes are broker-0 to broker-2",
        f"{CLUSTER_FAULTS_LINE + 2}: faults[2].at: overlaps faults[1] on broker-2 and broker "
        "(one target, one fault at a time; a killed agent, or node not started again, "
        "stays dead)"]


def test_a_cluster_is_started_from_a_recipe_that_can_make_one(tmp_path):
    head = CLUSTER.replace("recipe: nats, nodes: 3", "recipe: nats, nodes: 12")
    code, lines = validated(tmp_path, "  - {at: 1s, action: kill, target: broker-0}\n", head)
    assert code == 2 and lines[0].startswith("5: systems[0].broker.nodes: ")
    head = HEAD.replace("  - {name: relay, driver: tcp}",
                        "  - {name: r, driver: redis, broker: {recipe: redis, nodes: 3}}")
    code, lines = validated(tmp_path, "  - {at: 1s, action: kill, target: broker-0}\n", head)
    assert code == 2
    assert lines[0] == ("3: systems[0].broker: recipe 'redis' starts a broker of one node "
                        "(it has no cluster section)")


def test_a_cluster_is_not_started_in_a_container(tmp_path):
    head = CLUSTER.replace("faults:\n", """\
hosts: [{name: box, docker: "unix:///var/run/docker.sock"}]
placement: {broker: box}
faults:
""")
    code, lines = validated(tmp_path, "  - {at: 1s, action: kill, target: broker-0}\n", head)
    assert code == 2
    assert "5: systems[0].broker.nodes: a broker of several nodes is started on local and SSH " \
        "hosts, not on container host 'box'" in lines


def test_the_broker_of_an_external_system_cannot_be_touched(tmp_path):
    head = HEAD.replace("  - {name: relay, driver: tcp}",
                        "  - {name: ext, driver: tcp, broker: {external: '127.0.0.1:9'}}")
    code, lines = validated(tmp_path, "  - {at: 1s, action: pause, target: broker, for: 1s}\n",
                            head)
    assert code == 2
    assert lines == [f"{FAULTS_LINE}: faults[0].target: system 'ext' has an external broker: "
                     "sixnines did not start it, so cannot pause or kill it"]


def test_a_container_host_cannot_pause_or_restart(tmp_path):
    head = HEAD.replace("faults:\n", """\
hosts: [{name: box, docker: "unix:///var/run/docker.sock"}]
placement: {broker: box}
faults:
""")
    code, lines = validated(tmp_path, """\
  - {at: 1s, action: pause, target: broker, for: 1s}
  - {at: 3s, action: kill, target: broker, restart_after: 500ms}
""", head)
    assert code == 2
    line = FAULTS_LINE + 2
    assert lines == [
        f"{line}: faults[0].action: cannot pause broker on host 'box' (container): a pause "
        "is possible on local and SSH hosts",
        f"{line + 1}: faults[1].restart_after: cannot start the broker again on host 'box' "
        "(container): a restart is possible on local and SSH hosts"]


DISK_HEAD = HEAD.replace("  - {name: relay, driver: tcp}", """\
  - {name: js, driver: nats, broker: {recipe: nats, data_disk: 256MB},
     options: {mode: jetstream, storage: file}}""")
DISK_FAULTS = """\
  - {at: 1s, action: disk-stall, target: broker, for: 1s}
  - {at: 2500ms, action: disk-full, target: broker, for: 1s}
"""


def test_disk_faults_on_a_broker_with_a_data_disk_pass(tmp_path):
    code, lines = validated(tmp_path, DISK_FAULTS, DISK_HEAD)
    assert code == 0, lines


def test_a_disk_fault_without_a_data_disk_names_what_to_add(tmp_path):
    code, lines = validated(tmp_path, DISK_FAULTS, DISK_HEAD.replace(", data_disk: 256MB", ""))
    assert code == 2
    assert lines == [
        f"{FAULTS_LINE + 1 + offset}: faults[{offset}].target: {action} needs the broker's "
        "data on a filesystem of its own: add `data_disk: SIZE` to system 'js''s broker "
        "(e.g. broker: {recipe: nats, data_disk: 256MB})"
        for offset, action in enumerate(("disk-stall", "disk-full"))]


def test_a_disk_fault_on_an_external_broker_is_refused(tmp_path):
    head = HEAD.replace("  - {name: relay, driver: tcp}",
                        "  - {name: ext, driver: tcp, broker: {external: '127.0.0.1:9'}}")
    code, lines = validated(tmp_path, DISK_FAULTS.splitlines()[0] + "\n", head)
    assert code == 2
    assert lines == [f"{FAULTS_LINE}: faults[0].target: disk-stall needs the broker's data on "
                     "a filesystem of its own, which only a recipe's broker has (`data_disk`): "
                     "system 'ext' has an external broker"]


def test_a_data_disk_needs_a_recipe_and_a_size_it_can_be(tmp_path):
    for broker, expected in (
            ("{data_disk: 256MB}", "data_disk goes with a recipe"),
            ("{external: '127.0.0.1:9', data_disk: 256MB}", "data_disk goes with a recipe"),
            ("{recipe: nats, data_disk: 1MB}", "must be from 32MiB to 64GiB"),
            ("{recipe: nats, data_disk: lots}", "'lots' is not a size")):
        head = DISK_HEAD.replace("{recipe: nats, data_disk: 256MB}", broker)
        code, lines = validated(tmp_path, "", head.replace("faults:\n", ""))
        assert code == 2 and any(expected in line for line in lines), (broker, lines)


def test_a_container_host_cannot_have_a_data_disk(tmp_path):
    head = DISK_HEAD.replace("faults:\n", """\
hosts: [{name: box, docker: "unix:///var/run/docker.sock"}]
placement: {broker: box}
faults:
""")
    code, lines = validated(tmp_path, DISK_FAULTS, head)
    assert code == 2
    assert lines[0] == (
        "3: systems[0].broker.data_disk: a data disk is made on local and SSH hosts; the "
        "broker's host 'box' is a container host (a loop mount there needs a privileged "
        "container)")
    assert lines[1:] == [
        f"{FAULTS_LINE + 3 + offset}: faults[{offset}].action: cannot {action} the broker's "
        "disk on host 'box' (container): a data disk is made on local and SSH hosts"
        for offset, action in enumerate(("disk-stall", "disk-full"))]


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="runs validate as another user, which needs root and setpriv")
def test_validate_as_a_user_who_cannot_mount_names_what_a_data_disk_needs():
    """The same scenario, validated by `nobody` (a directory of its own in /tmp: the
    test's is root's alone): one line names the system and what is missing here."""
    with tempfile.TemporaryDirectory(dir="/tmp") as directory:
        os.chmod(directory, 0o777)
        path = Path(directory) / "s.yaml"
        path.write_text(DISK_HEAD.replace("faults:\n", ""))
        path.chmod(0o644)
        done = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable,
             "-m", "sixnines", "validate", str(path)],
            capture_output=True, text=True, timeout=300, cwd=directory,
            env={**os.environ, "HOME": directory})
    assert done.returncode == 2, done.stderr
    assert f"{path}: systems[0] (js): a data disk for the broker needs root (it mounts a " \
        "filesystem) on this machine" in done.stderr.splitlines()


def test_a_disk_fault_overlapping_a_pause_of_the_broker_is_refused(tmp_path):
    code, lines = validated(tmp_path, """\
  - {at: 1s, action: disk-stall, target: broker, for: 2s}
  - {at: 2s, action: pause, target: broker, for: 1s}
""", DISK_HEAD)
    assert code == 2
    assert lines == [f"{FAULTS_LINE + 2}: faults[1].at: overlaps faults[0] on broker (one "
                     "target, one fault at a time; a killed agent, or node not started "
                     "again, stays dead)"]


SSH_HOSTS = """\
hosts:
  - {name: h1, address: 10.0.0.1}
  - {name: h2, address: 10.0.0.2, link: {rate: 100mbit}}
placement: {broker: h1, agents: [h2]}
faults:
"""


def test_link_faults_on_ssh_hosts_pass(tmp_path):
    code, lines = validated(tmp_path, """\
  - {at: 0s, action: partition, target: {host: h2}, for: 2s}
  - {at: 1s, action: slow-link, target: {host: h1}, rate: 10mbit, for: 1s}
  - {at: 2500ms, action: slow-link, target: {host: h1}, delay: 20ms, loss: 1%, for: 1s}
""", HEAD.replace("faults:\n", SSH_HOSTS))
    assert code == 0, lines


@pytest.mark.parametrize(("fault", "expected"), [
    ("{at: 1s, action: partition, target: {host: h1}}",
     "faults[0]: a partition needs `for` (how long it lasts)"),
    ("{at: 1s, action: slow-link, target: {host: h1}, for: 1s}",
     "faults[0]: a slow-link needs `rate`, `delay` or `loss`"),
    ("{at: 1s, action: partition, target: {host: h1}, rate: 1mbit, for: 1s}",
     "faults[0]: a partition drops everything: `rate`, `delay` and `loss` go with slow-link"),
    ("{at: 1s, action: pause, target: broker, for: 1s, delay: 5ms}",
     "faults[0]: `rate`, `delay` and `loss` go with slow-link"),
    ("{at: 1s, action: slow-link, target: {host: h1}, rate: fast, for: 1s}",
     "faults[0].rate: 'fast' is not a link rate"),
    ("{at: 1s, action: slow-link, target: {host: h2}, rate: 1mbit, for: 1s}",
     "faults[0].target: host 'h2' has its link shaped for the whole run (`link:`)"),
    ("{at: 1s, action: partition, target: {host: h3}, for: 1s}",
     "faults[0].target: no host 'h3' in `hosts` (they are h1, h2)"),
    ("{at: 3s, action: partition, target: {host: h1}, for: 2s}",
     "faults[0].at: its end (5s) falls after the measured run (4s)"),
])
def test_a_link_fault_no_run_can_do_is_refused_at_its_line(tmp_path, fault, expected):
    code, lines = validated(tmp_path, f"  - {fault}\n", HEAD.replace("faults:\n", SSH_HOSTS))
    assert code == 2
    line = FAULTS_LINE + SSH_HOSTS.count("\n") - 1
    assert any(entry.startswith(f"{line}: {expected}") for entry in lines), lines


@pytest.mark.parametrize(("mode", "responder"), [("one-way", False), ("round-trip", False),
                                                 ("round-trip", True)])
def test_fault_targets_are_the_agents_the_plan_makes(mode, responder):
    """validate names the agents as the run's plan does (orchestrator.plan.agents)."""
    workload = WorkloadPoint(mode=mode, message_size=64, rate=1000, duration_ns=10**9,
                             producers=3, consumers=2)
    planned = [plan.agent_id for plan in plan_agents(workload, responder)]
    assert agent_ids(3, 2, workload.mode, responder) == planned
