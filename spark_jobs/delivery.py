"""Delivery accounting (docs/design.md rule 7): every message sent is delivered, lost,
duplicated or of unknown fate, and every receipt matches a message sent or is unexpected.

Counts come from each agent's files (spark_jobs.agent_pass): its `Tally`, then the
(producer_id, seq) matching of its receipts against every producer's measured sends
(`Matched`), added up per run (`counts`).
Agents that died mid-run (docs/design.md, "When an agent dies") take part with what they
closed before they died (`Dead`): a dead sender's messages that receivers got after its last
chunk count as sent (their headers say so), and a dead consumer's missing deliveries are
lost only when they would have had to take longer than any its stream from that producer
showed to arrive after its last kept receipt; the others are unknown. A requester is its
own receiver: its request rows are a sender's, its reply rows a receiver's, and when it
dies it is a dead consumer of its own requests. When the responder dies, each requester's
unanswered requests are lost only when sent long enough before the latest one answered
(the responder was alive then) that their replies would have had to take longer than any
did; the others are unknown.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields

from sixnines.formats.manifest import AgentEntry, Manifest, Workload
from sixnines.formats.vocabulary import SENDERS, FanOut, Role


@dataclass(frozen=True)
class Watched:
    """A receiving agent whose misses may be of unknown fate rather than lost.

    Its records end before everything sent to it could have arrived: it died (what it
    received after its last kept chunk is gone), it was cut short (stopped, or its own
    failure), its drain ran out while the system still held messages (`drain_verdict`),
    or it is a requester whose responder died (requests that reached the responder after
    that got no reply). `copies`: how many of its connections expect each message
    (`copies`); `ids`: the producer ids it expects messages from, [first, end) (a
    requester: its own requests), None for all (a consumer: fan-out); `relay_died`: the
    responder died, so the instant the far end is known to have been alive is the latest
    request it answered (sent_ns on this agent's clock), not this agent's last receipt."""

    agent_index: int
    copies: int
    ids: tuple[int, int] | None = None
    relay_died: bool = False

    @classmethod
    def of(cls, index: int, agent: AgentEntry, workload: Workload, relay_died: bool = False
           ) -> Watched:
        """The receiver at `index` of the manifest watched: a consumer expects every
        message, a requester the replies to its own requests."""
        n = agent.connections or workload.connections
        if agent.role == Role.REQUESTER:
            first = agent.first_id
            assert first is not None  # every sender's entry has it
            return cls(index, 1, (first, first + n), relay_died)
        return cls(index, copies(workload, n))


@dataclass(frozen=True)
class Dead:
    """The agents whose records end before the run did, and whose files are analysed.

    receivers: the receiving agents whose misses may be unknown (`Watched`) by what the
    manifest says: they died, were cut short, or lost their responder (those whose drain
    ran out are known only from their records: spark_jobs.run_merge); producer_ids: the ids
    of the connections of each sender (producer or requester) that died or whose records
    are cut short, so what receivers got from it beyond them counts as sent."""

    receivers: tuple[Watched, ...] = ()
    producer_ids: tuple[int, ...] = ()

    @classmethod
    def of(cls, manifest: Manifest, analysed: Iterable[str]) -> Dead:
        """The dead or cut short among `analysed` (agent ids with files read), and the
        requesters of a responder that died, keyed by agent_index (their position in the
        manifest)."""
        kept = set(analysed)
        workload = manifest.workload
        relay_died = any(agent.died for agent in manifest.agents
                         if agent.role == Role.RESPONDER)
        receivers: list[Watched] = []
        producer_ids: list[int] = []
        for index, agent in enumerate(manifest.agents):
            if agent.id not in kept:
                continue
            lost_relay = relay_died and agent.role == Role.REQUESTER
            if receives(agent) and (agent.died or agent.cut_short is not None or lost_relay):
                receivers.append(Watched.of(index, agent, workload, lost_relay))
            if agent.ended_early and agent.role in SENDERS and agent.first_id is not None:
                n = agent.connections or workload.connections
                producer_ids += range(agent.first_id, agent.first_id + n)
        return cls(tuple(receivers), tuple(producer_ids))


#: Producer id → the runs of seqs (first, count) the system acknowledged to it.
Acknowledged = dict[int, tuple[tuple[int, int], ...]]


def acknowledged(manifest: Manifest) -> Acknowledged | None:
    """The run's acknowledged messages, from its senders' entries; None when no sender
    recorded any (the system acknowledges nothing, or not per connection)."""
    runs: dict[int, list[tuple[int, int]]] = {}
    for agent in manifest.agents:
        for run in agent.acknowledged or ():
            runs.setdefault(run.producer_id, []).append((run.first_seq, run.count))
    return {producer_id: tuple(found) for producer_id, found in runs.items()} or None


def receives(agent: AgentEntry) -> bool:
    """Whether messages are expected at the agent: a consumer, or a requester placing
    producer ids (the replies to its requests)."""
    return agent.role == Role.CONSUMER or (agent.role == Role.REQUESTER
                                           and agent.first_id is not None)


def drain_verdict(drain_ended_ns: int, drain_ns: int, last_receipt_ns: int | None
                  ) -> str | None:
    """Why a receiver whose drain ran out before everything arrived may not have seen what
    it misses, None when the system had plainly finished delivering (docs/design.md, "The
    end of a receiver's records"). Its deliveries caught up with the sending and then
    stopped — its last receipt within one drain before the drain began, nothing during
    it — and what it misses is lost. Otherwise the system still held messages when the
    drain ended: it was still delivering during the drain (a backlog), or had stopped
    answering more than a drain before the drain began (a stall), or never delivered."""
    began = drain_ended_ns - drain_ns
    drain = f"{drain_ns / 1e9:g} s"
    if last_receipt_ns is None:
        return f"nothing was delivered to it before its drain of {drain} ran out"
    quiet = f"{(drain_ended_ns - last_receipt_ns) / 1e9:.1f} s"
    if last_receipt_ns > began:
        return (f"still receiving during its drain of {drain}, which ran out first (the "
                f"last delivery {quiet} before its end)")
    if last_receipt_ns <= began - drain_ns:
        return f"no delivery for {quiet} before the end; its drain of {drain} ran out first"
    return None


def copies(workload: Workload, connections: int) -> int:
    """How many times a consumer agent with `connections` expects each message: once, over
    whichever connection its lane is (docs/design.md, "Connections divide the load"), or
    once per connection in runs recorded before schema 5 (FanOut.CONNECTION)."""
    return connections if workload.fan_out == FanOut.CONNECTION else 1


@dataclass(frozen=True)
class Expected:
    """What one run's accounting needs besides its rows. `consumers`: the copies of each
    message the consumers analysed expect (`copies`), dead ones with kept chunks included
    (None: the consumers with rows); `absent`: the copies expected by consumers that left
    no data; `dead`: its agents that died but left chunks (see `accounting`)."""

    consumers: int | None = None
    absent: int = 0
    dead: Dead = Dead()


COUNTS = ("sent", "requests", "received", "delivered", "lost", "unknown", "duplicated",
          "reordered", "key_reordered", "unexpected", "lost_acknowledged", "warmup_sent",
          "warmup_received")


@dataclass
class Tally:
    """What an agent's files alone count: sends, requests and receipts (measured and
    warm-up), the copies of each message its receipts stand for (a consumer with rows: 1,
    or its connections with rows in runs before schema 5), and its reordered receipts (seq below
    the highest received before them in their stream)."""

    sent: int = 0
    requests: int = 0
    warmup_sent: int = 0
    received: int = 0
    warmup_received: int = 0
    consumers: int = 0
    reordered: int = 0
    key_reordered: int = 0  # in their (stream, key): keyed runs only

    def __add__(self, other: Tally) -> Tally:
        return _added(self, other)


@dataclass
class Matched:
    """An agent's measured receipts matched against the measured sends: one per message,
    or per message and connection in runs before schema 5 (unique); again (duplicated);
    of no message sent (unexpected); and, at a watched receiver, the misses that may have
    come after its stream is known whole (late: unknown, not lost)."""

    unique: int = 0
    duplicated: int = 0
    unexpected: int = 0
    late: int = 0
    lost_acknowledged: int = 0  # acknowledged to their producer, missing (delivery_pass)

    def __add__(self, other: Matched) -> Matched:
        return _added(self, other)


def _added(one, other):
    return type(one)(**{f.name: getattr(one, f.name) + getattr(other, f.name)
                        for f in fields(one)})


def counts(expected: Expected, tally: Tally, matched: Matched) -> dict[str, int]:
    """A run's counts (COUNTS) from its agents' tallies and matching. One-way delivery
    fans out to consumers, so every consumer expects every message sent (`copies` of
    it), and each expected delivery is delivered (the unique deliveries), lost or
    unknown: lost = consumers · sent + requests − delivered − unknown. Consumers that left
    no data (killed) received what is not known, so their absent · sent expected
    deliveries are `unknown`, never lost (nor "0 lost"); so are the deliveries a watched
    receiver misses and may have received after its stream is known whole (`late`). A
    requester is its own receiver: each request expects one reply; one that left no
    data took its requests with it, so it adds to no count."""
    consumers = tally.consumers if expected.consumers is None else expected.consumers
    by_producers = tally.sent - tally.requests
    return {"sent": tally.sent, "requests": tally.requests, "received": tally.received,
            "delivered": matched.unique,
            "lost": consumers * by_producers + tally.requests - matched.unique - matched.late,
            "unknown": expected.absent * by_producers + matched.late,
            "duplicated": matched.duplicated, "reordered": tally.reordered,
            "key_reordered": tally.key_reordered,
            "unexpected": matched.unexpected,
            "lost_acknowledged": matched.lost_acknowledged, "warmup_sent": tally.warmup_sent,
            "warmup_received": tally.warmup_received}
