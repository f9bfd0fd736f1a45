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
    groups,
    read_rows,
    segments,
)
from sixnines.spark_jobs.delivery import Matched, Tally
from sixnines.spark_jobs.series import MILLI, RECEIVER, SCHEDULE, SENDER

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


def _rate(ts: np.ndarray) -> float | None:
    """Messages per second over the span of their timestamps (one agent's clock)."""
    if len(ts) < 2:
        return None
    span = int(ts.max()) - int(ts.min())
    return (len(ts) - 1) / span * 1e9 if span > 0 else None


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


def reordered(rows: Rows) -> int:
    """Measured receipts whose seq is below the highest seq received before them in their
    stream: one (connection, producer) pair in receive order."""
    mine = rows.receipt & rows.measured
    if not mine.any():
        return 0
    streams = ((rows.consumer[mine] + 1) << 32) + rows.producer_id[mine]
    order = _stream_order(streams, rows.rx_index[mine])
    seq, keys = rows.seq[mine][order], streams[order]
    late = 0
    for start, end in segments(keys):
        part = seq[start:end]
        late += int(np.count_nonzero(part[1:] < np.maximum.accumulate(part)[:-1]))
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


def sends(rows: Rows, select: np.ndarray) -> dict[int, Intervals]:
    """Each producer's sends among the rows `select` keeps, as seq intervals."""
    sending = rows.sender & select
    producer, seq = rows.producer_id[sending], rows.seq[sending]
    order = np.argsort(producer, kind="stable")
    producer, seq = producer[order], seq[order]
    return {int(producer[start]): intervals(seq[start:end])
            for start, end in segments(producer)}


def _seen(rows: Rows, role: str, dead: frozenset[int]) -> Seen | None:
    """Receipts (warm-up included) from senders that died, one per message."""
    if not dead:
        return None
    mine = rows.receipt & np.isin(rows.producer_id, list(dead))
    if not mine.any():
        return None
    producer, seq = rows.producer_id[mine], rows.seq[mine]
    order = np.lexsort((seq, producer))
    first = np.concatenate([[True], (np.diff(producer[order]) != 0)
                            | (np.diff(seq[order]) != 0)])
    picked = np.flatnonzero(mine)[order[first]]
    return Seen(rows.producer_id[picked], rows.seq[picked], rows.sent[picked],
                rows.warmup[picked], np.full(len(picked), role == Role.REQUESTER))


def tally(rows: Rows, role: str) -> Tally:
    warm = rows.warmup
    consumers = (len(np.unique(rows.consumer[rows.consumer >= 0]))
                 if role == Role.CONSUMER else 0)
    return Tally(sent=int(np.count_nonzero(rows.sender & ~warm)),
                 requests=int(np.count_nonzero(rows.sender & ~warm))
                 if role == Role.REQUESTER else 0,
                 warmup_sent=int(np.count_nonzero(rows.sender & warm)),
                 received=int(np.count_nonzero(rows.receipt & ~warm)),
                 warmup_received=int(np.count_nonzero(rows.receipt & warm)),
                 consumers=consumers, reordered=reordered(rows))


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


def first_pass(agent: AgentFiles, logged_until: int | None = None) -> FirstPass:
    rows = read_rows(agent)
    run = agent.run
    measured = rows.measured
    logged = None
    if logged_until is not None:
        logged = metric_buckets(rows, run.load, measured & (rows.intended < logged_until))
    return FirstPass(
        run.run_index, agent.agent_index, agent.agent_id, tally(rows, agent.role),
        _rate(rows.sent[rows.sender & measured]), _rate(rows.recv[rows.timed & measured]),
        clock_pairs(rows, agent.agent_id), metric_buckets(rows, run.load, measured), logged,
        stream_extents(rows, agent.agent_index), sends(rows, measured),
        sends(rows, np.isin(rows.producer_id, list(run.dead_producer_ids)))
        if run.dead_producer_ids else {},
        _seen(rows, agent.role, run.dead_producer_ids))


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


def _inside(seqs: np.ndarray, sent: Intervals | None) -> np.ndarray:
    if sent is None or len(sent[0]) == 0:
        return np.zeros(len(seqs), bool)
    starts, ends = sent
    index = np.searchsorted(starts, seqs, side="right") - 1
    return (index >= 0) & (seqs <= ends[np.maximum(index, 0)])


