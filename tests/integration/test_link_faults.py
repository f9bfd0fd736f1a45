"""Network faults on the test bed's SSH hosts, with real runs: the builtin relay on h1, a
producer and a consumer on h2, whose link is slowed (tbf) and then cut (nftables) while
the load goes on. The answers are known by construction:

- a slow link of 1 Mbit/s under 4 Mbit/s of messages lowers the receive rate to what the
  link carries, and loses nothing;
- a message intended while h2 is cut waits at least until the cut ends, and arrives;
- a controller SIGKILLed while a fault is held leaves no table or qdisc on the host: the
  host's guard stops the holder, which takes the fault away;
- a host without `nft` (hidden in its mount namespace) is cut by iptables chains of our
  own, removed as the table is; with neither, the run fails before it starts, saying so;
- a delay where the kernel has no netem fails the run before it starts, saying so."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.faults.processes import Sixnines
from tests.faults.test_interrupts import manifest_of, started
from tests.integration.testbed import Testbed, bed_marks, pids_in_namespaces, testbed

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(600),
    *bed_marks("ip", "tc", "nft", "iptables", "nsenter", "sshd"),
]

NS = 1_000_000_000
RATE = 500  # msg/s of 1 KiB: ~4.3 Mbit/s on the wire
SLOW_AT_S, SLOW_S = 1.0, 2.0
CUT_AT_S, CUT_S = 4.0, 2.0
#: The holder's answer and the controller's reading of it come after the table is gone.
ANSWER_S = 0.1


def scenario(tmp_path: Path, bed: Testbed, faults: str, duration: str = "7s") -> Path:
    """Named as test_interrupts expects (`faults`, system `sut`, output `out`)."""
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: faults
        systems: [{{name: sut, driver: tcp}}]
        workload: {{message_size: 1024, rate: {RATE}, duration: {duration}, warmup: 1s,
                    drain: 5s}}
        inventory: {bed.inventory}
        placement: {{broker: h1, agents: [h2]}}
        faults:
        """) + textwrap.indent(textwrap.dedent(faults), "  "))
    return path


@pytest.fixture(scope="module")
def bed() -> Testbed:
    with testbed(2) as made:
        yield made


@pytest.fixture(scope="module")
def faulted_run(bed, tmp_path_factory) -> tuple[Path, dict, dict]:
    """h2 slowed, then cut, in one real run analysed as usual: (run dir, manifest,
    summary)."""
    tmp_path = tmp_path_factory.mktemp("link")
    path = scenario(tmp_path, bed, f"""\
        - {{at: {SLOW_AT_S}s, action: slow-link, target: {{host: h2}}, rate: 1mbit,
           for: {SLOW_S}s}}
        - {{at: {CUT_AT_S}s, action: partition, target: {{host: h2}}, for: {CUT_S}s}}
        """)
    code, _, err = Sixnines("run", str(path), "--output", "out", cwd=tmp_path).finish(
        timeout_s=600)
    assert code == 0, err
    (run_dir,) = (tmp_path / "out").glob("faults/*/01-sut")
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    return run_dir, manifest_of(run_dir), summary


def received(run_dir: Path) -> pa.Table:
    """The consumer's records (the hosts share this machine's monotonic clock, the
    controller's: the faults' times compare with them as they are)."""
    chunks = sorted((run_dir / "agents" / "consumer-0").glob("messages-*.parquet"))
    return pa.concat_tables(pq.read_table(chunk) for chunk in chunks)


def test_the_faults_are_recorded_as_done_on_the_runs_clock(faulted_run):
    _, manifest, _ = faulted_run
    measured_start = manifest["started_at_ns"] + manifest["workload"]["warmup_ns"]
    slow, cut = manifest["faults"]
    for record, at_s, for_s in ((slow, SLOW_AT_S, SLOW_S), (cut, CUT_AT_S, CUT_S)):
        assert (record["outcome"], record["target"]) == ("done", "host:h2"), record
        assert record["issued_ns"] - measured_start == pytest.approx(at_s * NS, abs=0.05 * NS)
        assert 0 <= record["effective_ns"] - record["issued_ns"] < 0.5 * NS
        assert record["undone_ns"] - record["effective_ns"] == \
            pytest.approx(for_s * NS, abs=0.5 * NS)
    assert manifest["status"] == "ok" and manifest["problems"] == []


