"""CPU per message: the agents' and the broker monitor's cpu.parquet samples (agents.cpu)
attributed to the messages of each sample interval. A run has one to a hundred samples a
second per process, so this reads them with pyarrow where the run's report is written
(spark_jobs.run_report); no Spark job.

Time. Every process's samples are put on the time since its own t0 (`t0_ns` in the
manifest): the one start instant the controller sent to all, moved onto each host's clock
by its measured offset. Processes on different hosts therefore line up to within the
offset's uncertainty (microseconds to a millisecond), far below the ≥ 10 ms intervals:
attributing by interval is coarse, and that alignment is fine for it.

An interval is the span between two consecutive samples of one process. Only measured
intervals count: those starting at or after the warm-up's end (t0 + warmup). For an agent,
CPU per message of an interval = Δcpu / Δmessages (its own sent or received count);
intervals without messages are left out of that figure and counted (`empty_intervals`).
For the broker, Δcpu of the broker's process tree / the messages that all consumers
received in the interval (fan-out: each delivery counts; a round trip without consumers
counts the requests sent), their running counts interpolated at the broker's sample times.
`cores` is CPU seconds per wall-clock second over the measured intervals, summed over a
side's agents. The broker's CPU time comes from /proc in clock ticks (10 ms): one
interval's value is that coarse, `cores` over the run is not.

`loop` is how the agents' loop threads spent the measured time, by the kernel's account
sampled with the CPU (agents.cpu.LoopAccount): on a CPU, waiting for one, and the rest
blocked in a call; summed over the side's agents, and only when every one of them has
that account. It is weighed against the send lag of every measured message (formats.lag),
so it covers the measured time whole: the interval the warm-up ends in counts for its
measured part, its account taken as spread evenly over it (a 1 s probe sampled every 1 s
has no interval starting after its warm-up).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sixnines.formats import hdr
from sixnines.formats.layout import CPU_FILE
from sixnines.formats.manifest import AgentEntry, Manifest
from sixnines.formats.run_files import agent_file
from sixnines.formats.summary import Cpu, CpuSide, LoopTime
from sixnines.formats.vocabulary import SENDERS, Role
from sixnines.spark_jobs.distribution import Detail, median_bucket
from sixnines.spark_jobs.summarize import MetricCounts, metric_summary

SIDES = {"sender": SENDERS, "receiver": (Role.CONSUMER, Role.RESPONDER)}
BROKER_DENOMINATORS = (Role.CONSUMER, Role.REQUESTER)  # the first role present counts
MAX_POINTS = 2000  # as series.MAX_POINTS: curves stay small


LOOP_COLUMNS = ("loop_run_ns", "loop_wait_ns")


@dataclass(frozen=True)
class Samples:
    """One process's samples: ns since its t0, cumulative CPU ns, cumulative messages, and
    its loop thread's cumulative ns on a CPU and waiting for one (None when any sample
    lacks them: the monitor, a kernel without the account, files from before it)."""

    t_ns: np.ndarray
    cpu_ns: np.ndarray
    messages: np.ndarray
    loop: tuple[np.ndarray, ...] | None = None  # LOOP_COLUMNS

    @classmethod
    def read(cls, path: Path, t0_ns: int) -> Samples:
        """cpu.parquet; the monitor's null message counts read as 0."""
        table = pq.read_table(path)
        # pyarrow-stubs declare fill_null as coalesce (arguments of one type); pyarrow
        # takes a plain value to fill with
        t_ns, cpu_ns, messages = (
            pc.fill_null(table.column(name), 0).to_numpy()  # type: ignore[type-var, attr-defined]
            for name in ("t_ns", "cpu_ns", "messages"))
        known = all(name in table.column_names and table.column(name).null_count == 0
                    for name in LOOP_COLUMNS)
        loop = tuple(table.column(name).to_numpy() for name in LOOP_COLUMNS) if known \
            else None
        return cls(t_ns - t0_ns, cpu_ns, messages, loop)


