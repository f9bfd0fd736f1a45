"""Delivery accounting (docs/design.md rule 7): every message sent is delivered, lost,
duplicated or of unknown fate, and every receipt matches a message sent or is unexpected.

Counts come from (producer_id, seq) matching in one pass over the records. Agents that
died mid-run (docs/design.md, "When an agent dies") take part with what they closed
before they died (`Dead`): a dead sender's messages that receivers got after its last
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
from dataclasses import dataclass

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from sixnines.formats.manifest import Manifest
from sixnines.formats.vocabulary import SENDERS, Role
from sixnines.spark_jobs.frames import _is_receipt, _is_sender, _receiver, measured

MESSAGE = ["producer_id", "seq"]


@dataclass(frozen=True)
class Watched:
    """A receiving agent whose misses may be of unknown fate rather than lost.

    It died (what it received after its last kept chunk is gone), or it is a requester
    whose responder died (requests that reached the responder after that got no reply).
    `connections`: its connections expecting each message; `ids`: the producer ids it
    expects messages from, [first, end) (a requester: its own requests), None for all (a
    consumer: fan-out); `relay_died`: the responder died, so the instant the far end is
    known to have been alive is the latest request it answered (sent_ns on this agent's
    clock), not this agent's last receipt."""

    agent_index: int
    connections: int
    ids: tuple[int, int] | None = None
    relay_died: bool = False


@dataclass(frozen=True)
class Dead:
    """The agents that died mid-run and whose closed chunks are analysed.

    receivers: the receiving agents whose misses may be unknown (`Watched`); producer_ids:
    the ids of each dead sender's connections (producers and requesters)."""

    receivers: tuple[Watched, ...] = ()
    producer_ids: tuple[int, ...] = ()

    @classmethod
    def of(cls, manifest: Manifest, analysed: Iterable[str]) -> Dead:
        """The dead among `analysed` (agent ids with files read), and the requesters of a
        responder that died, keyed as load_messages keys them (agent_index: position in
        the manifest)."""
        kept = set(analysed)
        connections = manifest.workload.connections
        relay_died = any(agent.died for agent in manifest.agents
                         if agent.role == Role.RESPONDER)
        receivers, producer_ids = [], []
        for index, agent in enumerate(manifest.agents):
            if agent.id not in kept:
                continue
            n = agent.connections or connections
            if agent.died and agent.role == Role.CONSUMER:
                receivers.append(Watched(index, n))
            if agent.role == Role.REQUESTER and agent.first_id is not None and (
                    agent.died or relay_died):
                receivers.append(Watched(index, 1, (agent.first_id, agent.first_id + n),
                                         relay_died))
            if agent.died and agent.role in SENDERS and agent.first_id is not None:
                producer_ids += range(agent.first_id, agent.first_id + n)
        return cls(tuple(receivers), tuple(producer_ids))


def sends(df: DataFrame, dead_producer_ids: tuple[int, ...] = ()) -> DataFrame:
    """(producer_id, seq, sent_ns, warmup, request) of every message known sent: the
    senders' rows, and the messages of dead senders that only receivers recorded (sent
    after the sender's last chunk; one row each, however many receivers got it).
    `request`: a requester's (its one receiver is itself)."""
    columns = [*MESSAGE, "sent_ns", "warmup",
               (F.col("role") == Role.REQUESTER.value).alias("request")]
    own = df.filter(_is_sender()).select(*columns)
    if not dead_producer_ids:
        return own
    seen = (df.filter(_is_receipt() & F.col("producer_id").isin(*dead_producer_ids))
            .select(*columns).dropDuplicates(MESSAGE))
    return own.unionByName(seen.join(own.select(*MESSAGE), MESSAGE, "left_anti"))


