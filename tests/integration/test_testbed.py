"""The multi-host test bed (deploy/testbed/testbed.sh): hosts reached over SSH with strict
host-key checking, SFTP, bandwidth shaping measured with a bulk TCP transfer, the netem
limit of this kernel, and a teardown that leaves nothing behind."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import time
from contextlib import closing

import paramiko
import pytest

from tests.integration.testbed import (
    Testbed,
    TestbedHost,
    bed_marks,
    default_prefix,
    leftovers,
    netns_pids,
    testbed,
    testbed_script,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(120),
    *bed_marks("ip", "tc", "sshd", "ssh-keygen"),
]

MBIT = 1_000_000
PORT = 5001

# Receives one connection until EOF; prints bits/s from its first byte to its last.
RECEIVER = """
import socket, sys, time
server = socket.create_server((sys.argv[1], int(sys.argv[2])))
print("ready", flush=True)
connection, _ = server.accept()
buffer, total, first, last = bytearray(1 << 20), 0, None, None
while count := connection.recv_into(buffer):
    last = time.perf_counter()
    first, total = first or last, total + count
print(total * 8 / (last - first))
"""

# Sends as fast as the link takes it for argv[3] seconds.
SENDER = """
import socket, sys, time
connection = socket.create_connection((sys.argv[1], int(sys.argv[2])))
chunk, end = bytes(1 << 16), time.perf_counter() + float(sys.argv[3])
while time.perf_counter() < end:
    connection.sendall(chunk)
