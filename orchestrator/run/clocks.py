"""The clocks of a run's agents, set against the controller's before the start.

Each agent's offset from our clock is estimated from pings: the one with the shortest
round trip, uncertainty half that round trip (NTP's reasoning). The estimates are kept as
evidence; the offset used to start agents is one per clock domain (agents on one kernel
share a monotonic clock and must agree on t0 to the nanosecond): exactly 0 in the
controller's own domain, else the domain's most certain estimate.
"""

from __future__ import annotations

import time

from sixnines.agents.facts import clock_domain
from sixnines.formats import protocol as p
from sixnines.formats.manifest import Clock
from sixnines.orchestrator.run.agents import Agents, RunFailure
from sixnines.orchestrator.run.channel import AgentHandle, ControlChannel

PINGS = 7
PING_TIMEOUT_S = 10


def sync_clocks(agents: Agents) -> None:
    """Give every agent its clock (module docstring). A monitor that died or does not
    answer is left without a clock (and out of the run); any other agent that does not
    answer fails the run."""
    for agent in agents.all():
        if agent is agents.monitor and agent.finished:
            continue
        best = _best_ping(agents.channel, agent)
        if best is None and agent is agents.monitor:
            agent.failure = "did not answer clock pings"
            continue
        if best is None:
            raise RunFailure(f"{agent.plan.agent_id} did not answer clock pings")
        rtt, offset = best
        agent.clock = Clock(domain=agent.ready_message.host.get("clock_domain"),
                            estimated_offset_ns=offset, uncertainty_ns=rtt // 2, pings=PINGS)
    settle_domains([agent.clock for agent in agents.all() if agent.clock is not None],
                   clock_domain())


def _best_ping(channel: ControlChannel, agent: AgentHandle) -> tuple[int, int] | None:
    """(round trip, estimated offset) of the agent's quickest answered ping, ns; None when
    it answered none."""
    best = None
    for _ in range(PINGS):
        sent = time.perf_counter_ns()
        agent.send(p.Ping(t_ns=sent))
        message, source = channel.next(time.monotonic() + PING_TIMEOUT_S)
        back = time.perf_counter_ns()
        if source is agent and isinstance(message, p.Pong) and message.t_ns == sent:
            rtt = back - sent
            if best is None or rtt < best[0]:
                best = (rtt, message.agent_ns - (sent + back) // 2)
    return best


def settle_domains(clocks: list[Clock], ours: str) -> None:
    """The offset each clock is used with: 0 in our own domain (`ours`), else the most
    certain estimate of its domain, with that estimate's uncertainty."""
    for clock in clocks:
        same_clock = clock.domain == ours
        best = min((other for other in clocks if other.domain == clock.domain),
                   key=lambda other: other.uncertainty_ns or 0)  # set: measured here
        clock.offset_ns = 0 if same_clock else best.estimated_offset_ns
        clock.domain_uncertainty_ns = 0 if same_clock else best.uncertainty_ns
        clock.same_clock_as_controller = same_clock