def _pair_totals(sent: DataFrame, receipts: DataFrame) -> DataFrame:
    """unique / duplicated / unexpected deliveries from (producer_id, seq) matching.

    Sent pairs carry a null receiver. Partitioning once by (producer_id, seq) lets both
    aggregations run without a second shuffle. A requester is its own receiver.
    """
    nobody = F.lit(None).cast("long").alias("receiver")
    got = receipts.select(*MESSAGE, _receiver().alias("receiver"))
    rx = F.col("receiver").isNotNull()
    per_receiver = (
        sent.select(*MESSAGE, nobody).unionByName(got)
        .repartition(*MESSAGE)
        .groupBy(*MESSAGE, "receiver")
        .agg(F.count(F.lit(1)).alias("n"))
    )
    per_pair = per_receiver.groupBy(*MESSAGE).agg(
        F.max((~rx).cast("int")).alias("was_sent"),
        F.count(F.when(rx, 1)).alias("receivers"),
        F.sum(F.when(rx, F.col("n")).otherwise(0)).alias("rows"),
    )
    was_sent = F.col("was_sent") == 1
    return per_pair.agg(
        F.sum(F.when(was_sent, F.col("receivers")).otherwise(0)).alias("unique"),
        F.sum(F.when(was_sent, F.col("rows") - F.col("receivers")).otherwise(0))
        .alias("duplicated"),
        F.sum(F.when(~was_sent, F.col("rows")).otherwise(0)).alias("unexpected"),
    )


def horizons(kept: DataFrame) -> DataFrame:
    """(agent_index, producer_id, horizon) for watched receivers' kept rows (warm-up
    included: all the evidence there is). horizon = the instant the agent's stream is
    known to have been whole (its last kept receive time; with a dead responder, the
    latest request it answered was sent) − the longest recv − sent of its receipts from
    that producer: a missing message sent before it would have had to take longer than any
    of them did to come after that instant. Never later than the newest message kept from
    that producer: a stream that lagged behind the others at the end (one Kafka partition)
    shows no progress past it, so its misses after it stay unknown. Both times are the
    receiver's clock minus the producer's (a requester's are one clock), so the comparison
    holds across hosts without offsets."""
    alive = F.when(F.col("relay_died"), F.col("sent_ns")).otherwise(F.col("recv_ns"))
    last = kept.groupBy("agent_index").agg(F.max(alive).alias("last_ns"))
    stream = kept.groupBy("agent_index", "producer_id").agg(
        F.max(F.col("recv_ns") - F.col("sent_ns")).alias("lateness"),
        F.max("sent_ns").alias("newest"))
    return stream.join(last, "agent_index").select(
        "agent_index", "producer_id",
        F.least(F.col("last_ns") - F.col("lateness"), F.col("newest")).alias("horizon"))


def _watched_table(spark, receivers: tuple[Watched, ...]) -> DataFrame:
    rows = [(w.agent_index, w.connections, *(w.ids or (None, None)), w.relay_died)
            for w in receivers]
    return F.broadcast(spark.createDataFrame(
        rows, "agent_index int, connections int, first_id int, end_id int, relay_died boolean"))


def unknown_at_dead(df: DataFrame, sent: DataFrame, receivers: tuple[Watched, ...]
                    ) -> DataFrame:
    """One row (late): the measured messages sent that a watched receiver's connections
    miss and may have received after the instant its stream is known whole: sent at or
    after its horizon with that producer (see `horizons`), or from a producer it kept
    nothing from. Its other misses are lost. `sent`: the measured sends."""
    watched = _watched_table(df.sparkSession, receivers)
    kept = df.filter(_is_receipt()).join(watched.select("agent_index", "relay_died"),
                                         "agent_index")
    got = (measured(kept).select(*MESSAGE, "agent_index", "consumer_id").distinct()
           .groupBy(*MESSAGE, "agent_index").agg(F.count(F.lit(1)).alias("got")))
    own = F.col("first_id").isNull() | ((F.col("producer_id") >= F.col("first_id"))
                                        & (F.col("producer_id") < F.col("end_id")))
    expected = (sent.select(*MESSAGE, "sent_ns").crossJoin(watched).filter(own)
                .join(F.broadcast(horizons(kept)), ["agent_index", "producer_id"], "left")
                .join(got, [*MESSAGE, "agent_index"], "left"))
    horizon = F.col("horizon")
    maybe_later = horizon.isNull() | F.col("sent_ns").isNull() | (F.col("sent_ns") >= horizon)
    missing = F.col("connections") - F.coalesce(F.col("got"), F.lit(0))
    return expected.agg(F.coalesce(F.sum(F.when(maybe_later, missing)), F.lit(0)).alias("late"))


