"""agents.cpu: the broker monitor's /proc reader on real processes burning known CPU time,
and the sampler thread an agent runs beside its loop."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from agents.cpu import CpuSampler, tree_cpu_ns, write_cpu
from agents.schema import CPU

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


def test_reads_the_cpu_time_a_process_burnt() -> None:
    child = _parent(BURN)
    try:
        used = tree_cpu_ns(child.pid)
    finally:
        _end(child)
    assert 0.25e9 <= used < 5e9
    with pytest.raises(ProcessLookupError):
        tree_cpu_ns(child.pid)


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
        used = tree_cpu_ns(child.pid)
    finally:
        _end(child)
    assert used >= 0.5e9


def test_sampler_takes_first_periodic_and_last_samples(tmp_path: Path) -> None:
    sent = [0]
    sampler = CpuSampler(time.process_time_ns, lambda: sent[0], 20_000_000)
    sampler.start()
    end = time.process_time_ns() + 200_000_000
    while time.process_time_ns() < end:  # the "loop": counts and burns, nothing more
        sent[0] += 1
    samples = sampler.finish()
    assert len(samples) >= 6  # 0.2 s of CPU take at least 0.2 s: 10 intervals, and two ends
    t_ns, cpu_ns, messages = zip(*samples, strict=True)
    assert list(t_ns) == sorted(t_ns) and list(cpu_ns) == sorted(cpu_ns)
    assert messages[-1] == sent[0] and messages[0] < messages[-1]
    assert cpu_ns[-1] - cpu_ns[0] >= 0.15e9  # the burning main thread is counted
    write_cpu(tmp_path / "cpu.parquet", samples)
    table = pq.read_table(tmp_path / "cpu.parquet")
    assert table.schema == CPU and table.column("messages").to_pylist() == list(messages)


def test_sampler_keeps_what_it_had_when_the_process_goes() -> None:
    child = _parent("")
    sampler = CpuSampler(lambda: tree_cpu_ns(child.pid), lambda: None, 10_000_000)
    sampler.start()
    time.sleep(0.05)
    _end(child)
    time.sleep(0.05)
    samples = sampler.finish()
    assert samples and all(messages is None for _, _, messages in samples)
    assert "gone" in sampler.error