@dataclass(frozen=True)
class Intervals:
    """Measured intervals: middle (ns since t0), length, CPU used and messages in each;
    and the loop thread's account over the measured time (`loop_*`, one value per
    interval reaching past the warm-up, for its measured part): its length, ns on a CPU
    and ns waiting for one (NaN where not known)."""

    middle_ns: np.ndarray
    span_ns: np.ndarray
    cpu_ns: np.ndarray
    messages: np.ndarray
    loop_span_ns: np.ndarray
    loop_run_ns: np.ndarray
    loop_wait_ns: np.ndarray

    @classmethod
    def join(cls, parts: list[Intervals]) -> Intervals:
        return cls(*(np.concatenate([getattr(p, name) for p in parts])
                     for name in ("middle_ns", "span_ns", "cpu_ns", "messages",
                                  "loop_span_ns", "loop_run_ns", "loop_wait_ns")))


def intervals(samples: Samples, warmup_ns: int, messages: np.ndarray | None = None
              ) -> Intervals:
    """The measured intervals of `samples`; `messages`: other cumulative counts at the same
    sample times (the broker's), instead of the samples' own."""
    counts = samples.messages if messages is None else messages
    start, end = samples.t_ns[:-1], samples.t_ns[1:]
    keep = start >= warmup_ns
    reach = end > warmup_ns  # the loop's account: every interval with a measured part
    measured = (end - np.maximum(start, warmup_ns))[reach]
    share = measured / np.maximum(end - start, 1)[reach]
    unknown = np.full(int(reach.sum()), np.nan)
    run, wait = (np.diff(column)[reach] * share for column in samples.loop) \
        if samples.loop is not None else (unknown, unknown)
    return Intervals(((start + end) / 2)[keep], (end - start)[keep],
                     np.diff(samples.cpu_ns)[keep], np.diff(counts)[keep],
                     measured.astype(np.float64), run, wait)


def delivered(at_ns: np.ndarray, receivers: list[Samples]) -> np.ndarray:
    """The receivers' total running message count at the times `at_ns` (each receiver's
    count interpolated between its own samples)."""
    total = np.zeros(len(at_ns))
    for samples in receivers:
        total += np.interp(at_ns, samples.t_ns, samples.messages)
    return total


def value_counts(values_ns: np.ndarray) -> MetricCounts:
    """The HDR aggregate of raw values (ns), exact in its median bucket."""
    clipped, negative, too_large = hdr.clip(np.rint(values_ns))
    merged = MetricCounts(negative=negative, too_large=too_large)
    if len(clipped) == 0:
        return merged
    buckets = hdr.bucket_indices(clipped)
    merged.counts = hdr.counts_of(clipped)
    merged.sums = np.bincount(buckets, weights=clipped, minlength=hdr.COUNTS_LEN)
    merged.total, merged.max = float(clipped.sum()), int(clipped.max())
    median = median_bucket(merged.counts)[0]
    merged.detail = Detail(*np.unique(clipped[buckets == median], return_counts=True))
    return merged


def figures(measured: Intervals) -> CpuSide:
    """A side's summary.json figures (the module doc defines them)."""
    busy = measured.messages > 0
    per_message = measured.cpu_ns[busy] / measured.messages[busy]
    return CpuSide(us_per_message=metric_summary(value_counts(per_message)),
                   cores=_cores(measured), empty_intervals=int((~busy).sum()),
                   loop=_loop(measured))


def _loop(measured: Intervals) -> LoopTime | None:
    """How the loop threads spent the measured intervals, seconds summed over them; None
    unless every interval has the kernel's account."""
    run, wait = measured.loop_run_ns, measured.loop_wait_ns
    if len(run) == 0 or np.isnan(run).any() or np.isnan(wait).any():
        return None
    blocked = np.maximum(measured.loop_span_ns - run - wait, 0)
    return LoopTime(running_s=float(run.sum() / 1e9), waiting_s=float(wait.sum() / 1e9),
                    blocked_s=float(blocked.sum() / 1e9))


def _cores(measured: Intervals) -> float | None:
    span = measured.span_ns.sum()
    return float(measured.cpu_ns.sum() / span) if span > 0 else None


