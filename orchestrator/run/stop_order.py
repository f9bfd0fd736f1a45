"""How a run's agents end: senders first, then the receivers hear out what was sent, the
broker's monitor last — and how long each is waited for, until a repeated interrupt
hurries us (orchestrator.run.interrupts)."""

from __future__ import annotations

import logging
import time

from sixnines.agents.schedule import NS
from sixnines.formats import protocol as p
from sixnines.orchestrator.run.agents import Agents
from sixnines.orchestrator.run.channel import SUPERVISE_TICK_S, AgentHandle

logger = logging.getLogger(__name__)

STOP_GRACE_S = 15.0  # after a stop, how long agents get to write their data


class StopOrder:
    """The end of a run's agents, and what it has told them so far."""

    def __init__(self, agents: Agents) -> None:
        self.agents = agents
        self.hurried = False  # a repeated interrupt: wait no longer than needed
        self.finish_sent = False  # the receivers were told how much was sent

    def hurry(self) -> None:
        """Another interrupt while winding down: stop waiting for agents to report (their
        files are still collected from disk)."""
        self.hurried = True

    def finish_consumers(self) -> None:
        """Tell the receiving agents how much was sent, so they stop once it has arrived."""
        self.finish_sent = True
        sent = sum(a.done.sent for a in self.agents.senders() if a.done is not None)
        for agent in self.agents.measuring():
            if not agent.plan.sends_messages and not agent.finished:
                agent.send(p.Finish(expected=sent))

    def finish_monitor(self) -> None:
        """The run is over: the monitor takes its last sample and reports."""
        monitor = self.agents.monitor
        if monitor is None or monitor.finished:
            return
        monitor.send(p.Finish(expected=0))
        deadline = time.monotonic() + STOP_GRACE_S
        while not monitor.finished:
            _, source = self.agents.channel.next(deadline)
            if source is None:
                self.agents.monitor_notes.append(f"broker CPU monitor: no report within "
                                                 f"{STOP_GRACE_S:.0f} s of the run's end")
                return

    def stop(self, reason: str) -> None:
        """Stop what still runs, senders first, and wait for each to write its data (until
        a repeated interrupt hurries us: collection still finds what they wrote). Once the
        senders have reported, the receivers hear out what was sent: `finish` with its
        count, so they stop when it has arrived or their drain has passed, as at a normal
        end — a receiver stopped at once would miss what was still on its way, which is
        not the system's loss. They are stopped instead when that count is not known (a
        sender did not report), when they were told to finish before (the run overran, or
        was interrupted during their drain) or when we are hurried; what they miss after
        their last receipt is then `unknown` (docs/design.md, "The end of a receiver's
        records"). The monitor goes last."""
        senders = self.agents.senders()
        self._await_end(self._told_to_stop(senders, reason), STOP_GRACE_S)
        receivers = [a for a in self.agents.measuring() if not a.plan.sends_messages]
        if self.finish_sent or self.hurried or any(a.done is None for a in senders):
            self._told_to_stop(receivers, reason)
        else:
            self.finish_consumers()
        self._await_end(receivers, self.agents.point.workload.drain_ns / NS + STOP_GRACE_S)
        if self.agents.monitor is not None:
            self._await_end(self._told_to_stop([self.agents.monitor], reason), STOP_GRACE_S)

    def _told_to_stop(self, group: list[AgentHandle], reason: str) -> list[AgentHandle]:
        """`group`, each agent still running told to stop."""
        for agent in group:
            if not agent.finished:
                logger.info("%s: stopping %s (%s)", self.agents.run_id, agent.plan.agent_id,
                            reason)
                agent.send(p.Stop(reason=reason))
        return group

    def _await_end(self, group: list[AgentHandle], seconds: float) -> None:
        """Until every agent of `group` has finished, `seconds` have passed, or we are
        hurried."""
        deadline = time.monotonic() + seconds
        while not self.hurried and not all(a.finished for a in group):
            _, source = self.agents.channel.next(min(deadline, time.monotonic() +
                                                     SUPERVISE_TICK_S))
            if source is None and time.monotonic() >= deadline:
                break
