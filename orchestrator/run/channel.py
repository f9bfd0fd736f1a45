"""The control channel of a run's agents (docs/design.md, "Processes and the control
channel"): each agent process as the controller sees it (`AgentHandle`: what it said, and
how to tell it something), and the one inbox every agent's lines arrive in, read back as
messages with their sender.

An agent's end of output or a line that does not decode is its failure here, so every
waiter — for readiness, clock pings, the end of the run — learns of a dead agent the same
way.
"""

from __future__ import annotations

import queue
import time
from dataclasses import dataclass, field
from pathlib import Path

from sixnines.formats import protocol as p
from sixnines.formats.layout import AGENT_LOG
from sixnines.formats.manifest import Artifact, Clock
from sixnines.orchestrator.launchers.base import Launcher, Process
from sixnines.orchestrator.plan.agents import AgentPlan
from sixnines.orchestrator.run.progress import ProgressView

#: How long one wait on the channel lasts before its waiter looks up (at the broker, its
#: deadline, a hurry).
SUPERVISE_TICK_S = 0.25


@dataclass
class AgentHandle:
    """The controller's view of one agent process."""

    plan: AgentPlan
    launcher: Launcher
    process: Process
    out_dir: Path  # on the controller
    remote_dir: str  # where the agent writes, on its host
    ready: p.Ready | None = None
    done: p.Done | None = None
    failure: str | None = None
    clock: Clock | None = None  # None until it answered the clock pings
    artifacts: dict[str, Artifact] = field(default_factory=dict)  # as announced, verified
    collected: bool = False  # its remote files are here, verified, and gone from its host
    sent: int = 0
    received: int = 0

    @property
    def finished(self) -> bool:
        return self.done is not None or self.failure is not None

    @property
    def ready_message(self) -> p.Ready:
        """Its `ready` (host facts, pid), asked only of an agent past its start-up."""
        if self.ready is None:
            raise RuntimeError(f"{self.plan.agent_id} is not ready")
        return self.ready

    @property
    def remote(self) -> bool:
        """Whether it writes its files elsewhere than where the controller keeps them."""
        return self.remote_dir != str(self.out_dir)

    def send(self, message: p.Message) -> bool:
        return self.process.write_line(p.encode(message))


class ControlChannel:
    """The inbox the launchers put every agent's lines in (`(process, line)`, None at the
    end of its output), and the agents it reads them for, by id."""

    def __init__(self, agents: dict[str, AgentHandle], view: ProgressView) -> None:
        self.inbox: queue.Queue = queue.Queue()
        self.agents = agents
        self.view = view

    def next(self, deadline: float) -> tuple[p.Message | None, AgentHandle | None]:
        """The next message from any agent before `deadline`, with its sender. Ends of output
        and undecodable lines become agent failures here; (None, None) on timeout."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None, None
            try:
                process, line = self.inbox.get(timeout=remaining)
            except queue.Empty:
                return None, None
            agent = self.agents.get(process.name)
            if agent is None:
                continue
            if line is None:
                if not agent.finished:
                    code = process.wait(2.0)
                    agent.failure = (f"exited (code {code}) without reporting its results; "
                                     f"see {agent.out_dir / AGENT_LOG}")
                    self.view.agent_state(agent.plan.agent_id, "failed")
                return None, agent
            try:
                message = p.decode(line)
            except p.ProtocolError as exc:
                agent.failure = str(exc)
                return None, agent
            if isinstance(message, p.Done):
                agent.done = message
                agent.sent, agent.received = message.sent, message.received
                self.view.agent_state(agent.plan.agent_id, message.status)
            elif isinstance(message, p.Failed):
                agent.failure = message.error
                self.view.agent_state(agent.plan.agent_id, "failed")
            return message, agent
