"""The manifest as a run keeps it (orchestrator.run.manifest writes it): an entry per
agent, rewritten as the run goes — agents not yet finished are `running` — and at the end
the run's problems gathered from its agents and its status decided (ok / partial /
failed), so a controller killed outright leaves a record to recover the run from
(orchestrator.results.recovery)."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import numpy as np

from sixnines.formats.chunks import kept_chunks
from sixnines.formats.fill import RATIO_TOLERANCE
from sixnines.formats.manifest import (
    AgentEntry,
    Clock,
    FillRecord,
    Manifest,
    MonitorEntry,
    SizesRecord,
)
from sixnines.formats.sizes import DrawnSizes, histogram
from sixnines.formats.vocabulary import SENDERS
from sixnines.orchestrator.plan.cpus import CpuPlacement
from sixnines.orchestrator.run.agents import Agents
from sixnines.orchestrator.run.channel import AgentHandle
from sixnines.orchestrator.run.manifest import RUNNING, write_manifest

logger = logging.getLogger(__name__)


class RunRecord:
    """A run's manifest (`manifest`, the model) and its directory; `problems` is the
    manifest's own list, which every part of the run adds to."""

    def __init__(self, run_dir: Path, manifest: Manifest) -> None:
        self.run_dir = run_dir
        self.manifest = manifest
        self.problems: list[str] = manifest.problems
        #: the sizes record and the sending connections it was drawn for: the manifest is
        #: rewritten at every change, the rings are drawn once
        self._drawn: tuple[tuple[int, ...], SizesRecord | None] = ((), None)

    def write(self, agents: Agents, cpus: CpuPlacement, final: bool = False) -> None:
        """Write the manifest as things stand: agents not yet finished are `running` (or,
        once the run is over, `missing`)."""
        self.manifest.agents = [AgentEntry(**entry(agent, cpus, final))
                                for agent in agents.measuring()]
        monitor = (entry(agents.monitor, cpus, final) if agents.monitor
                   else {"status": "failed"})
        self.manifest.monitor = (MonitorEntry(**monitor, notes=agents.monitor_notes)
                                 if agents.monitor or agents.monitor_notes else None)
        self.manifest.fill = self._fill(agents)
        connections = tuple(entry.first_id + c for entry in self.manifest.agents
                            if entry.first_id is not None and entry.role in SENDERS
                            for c in range(entry.connections or 1))
        if connections:  # asked of `agents` only once some sender runs: a file of sizes
            # that cannot be read fails the run at its launch, not at the first manifest
            self.manifest.workload.key_draws = agents.key_draws
        self.manifest.sizes = self._sizes(agents, connections)
        write_manifest(self.run_dir, self.manifest)

    def _fill(self, agents: Agents) -> FillRecord | None:
        """What messages carried, as the first sender that reported measured it."""
        measured = next((a for a in self.manifest.agents if a.fill_ratios), None)
        if measured is None or measured.fill_ratios is None:
            return None
        target = agents.fill.ratio  # read already: that sender was sent it
        return FillRecord(content=str(self.manifest.params.get("content", "random")),
                          ratios=measured.fill_ratios, target=target,
                          tolerance=None if target is None else RATIO_TOLERANCE,
                          measured_by=measured.id)

    def _sizes(self, agents: Agents, connections: tuple[int, ...]) -> SizesRecord | None:
        """The size distribution and the sizes its sending `connections` drew."""
        if connections == self._drawn[0]:
            return self._drawn[1]
        sizes = agents.sizes if connections else None
        if sizes is None:
            return None
        draws = self.manifest.workload.key_draws
        drawn_sizes = DrawnSizes(sizes, agents.run_seed, None if draws is None else draws.period)
        drawn = np.concatenate([drawn_sizes.ring(connection) for connection in connections])
        record = SizesRecord(distribution=sizes.to_message(), histogram=histogram(drawn),
                             drawn=len(drawn), mean=float(drawn.mean()),
                             smallest=int(drawn.min()), largest=int(drawn.max()))
        self._drawn = (connections, record)
        return record

    def conclude(self, agents: Agents, cpus: CpuPlacement) -> None:
        """The agents' troubles gathered, the run's status decided and its end stamped."""
        for agent in agents.all():
            problems = agents.problems_of(agent)
            if agent.done is not None:
                problems.extend(agent.done.problems)
            elif agent.failure:
                problems.append(f"{agent.plan.agent_id} on host {agent.plan.host}: "
                                f"{agent.failure}")
                if agent is agents.monitor and agent.clock is not None:
                    self.problems.append(f"the broker CPU monitor died during the run ("
                                         f"{agent.failure}): broker CPU covers the run up "
                                         "to its last kept sample")
        statuses = {entry(agent, cpus, final=True)["status"] for agent in agents.measuring()}
        if not any(agent.done is not None or kept_chunks(agent.out_dir).listed
                   for agent in agents.measuring()):
            self.manifest.status = "failed"  # nothing recorded (what died keeps its chunks)
        elif self.problems or statuses != {"ok"}:
            self.manifest.status = "partial"
        else:
            self.manifest.status = "ok"
        self.manifest.ended_at = time.time()
        logger.info("%s: %s", agents.run_id, self.manifest.status)


def entry(agent: AgentHandle, cpus: CpuPlacement, final: bool) -> dict[str, Any]:
    """The fields of an agent's manifest entry (formats.manifest.AgentEntry; its
    problems: `RunRecord.conclude`)."""
    plan, ready, done = agent.plan, agent.ready, agent.done
    return dict(
        id=plan.agent_id, role=plan.role, host=plan.host, first_id=plan.first_id,
        connections=plan.connections, rate=plan.rate, planned_sends=plan.sends,
        loop_cpu=cpus.loop_cpu.get(plan.agent_id),
        clock=agent.clock or Clock(), sent=agent.sent, received=agent.received,
        exit_code=agent.process.poll(),
        files_at=agent.process.files_at(agent.remote_dir)
        if agent.remote and not agent.collected else None,
        **({} if ready is None else dict(pid=ready.pid, host_facts=ready.host,
                                         versions=ready.versions)),
        **(dict(status=done.status, t0_ns=done.t0_ns, artifacts=agent.artifacts,
                **done.extra) if done is not None else
           dict(status="failed" if agent.failure else "missing" if final else RUNNING)))