def test_a_slow_link_lowers_the_receive_rate_and_loses_nothing(faulted_run):
    run_dir, manifest, _ = faulted_run
    slow = manifest["faults"][0]
    table = received(run_dir)
    recv = table.column("recv_ns").to_pylist()
    measured_start = manifest["started_at_ns"] + manifest["workload"]["warmup_ns"]

    def rate(start: int, end: int) -> float:
        return sum(start <= t < end for t in recv) / ((end - start) / NS)

    before = rate(measured_start, slow["issued_ns"])
    # from its queue filled to the qdisc's removal
    during = rate(slow["effective_ns"] + NS // 4, slow["undone_ns"] - int(ANSWER_S * NS))
    print(f"\nreceive rate before {before:.0f} msg/s, in the slow link {during:.0f} msg/s")
    assert before == pytest.approx(RATE, rel=0.15)
    assert during < 0.4 * RATE  # 1 Mbit/s carries ~120 of these a second
    producer = next(a for a in manifest["agents"] if a["id"] == "producer-0")
    assert table.num_rows == producer["sent"]  # late, not lost


def test_a_cut_holds_every_message_of_its_window_until_it_ends(faulted_run):
    run_dir, manifest, summary = faulted_run
    cut = manifest["faults"][1]
    table = received(run_dir)
    intended = table.column("intended_ns").to_pylist()
    recv = table.column("recv_ns").to_pylist()
    in_window = [(i, r) for i, r in zip(intended, recv, strict=True)
                 if cut["effective_ns"] <= i < cut["undone_ns"] - ANSWER_S * NS]
    assert len(in_window) == pytest.approx(RATE * CUT_S, rel=0.15)
    for sent, arrived in in_window:  # each waited at least what was left of the cut
        assert arrived - sent >= cut["undone_ns"] - ANSWER_S * NS - sent
    producer = next(a for a in manifest["agents"] if a["id"] == "producer-0")
    assert table.num_rows == producer["sent"]  # nothing counted lost that arrived

    figures = summary["faults"][1]
    print(json.dumps(figures, indent=1))
    assert (figures["action"], figures["target"]) == ("partition", "host:h2")
    assert figures["max_in_window_us"] >= (CUT_S - ANSWER_S) * 1e6
    delivery = figures["delivery"]
    assert (delivery["lost"], delivery["unknown"]) == (0, 0)
    assert delivery["delivered"] == delivery["sent"] == pytest.approx(RATE * CUT_S, rel=0.15)
    assert figures["dip_msg_s"] == 0  # nothing arrives through a cut


def _command_line(pid: int) -> bytes:
    """A process' command line (empty once it has exited)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return b""


def held(bed: Testbed) -> list[str]:
    """The faults' tables, iptables chains and qdiscs in h2's namespace, and the processes
    holding them."""
    namespace = bed.namespace(bed.hosts[1])

    def inside(*argv: str) -> list[str]:
        return subprocess.run(["ip", "netns", "exec", namespace, *argv], capture_output=True,
                              text=True, check=True).stdout.splitlines()

    qdiscs = subprocess.run(["tc", "-n", namespace, "qdisc", "show"], capture_output=True,
                            text=True, check=True).stdout
    holders = [pid for pid in pids_in_namespaces(bed.netns_inodes)
               if b"fault_hold" in _command_line(pid)]
    return ([line for line in inside("nft", "list", "tables") if "sixnines" in line]
            + [line for program in ("iptables", "ip6tables")
               for line in inside(program, "-w", "5", "-S") if "sixnines" in line]
            + [line for line in qdiscs.splitlines() if " tbf " in line or " netem " in line]
            + [f"holder {pid}" for pid in holders])


@contextlib.contextmanager
def hidden(bed: Testbed, *programs: str) -> Iterator[None]:
    """`programs` gone from h2 for the block: /dev/null (no program: not executable)
    bind-mounted over each in the mount namespace of h2's sshd, which `ip netns exec` made
    its own, so every command the controller runs there finds none of them, and nothing
    else on this machine is touched."""
    sshd = (bed.dir / "h2" / "sshd.pid").read_text().strip()
    paths = [f"/usr/sbin/{program}" for program in programs]
    for path in paths:
        subprocess.run(["nsenter", "-t", sshd, "-m", "mount", "--bind", "/dev/null", path],
                       check=True)
    try:
        yield
    finally:
        for path in paths:
            subprocess.run(["nsenter", "-t", sshd, "-m", "umount", path], check=False)


def killed_until_given_back(bed: Testbed, controller: Sixnines) -> float:
    """SIGKILL the controller: the seconds until nothing of its fault is held on the host
    (15 at most), once the controller is reaped."""
    controller.process.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    while held(bed) and time.monotonic() - killed < 15:
        time.sleep(0.05)
    elapsed = time.monotonic() - killed
    controller.finish()
    return elapsed


@pytest.mark.parametrize("fault", [
    "{at: 0s, action: partition, target: {host: h2}, for: 20s}",
    "{at: 0s, action: slow-link, target: {host: h2}, rate: 1mbit, for: 20s}"],
    ids=["partition", "slow-link"])
@pytest.mark.parametrize("holder", ["holder alive", "holder killed first"])
def test_a_controller_killed_mid_fault_leaves_nothing_on_the_host(bed, tmp_path, fault,
                                                                 holder):
    """The holder undoes on the guard's signal; a holder SIGKILLed before it could undo
    leaves it to the host's guard, which runs the undoing as its clean-up."""
    controller = Sixnines("run", str(scenario(tmp_path, bed, f"- {fault}\n", "30s")),
                          "--output", "out", "--no-analysis", cwd=tmp_path)
    started(tmp_path, controller, timeout_s=300)
    deadline = time.monotonic() + 10
    while len(held(bed)) < 2:  # the fault in place, and its holder
        assert time.monotonic() < deadline, controller.stderr
        time.sleep(0.05)
    if holder == "holder killed first":
        for line in held(bed):
            if line.startswith("holder "):
                os.kill(int(line.removeprefix("holder ")), signal.SIGKILL)
    elapsed = killed_until_given_back(bed, controller)
    print(f"\nkill-to-undone: {elapsed:.2f} s")
    assert held(bed) == []
    assert elapsed < 5  # the guard's doing: the holder's own deadline is 30 s away


def test_a_host_without_nft_is_cut_by_iptables_and_given_back(bed, tmp_path):
    """The same cut, by the fallback: the record names the tool and why, every message of
    the window waits for its end and arrives, and no chain is left on the host."""
    path = scenario(tmp_path, bed, f"- {{at: 1s, action: partition, target: {{host: h2}}, "
                                   f"for: {CUT_S}s}}\n", "4s")
    with hidden(bed, "nft"):
        controller = Sixnines("run", str(path), "--output", "out", "--no-analysis",
                              cwd=tmp_path)
        started(tmp_path, controller, timeout_s=300)
        deadline = time.monotonic() + 10
        while not any("-N sixnines_" in line for line in held(bed)):  # the cut, by iptables
            assert time.monotonic() < deadline, controller.stderr
            time.sleep(0.05)
        code, _, err = controller.finish(timeout_s=600)
    assert code == 0, err
    assert held(bed) == []
    (run_dir,) = (tmp_path / "out").glob("faults/*/01-sut")
    manifest = manifest_of(run_dir)
    [cut] = manifest["faults"]
    assert (cut["outcome"], cut["tool"]) == ("done", "iptables (no nft on h2)"), cut
    table = received(run_dir)
    late = [recv - sent for sent, recv in zip(table.column("intended_ns").to_pylist(),
                                              table.column("recv_ns").to_pylist(), strict=True)
            if cut["effective_ns"] <= sent < cut["undone_ns"] - ANSWER_S * NS]
    assert len(late) == pytest.approx(RATE * CUT_S, rel=0.15)
    assert max(late) >= (CUT_S - 2 * ANSWER_S) * NS  # the first of them waited the cut out
    producer = next(a for a in manifest["agents"] if a["id"] == "producer-0")
    assert table.num_rows == producer["sent"]


def test_a_controller_killed_mid_iptables_cut_leaves_no_chain(bed, tmp_path):
    path = scenario(tmp_path, bed, "- {at: 0s, action: partition, target: {host: h2}, "
                                   "for: 20s}\n", "30s")
    with hidden(bed, "nft"):
        controller = Sixnines("run", str(path), "--output", "out", "--no-analysis",
                              cwd=tmp_path)
        started(tmp_path, controller, timeout_s=300)
        deadline = time.monotonic() + 10
        while not any("-N sixnines_" in line for line in held(bed)):
            assert time.monotonic() < deadline, controller.stderr
            time.sleep(0.05)
        elapsed = killed_until_given_back(bed, controller)
    print(f"\nkill-to-undone: {elapsed:.2f} s")
    assert held(bed) == []
    assert elapsed < 5


def test_a_host_with_neither_firewall_fails_the_run_before_it_starts(bed, tmp_path):
    path = scenario(tmp_path, bed, "- {at: 1s, action: partition, target: {host: h2}, "
                                   "for: 1s}\n", "2s")
    with hidden(bed, "nft", "iptables", "ip6tables"):
        code, _, err = Sixnines("run", str(path), "--output", "out", "--no-analysis",
                                cwd=tmp_path).finish(timeout_s=300)
    assert code == 1, err
    assert "host h2 has neither nft (Debian package nftables) nor iptables (Debian package " \
        "iptables): a partition needs one of them" in err
    (run_dir,) = (tmp_path / "out").glob("faults/*/01-sut")
    assert "started_at_ns" not in manifest_of(run_dir)
    assert held(bed) == []


def test_a_delay_without_netem_fails_the_run_before_it_starts(bed, tmp_path):
    path = scenario(tmp_path, bed, "- {at: 1s, action: slow-link, target: {host: h2}, "
                                   "delay: 20ms, for: 1s}\n", "2s")
    code, _, err = Sixnines("run", str(path), "--output", "out", "--no-analysis",
                            cwd=tmp_path).finish(timeout_s=300)
    (run_dir,) = (tmp_path / "out").glob("faults/*/01-sut")
    manifest = manifest_of(run_dir)
    if code == 0:  # a kernel with sch_netem: the delay was done
        assert manifest["faults"][0]["outcome"] == "done"
        return
    assert code == 1, err
    assert "netem is not available on h2's kernel: slow-link with delay or loss needs " \
        "it; rate-only slow links use tbf" in err
    assert "started_at_ns" not in manifest
    assert held(bed) == []
