"""CPU time sampling beside the measuring loop: `cpu.parquet` (formats/records.py `CPU`).

A `CpuSampler` thread wakes every interval and records (clock, CPU time, message count,
and how the loop thread spent its time): the loops themselves never do anything for it
(docs/design.md rule 4), the count is a plain read of a counter the loop keeps anyway.
Each wake-up takes the GIL from the loop for a few microseconds, like the once-a-second
progress report. An agent reads its own process CPU time (`time.process_time_ns`: every
thread, user + system, ns resolution) and its loop thread's schedstat (`LoopAccount`); the
broker monitor sums /proc over the broker's process tree (`ProcessTree`, clock-tick
resolution).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from sixnines.agents.streams import clock
from sixnines.formats.records import CPU

NS = 1_000_000_000
# /proc/<pid>/stat fields after the command name, 0-based: ppid, pgrp, then utime, stime
# and the cutime, cstime of reaped children (proc(5) numbers them 4, 5 and 14-17)
PPID, PGRP, UTIME, CSTIME = 1, 2, 11, 14
TICK_HZ = os.sysconf("SC_CLK_TCK")


#: (clock, CPU ns, messages, loop thread's ns on a CPU, its ns waiting for one)
Samples = list[tuple[int, int, int | None, int | None, int | None]]
Account = tuple[int, int] | None  # (ns on a CPU, ns waiting for one), None: not kept
KEEP_EVERY_NS = NS // 2  # a kept sampler writes its samples so far at most this often
#: ... and waits this many times its last write's CPU time before the next, so writing
#: the whole account again never takes more than ~2 % of a core on the host it measures
#: (an hour at 10 ms samples is 360k rows, ~0.5 s to write: kept every ~30 s then).
KEEP_COST_SHARE = 50


class CpuSampler(threading.Thread):
    """Samples `cpu_ns()` and `messages()` every `interval_ns` until `finish()`, which
    takes the last sample; the first is taken as the thread starts.

    `keep`, when given, is handed the samples so far after a sample at least KEEP_EVERY_NS
    after the last it was handed (and KEEP_COST_SHARE times the CPU time that took), from
    this thread, never at `finish` (the caller then writes the whole account itself): a
    process without a measuring loop to disturb (the broker monitor) keeps them on disk
    as it goes, so being killed costs it a fraction of a second of them, not the run."""

    def __init__(self, cpu_ns: Callable[[], int], messages: Callable[[], int | None],
                 interval_ns: int, keep: Callable[[Samples], None] | None = None,
                 loop: Callable[[], Account] = lambda: None) -> None:
        super().__init__(name="cpu-sampler", daemon=True)
        self._cpu_ns = cpu_ns
        self._messages = messages
        self._loop = loop
        self._interval_s = interval_ns / NS
        self._keep = keep
        self._keep_at = 0  # the next keep is due at the first sample from then on
        self._done = threading.Event()
        self.samples: Samples = []
        self.error: str | None = None  # why sampling stopped early (the samples stay)

    def _sample(self) -> None:
        try:
            now, cpu_ns, messages = clock(), self._cpu_ns(), self._messages()
            run_ns, wait_ns = self._loop() or (None, None)
            self.samples.append((now, cpu_ns, messages, run_ns, wait_ns))
        except OSError as exc:
            self.error = self.error or f"{type(exc).__name__}: {exc}"
            return
        now = self.samples[-1][0]
        if self._keep is not None and now >= self._keep_at:
            before = time.thread_time_ns()  # CPU, not wall time: a busy host's waits are
            self._keep(self.samples)  # not this write's cost
            took = time.thread_time_ns() - before
            self._keep_at = now + max(KEEP_EVERY_NS, KEEP_COST_SHARE * took)

    def run(self) -> None:
        self._sample()
        while not self._done.wait(self._interval_s) and self.error is None:
            self._sample()

    def finish(self) -> Samples:
        self._done.set()
        self.join()
        self._keep = None
        if self.error is None:
            self._sample()
        return self.samples


class LoopAccount:
    """The kernel's account of one thread (the agent's loop): ns on a CPU and ns runnable
    but waiting for one (/proc/self/task/<tid>/schedstat, kept by kernels with
    CONFIG_SCHED_INFO). Time in neither was spent blocked in a call: a send the system did
    not take, a receive with nothing to read. None where the kernel keeps no account."""

    def __init__(self, native_id: int) -> None:
        self._path = f"/proc/self/task/{native_id}/schedstat"

    def __call__(self) -> Account:
        try:
            with open(self._path, "rb") as stat:
                run_ns, wait_ns = stat.read().split()[:2]
            return int(run_ns), int(wait_ns)
        except (OSError, ValueError):
            return None


def _stat_fields(pid: str) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (which may hold spaces and
    parentheses, so the split is at its last ')'); None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            text = stat.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text[text.rindex(b")") + 2:].decode().split()


def tree_members(root: int) -> list[int]:
    """`root`, every process in its process group and every descendant of either: one
    read of every /proc/<pid>/stat on the host (~1 ms per 130 processes)."""
    table = _process_table()
    if root not in table:
        raise ProcessLookupError(f"process {root} is gone")
    return _with_descendants(table, {pid for pid, fields in table.items()
                                     if pid == root or int(fields[PGRP]) == root})


def descendants(root: int) -> list[int]:
    """Every process below `root` (children, theirs, ...)."""
    table = _process_table()
    return [pid for pid in _with_descendants(table, {root}) if pid != root]


def _process_table() -> dict[int, list[str]]:
    table = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit() and (fields := _stat_fields(pid)) is not None:
            table[int(pid)] = fields
    return table


def _with_descendants(table: dict[int, list[str]], members: set[int]) -> list[int]:
    grew = True
    while grew:
        children = {pid for pid, fields in table.items() if int(fields[PPID]) in members}
        grew = not children <= members
        members |= children
    return sorted(members)


class ProcessTree:
    """CPU time (user + system) of a broker's process tree (`tree_members`), in ns.

    The reaped children's time (cutime, cstime) is included, so the sum keeps growing as
    short-lived helpers come and go instead of dropping. The whole of /proc is scanned for
    members only every `rescan_every` samples; in between only the known members' stat
    files are read (tens of µs). A full scan every 100 ms took a few ms of CPU on the
    broker's host, enough to put the broker's latency p99 up 4× on a 2-core machine; a
    process started between scans is counted from the next one (its time is cumulative,
    so none is lost). Raises ProcessLookupError once `root` itself is gone."""

    def __init__(self, root: int, rescan_every: int = 10) -> None:
        self.root = root
        self._rescan_every = rescan_every
        self._members = tree_members(root)
        self._until_rescan = rescan_every

    def cpu_ns(self) -> int:
        if self._until_rescan <= 0:
            self._members = tree_members(self.root)
            self._until_rescan = self._rescan_every
        self._until_rescan -= 1
        ticks = 0
        for pid in self._members:
            fields = _stat_fields(str(pid))
            if fields is None and pid == self.root:
                raise ProcessLookupError(f"process {self.root} is gone")
            if fields is not None:  # a member gone since: reaped into its parent's cutime
                ticks += sum(int(value) for value in fields[UTIME:CSTIME + 1])
        return ticks * NS // TICK_HZ


def write_cpu(path: Path, samples: Samples) -> None:
    columns: list[Sequence[object]] = (list(zip(*samples, strict=True)) if samples
                                       else [[] for _ in CPU])
    arrays = [pa.array(values, type=field.type) for values, field in zip(columns, CPU,
                                                                        strict=True)]
    pq.write_table(pa.Table.from_arrays(arrays, schema=CPU), path, compression="zstd")