def reordered(df: DataFrame) -> DataFrame:
    """One row: receipts whose seq is below the highest seq seen earlier in their stream.

    A stream is one (receiving connection, producer) pair in receive order (rx_index).
    """
    earlier = (
        Window.partitionBy("agent_index", "consumer_id", "producer_id")
        .orderBy("rx_index")
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    late = F.col("seq") < F.max("seq").over(earlier)
    return (
        df.filter(_is_receipt())
        .select(late.alias("late"))
        .agg(F.count(F.when(F.col("late"), 1)).alias("reordered"))
    )


def _counted(sent: DataFrame, df: DataFrame, consumers: int | None) -> DataFrame:
    """One row: sent, requests and warm-up sent (of `sent`), received and warm-up
    received (of df), and `consumers` when not given (receiving connections with rows)."""
    warm = F.col("warmup")
    aggregates = [
        F.count(F.when(_is_receipt() & ~warm, 1)).alias("received"),
        F.count(F.when(_is_receipt() & warm, 1)).alias("warmup_received"),
    ]
    if consumers is None:
        consumer_id = F.when(F.col("role") == Role.CONSUMER.value, _receiver())
        aggregates.append(F.count_distinct(consumer_id).alias("consumers"))
    return sent.agg(F.count(F.when(~warm, 1)).alias("sent"),
                    F.count(F.when(F.col("request") & ~warm, 1)).alias("requests"),
                    F.count(F.when(warm, 1)).alias("warmup_sent")).crossJoin(df.agg(*aggregates))


def accounting(df: DataFrame, consumers: int | None = None, absent: int = 0,
               dead: Dead = Dead()) -> DataFrame:
    """One row: sent, requests, received, delivered, lost, unknown, duplicated, reordered,
    unexpected, warmup_*.

    df is the loaded frame (warm-up rows included, for the separate warm-up counts).
    One-way delivery is fan-out, so every consumer expects every sent message, and each
    expected delivery is delivered (the unique deliveries), lost or unknown:
    lost = consumers·sent + requests − delivered − unknown. `consumers` is
    the number of receiving consumer connections analysed, dead ones with kept chunks
    included (default: those with rows in df). `absent`: consumer connections of agents
    that left no data (killed): what they received is not known, so their absent·sent
    expected deliveries are `unknown`, never lost (nor "0 lost"). `dead`: the agents that
    died but left chunks, and the requesters of a responder that died (see the module
    docstring). A requester is its own receiver: each request expects one reply; one that
    left no data took its requests with it, so it adds to no count. Duplicated and
    unexpected count replies as they count deliveries. df needs `agent_index` (see
    load_messages).
    """
    sent = sends(df, dead.producer_ids)
    measured_sent = measured(sent)
    m = measured(df)
    counts = _counted(sent, df, consumers)
    n_consumers = F.col("consumers") if consumers is None else F.lit(consumers)
    sent_producers = F.col("sent") - F.col("requests")
    late = (unknown_at_dead(df, measured_sent, dead.receivers) if dead.receivers
            else df.sparkSession.range(1).select(F.lit(0).cast("long").alias("late")))
    counts = counts.crossJoin(late)
    unknown = F.lit(absent) * sent_producers + F.col("late")
    lost = (n_consumers * sent_producers + F.col("requests") - F.col("unique")
            - F.col("late"))
    return counts.crossJoin(_pair_totals(measured_sent, m.filter(_is_receipt()))).crossJoin(
        reordered(m)).select(
        "sent",
        "requests",
        "received",
        F.col("unique").cast("long").alias("delivered"),
        lost.cast("long").alias("lost"),
        unknown.cast("long").alias("unknown"),
        F.col("duplicated").cast("long").alias("duplicated"),
        "reordered",
        F.col("unexpected").cast("long").alias("unexpected"),
        "warmup_sent",
        "warmup_received",
    ).fillna(0)
