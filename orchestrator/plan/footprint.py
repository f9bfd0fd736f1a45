"""How much memory and disk a scenario's runs need, against what the hosts have.

When chunks stream (agents.recording: the default; SIXNINES_CHUNK_ROWS=0 turns it off),
producers and consumers hold a few buffers of about a second's records each, the same for
a minute or a day, while their files grow with the messages; otherwise they hold the whole
run, and the estimate follows whichever the controller's environment chooses. A requester records as
both: its requests as a producer's, its replies as a consumer's. Responders record nothing.
Every run's files stay in the results directory. A plan that cannot fit is refused before
anything starts, with the numbers and the knobs that change them, instead of failing in
an agent's log minutes later (or being killed by the kernel).

The figures are measured peaks (docs/performance.md, "Footprint"), rounded up.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sixnines.agents.affinity import busy_loop, usable_cpus
from sixnines.agents.recording import (
    CHUNK_NS,
    pool_buffers,
    producer_rows,
    receipt_rows,
)
from sixnines.agents.schedule import NS
from sixnines.agents.streams import INBOX_BYTES, RING_BYTES
from sixnines.formats import sizes
from sixnines.formats.atomic import human_bytes as human
from sixnines.formats.keys import NONE, period
from sixnines.formats.lag import FEWER_LOOPS, crowded, crowded_note
from sixnines.formats.vocabulary import Role
from sixnines.orchestrator.capacity.probes import heaviest
from sixnines.orchestrator.plan.agents import AgentPlan, plan_agents
from sixnines.orchestrator.scenario.hosts import LOCAL
from sixnines.orchestrator.scenario.matrix import RunPoint
from sixnines.orchestrator.scenario.sizes import SizeDistribution

MiB = 1 << 20
AGENT_BASE_BYTES = 256 * MiB  # an agent's interpreter, libraries and driver, idle
#: Bytes per row of one chunk buffer: a sender's intended and sent times, a receiver's
#: six columns (agents.recording.Piece, Receipts).
CHUNK_ROW_BYTES = {Role.PRODUCER: 16, Role.CONSUMER: 40}
WRITER_ROW_BYTES = 112  # per row of the chunk being written: its columns, parquet's buffers
HLOG_OPEN_BYTES = 16 * MiB  # the intervals the interval log holds open (5 s, 3 tags)
ROW_DISK_BYTES = 16  # per message on disk (zstd parquet; measured 5-7 at 64 B)
CHUNK_FILE_BYTES = 4096  # per chunk file: parquet footer and its line in chunks.jsonl
HLOG_BYTES_PER_S = 64 * 1024  # an interval log per second of run (measured ~20 KB)
AGENT_FILES_BYTES = 1 * MiB  # cpu.parquet, done.json, the agent's log
KNOBS = ("lower rate, duration or messages, or spread producers and consumers over more "
         "hosts (placement.agents)")


@dataclass(frozen=True)
class AgentNeed:
    plan: AgentPlan
    memory: int
    disk: int


def _rows(plan: AgentPlan) -> int:
    """Rows the agent records: a producer one per message sent, a consumer one per message
    (over whichever of its connections), a requester both (its requests and their replies), a
    responder none."""
    return 0 if plan.role == Role.RESPONDER else plan.sends + plan.expected


def agent_needs(point: RunPoint, agent_hosts: tuple[str, ...] = (LOCAL,)
                ) -> list[AgentNeed]:
    """Each agent of `point`'s run, placed on `agent_hosts` as the run places them, with
    its peak memory and the bytes of its files."""
    workload = point.workload
    span_s = (workload.warmup_ns + workload.duration_ns) / NS
    driver = point.system.driver_class()
    plans = plan_agents(workload, driver.needs_responder, agent_hosts)
    needs = []
    for plan in plans:
        rows = _rows(plan)
        held_ns = (workload.release_ns or 0) if plan.role == Role.CONSUMER else 0
        recording, chunks = _recording(plan, workload.warmup_ns + workload.duration_ns,
                                       held_ns)
        memory = AGENT_BASE_BYTES + recording + _buffers(plan, workload.message_size,
                                                         workload.keys != NONE)
        disk = (rows * ROW_DISK_BYTES + chunks * CHUNK_FILE_BYTES
                + int(HLOG_BYTES_PER_S * span_s) + AGENT_FILES_BYTES)
        needs.append(AgentNeed(plan, memory, disk))
    return needs


def _recording(plan: AgentPlan, span_ns: int, held_ns: int) -> tuple[int, int]:
    """The memory an agent records into, and how many chunk files it writes: a sender's
    schedule pieces and a receiver's buffers (a requester has both, a responder neither;
    a consumer held `held_ns` while a backlog builds, buffers for the backlog)."""
    parts = ([_sending(plan)] if plan.sends_messages else []) + (
        [_receiving(plan, span_ns, held_ns)] if plan.role in (Role.CONSUMER, Role.REQUESTER)
        else [])
    if not parts:
        return 0, 0
    return sum(memory for memory, _ in parts) + HLOG_OPEN_BYTES, sum(n for _, n in parts)


def _sending(plan: AgentPlan) -> tuple[int, int]:
    sends = -(-plan.sends // plan.connections)
    rate = plan.peak or plan.rate  # pieces are sized for a shape's peak (agents.roles)
    rows = producer_rows(sends, rate / plan.connections if rate else None)
    buffers = plan.connections * pool_buffers()
    return (rows * (buffers * CHUNK_ROW_BYTES[Role.PRODUCER] + WRITER_ROW_BYTES),
            plan.connections * -(-sends // rows))


def _receiving(plan: AgentPlan, span_ns: int, held_ns: int) -> tuple[int, int]:
    rows = receipt_rows(plan.expected, span_ns, held_ns)
    return (rows * (pool_buffers() * CHUNK_ROW_BYTES[Role.CONSUMER] + WRITER_ROW_BYTES),
            max(-(-plan.expected // rows), span_ns // CHUNK_NS))


def _buffers(plan: AgentPlan, written: int | SizeDistribution, keyed: bool) -> int:
    """A sender's ring of frames per connection, a receiver's one inbox (agents.streams);
    a ring of varying sizes (formats.sizes) holds at most its slots of the largest size
    (a file's largest taken as the largest a ring of the fewest slots holds), in whole
    periods of keys when `keyed`."""
    if isinstance(written, int):
        size, ring = written, RING_BYTES
    else:
        size = written.largest_without_file() or sizes.RING_BYTES // sizes.MIN_RING_SLOTS
        ring = sizes.sized_slots(size, period(size) if keyed else 1) * size
    sends = plan.connections * (ring + size) if plan.sends_messages else 0
    receives = INBOX_BYTES + 4 * size if plan.role != Role.PRODUCER else 0
    return sends + receives


@dataclass(frozen=True)
class Estimate:
    """The largest memory a run needs on each host, the disk of all runs' files (all end
    up in the results directory), and the largest a run writes on each host (a remote
    host's copy goes once it is fetched)."""

    memory: dict[str, tuple[int, str, list[AgentNeed]]]  # host -> (bytes, run id, agents)
    disk: int
    host_disk: dict[str, int]
    crowded: list[str] = field(default_factory=list)  # runs whose loops lack CPUs here

    def lines(self, available: dict[str, int | None], free: int | None, output: str
              ) -> list[str]:
        """The estimate in words, beside what the hosts have where known."""
        out = []
        for host, (memory, run_id, agents) in self.memory.items():
            parts = ", ".join(f"{a.plan.agent_id} {human(a.memory)}" for a in agents)
            has = available.get(host)
            where = f" of {human(has)} available" if has is not None else ""
            out.append(f"memory on {host}: {human(memory)}{where} at most, in run {run_id} "
                       f"({parts})")
        has_disk = f" of {human(free)} free" if free is not None else ""
        out.append(f"disk: {human(self.disk)}{has_disk} under {output} for every run's files")
        return out + self.crowded


def estimate(points: Iterable[RunPoint], agent_hosts: tuple[str, ...] = (LOCAL,),
             cpus: int | None = None) -> Estimate:
    """What the runs need; `cpus`: how many this machine lets sixnines use (its affinity
    when not given), for the runs whose busy loops would have none of their own here."""
    memory: dict[str, tuple[int, str, list[AgentNeed]]] = {}
    host_disk: dict[str, int] = {}
    disk = 0
    crowded: dict[int, str] = {}  # busy loops here -> the first run with that many
    for point in map(heaviest, points):  # a capacity search: its heaviest probe
        needs = agent_needs(point, agent_hosts)
        loops = sum(1 for need in needs if need.plan.host == LOCAL
                    and busy_loop(need.plan.role, str(point.workload.receive)))
        crowded.setdefault(loops, point.run_id)
        disk += sum(need.disk for need in needs)
        for host in dict.fromkeys(need.plan.host for need in needs):
            on_host = [need for need in needs if need.plan.host == host]
            total = sum(need.memory for need in on_host)
            if host not in memory or total > memory[host][0]:
                memory[host] = (total, point.run_id, on_host)
            host_disk[host] = max(host_disk.get(host, 0), sum(n.disk for n in on_host))
    return Estimate(memory, disk, host_disk, _crowded(crowded, cpus))


def _crowded(loops_by_run: dict[int, str], cpus: int | None) -> list[str]:
    """One line on the most busy loops a run puts on this machine, when they would have no
    CPU of their own there (orchestrator.plan.cpus: as many loops as CPUs or more): their send
    lag would be the placement's, whatever the system does."""
    cpus = len(usable_cpus()) if cpus is None else cpus
    most = max(loops_by_run, default=0)
    if not most or most < cpus:
        return []
    (kernel,) = crowded([crowded_note("host local", most, cpus)])
    return [f"CPUs: run {loops_by_run[most]}: {kernel}: expect send-lag tails from the "
            f"placement, not the system: {FEWER_LOOPS}"]


def problems(found: Estimate, available: dict[str, int | None], free: int | None,
             output: str, host_free: dict[str, int | None] | None = None) -> list[str]:
    """Why the plan cannot fit: a host whose agents need more memory than it has
    available, results larger than the free disk under `output`, or a run writing more on
    a host than is free in its work directory (`host_free`). Unknown capacities pass."""
    out = []
    for host, has in (host_free or {}).items():
        need = found.host_disk.get(host, 0)
        if has is not None and need > has:
            out.append(f"a run writes about {human(need)} on host {host}, but {human(has)} "
                       f"is free in its work directory: {KNOBS}")
    for host, (memory, run_id, agents) in found.memory.items():
        has = available.get(host)
        if has is not None and memory > has:
            biggest = max(agents, key=lambda a: a.memory)
            out.append(f"run {run_id} needs about {human(memory)} of memory on host {host} "
                       f"({len(agents)} agent(s); {biggest.plan.agent_id} alone "
                       f"{human(biggest.memory)} for {_rows(biggest.plan):,} messages), but "
                       f"{human(has)} is available: {KNOBS}")
    if free is not None and found.disk > free:
        out.append(f"the runs' files need about {human(found.disk)} under {output}, but "
                   f"{human(free)} is free there: free some space, choose another `output`, "
                   f"or {KNOBS.split(', or')[0]}")
    return out


def available_memory() -> int | None:
    """MemAvailable of this machine (Linux), in bytes; None where unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as info:
            for line in info:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def free_disk(output: str | os.PathLike[str]) -> int | None:
    """Free bytes where `output` is (or would be created)."""
    for path in (Path(output), *Path(output).absolute().parents):
        if path.exists():
            try:
                return shutil.disk_usage(path).free
            except OSError:
                return None
    return None

