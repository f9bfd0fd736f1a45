"""agents.cpu: the broker monitor's /proc reader on real processes burning known CPU time,
and the sampler thread an agent runs beside its loop."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from itertools import pairwise
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from sixnines.agents.cpu import KEEP_EVERY_NS, CpuSampler, LoopAccount, ProcessTree, write_cpu
from sixnines.formats.records import CPU

BURN = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\n"


def _parent(body: str) -> subprocess.Popen:
    """A process in its own group (as launchers start brokers) that runs `body`, prints
    "ready" and stays until its stdin closes."""
    script = body + "print('ready', flush=True)\nimport sys\nsys.stdin.read()\n"
    child = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert child.stdout.readline().strip() == "ready"
    return child


def _end(child: subprocess.Popen) -> None:
    child.stdin.close()
    child.wait(10)


@pytest.mark.integration  # starts processes
def test_reads_the_cpu_time_a_process_burnt() -> None:
    child = _parent(BURN)
    try:
        tree = ProcessTree(child.pid)
        used = tree.cpu_ns()
    finally:
        _end(child)
    assert 0.25e9 <= used < 5e9
    with pytest.raises(ProcessLookupError):
        tree.cpu_ns()
    with pytest.raises(ProcessLookupError):
        ProcessTree(child.pid)


@pytest.mark.integration  # starts processes
def test_counts_live_descendants_and_reaped_children() -> None:
    """A grandchild still running (in the group) and one already reaped (its time moved to
    the parent's cutime) both count: 0.6 s in all, none of it the parent's own."""
    body = textwrap.dedent(f"""\
        import subprocess, sys
        burn = {BURN!r}
        subprocess.run([sys.executable, "-c", burn], check=True)
        live = subprocess.Popen([sys.executable, "-c", burn + "import sys; sys.stdin.read()"],
                                stdin=subprocess.PIPE)
        import time
        time.sleep(0.6)
        """)
    child = _parent(body)
    try:
        used = ProcessTree(child.pid).cpu_ns()
    finally:
        _end(child)
    assert used >= 0.5e9


@pytest.mark.integration  # starts processes
def test_a_child_started_between_scans_is_counted_from_the_next_scan() -> None:
    """Between full scans only the known members are read; a helper the broker starts
    later is found at the next scan with all its CPU time (cumulative: nothing lost)."""
    body = textwrap.dedent(f"""\
        import subprocess, sys
        print('ready', flush=True)
        sys.stdin.readline()
        helper = subprocess.Popen([sys.executable, "-c", {BURN!r} + "import sys; sys.stdin.read()"],
                                  stdin=subprocess.PIPE)  # lives until the parent exits
        """)
    child = _parent(body)  # the body's "ready"; its helper starts on the next line sent
    try:
        tree = ProcessTree(child.pid, rescan_every=2)
        before = tree.cpu_ns()  # first of two samples on the members found at the start
        child.stdin.write("go\n")
        child.stdin.flush()
        time.sleep(1.0)  # the helper burns 0.3 s of CPU
        unseen = tree.cpu_ns()  # second sample: still the old members
        found = tree.cpu_ns()  # rescanned: the helper's time counts
    finally:
        _end(child)
    assert unseen - before < 0.2e9
    assert found - before >= 0.25e9


def test_sampler_takes_first_periodic_and_last_samples(tmp_path: Path) -> None:
    sent = [0]
    sampler = CpuSampler(time.process_time_ns, lambda: sent[0], 20_000_000,
                         loop=LoopAccount(threading.get_native_id()))
    sampler.start()
    end = time.process_time_ns() + 200_000_000
    while time.process_time_ns() < end:  # the "loop": counts and burns, nothing more
        sent[0] += 1
    samples = sampler.finish()
    assert len(samples) >= 6  # 0.2 s of CPU take at least 0.2 s: 10 intervals, and two ends
    t_ns, cpu_ns, messages, run_ns, wait_ns = zip(*samples, strict=True)
    assert list(t_ns) == sorted(t_ns) and list(cpu_ns) == sorted(cpu_ns)
    assert messages[-1] == sent[0] and messages[0] < messages[-1]
    assert cpu_ns[-1] - cpu_ns[0] >= 0.15e9  # the burning main thread is counted
    assert list(run_ns) == sorted(run_ns) and list(wait_ns) == sorted(wait_ns)
    assert run_ns[-1] - run_ns[0] >= 0.15e9  # ... and it is the loop's own account
    write_cpu(tmp_path / "cpu.parquet", samples)
    table = pq.read_table(tmp_path / "cpu.parquet")
    assert table.schema == CPU and table.column("messages").to_pylist() == list(messages)
    assert table.column("loop_run_ns").to_pylist() == list(run_ns)


def test_a_loop_blocked_in_a_call_is_neither_running_nor_waiting() -> None:
    """What tells a send the system did not take from a loop short of CPU: a thread asleep
    in a call gains neither time on a CPU nor time waiting for one."""
    account = LoopAccount(threading.get_native_id())
    run_before, wait_before = account()
    start = time.perf_counter_ns()
    time.sleep(0.3)  # blocked, as in a send the system does not take
    elapsed = time.perf_counter_ns() - start
    run_after, wait_after = account()
    assert (run_after - run_before) + (wait_after - wait_before) < 0.1 * elapsed
    end = time.process_time_ns() + 100_000_000
    while time.process_time_ns() < end:
        pass
    assert account()[0] - run_after >= 0.09e9
    assert LoopAccount(2**31 - 1)() is None  # no such thread: no account


def test_a_kept_sampler_hands_over_its_samples_as_it_goes_not_at_the_end() -> None:
    kept: list[tuple[int, int]] = []  # (when, how many samples)
    sampler = CpuSampler(time.process_time_ns, lambda: None, 10_000_000,
                         keep=lambda samples: kept.append((samples[-1][0], len(samples))))
    sampler.start()
    time.sleep(0.6)
    samples = sampler.finish()
    assert len(kept) >= 2 and kept[0][1] == 1  # the first sample, then as it goes
    assert all(later - earlier >= KEEP_EVERY_NS
               for (earlier, _), (later, _) in pairwise(kept))
    assert kept[-1][1] < len(samples)  # the last sample (at finish) is the caller's to write


@pytest.mark.integration  # starts processes
def test_sampler_keeps_what_it_had_when_the_process_goes() -> None:
    child = _parent("")
    sampler = CpuSampler(ProcessTree(child.pid).cpu_ns, lambda: None, 10_000_000)
    sampler.start()
    time.sleep(0.05)
    _end(child)
    time.sleep(0.05)
    samples = sampler.finish()
    assert samples and all(messages is None for _, _, messages, _, _ in samples)
    assert "gone" in sampler.error
