"""Deciding the CPU placement of a run (docs/design.md, "CPU placement"): on each kernel,
every busy-waiting loop gets a CPU of its own, and everything else sixnines runs there
keeps off those CPUs. Applied by the agents on `start` (agents.affinity).

Per kernel, not per host: hosts in network namespaces or containers of one machine share
its CPUs. A kernel whose loops would leave nothing else a CPU (two busy loops on two CPUs)
gets no placement: its loops share the CPUs as they would without sixnines, and the
manifest says so.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from sixnines.formats.lag import crowded_note


@dataclass(frozen=True)
class Seat:
    """One agent as the placement sees it."""

    agent_id: str
    host: str  # the placement's name of its host
    kernel: str  # its kernel's id (agents.facts.kernel_id)
    cpus: frozenset[int]  # the CPUs it may use
    busy: bool  # its loop spins (agents.affinity.busy_loop)


@dataclass
class CpuPlacement:
    loop_cpu: dict[str, int] = field(default_factory=dict)  # agent id -> its loop's CPU
    keep_off: dict[str, list[int]] = field(default_factory=dict)  # kernel -> loops' CPUs
    notes: list[str] = field(default_factory=list)  # what was decided, per kernel

    def avoided_by(self, kernel: str) -> list[int]:
        return self.keep_off.get(kernel, [])


def place_loops(seats: list[Seat]) -> CpuPlacement:
    """Each busy loop on the highest CPU it may use that no other loop has, kernel by
    kernel; a kernel where that fails, or leaves an agent no CPU, keeps no placement."""
    placement = CpuPlacement()
    by_kernel: dict[str, list[Seat]] = defaultdict(list)
    for seat in seats:
        by_kernel[seat.kernel].append(seat)
    for kernel, group in by_kernel.items():
        loops = [seat for seat in group if seat.busy]
        if not loops:
            continue
        taken: dict[str, int] = {}
        for seat in loops:
            free = sorted(seat.cpus - set(taken.values()))
            if not free:
                break
            taken[seat.agent_id] = free[-1]
        cpus = set(taken.values())
        short = [seat.agent_id for seat in group
                 if seat.agent_id not in taken and not seat.cpus - cpus]
        every = sorted(set().union(*(seat.cpus for seat in group)))
        name = "host " + ", ".join(sorted({seat.host for seat in group}))
        if len({seat.host for seat in group}) > 1:
            name += " (one kernel)"
        if len(taken) < len(loops) or short or len(every) <= len(loops):
            placement.notes.append(crowded_note(name, len(loops), len(every)))
            continue
        placement.loop_cpu |= taken
        placement.keep_off[kernel] = sorted(cpus)
        loops_text = ", ".join(f"{agent} on CPU {cpu}" for agent, cpu in taken.items())
        placement.notes.append(f"{name}: {loops_text}; everything else sixnines runs there "
                               f"keeps off CPU {', '.join(map(str, sorted(cpus)))}")
    return placement
