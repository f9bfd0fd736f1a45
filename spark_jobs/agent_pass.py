"""The two per-agent passes of the analysis, in numpy over one agent's rows
(spark_jobs.agent_rows): what spark_jobs.passes runs as Spark tasks, a task per agent or
group of small agents, and merges on the driver. Every result is small and mergeable:
sparse HDR buckets, a row per stream, a few counts.

First pass: what an agent's files tell alone: the delivery tallies, the reordered
receipts, the rates, the clock pairing counts, the HDR buckets of every metric (and of
the part of a dead agent's records its hlog holds), the stream extents, each producer's
measured sends as seq intervals, and the messages of dead senders it received.

Second pass: what needs the first's merged results: the (producer, seq) matching of its
receipts against the measured sends of every producer (unique, duplicated, unexpected),
the deliveries of unknown fate at a watched receiver (spark_jobs.delivery), the value
counts inside each metric's median bucket, the latency curve on the run's schedule axis,
and the throughput windows of its streams on the run's axes (spark_jobs.series).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sixnines.formats import hdr
from sixnines.formats.vocabulary import Load, Role
from sixnines.spark_jobs.agent_rows import (
    CROSS_CLOCK,
    EXCLUDED,
    PAIRS,
    AgentFiles,
    Rows,
    batches,
    groups,
    read_rows,
    segments,
)
from sixnines.spark_jobs.delivery import Matched, Tally
from sixnines.spark_jobs.series import MILLI, RECEIVER, SCHEDULE, SENDER
from sixnines.spark_jobs.summarize import LogRead, read_log

PACKED_LOW_BITS = 40  # a seq below 2**40 and a stream rank below 2**23 share one int64

#: A position on an axis of a run's curves: (origin ns, low ns, width ns, bins)
Placement = tuple[int, int, float, int]
#: A producer's measured sends as seq intervals: (starts, ends), both inclusive, sorted.
Intervals = tuple[np.ndarray, np.ndarray]


@dataclass
class Buckets:
    """One metric's values of one agent as sparse HDR buckets, with the exact raw
    aggregates (summarize.MetricCounts once merged)."""

    indices: np.ndarray
    counts: np.ndarray
    sums: np.ndarray  # raw values summed per bucket
    total: float
    max: int | None
    negative: int
    too_large: int

    @classmethod
    def of(cls, values: np.ndarray) -> Buckets:
        clipped, negative, too_large = hdr.clip(values)
        index = hdr.bucket_indices(clipped)
        counts = np.bincount(index, minlength=hdr.COUNTS_LEN)
        sums = np.bincount(index, weights=values.astype(np.float64), minlength=hdr.COUNTS_LEN)
        used = np.flatnonzero(counts)
        return cls(used, counts[used].astype(np.int64), sums[used],
                   float(values.sum(dtype=np.float64)),
                   int(values.max()) if len(values) else None, negative, too_large)

    @classmethod
    def merged(cls, parts: list[Buckets]) -> Buckets:
        """One metric's buckets from several batches' (or agents')."""
        if len(parts) == 1:
            return parts[0]
        indices = np.concatenate([part.indices for part in parts])
        used, inverse = np.unique(indices, return_inverse=True)
        counts = np.zeros(len(used), np.int64)
        sums = np.zeros(len(used))
        np.add.at(counts, inverse, np.concatenate([part.counts for part in parts]))
        np.add.at(sums, inverse, np.concatenate([part.sums for part in parts]))
        maxima = [part.max for part in parts if part.max is not None]
        return cls(used, counts, sums, sum(part.total for part in parts),
                   max(maxima) if maxima else None, sum(part.negative for part in parts),
                   sum(part.too_large for part in parts))


def merged_buckets(parts: list[dict[str, Buckets]]) -> dict[str, Buckets]:
    """Per metric, the buckets of every part that has it."""
    names = dict.fromkeys(name for part in parts for name in part)
    return {name: Buckets.merged([part[name] for part in parts if name in part])
            for name in names}


def metric_values(rows: Rows, load: str, select: np.ndarray) -> dict[str, np.ndarray]:
    """Each metric's values in ns over the rows `select` keeps. Open loop: latency =
    recv − intended and service time = recv − sent of the timed receipts whose ends can be
    put on one clock (agent_rows), send lag = sent − intended of every message sent;
    saturation: saturation latency = recv − sent of the same receipts."""
    timed = rows.timed & select & (rows.pair != EXCLUDED)
    recv = rows.recv[timed] - rows.correction[timed]
    if load == Load.SATURATION:
        return {"saturation_latency": recv - rows.sent[timed]}
    sending = rows.sender & select
    return {"latency": recv - rows.intended[timed], "service_time": recv - rows.sent[timed],
            "send_lag": rows.sent[sending] - rows.intended[sending]}


def metric_buckets(rows: Rows, load: str, select: np.ndarray) -> dict[str, Buckets]:
    return {name: Buckets.of(values)
            for name, values in metric_values(rows, load, select).items() if len(values)}


# --- first pass ----------------------------------------------------------------------------


@dataclass
class Seen:
    """Messages of dead senders an agent received, one row per (producer, seq)."""

    producer_id: np.ndarray
    seq: np.ndarray
    sent: np.ndarray
    warmup: np.ndarray
    request: np.ndarray


@dataclass
class FirstPass:
    run_index: int
    agent_index: int
    agent_id: str
    tally: Tally
    send_rate: float | None
    receive_rate: float | None
    pairs: dict | None  # counts of its timed receipts by clock pair, and the widest bound
    metrics: dict[str, Buckets]
    logged: dict[str, Buckets] | None  # a dead agent's records its hlog covers
    extents: list[tuple]  # (side, stream, agent_index, n, first, last, bytes)
    sent: dict[int, Intervals]  # its measured sends, by producer id
    sent_by_dead: dict[int, Intervals]  # all its sends (warm-up too) if it died
    seen: Seen | None
    log: LogRead | None  # its hlog
    started_ns: int | None  # its start instant if it died (AgentFiles.started_ns)


#: (count, earliest, latest) of some timestamps of one agent's clock
Span = tuple[int, int, int]


def _span(ts: np.ndarray) -> Span | None:
    return (len(ts), int(ts.min()), int(ts.max())) if len(ts) else None


def _joined(spans: list[Span | None]) -> Span | None:
    known = [span for span in spans if span is not None]
    if not known:
        return None
    return (sum(n for n, _, _ in known), min(lo for _, lo, _ in known),
            max(hi for _, _, hi in known))


def rate(span: Span | None) -> float | None:
    """Messages per second over the span of their timestamps (one agent's clock: a rate
    is never taken across agents)."""
    if span is None or span[0] < 2 or span[2] <= span[1]:
        return None
    return (span[0] - 1) / (span[2] - span[1]) * 1e9


def _extents(side: int, keys: np.ndarray, ts: np.ndarray, size: np.ndarray,
             agent_index: int) -> list[tuple]:
    if len(keys) == 0:
        return []
    unique, inverse = groups(keys)
    n = np.bincount(inverse)
    first = np.full(len(unique), np.iinfo(np.int64).max)
    last = np.full(len(unique), np.iinfo(np.int64).min)
    np.minimum.at(first, inverse, ts)
    np.maximum.at(last, inverse, ts)
    size_sum = np.bincount(inverse, weights=size.astype(np.float64))
    return [(side, int(key), agent_index, int(count), int(lo), int(hi), float(total))
            for key, count, lo, hi, total in zip(unique, n, first, last, size_sum, strict=True)]


def merged_extents(parts: list[list[tuple]]) -> list[tuple]:
    """Stream extents from several batches' (or agents': a producer's schedule spans its
    receivers): counts and bytes added, the earliest first, the latest last, the lowest
    agent index."""
    merged: dict[tuple[int, int], list] = {}
    for part in parts:
        for side, stream, agent_index, n, first, last, size in part:
            row = merged.get((side, stream))
            if row is None:
                merged[side, stream] = [agent_index, n, first, last, size]
            else:
                row[0], row[1] = min(row[0], agent_index), row[1] + n
                row[2], row[3], row[4] = min(row[2], first), max(row[3], last), row[4] + size
    return [(side, stream, *row) for (side, stream), row in merged.items()]


def receiver_key(agent_index: int, consumer: np.ndarray) -> np.ndarray:
    """One receiving connection of a run: an agent may hold several."""
    return (np.int64(agent_index) << 32) + consumer


def stream_extents(rows: Rows, agent_index: int) -> list[tuple]:
    """Each stream's extent over the measured rows: a sender stream per producer id (send
    times), a receiver stream per connection (receive times), and per producer the
    intended times of its timed receipts (the latency curve's axis)."""
    sending = rows.sender & rows.measured
    timed = rows.timed & rows.measured
    return [*_extents(SENDER, rows.producer_id[sending], rows.sent[sending],
                      rows.size[sending], agent_index),
            *_extents(RECEIVER, receiver_key(agent_index, rows.consumer[timed]),
                      rows.recv[timed], rows.size[timed], agent_index),
            *_extents(SCHEDULE, rows.producer_id[timed], rows.intended[timed],
                      rows.size[timed], agent_index)]


def _stream_order(streams: np.ndarray, order_by: np.ndarray) -> np.ndarray:
    """Row order by stream, then by `order_by` (each stream's rows are already nearly in
    that order in the files, which the sort exploits)."""
    return np.lexsort((order_by, streams))


def reordered(rows: Rows, highest: dict[int, int] | None = None) -> int:
    """Measured receipts whose seq is below the highest seq received before them in their
    stream: one (connection, producer) pair in receive order. `highest`: each stream's
    highest seq in the batches before this one, updated."""
    highest = {} if highest is None else highest
    mine = rows.receipt & rows.measured
    if not mine.any():
        return 0
    streams = ((rows.consumer[mine] + 1) << 32) + rows.producer_id[mine]
    order = _stream_order(streams, rows.rx_index[mine])
    seq, keys = rows.seq[mine][order], streams[order]
    late = 0
    for start, end in segments(keys):
        stream = int(keys[start])
        before = highest.get(stream, np.iinfo(np.int64).min)
        running = np.maximum.accumulate(np.concatenate([[before], seq[start:end]]))
        late += int(np.count_nonzero(seq[start:end] < running[:-1]))
        highest[stream] = int(running[-1])
    return late


def intervals(seqs: np.ndarray) -> Intervals:
    """The distinct seqs as runs of consecutive values (one run for a producer whose
    sends went out whole)."""
    distinct = seqs if len(seqs) and np.all(seqs[1:] > seqs[:-1]) else np.unique(seqs)
    if len(distinct) == 0:
        return distinct, distinct
    cuts = np.flatnonzero(np.diff(distinct) != 1) + 1
    return (distinct[np.concatenate([[0], cuts])],
            distinct[np.concatenate([cuts - 1, [len(distinct) - 1]])])


def union(parts: list[Intervals]) -> Intervals:
    """One producer's seq intervals from several (batches, agents sending from one id,
    sends only receivers recorded): overlapping or adjacent ones joined."""
    if len(parts) == 1:
        return parts[0]
    starts = np.concatenate([part[0] for part in parts])
    ends = np.concatenate([part[1] for part in parts])
    order = np.argsort(starts, kind="stable")
    starts, reach = starts[order], np.maximum.accumulate(ends[order])
    if len(starts) == 0:
        return starts, reach
    first = np.flatnonzero(np.concatenate([[True], starts[1:] > reach[:-1] + 1]))
    last = np.concatenate([first[1:] - 1, [len(starts) - 1]])
    return starts[first], reach[last]


def merged_sends(parts: list[dict[int, Intervals]]) -> dict[int, Intervals]:
    ids = dict.fromkeys(producer for part in parts for producer in part)
    return {producer: union([part[producer] for part in parts if producer in part])
            for producer in ids}


def sends(rows: Rows, select: np.ndarray) -> dict[int, Intervals]:
    """Each producer's sends among the rows `select` keeps, as seq intervals."""
    sending = rows.sender & select
    return sends_of(rows.producer_id[sending], rows.seq[sending])


def sends_of(producer: np.ndarray, seq: np.ndarray) -> dict[int, Intervals]:
    """Each producer's seqs as intervals."""
    order = np.argsort(producer, kind="stable")
    producer, seq = producer[order], seq[order]
    return {int(producer[start]): intervals(seq[start:end])
            for start, end in segments(producer)}


def _first_of_each(producer: np.ndarray, seq: np.ndarray) -> np.ndarray:
    """Indices of one row per (producer, seq), in (producer, seq) order."""
    order = np.lexsort((seq, producer))
    first = np.concatenate([[True], (np.diff(producer[order]) != 0)
                            | (np.diff(seq[order]) != 0)])
    return order[first]


def _seen(rows: Rows, role: str, dead: frozenset[int]) -> Seen | None:
    """Receipts (warm-up included) from senders that died, one per message."""
    mine = np.flatnonzero(rows.receipt & np.isin(rows.producer_id, list(dead)))
    if not len(mine):
        return None
    picked = mine[_first_of_each(rows.producer_id[mine], rows.seq[mine])]
    return Seen(rows.producer_id[picked], rows.seq[picked], rows.sent[picked],
                rows.warmup[picked], np.full(len(picked), role == Role.REQUESTER))


def merged_seen(parts: list[Seen | None]) -> Seen | None:
    """One row per (producer, seq) of several batches' (or agents')."""
    known = [part for part in parts if part is not None]
    if not known:
        return None
    columns = {name: np.concatenate([getattr(part, name) for part in known])
               for name in ("producer_id", "seq", "sent", "warmup", "request")}
    picked = _first_of_each(columns["producer_id"], columns["seq"])
    return Seen(**{name: column[picked] for name, column in columns.items()})


def tally(rows: Rows, role: str) -> Tally:
    """What a batch counts of sends and receipts (the consumer connections and the
    reordered receipts span batches: first_pass counts them)."""
    warm = rows.warmup
    return Tally(sent=int(np.count_nonzero(rows.sender & ~warm)),
                 requests=int(np.count_nonzero(rows.sender & ~warm))
                 if role == Role.REQUESTER else 0,
                 warmup_sent=int(np.count_nonzero(rows.sender & warm)),
                 received=int(np.count_nonzero(rows.receipt & ~warm)),
                 warmup_received=int(np.count_nonzero(rows.receipt & warm)))


def clock_pairs(rows: Rows, agent_id: str) -> dict | None:
    """Its measured timed receipts by clock pair, and the widest bound of a cross-clock
    one (None when none)."""
    timed = rows.timed & rows.measured
    if not timed.any():
        return None
    pair = rows.pair[timed]
    cross = pair == CROSS_CLOCK
    return {"agent_id": agent_id,
            **{name: int(np.count_nonzero(pair == code)) for code, name in enumerate(PAIRS)},
            "clock_bound_ns": int(rows.bound[timed][cross].max()) if cross.any() else None}


def merged_pairs(parts: list[dict | None]) -> dict | None:
    known = [part for part in parts if part is not None]
    if not known:
        return None
    bounds = [part["clock_bound_ns"] for part in known if part["clock_bound_ns"] is not None]
    return {"agent_id": known[0]["agent_id"],
            **{name: sum(part[name] for part in known) for name in PAIRS},
            "clock_bound_ns": max(bounds) if bounds else None}


def _logged_until(agent: AgentFiles, log: LogRead | None) -> int | None:
    """For an agent that died, the intended instant its hlog reaches (its clock): its
    records before it are what its log is checked against."""
    if log is None or log.end_ns is None or agent.started_ns is None:
        return None
    return agent.started_ns + log.end_ns


def first_pass(agent: AgentFiles) -> FirstPass:
    """The first pass over an agent's files, a batch at a time (agent_rows.batches), and
    its hlog read (summarize.read_log)."""
    run = agent.run
    log = (read_log(agent.hlog, run.warmup_ns / 1e9, agent.died)
           if agent.hlog is not None else None)
    logged_until = _logged_until(agent, log)
    total = Tally()
    consumers: set[int] = set()
    highest: dict[int, int] = {}
    parts: dict[str, list] = {name: [] for name in (
        "sent_span", "recv_span", "pairs", "metrics", "logged", "extents", "sent",
        "by_dead", "seen")}
    for rows in batches(agent):
        measured = rows.measured
        total += tally(rows, agent.role)
        total.reordered += reordered(rows, highest)
        if agent.role == Role.CONSUMER:
            consumers.update(np.unique(rows.consumer[rows.consumer >= 0]).tolist())
        parts["sent_span"].append(_span(rows.sent[rows.sender & measured]))
        parts["recv_span"].append(_span(rows.recv[rows.timed & measured]))
        parts["pairs"].append(clock_pairs(rows, agent.agent_id))
        parts["metrics"].append(metric_buckets(rows, run.load, measured))
        if logged_until is not None:
            parts["logged"].append(
                metric_buckets(rows, run.load, measured & (rows.intended < logged_until)))
        parts["extents"].append(stream_extents(rows, agent.agent_index))
        parts["sent"].append(sends(rows, measured))
        if run.dead_producer_ids:
            parts["by_dead"].append(
                sends(rows, np.isin(rows.producer_id, list(run.dead_producer_ids))))
            parts["seen"].append(_seen(rows, agent.role, run.dead_producer_ids))
    total.consumers = len(consumers)
    return FirstPass(
        run.run_index, agent.agent_index, agent.agent_id, total,
        rate(_joined(parts["sent_span"])), rate(_joined(parts["recv_span"])),
        merged_pairs(parts["pairs"]), merged_buckets(parts["metrics"]),
        merged_buckets(parts["logged"]) if logged_until is not None else None,
        merged_extents(parts["extents"]), merged_sends(parts["sent"]),
        merged_sends(parts["by_dead"]), merged_seen(parts["seen"]), log, agent.started_ns)


# --- second pass ---------------------------------------------------------------------------


@dataclass(frozen=True)
class WatchedReceiver:
    """A receiving agent whose misses may be of unknown fate (spark_jobs.delivery
    .Watched), with the files of the senders it expects messages from."""

    connections: int
    ids: tuple[int, int] | None
    relay_died: bool
    senders: tuple[AgentFiles, ...] = ()


@dataclass(frozen=True)
class RunPlan:
    """What the second pass needs of its run, from the first's merged results.

    sent: producer id → its measured sends (dead senders' completed by what receivers
    got); extra: the measured sends only receivers recorded, (producer ids, seqs, sent
    times); medians: metric → the raw value range of its median's bucket; schedule:
    producer id → its placement on the latency curve's axis; streams: (side, stream) →
    its placement on the side's throughput axis."""

    sent: dict[int, Intervals] = field(default_factory=dict)
    extra: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    medians: dict[str, tuple[int, int]] = field(default_factory=dict)
    schedule: dict[int, Placement] = field(default_factory=dict)
    streams: dict[tuple[int, int], Placement] = field(default_factory=dict)


@dataclass
class Curve:
    """A latency curve's aggregates per bucket of the schedule axis."""

    bucket: np.ndarray
    count: np.ndarray
    figures: dict[str, np.ndarray]  # latency_min, latency_max, latency_sum, service_time_…


@dataclass
class Windows:
    """One side's throughput windows of an agent: HDR buckets of ST_n (or RT_n), and per
    time bucket the summed rate of its streams (each 1 / its mean overhead there) and
    the windows that spanned 0 ns."""

    buckets: Buckets
    keys: np.ndarray
    rate: np.ndarray
    defined: np.ndarray
    zero_span: np.ndarray


@dataclass
class SecondPass:
    run_index: int
    matched: Matched = field(default_factory=Matched)
    detail: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    curve: Curve | None = None
    windows: dict[int, Windows] = field(default_factory=dict)


def _sorted_pairs(high: np.ndarray, low: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(high, low) sorted by high then low: one int64 sort when both fit, else lexsort."""
    if len(low) == 0:
        return high, low
    if (low.min() >= 0 and low.max() < 1 << PACKED_LOW_BITS and high.min() >= 0
            and high.max() < 1 << (63 - PACKED_LOW_BITS)):
        packed = np.sort((high << PACKED_LOW_BITS) | low)
        return packed >> PACKED_LOW_BITS, packed & ((1 << PACKED_LOW_BITS) - 1)
    order = np.lexsort((low, high))
    return high[order], low[order]


def inside(seqs: np.ndarray, sent: Intervals | None) -> np.ndarray:
    """Whether each seq is among the sends (intervals; None: none)."""
    return _positions(seqs, sent)[0]


def _positions(seqs: np.ndarray, sent: Intervals | None) -> tuple[np.ndarray, np.ndarray]:
    """(whether each seq was sent, its position among the sends in seq order)."""
    if sent is None or len(sent[0]) == 0:
        return np.zeros(len(seqs), bool), np.zeros(len(seqs), np.int64)
    starts, ends = sent
    index = np.maximum(np.searchsorted(starts, seqs, side="right") - 1, 0)
    offsets = np.concatenate([[0], np.cumsum(ends - starts + 1)[:-1]])
    inside = (seqs >= starts[index]) & (seqs <= ends[index])
    return inside, offsets[index] + (seqs - starts[index])


def _sent_count(sent: Intervals) -> int:
    return int(np.sum(sent[1] - sent[0] + 1))


def matched(rows: Rows, sent: dict[int, Intervals],
            delivered: dict[int, np.ndarray] | None = None) -> Matched:
    """Its measured receipts matched by (producer, seq) against the measured sends, per
    receiving connection. `delivered`: per stream (connection and producer), a flag per
    message its producer sent, set once received: carried across batches, so a message
    received again in a later batch is a duplicate there too."""
    delivered = {} if delivered is None else delivered
    mine = rows.receipt & rows.measured
    if not mine.any():
        return Matched()
    streams = ((rows.consumer[mine] + 1) << 32) + rows.producer_id[mine]
    order = np.argsort(streams, kind="stable")
    keys, seqs = streams[order], rows.seq[mine][order]
    found = Matched()
    for start, end in segments(keys):
        stream, seq = int(keys[start]), seqs[start:end]
        producer_sent = sent.get(stream & 0xFFFFFFFF)
        inside, position = _positions(seq, producer_sent)
        if producer_sent is not None and inside.any():
            flags = delivered.setdefault(stream, np.zeros(_sent_count(producer_sent), bool))
            before = int(np.count_nonzero(flags))
            flags[position[inside]] = True
            fresh = int(np.count_nonzero(flags)) - before
            found.unique += fresh
            found.duplicated += int(np.count_nonzero(inside)) - fresh
        found.unexpected += int(np.count_nonzero(~inside))
    return found


def _sends_of(watched: WatchedReceiver, plan: RunPlan) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(producer ids, seqs, sent times) of the measured sends a watched receiver expects:
    its senders' own rows and those only receivers recorded."""
    parts = []
    for sender in watched.senders:
        rows = read_rows(sender)
        sending = rows.sender & rows.measured
        parts.append((rows.producer_id[sending], rows.seq[sending], rows.sent[sending]))
    if plan.extra is not None:
        parts.append(plan.extra)
    if not parts:
        return (np.zeros(0, np.int64),) * 3
    producer, seq, sent = (np.concatenate(column) for column in zip(*parts, strict=True))
    if watched.ids is not None:
        own = (producer >= watched.ids[0]) & (producer < watched.ids[1])
        producer, seq, sent = producer[own], seq[own], sent[own]
    return producer, seq, sent


def _horizons(rows: Rows, relay_died: bool) -> tuple[np.ndarray, np.ndarray]:
    """(producer ids, horizon of each) of a watched receiver's kept receipts, warm-up
    included (all the evidence there is): the instant its stream is known whole (its last
    receive time; with a dead responder, the send time of the latest request answered)
    less the longest recv − sent from that producer, never later than the newest message
    kept from it (spark_jobs.delivery)."""
    kept = rows.receipt
    producer, sent = rows.producer_id[kept], rows.sent[kept]
    recv, timed = rows.recv[kept], rows.has_recv[kept]
    ids, inverse = groups(producer)
    newest = np.full(len(ids), np.iinfo(np.int64).min)
    np.maximum.at(newest, inverse, sent)
    alive = sent if relay_died else recv[timed]
    if len(alive) == 0 or not timed.any():
        return ids, newest
    lateness = np.full(len(ids), np.iinfo(np.int64).min)
    np.maximum.at(lateness, inverse[timed], (recv - sent)[timed])
    known = np.bincount(inverse[timed], minlength=len(ids)) > 0
    return ids, np.where(known, np.minimum(int(alive.max()) - lateness, newest), newest)


def _pack(producer: np.ndarray, seq: np.ndarray) -> np.ndarray:
    if len(seq) and (seq.min() < 0 or seq.max() >= 1 << PACKED_LOW_BITS):
        raise ValueError("a seq outside [0, 2**40): a dead receiver's messages cannot be "
                         "matched")
    return (producer << PACKED_LOW_BITS) | seq


def _lookup(keys: np.ndarray, values: np.ndarray, wanted: np.ndarray, missing: int
            ) -> np.ndarray:
    """values[keys == w] for each wanted w (keys sorted, unique), `missing` where none."""
    if len(keys) == 0:
        return np.full(len(wanted), missing, np.int64)
    index = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    return np.where(keys[index] == wanted, values[index], missing)


def late(rows: Rows, watched: WatchedReceiver, plan: RunPlan) -> int:
    """The measured messages sent that a watched receiver's connections miss and may have
    received after the instant its stream is known whole: sent at or after its horizon
    with that producer, or from a producer it kept nothing from."""
    producer, seq, sent = _sends_of(watched, plan)
    if len(producer) == 0:
        return 0
    ids, horizon = _horizons(rows, watched.relay_died)
    got_rows = rows.receipt & rows.measured
    keys, consumers = _sorted_pairs(_pack(rows.producer_id[got_rows], rows.seq[got_rows]),
                                    rows.consumer[got_rows] + 1)
    distinct = np.concatenate([[True], (keys[1:] != keys[:-1])
                               | (consumers[1:] != consumers[:-1])])
    got_keys, got = np.unique(keys[distinct], return_counts=True)
    received = _lookup(got_keys, got, _pack(producer, seq), 0)
    maybe_later = sent >= _lookup(ids, horizon, producer, np.iinfo(np.int64).min)
    return int(np.sum((watched.connections - received)[maybe_later]))


def median_detail(rows: Rows, load: str, ranges: dict[str, tuple[int, int]]
                  ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each metric's measured values inside its median's bucket: (distinct values, their
    counts)."""
    if not ranges:
        return {}
    values = metric_values(rows, load, rows.measured)
    detail = {}
    for name, (low, high) in ranges.items():
        mine = values.get(name)
        if mine is not None and len(mine):
            detail[name] = np.unique(mine[(mine >= low) & (mine <= high)], return_counts=True)
    return detail


def merged_detail(parts: list[dict[str, tuple[np.ndarray, np.ndarray]]]
                  ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per metric, the value counts of every part (batches, agents) added up."""
    merged = {}
    for name in dict.fromkeys(name for part in parts for name in part):
        values = np.concatenate([part[name][0] for part in parts if name in part])
        counts = np.concatenate([part[name][1] for part in parts if name in part])
        distinct, inverse = np.unique(values, return_inverse=True)
        merged[name] = (distinct, np.bincount(inverse, weights=counts,
                                              minlength=len(distinct)).astype(np.int64))
    return merged


def axis_bucket(times: np.ndarray, placement: Placement | np.ndarray) -> np.ndarray:
    """The bucket of each time on its stream's axis (origin, low, width, bins), the ends
    clamped."""
    origin, low, width, bins = placement
    position = np.floor((times - origin - low).astype(np.float64) / width)
    return np.clip(position, 0, np.asarray(bins) - 1).astype(np.int64)


def _placements(keys: np.ndarray, placed: dict) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """(placed mask, each row's (origin, low, width, bins)) of keys looked up in `placed`."""
    ids, inverse = groups(keys)
    table = [placed.get(int(key)) for key in ids]
    found = np.array([p is not None for p in table], bool)[inverse]
    columns = tuple(np.array([p[i] if p is not None else 0 for p in table])[inverse]
                    for i in range(4))
    return found, columns


def latency_curve(rows: Rows, schedule: dict[int, Placement]) -> Curve | None:
    """Per bucket of intended time on the run's schedule axis: count and min / max / sum
    of latency and service time of its measured timed receipts (as metric_values times
    them)."""
    timed = rows.timed & rows.measured & (rows.pair != EXCLUDED)
    if not timed.any() or not schedule:
        return None
    placed, placement = _placements(rows.producer_id[timed], schedule)
    if not placed.any():
        return None
    recv = (rows.recv[timed] - rows.correction[timed])[placed]
    intended = rows.intended[timed][placed]
    bucket = axis_bucket(intended, tuple(column[placed] for column in placement))
    metrics = {"latency": recv - intended, "service_time": recv - rows.sent[timed][placed]}
    used, inverse = groups(bucket)
    figures = {}
    for name, values in metrics.items():
        low = np.full(len(used), np.iinfo(np.int64).max)
        high = np.full(len(used), np.iinfo(np.int64).min)
        total = np.zeros(len(used), np.int64)
        np.minimum.at(low, inverse, values)
        np.maximum.at(high, inverse, values)
        np.add.at(total, inverse, values)
        figures |= {f"{name}_min": low, f"{name}_max": high, f"{name}_sum": total}
    return Curve(used, np.bincount(inverse), figures)


def merged_curve(parts: list[Curve | None]) -> Curve | None:
    """One latency curve from several batches' (or agents'): counts and sums added, the
    lowest minimum and the highest maximum of each bucket."""
    curves = [part for part in parts if part is not None]
    if len(curves) <= 1:
        return curves[0] if curves else None
    used, inverse = np.unique(np.concatenate([curve.bucket for curve in curves]),
                              return_inverse=True)
    count = np.zeros(len(used), np.int64)
    np.add.at(count, inverse, np.concatenate([curve.count for curve in curves]))
    figures = {}
    for name in curves[0].figures:
        values = np.concatenate([curve.figures[name] for curve in curves])
        if name.endswith("_min"):
            merged = np.full(len(used), np.iinfo(np.int64).max)
            np.minimum.at(merged, inverse, values)
        elif name.endswith("_max"):
            merged = np.full(len(used), np.iinfo(np.int64).min)
            np.maximum.at(merged, inverse, values)
        else:
            merged = np.zeros(len(used), np.int64)
            np.add.at(merged, inverse, values)
        figures[name] = merged
    return Curve(used, count, figures)


def _side_streams(rows: Rows, side: int, agent_index: int) -> tuple[np.ndarray, np.ndarray]:
    """(stream keys, timestamps) of one side's measured rows: sender streams by producer
    id (send times), receiver streams by connection (receive times)."""
    if side == SENDER:
        mine = rows.sender & rows.measured
        return rows.producer_id[mine], rows.sent[mine]
    mine = rows.timed & rows.measured
    return receiver_key(agent_index, rows.consumer[mine]), rows.recv[mine]


@dataclass
class StreamWindows:
    """One stream's windows ending in a batch: its rows there, the timestamps the windows
    end at (time order) and for each the span ts_n − ts_{n−M} and its value M / span in
    milli-msg/s (0 where the span is 0: undefined). The first M of a stream end no
    window."""

    stream: int
    rows: int
    ends: np.ndarray
    span: np.ndarray
    value: np.ndarray

    @property
    def defined(self) -> np.ndarray:
        return self.span > 0


def stream_windows(rows: Rows, side: int, agent_index: int, window: int,
                   tails: dict[int, np.ndarray] | None = None) -> list[StreamWindows]:
    """ST_n (or RT_n) of each of the side's streams in a batch: span = the n-th timestamp
    minus the (n − M)-th in time order, value = M / span (series: the definitions).
    `tails`: each stream's last M timestamps of the batches before, updated (a stream's
    timestamps are one clock's, in its files' order)."""
    tails = {} if tails is None else tails
    keys, ts = _side_streams(rows, side, agent_index)
    order = _stream_order(keys, ts)
    keys, ts = keys[order], ts[order]
    found = []
    for start, end in segments(keys):
        stream = int(keys[start])
        tail = tails.get(stream, ts[:0])
        joined = np.concatenate([tail, ts[start:end]])
        first = max(window, len(tail))
        ends = joined[first:]
        span = ends - joined[first - window:first - window + len(ends)]
        value = np.zeros(len(span), np.int64)
        defined = span > 0
        value[defined] = np.floor(window * 1e9 * MILLI / span[defined] + 0.5)
        tails[stream] = joined[-window:]
        found.append(StreamWindows(stream, end - start, ends, span, value))
    return found


class WindowPass:
    """One side's throughput windows over an agent's batches, for its streams placed on
    the side's axis: the HDR buckets of the defined values, and per stream and time
    bucket (of each window's end) the windows, their spans and those that spanned 0 ns."""

    def __init__(self, side: int, agent_index: int, window: int,
                 streams: dict[tuple[int, int], Placement]) -> None:
        self.side, self.agent_index, self.window = side, agent_index, window
        self.streams = streams
        self.tails: dict[int, np.ndarray] = {}
        self.curves: dict[int, list[np.ndarray]] = {}  # stream → [count, spans, zero]
        self.buckets: list[Buckets] = []

    def add(self, rows: Rows) -> None:
        for found in stream_windows(rows, self.side, self.agent_index, self.window,
                                    self.tails):
            placement = self.streams.get((self.side, found.stream))
            if placement is None or len(found.span) == 0:
                continue
            defined, bins = found.defined, placement[3]
            bucket = axis_bucket(found.ends, placement)
            curve = self.curves.setdefault(found.stream, [np.zeros(bins, np.int64),
                                                          np.zeros(bins),
                                                          np.zeros(bins, np.int64)])
            curve[0] += np.bincount(bucket[defined], minlength=bins)
            curve[1] += np.bincount(bucket[defined], minlength=bins,
                                    weights=found.span[defined].astype(np.float64))
            curve[2] += np.bincount(bucket[~defined], minlength=bins)
            self.buckets.append(Buckets.of(found.value[defined]))

    def result(self) -> Windows | None:
        """Per time bucket the rate summed over the streams, each 1 / its mean overhead
        there = M · windows / Σ spans (defined where any stream had a window)."""
        if not self.curves:
            return None
        bins = len(next(iter(self.curves.values()))[0])
        rate, count, zero = np.zeros(bins), np.zeros(bins, np.int64), np.zeros(bins, np.int64)
        for windows_in, spans, zeros in self.curves.values():
            some = windows_in > 0
            rate[some] += self.window * 1e9 * windows_in[some] / spans[some]
            count += windows_in
            zero += zeros
        used = np.flatnonzero((count > 0) | (zero > 0))
        return Windows(Buckets.merged(self.buckets), used, rate[used], count[used] > 0,
                       zero[used])


def second_pass(agent: AgentFiles, plan: RunPlan, watched: WatchedReceiver | None = None
                ) -> SecondPass:
    """The second pass over an agent's files, a batch at a time (agent_rows.batches)."""
    run = agent.run
    found = Matched()
    delivered: dict[int, np.ndarray] = {}
    details, curves = [], []
    flows = {side: WindowPass(side, agent.agent_index, run.window, plan.streams)
             for side in (SENDER, RECEIVER)}
    for rows in batches(agent):
        found += matched(rows, plan.sent, delivered)
        details.append(median_detail(rows, run.load, plan.medians))
        curves.append(latency_curve(rows, plan.schedule))
        for flow in flows.values():
            flow.add(rows)
    if watched is not None:  # an agent that died: its kept chunks, read whole
        found.late = late(read_rows(agent), watched, plan)
    return SecondPass(run.run_index, found, merged_detail(details), merged_curve(curves),
                      {side: result for side, flow in flows.items()
                       if (result := flow.result()) is not None})
