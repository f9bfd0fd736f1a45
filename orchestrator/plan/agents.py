"""Planning one run: which agents, with which share of the schedule. Pure: workload in,
agent plans out, so it is tested on its own (Locust's dispatcher, not its runner)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from sixnines.agents.schedule import NS, message_count, shaped_count, split
from sixnines.formats.vocabulary import MAX_RATE, SENDERS, Mode, Role


@dataclass(frozen=True)
class AgentPlan:
    agent_id: str
    role: str  # producer | consumer | requester | responder
    rate: float  # this agent's share of the total rate, msg/s (0 with rate: max)
    phase_ns: int  # where its schedule starts, so agents interleave evenly
    first_id: int  # producer/consumer id of its first connection
    sends: int  # messages it will send (0 for consumers)
    expected: int  # messages it should receive
    connections: int = 1
    host: str = "local"
    peak: float = 0.0  # a shaped rate: this agent's share of its highest rate (0: `rate`)

    @property
    def sends_messages(self) -> bool:
        """Whether it follows a schedule (the others wait to be told to finish)."""
        return self.role in SENDERS


def plan_agents(workload, needs_responder: bool = False,
                hosts: tuple[str, ...] = ("local",)) -> list[AgentPlan]:
    """Agents for one run, placed on `hosts`. Receivers come first: they must be subscribed
    before anyone sends.

    Agent k of each role goes to host k round-robin, so producer k and consumer k share a
    host (and a clock: their one-way latencies need no clock offset).

    One-way delivery fans out to consumers, and each consumer's connections divide what
    it receives (drivers.base.Lane): a consumer expects all producers' messages once.
    Round trip through a broker that does not echo adds one responder (one connection)
    sending requests back.
    With `rate: max` there is no schedule to share: the producers split `messages`. A
    shaped rate is shared as lanes (agents.schedule.ShapedPieces), each agent's `rate`
    its share of the shape's mean.
    """
    connections = workload.connections
    senders = workload.producers
    peak = 0.0
    if workload.rate == MAX_RATE:
        share, interval_ns = 0.0, 0.0
        sends = split(workload.messages, senders)
    elif (shape := getattr(workload, "shape", None)) is not None:  # lanes share the shape
        span_ns = workload.warmup_ns + workload.duration_ns
        share, peak = shape.mean(workload.warmup_ns, span_ns) / senders, shape.peak / senders
        interval_ns = 0.0
        sends = [shaped_count(shape, span_ns, senders * connections) * connections] * senders
    else:
        span_ns = workload.warmup_ns + workload.duration_ns
        share = workload.rate / senders
        interval_ns = NS / workload.rate
        sends = [message_count(share / connections, span_ns) * connections] * senders
    total = sum(sends)
    sender_role = Role.REQUESTER if workload.mode == Mode.ROUND_TRIP else Role.PRODUCER
    plans = [
        AgentPlan(
            agent_id=f"{sender_role}-{k}", role=sender_role, rate=share,
            phase_ns=int(k * interval_ns), first_id=k * connections, sends=sends[k],
            expected=sends[k] if sender_role == Role.REQUESTER else 0,
            connections=connections, peak=peak,
        )
        for k in range(senders)
    ]
    if sender_role == Role.PRODUCER:
        consumers = [
            AgentPlan(agent_id=f"consumer-{k}", role=Role.CONSUMER, rate=0.0, phase_ns=0,
                      first_id=k * connections, sends=0, expected=total,
                      connections=connections)
            for k in range(workload.consumers)
        ]
        plans = consumers + plans
    elif needs_responder:
        responder = AgentPlan(agent_id="responder-0", role=Role.RESPONDER, rate=0.0,
                              phase_ns=0,
                              first_id=0, sends=0, expected=total)
        plans = [responder, *plans]
    return [replace(plan, host=hosts[_index(plan) % len(hosts)]) for plan in plans]


def _index(plan: AgentPlan) -> int:
    return int(plan.agent_id.rsplit("-", 1)[1])