def matched(rows: Rows, sent: dict[int, Intervals]) -> Matched:
    """Its measured receipts matched by (producer, seq) against the measured sends, per
    receiving connection."""
    mine = rows.receipt & rows.measured
    if not mine.any():
        return Matched()
    codes, rank = groups(((rows.consumer[mine] + 1) << 32) + rows.producer_id[mine])
    ranks, seqs = _sorted_pairs(rank.astype(np.int64), rows.seq[mine])
    unique = duplicated = unexpected = 0
    for start, end in segments(ranks):
        seq = seqs[start:end]
        inside = _inside(seq, sent.get(int(codes[ranks[start]] & 0xFFFFFFFF)))
        new = np.concatenate([[True], seq[1:] != seq[:-1]])
        first = int(np.count_nonzero(new & inside))
        unique += first
        duplicated += int(np.count_nonzero(inside)) - first
        unexpected += int(np.count_nonzero(~inside))
    return Matched(unique, duplicated, unexpected)


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
    """One stream's windows: its timestamps in time order, and for the n-th (n ≥ M) the
    span ts_n − ts_{n−M} and its value M / span in milli-msg/s (0 where the span is 0:
    undefined)."""

    stream: int
    ts: np.ndarray
    span: np.ndarray
    value: np.ndarray

    @property
    def defined(self) -> np.ndarray:
        return self.span > 0


def stream_windows(rows: Rows, side: int, agent_index: int, window: int
                   ) -> list[StreamWindows]:
    """ST_n (or RT_n) of each of the side's streams: span = the n-th timestamp minus the
    (n − M)-th in time order, value = M / span (series: the definitions)."""
    keys, ts = _side_streams(rows, side, agent_index)
    order = _stream_order(keys, ts)
    keys, ts = keys[order], ts[order]
    found = []
    for start, end in segments(keys):
        mine = ts[start:end]
        span = mine[window:] - mine[:-window] if end - start > window else mine[:0]
        value = np.zeros(len(span), np.int64)
        defined = span > 0
        value[defined] = np.floor(window * 1e9 * MILLI / span[defined] + 0.5)
        found.append(StreamWindows(int(keys[start]), mine, span, value))
    return found


def windows(rows: Rows, side: int, agent_index: int, window: int,
            streams: dict[tuple[int, int], Placement]) -> Windows | None:
    """The side's windows of its streams placed on its axis (`streams`): HDR buckets of
    the defined values, and per time bucket (of each window's last timestamp) the rate of
    each stream there, 1 / its mean overhead = M · windows / Σ spans, summed over
    streams, and the windows that spanned 0 ns."""
    values, bucket_keys, rates, zero = [], [], [], []
    for found in stream_windows(rows, side, agent_index, window):
        placement = streams.get((side, found.stream))
        if placement is None or len(found.span) == 0:
            continue
        defined = found.defined
        bucket = axis_bucket(found.ts[window:], placement)
        count = np.bincount(bucket[defined], minlength=placement[3])
        spans = np.bincount(bucket[defined], weights=found.span[defined].astype(np.float64),
                            minlength=placement[3])
        used = np.flatnonzero(count)
        values.append(found.value[defined])
        bucket_keys.append(used)
        rates.append(window * 1e9 * count[used] / spans[used])
        zeros = np.bincount(bucket[~defined], minlength=placement[3])
        zero.append((np.flatnonzero(zeros), zeros[zeros > 0]))
    if not values:
        return None
    used, _ = groups(np.concatenate(bucket_keys + [z[0] for z in zero]))
    rate = np.zeros(len(used))
    defined = np.zeros(len(used), bool)
    zero_span = np.zeros(len(used), np.int64)
    for keys_of, rate_of in zip(bucket_keys, rates, strict=True):
        index = np.searchsorted(used, keys_of)
        np.add.at(rate, index, rate_of)
        defined[index] = True
    for keys_of, zeros_of in zero:
        np.add.at(zero_span, np.searchsorted(used, keys_of), zeros_of)
    return Windows(Buckets.of(np.concatenate(values)), used, rate, defined, zero_span)


def second_pass(agent: AgentFiles, plan: RunPlan, watched: WatchedReceiver | None = None
                ) -> SecondPass:
    rows = read_rows(agent)
    run = agent.run
    found = matched(rows, plan.sent)
    if watched is not None:
        found.late = late(rows, watched, plan)
    return SecondPass(
        run.run_index, found,
        median_detail(rows, run.load, plan.medians),
        latency_curve(rows, plan.schedule),
        {side: found for side in (SENDER, RECEIVER)
         if (found := windows(rows, side, agent.agent_index, run.window, plan.streams))
         is not None})