def curve(measured: Intervals, interval_ns: int) -> dict[str, list[float]]:
    """CPU µs per message over the run: Σ Δcpu / Σ Δmessages of the intervals whose middle
    falls in each bin (bins of the sample interval, wider when that would make more than
    MAX_POINTS), at their mean middle; bins without messages left out."""
    if len(measured.middle_ns) == 0:
        return {"t_s": [], "us_per_message": []}
    low, high = measured.middle_ns.min(), measured.middle_ns.max()
    width = max(interval_ns, (high - low) / MAX_POINTS + 1)
    index = ((measured.middle_ns - low) // width).astype(np.int64)
    cpu = np.bincount(index, weights=measured.cpu_ns)
    messages = np.bincount(index, weights=measured.messages)
    middle = np.bincount(index, weights=measured.middle_ns) / np.bincount(index).clip(1)
    busy = np.flatnonzero(messages > 0)
    return {"t_s": (middle[busy] / 1e9).tolist(),
            "us_per_message": (cpu[busy] / messages[busy] / 1000).tolist()}


@dataclass(frozen=True)
class CpuResult:
    interval_ns: int
    sides: dict[str, Intervals | None]  # sender, receiver, broker; None: no samples
    notes: list[str]

    def summary(self) -> Cpu:
        """summary.json `cpu` (formats.summary.Cpu)."""
        return Cpu(**{name: None if measured is None else figures(measured)
                      for name, measured in self.sides.items()},
                   interval_ms=self.interval_ns / 1e6, notes=self.notes)

    def series(self) -> dict[str, Any]:
        """series.json `cpu`."""
        return {name: curve(measured, self.interval_ns)
                for name, measured in self.sides.items() if measured is not None}


def _samples(run_dir: Path, manifest: Manifest, entry: AgentEntry, notes: list[str]
             ) -> Samples | None:
    """A process's samples; one that died (the monitor keeps its samples as it goes) is
    placed by the start instant it was sent (Manifest.t0_of)."""
    path = agent_file(run_dir, str(entry.id), CPU_FILE)
    t0_ns = manifest.t0_of(entry)
    if path.is_file() and t0_ns is not None:
        return Samples.read(path, t0_ns)
    notes.append(f"{entry.id} ({entry.role}, status {entry.status}): "
                 f"{CPU_FILE} missing; its CPU is not counted")
    return None


def analyse(run_dir: Path, manifest: Manifest) -> CpuResult:
    """CPU per message of one run directory."""
    run_dir = Path(run_dir)
    warmup_ns = manifest.workload.warmup_ns
    notes: list[str] = []
    by_role: dict[Role | None, list[Samples]] = {}
    for entry in manifest.agents:
        if (samples := _samples(run_dir, manifest, entry, notes)) is not None:
            by_role.setdefault(entry.role, []).append(samples)
    sides: dict[str, Intervals | None] = {}
    for side, roles in SIDES.items():
        mine = [s for role in roles for s in by_role.get(role, [])]
        sides[side] = Intervals.join([intervals(s, warmup_ns) for s in mine]) if mine else None
    sides["broker"] = _broker(run_dir, manifest, by_role, warmup_ns, notes)
    return CpuResult(manifest.cpu_sample_ns, sides, notes)


def _broker(run_dir: Path, manifest: Manifest, by_role: dict[Role | None, list[Samples]],
            warmup_ns: int, notes: list[str]) -> Intervals | None:
    """The broker's measured intervals, or None with a note saying why there are none."""
    monitor = manifest.monitor
    if manifest.broker.kind == "external":
        notes.append("no broker CPU: the broker is external (not started by sixnines, so "
                     "nothing samples it)")
        return None
    if monitor is None:
        notes.append("no broker CPU: no monitor ran in this run")
        return None
    notes.extend(monitor.notes)
    ran = monitor.id is not None
    broker = _samples(run_dir, manifest, monitor, notes) if ran else None
    receivers = next((by_role[role] for role in BROKER_DENOMINATORS if role in by_role), None)
    if broker is None or receivers is None:
        return None
    return intervals(broker, warmup_ns, delivered(broker.t_ns, receivers))