connection.close()
"""


@pytest.fixture(scope="module")
def bed():
    with testbed(2) as up:
        yield up


def connect(host: TestbedHost, known_hosts: str | None = None) -> paramiko.SSHClient:
    """A client that verifies the host key strictly, as the SSH launcher must."""
    client = paramiko.SSHClient()
    client.load_host_keys(known_hosts or str(host.known_hosts))
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    client.connect(host.address, username=host.user, key_filename=str(host.key),
                   look_for_keys=False, allow_agent=False, timeout=5)
    return client


def run(client: paramiko.SSHClient, command: str) -> str:
    _, stdout, stderr = client.exec_command(command, timeout=10)
    output = stdout.read().decode()
    assert stdout.channel.recv_exit_status() == 0, stderr.read().decode()
    return output


def in_namespace(bed: Testbed, host: TestbedHost, code: str, *args: str) -> list[str]:
    return ["ip", "netns", "exec", bed.namespace(host), sys.executable, "-c", code, *args]


def throughput(bed: Testbed, source: TestbedHost, target: TestbedHost, seconds: float) -> float:
    """Bits per second of a bulk TCP transfer from source to target, seen by the receiver."""
    receiver = subprocess.Popen(in_namespace(bed, target, RECEIVER, target.address, str(PORT)),
                                stdout=subprocess.PIPE, text=True)
    try:
        assert receiver.stdout.readline() == "ready\n"
        subprocess.run(in_namespace(bed, source, SENDER, target.address, str(PORT), str(seconds)),
                       check=True, timeout=seconds + 30)
        output, _ = receiver.communicate(timeout=30)
    finally:
        if receiver.poll() is None:
            receiver.kill()
            receiver.wait()
    return float(output)


def test_each_host_is_its_own_machine_over_ssh_and_sftp(bed):
    assert [host.name for host in bed.hosts] == ["h1", "h2"]
    for host in bed.hosts:
        with connect(host) as client:
            hostname, addresses = run(client, "hostname; ip -4 -o addr show").split("\n", 1)
            assert hostname == bed.namespace(host)
            assert re.findall(r"inet (\S+)/", addresses) == ["127.0.0.1", host.address]
            payload = os.urandom(4096)
            remote = bed.dir / f"sftp-{host.name}"
            with client.open_sftp() as sftp:
                sftp.putfo(io.BytesIO(payload), str(remote))
                back = io.BytesIO()
                sftp.getfo(str(remote), back)
            assert back.getvalue() == payload
            assert remote.read_bytes() == payload  # the hosts share this machine's files
    status = bed.run("status").stdout
    assert all(re.search(rf"^{host.name} .* {host.address} +\d+ alive", status, re.M)
               for host in bed.hosts), status


def test_unknown_or_wrong_host_keys_are_refused(bed, tmp_path):
    empty = tmp_path / "empty_known_hosts"
    empty.touch()
    with pytest.raises(paramiko.SSHException, match="not found in known_hosts"):
        connect(bed.hosts[0], str(empty))
    # h1's key filed under h2's address: a man in the middle, as the client sees it
    h1_line, _ = bed.hosts[0].known_hosts.read_text().splitlines()
    swapped = tmp_path / "swapped_known_hosts"
    swapped.write_text(h1_line.replace(bed.hosts[0].address, bed.hosts[1].address) + "\n")
    with pytest.raises(paramiko.BadHostKeyException):
        connect(bed.hosts[1], str(swapped))


def test_rate_shaping_caps_both_directions(bed):
    h1, h2 = bed.hosts
    bed.run("shape", "h2", "--rate", "50mbit")
    try:
        # tbf counts whole frames: TCP payload is 1448 of every 1514 bytes, ~96% of the rate
        into_h2 = throughput(bed, h1, h2, 2.5)
        out_of_h2 = throughput(bed, h2, h1, 2.5)
    finally:
        bed.run("shape", "h2", "--clear")
    for measured in (into_h2, out_of_h2):
        assert 0.8 * 50 * MBIT <= measured <= 1.1 * 50 * MBIT, f"{measured / MBIT:.1f} Mbit/s"
    assert throughput(bed, h1, h2, 1.0) > 4 * 50 * MBIT


def test_delay_and_loss_need_netem(bed):
    result = bed.run("shape", "h1", "--rate", "10mbit", "--delay", "5ms", "--loss", "0.1%",
                     check=False)
    if result.returncode == 0:  # a kernel with sch_netem: the delay is in place
        assert "netem delay 5ms" in bed.run("status").stdout
        bed.run("shape", "h1", "--clear")
        return
    assert "no netem (sch_netem)" in result.stderr
    assert "rate shaping (--rate) works" in result.stderr
    assert re.search(r"^h1 .* none$", bed.run("status").stdout, re.M)  # nothing half applied


def inside(pids: dict[str, list[int]], session_ns: str, straggler_ns: str, straggler: int) -> bool:
    """Are the stragglers in place: sshd's listener, the session's sshd and its command in
    one namespace, the process started with `ip netns exec` in the other?"""
    return len(pids[session_ns]) >= 3 and straggler in pids[straggler_ns]


def test_down_leaves_nothing_behind_even_with_processes_inside():
    with testbed(2, prefix=f"{default_prefix()}d") as bed:
        h1, h2 = bed.hosts
        client = connect(h1)
        client.exec_command("sleep 300")  # an SSH session outlives its sshd listener
        straggler = subprocess.Popen(["ip", "netns", "exec", bed.namespace(h2), "sleep", "300"])
        deadline = time.monotonic() + 5
        while not inside(netns_pids(bed.prefix), bed.namespace(h1), bed.namespace(h2),
                         straggler.pid):
            assert time.monotonic() < deadline, netns_pids(bed.prefix)
            time.sleep(0.02)
    with closing(client):
        assert leftovers(bed) == []
        assert straggler.wait(5) == -signal.SIGTERM
    # idempotent: nothing there now, so nothing to do
    assert testbed_script("down", "--prefix", bed.prefix, "--dir", str(bed.dir)).returncode == 0


def test_down_cleans_up_a_partly_removed_bed():
    with testbed(2, prefix=f"{default_prefix()}p") as bed:
        # h1's sshd died hard (its pid file stays); h2's namespace lost its name while its
        # sshd still runs inside
        os.kill(int((bed.dir / "h1" / "sshd.pid").read_text()), signal.SIGKILL)
        subprocess.run(["ip", "netns", "del", bed.namespace(bed.hosts[1])], check=True)
    assert leftovers(bed) == []
