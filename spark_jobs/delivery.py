"""Delivery accounting (docs/design.md rule 7): every message sent is delivered, lost,
duplicated or of unknown fate, and every receipt matches a message sent or is unexpected.

Counts come from (producer_id, seq) matching in one pass over the records of every run
analysed together (each run's counts are a row, keyed by `run_index`: spark_jobs.frames).
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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from sixnines.formats.manifest import Manifest
from sixnines.formats.vocabulary import SENDERS, Role
from sixnines.spark_jobs.frames import RUN, _is_receipt, _is_sender, _receiver, measured

MESSAGE = ["producer_id", "seq"]
KEY = [RUN, *MESSAGE]  # one message of one run


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


def sends(df: DataFrame, dead_producer_ids: Sequence[tuple[int, ...]] = ()) -> DataFrame:
    """(run_index, producer_id, seq, sent_ns, warmup, request) of every message known sent:
    the senders' rows, and the messages of dead senders that only receivers recorded (sent
    after the sender's last chunk; one row each, however many receivers got it).
    `dead_producer_ids`: per run, the ids of its dead senders. `request`: a requester's
    (its one receiver is itself)."""
    columns = [*KEY, "sent_ns", "warmup",
               (F.col("role") == Role.REQUESTER.value).alias("request")]
    own = df.filter(_is_sender()).select(*columns)
    of_dead = [(F.col(RUN) == run_index) & F.col("producer_id").isin(*ids)
               for run_index, ids in enumerate(dead_producer_ids) if ids]
    if not of_dead:
        return own
    seen = (df.filter(_is_receipt() & reduce(Column.__or__, of_dead))
            .select(*columns).dropDuplicates(KEY))
    return own.unionByName(seen.join(own.select(*KEY), KEY, "left_anti"))


def _pair_totals(sent: DataFrame, receipts: DataFrame) -> DataFrame:
    """Per run: unique / duplicated / unexpected deliveries from (producer_id, seq)
    matching.

    Sent pairs carry a null receiver. Partitioning once by (run, producer_id, seq) lets
    both aggregations run without a second shuffle. A requester is its own receiver.
    """
    nobody = F.lit(None).cast("long").alias("receiver")
    got = receipts.select(*KEY, _receiver().alias("receiver"))
    rx = F.col("receiver").isNotNull()
    per_receiver = (
        sent.select(*KEY, nobody).unionByName(got)
        .repartition(*KEY)
        .groupBy(*KEY, "receiver")
        .agg(F.count(F.lit(1)).alias("n"))
    )
    per_pair = per_receiver.groupBy(*KEY).agg(
        F.max((~rx).cast("int")).alias("was_sent"),
        F.count(F.when(rx, 1)).alias("receivers"),
        F.sum(F.when(rx, F.col("n")).otherwise(0)).alias("rows"),
    )
    was_sent = F.col("was_sent") == 1
    return per_pair.groupBy(RUN).agg(
        F.sum(F.when(was_sent, F.col("receivers")).otherwise(0)).alias("unique"),
        F.sum(F.when(was_sent, F.col("rows") - F.col("receivers")).otherwise(0))
        .alias("duplicated"),
        F.sum(F.when(~was_sent, F.col("rows")).otherwise(0)).alias("unexpected"),
    )


def horizons(kept: DataFrame) -> DataFrame:
    """(run_index, agent_index, producer_id, horizon) for watched receivers' kept rows
    (warm-up included: all the evidence there is). horizon = the instant the agent's
    stream is known to have been whole (its last kept receive time; with a dead responder,
    the latest request it answered was sent) − the longest recv − sent of its receipts from
    that producer: a missing message sent before it would have had to take longer than any
    of them did to come after that instant. Never later than the newest message kept from
    that producer: a stream that lagged behind the others at the end (one Kafka partition)
    shows no progress past it, so its misses after it stay unknown. Both times are the
    receiver's clock minus the producer's (a requester's are one clock), so the comparison
    holds across hosts without offsets."""
    agent = [RUN, "agent_index"]
    alive = F.when(F.col("relay_died"), F.col("sent_ns")).otherwise(F.col("recv_ns"))
    last = kept.groupBy(*agent).agg(F.max(alive).alias("last_ns"))
    stream = kept.groupBy(*agent, "producer_id").agg(
        F.max(F.col("recv_ns") - F.col("sent_ns")).alias("lateness"),
        F.max("sent_ns").alias("newest"))
    return stream.join(last, agent).select(
        *agent, "producer_id",
        F.least(F.col("last_ns") - F.col("lateness"), F.col("newest")).alias("horizon"))


def _watched_table(spark, watched: Sequence[tuple[Watched, ...]]) -> DataFrame:
    """The watched receivers of every run (`watched`: per run)."""
    rows = [(run_index, w.agent_index, w.connections, *(w.ids or (None, None)), w.relay_died)
            for run_index, receivers in enumerate(watched) for w in receivers]
    return F.broadcast(spark.createDataFrame(
        rows, f"{RUN} int, agent_index int, connections int, first_id int, end_id int, "
        "relay_died boolean"))


def unknown_at_dead(df: DataFrame, sent: DataFrame, watched: Sequence[tuple[Watched, ...]]
                    ) -> DataFrame:
    """Per run with watched receivers (run_index, late): the measured messages sent that
    a watched receiver's connections miss and may have received after the instant its
    stream is known whole: sent at or after its horizon with that producer (see
    `horizons`), or from a producer it kept nothing from. Its other misses are lost.
    `sent`: the measured sends; `watched`: per run, its watched receivers."""
    table = _watched_table(df.sparkSession, watched)
    agent = [RUN, "agent_index"]
    kept = df.filter(_is_receipt()).join(table.select(*agent, "relay_died"), agent)
    got = (measured(kept).select(*KEY, "agent_index", "consumer_id").distinct()
           .groupBy(*KEY, "agent_index").agg(F.count(F.lit(1)).alias("got")))
    own = F.col("first_id").isNull() | ((F.col("producer_id") >= F.col("first_id"))
                                        & (F.col("producer_id") < F.col("end_id")))
    expected = (sent.select(*KEY, "sent_ns").join(table, RUN).filter(own)
                .join(F.broadcast(horizons(kept)), [*agent, "producer_id"], "left")
                .join(got, [*KEY, "agent_index"], "left"))
    horizon = F.col("horizon")
    maybe_later = horizon.isNull() | F.col("sent_ns").isNull() | (F.col("sent_ns") >= horizon)
    missing = F.col("connections") - F.coalesce(F.col("got"), F.lit(0))
    return expected.groupBy(RUN).agg(
        F.coalesce(F.sum(F.when(maybe_later, missing)), F.lit(0)).alias("late"))


def reordered(df: DataFrame) -> DataFrame:
    """Per run (run_index, reordered): receipts whose seq is below the highest seq seen
    earlier in their stream.

    A stream is one (receiving connection, producer) pair in receive order (rx_index).
    """
    earlier = (
        Window.partitionBy(RUN, "agent_index", "consumer_id", "producer_id")
        .orderBy("rx_index")
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    late = F.col("seq") < F.max("seq").over(earlier)
    return (
        df.filter(_is_receipt())
        .select(RUN, late.alias("late"))
        .groupBy(RUN).agg(F.count(F.when(F.col("late"), 1)).alias("reordered"))
    )


def _counted(sent: DataFrame, df: DataFrame) -> DataFrame:
    """Per run: sent, requests and warm-up sent (of `sent`), received, warm-up received and
    `found_consumers` (receiving consumer connections with rows) of df."""
    warm = F.col("warmup")
    consumer_id = F.when(F.col("role") == Role.CONSUMER.value, _receiver())
    received = df.groupBy(RUN).agg(
        F.count(F.when(_is_receipt() & ~warm, 1)).alias("received"),
        F.count(F.when(_is_receipt() & warm, 1)).alias("warmup_received"),
        F.count_distinct(consumer_id).alias("found_consumers"))
    return sent.groupBy(RUN).agg(
        F.count(F.when(~warm, 1)).alias("sent"),
        F.count(F.when(F.col("request") & ~warm, 1)).alias("requests"),
        F.count(F.when(warm, 1)).alias("warmup_sent")).join(received, RUN, "full")


@dataclass(frozen=True)
class Expected:
    """What one run's accounting needs besides its rows. `consumers`: the receiving
    consumer connections analysed, dead ones with kept chunks included (None: those with
    rows); `absent`: consumer connections of agents that left no data; `dead`: its agents
    that died but left chunks (see `accounting`)."""

    consumers: int | None = None
    absent: int = 0
    dead: Dead = Dead()


COUNTS = ("sent", "requests", "received", "delivered", "lost", "unknown", "duplicated",
          "reordered", "unexpected", "warmup_sent", "warmup_received")


def accounting(df: DataFrame, consumers: int | None = None, absent: int = 0,
               dead: Dead = Dead()) -> DataFrame:
    """One run's row of `accounting_of_runs` (df: its rows, run_index 0), without the
    run_index."""
    return accounting_of_runs(df, [Expected(consumers, absent, dead)]).select(*COUNTS)


def accounting_of_runs(df: DataFrame, runs: Sequence[Expected]) -> DataFrame:
    """One row per run (`runs`: each run's Expected, by run_index): run_index, sent,
    requests, received, delivered, lost, unknown, duplicated, reordered, unexpected,
    warmup_*.

    df is the loaded frame (warm-up rows included, for the separate warm-up counts).
    One-way delivery is fan-out, so every consumer expects every sent message, and each
    expected delivery is delivered (the unique deliveries), lost or unknown:
    lost = consumers·sent + requests − delivered − unknown. `absent` consumer connections
    (of agents that left no data: killed) received what is not known, so their absent·sent
    expected deliveries are `unknown`, never lost (nor "0 lost"). `dead`: the agents that
    died but left chunks, and the requesters of a responder that died (see the module
    docstring). A requester is its own receiver: each request expects one reply; one that
    left no data took its requests with it, so it adds to no count. Duplicated and
    unexpected count replies as they count deliveries. df needs `agent_index` (see
    load_runs).
    """
    spark = df.sparkSession
    sent = sends(df, [run.dead.producer_ids for run in runs])
    measured_sent = measured(sent)
    m = measured(df)
    given = spark.createDataFrame(  # the kept side of left joins: a broadcast hint is void
        [(index, run.consumers, run.absent) for index, run in enumerate(runs)],
        f"{RUN} int, consumers int, absent int")
    watched = [run.dead.receivers for run in runs]
    parts = [_counted(sent, df), _pair_totals(measured_sent, m.filter(_is_receipt())),
             reordered(m)]
    if any(watched):
        parts.append(unknown_at_dead(df, measured_sent, watched))
    joined = reduce(lambda acc, part: acc.join(part, RUN, "left"), parts, given)
    late = _count("late") if any(watched) else F.lit(0)
    n_consumers = F.coalesce(F.col("consumers"), _count("found_consumers"))
    sent_producers = _count("sent") - _count("requests")
    figures = {
        **{name: _count(name) for name in COUNTS if name not in ("delivered", "lost", "unknown")},
        "delivered": _count("unique"),
        "lost": n_consumers * sent_producers + _count("requests") - _count("unique") - late,
        "unknown": F.col("absent") * sent_producers + late,
    }
    return joined.select(RUN, *(figures[name].cast("long").alias(name) for name in COUNTS))


def _count(name: str) -> Column:
    """A count of the joined parts, 0 for a run that part has no row of."""
    return F.coalesce(F.col(name), F.lit(0))
