"""A run's faults tied into the run (orchestrator.run.runner): armed once its agents are up,
started on the measured run's clock, looked at on each supervision tick (the broker
monitor follows a broker, or a node of it, started again), undone as the run winds down. A run whose
scenario has no faults has none of this (`RunFaults.arm` gives None)."""

from __future__ import annotations

from pathlib import Path

from sixnines.formats import protocol as p
from sixnines.formats.manifest import FaultRecord
from sixnines.orchestrator.run.agents import Agents
from sixnines.orchestrator.run.brokers import RunningBroker
from sixnines.orchestrator.run.faults import FaultTimeline
from sixnines.orchestrator.run.fleet import Fleet
from sixnines.orchestrator.scenario.faults import Fault


class RunFaults:
    """The run's fault timeline and the broker processes its monitor samples."""

    def __init__(self, timeline: FaultTimeline, agents: Agents, broker: RunningBroker) -> None:
        self.timeline = timeline
        self.agents = agents
        self.broker = broker
        self.monitored = [node.pid for node in broker.nodes]  # by node

    @classmethod
    def arm(cls, faults: tuple[Fault, ...], agents: Agents, broker: RunningBroker,
            fleet: Fleet, problems: list[str], log_path: Path) -> RunFaults | None:
        """The faults made ready (None: the scenario has none); a fault held on a host that
        cannot be done there fails the run before it starts (LaunchError, nothing left
        held)."""
        if not faults:
            return None
        measuring = {agent.plan.agent_id: agent.process for agent in agents.measuring()}
        timeline = FaultTimeline(faults, broker, measuring, problems)
        timeline.arm(fleet.launchers, log_path)
        return cls(timeline, agents, broker)

    def start(self, measured_start_ns: int) -> list[FaultRecord]:
        """The faults' own thread started; their records, which it keeps up to date."""
        self.timeline.start(measured_start_ns)
        return self.timeline.records

    @property
    def down(self) -> set[int]:
        """The broker's nodes killed on purpose and not yet back: their exit is not the
        run's."""
        return self.timeline.down

    def changed(self) -> bool:
        """Whether a fault's record changed since the last call (the manifest is due); the
        monitor pointed at each node started again meanwhile (agents.monitor)."""
        if not self.timeline.changed.is_set():
            return False
        self.timeline.changed.clear()
        monitor = self.agents.monitor
        for node in self.broker.nodes:
            pid = node.pid
            if monitor is not None and pid is not None and pid != self.monitored[node.index] \
                    and node.index not in self.timeline.down:
                self.monitored[node.index] = pid
                monitor.send(p.Follow(target_pid=pid, node=node.index))
        return True

    def close(self) -> None:
        """Whatever a fault still holds undone (a paused process resumed, a link given
        back, a data disk thawed or emptied) before the run stops its processes."""
        self.timeline.close()
