"""The CPU placement of one run, from its ready agents' facts (decided by
orchestrator.plan.cpus; docs/design.md, "CPU placement"). On its own kernel the controller
keeps itself and what it started there (guards, SSH clients, a broker) off the loops' CPUs
until the run is over; the agents place themselves on `start`."""

from __future__ import annotations

import logging
import os

from sixnines.agents.affinity import busy_loop, keep_off
from sixnines.agents.cpu import descendants
from sixnines.agents.facts import kernel_id
from sixnines.formats.lag import FEWER_LOOPS, LagCause, crowded
from sixnines.orchestrator.plan.cpus import CpuPlacement, Seat, place_loops
from sixnines.orchestrator.run.agents import Agents

logger = logging.getLogger(__name__)


def loop_placement(agents: Agents) -> CpuPlacement:
    """Where the loops of the agents with a clock (all but a monitor that died) go."""
    receive = str(agents.point.workload.receive)
    return place_loops([
        Seat(agent.plan.agent_id, agent.plan.host, agent.ready_message.host.get("kernel_id", ""),
             frozenset(agent.ready_message.host.get("cpus", ())),
             agent is not agents.monitor and busy_loop(agent.plan.role, receive))
        for agent in agents.all() if agent.clock is not None])


def announce_placement(agents: Agents, cpus: CpuPlacement) -> None:
    """The placement in the log, and a warning for each kernel too crowded for one."""
    for note in cpus.notes:
        logger.info("%s: CPU placement: %s", agents.run_id, note)
    for crowded_kernel in crowded(cpus.notes):
        agents.view.warn(f"{LagCause.PLACEMENT}: {crowded_kernel}: expect send-lag tails "
                         f"from the placement, not the system: {FEWER_LOOPS}")


def keep_controller_off(agents: Agents, cpus: CpuPlacement) -> dict[int, set[int]]:
    """The controller and what it started, except the agents with a loop CPU, moved off the
    loops' CPUs of its own kernel; their threads' sets before (for
    agents.affinity.restore)."""
    looping = {agent.ready_message.pid for agent in agents.all()
               if agent.plan.agent_id in cpus.loop_cpu}
    ours = [os.getpid(), *(pid for pid in descendants(os.getpid()) if pid not in looping)]
    return keep_off(ours, cpus.avoided_by(kernel_id()))
