"""What one agent's records tell the delivery accounting (spark_jobs.delivery says what
the counts mean; spark_jobs.agent_pass runs these a batch at a time).

Its tally of sends and receipts; its reordered receipts (per stream in receive order, the
highest seq so far carried across batches); each producer's sends as seq intervals (one
interval for a producer whose sends went out whole); the messages of dead senders it
received; the matching of its receipts by (producer, seq) against every producer's
measured sends (a delivered flag per message sent, carried across batches); and at a
receiver that died, the misses that may have come after its stream is known whole.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from sixnines.formats.keys import KeySpace, message_keys
from sixnines.formats.manifest import KeyDraws
from sixnines.formats.vocabulary import Role
from sixnines.spark_jobs.agent_rows import (
    AgentFiles,
    Rows,
    acknowledged_rows,
    batches,
    groups,
    segments,
    stream_order,
)
from sixnines.spark_jobs.delivery import Acknowledged, Matched, Tally

PACKED_LOW_BITS = 40  # a producer id and a seq below 2**40 share one int64


#: A producer's measured sends as seq intervals: (starts, ends), both inclusive, sorted.
Intervals = tuple[np.ndarray, np.ndarray]


def tally(rows: Rows, role: str) -> Tally:
    """What a batch counts of sends and receipts (the consumer connections and the
    reordered receipts span batches: first_pass counts them)."""
    warm = rows.warmup
    sent = int(np.count_nonzero(rows.sender & ~warm))
    return Tally(sent=sent, requests=sent if role == Role.REQUESTER else 0,
                 warmup_sent=int(np.count_nonzero(rows.sender & warm)),
                 received=int(np.count_nonzero(rows.receipt & ~warm)),
                 warmup_received=int(np.count_nonzero(rows.receipt & warm)))


def reordered(rows: Rows, highest: dict[int, int] | None = None,
              draws: KeyDraws | None = None) -> int:
    """How many measured receipts are reordered (`reordered_mask`)."""
    return int(np.count_nonzero(reordered_mask(rows, highest, draws)))


def reordered_mask(rows: Rows, highest: dict[int, int] | None = None,
                   draws: KeyDraws | None = None) -> np.ndarray:
    """The measured receipts whose seq is below the highest seq received before them in
    their stream: one (connection, producer) pair in receive order, or with `draws` one
    (connection, producer, key) triple (a key's messages from one producer: the order a
    keyed system keeps). `highest`: each stream's highest seq in the batches before this
    one, updated."""
    highest = {} if highest is None else highest
    found = np.zeros(len(rows), bool)
    mine = rows.receipt & rows.measured
    if not mine.any():
        return found
    streams = ((rows.consumer[mine] + 1) << 32) + rows.producer_id[mine]
    if draws is not None:  # key < 2**16, producer id < 2**24: the triple in one int64
        key = message_keys(KeySpace.of(draws.space), draws.seed, draws.period,
                           rows.producer_id[mine], rows.seq[mine])
        streams = (((rows.consumer[mine] + 1) << 40) + (key << 24)
                   + rows.producer_id[mine])
    order = stream_order(streams, rows.rx_index[mine])
    seq, keys = rows.seq[mine][order], streams[order]
    late = np.zeros(len(seq), bool)
    for start, end in segments(keys):
        stream = int(keys[start])
        before = highest.get(stream, np.iinfo(np.int64).min)
        running = np.maximum.accumulate(np.concatenate([[before], seq[start:end]]))
        late[start:end] = seq[start:end] < running[:-1]
        highest[stream] = int(running[-1])
    found[np.flatnonzero(mine)[order]] = late
    return found


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


@dataclass
class Seen:
    """Messages of dead senders an agent received, one row per (producer, seq)."""

    producer_id: np.ndarray
    seq: np.ndarray
    sent: np.ndarray
    warmup: np.ndarray
    request: np.ndarray


def _first_of_each(producer: np.ndarray, seq: np.ndarray) -> np.ndarray:
    """Indices of one row per (producer, seq), in (producer, seq) order."""
    order = np.lexsort((seq, producer))
    first = np.concatenate([[True], (np.diff(producer[order]) != 0)
                            | (np.diff(seq[order]) != 0)])
    return order[first]


def seen_from_dead(rows: Rows, role: str, dead: frozenset[int]) -> Seen | None:
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


def _extends(old: Intervals, new: Intervals) -> bool:
    """Whether `new` only adds seqs after all of `old`'s (a producer's sends known later in
    its run): every seq of `old` keeps its position among the sends."""
    k = len(old[0])
    return (k == 0 or (len(new[0]) >= k and np.array_equal(new[0][:k], old[0])
                       and np.array_equal(new[1][:k - 1], old[1][:k - 1])
                       and new[1][k - 1] >= old[1][k - 1]))


class _Stream:
    """One stream's matching state: its producer's sends the flags are placed on, a flag
    per message sent (set once received), and the seqs received that are not among them."""

    def __init__(self) -> None:
        self.sent: Intervals = (np.zeros(0, np.int64), np.zeros(0, np.int64))
        self.store = np.zeros(0, bool)  # the flags, and room to grow
        self.flags = self.store
        self.pending: list[tuple[np.ndarray, np.ndarray]] = []  # (seqs, their intervals)

    def place(self, sent: Intervals) -> None:
        """Flags placed on these sends: grown when they extend the ones before (positions
        kept; room doubled, so sends known a chunk at a time cost no copy each), moved seq
        by seq otherwise (a dead sender's gap filled by receivers)."""
        if sent[0] is self.sent[0] and sent[1] is self.sent[1]:
            return
        count = _sent_count(sent)
        if not _extends(self.sent, sent):
            received = _seqs_at(self.sent, np.flatnonzero(self.flags))
            self.store = np.zeros(count, bool)
            self.store[_positions(received, sent)[1]] = True
        elif count > len(self.store):
            store = np.zeros(max(count, 2 * len(self.store)), bool)
            store[:len(self.flags)] = self.flags
            self.store = store
        self.sent, self.flags = sent, self.store[:count]


def _seqs_at(sent: Intervals, positions: np.ndarray) -> np.ndarray:
    """The seqs at these positions among the sends (the inverse of _positions)."""
    starts, ends = sent
    offsets = np.concatenate([[0], np.cumsum(ends - starts + 1)[:-1]])
    index = np.searchsorted(offsets, positions, side="right") - 1
    return starts[index] + (positions - offsets[index])


def _flagged(flags: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Sets the flags at these positions; which positions were not set before (the first
    of each position given several times)."""
    fresh = ~flags[positions]
    if len(positions) > 1 and not np.all(positions[1:] > positions[:-1]):  # received twice
        first = np.zeros(len(positions), bool)
        first[np.unique(positions, return_index=True)[1]] = True
        fresh &= first
    flags[positions] = True
    return fresh


class Matching:
    """An agent's measured receipts matched by (producer, seq) against the measured sends,
    batch after batch, in receive order: per agent (its connections divide the messages),
    or per receiving connection where each expects every message (`per_connection`: runs
    recorded before schema 5, spark_jobs.delivery.copies).

    Per stream (producer, or connection and producer) a flag per message its producer
    sent, set once received, so a message received again in a later batch is a duplicate
    there too. A receipt of a seq not among the sends given is kept pending while more
    sends may come (`final=False`: closed chunks, docs/design.md, "Analysis while the run
    goes") and matched again against the next sends; once they are
    final it is unexpected.
    Counts are of the multiset of receipts, so the order receipts are settled in does not
    change them. Given `bins`, the first deliveries and duplicates are also counted per
    interval of the receipts' intended times (spark_jobs.intervals; `where` of `add`),
    and given `acknowledged` the first deliveries of acknowledged messages."""

    def __init__(self, per_connection: bool = False, bins: int = 0,
                 acknowledged: Acknowledged | None = None) -> None:
        self.per_connection = per_connection
        self.found = Matched()
        self.streams: dict[int, _Stream] = {}
        self.acknowledged = acknowledged or {}
        names = ("unique", "duplicated", *(("acknowledged_delivered",) if acknowledged else ()))
        self.at = {name: np.zeros(bins, np.int64) for name in names} if bins else None

    def add(self, rows: Rows, sent: dict[int, Intervals], final: bool = True,
            where: np.ndarray | None = None) -> None:
        """One batch; `where`: each row's interval (−1: none), counted when `bins`."""
        mine = rows.receipt & rows.measured
        if not mine.any():
            return
        keys = rows.producer_id[mine]
        if self.per_connection:
            keys = ((rows.consumer[mine] + 1) << 32) + keys
        order = np.argsort(keys, kind="stable")
        keys, seqs = keys[order], rows.seq[mine][order]
        at = where[mine][order] if where is not None else np.full(len(seqs), -1)
        for start, end in segments(keys):
            self._settle(int(keys[start]), seqs[start:end], at[start:end], sent, final)

    def settle(self, sent: dict[int, Intervals], final: bool = True) -> None:
        """The pending receipts matched again against sends known since."""
        for key, stream in self.streams.items():
            if stream.pending:
                waiting, stream.pending = stream.pending, []
                self._settle(key, np.concatenate([seqs for seqs, _ in waiting]),
                             np.concatenate([at for _, at in waiting]), sent, final)

    def _settle(self, key: int, seqs: np.ndarray, at: np.ndarray,
                sent: dict[int, Intervals], final: bool) -> None:
        stream = self.streams.setdefault(key, _Stream())
        producer_sent = sent.get(key & 0xFFFFFFFF)
        if producer_sent is not None:
            stream.place(producer_sent)
        inside, position = _positions(seqs, producer_sent)
        if inside.any():
            fresh = _flagged(stream.flags, position[inside])
            self.found.unique += int(np.count_nonzero(fresh))
            self.found.duplicated += int(np.count_nonzero(~fresh))
            if self.at is not None:
                where = at[inside]
                counted = [("unique", fresh), ("duplicated", ~fresh)]
                if (producer := key & 0xFFFFFFFF) in self.acknowledged:
                    known = seqs[inside]
                    counted.append(("acknowledged_delivered", fresh & acknowledged_rows(
                        np.full(len(known), producer), known, self.acknowledged)))
                for name, chosen in counted:
                    placed = where[chosen]
                    self.at[name] += np.bincount(placed[placed >= 0],
                                                 minlength=len(self.at[name]))
        if final:
            self.found.unexpected += int(np.count_nonzero(~inside))
        elif not inside.all():
            stream.pending.append((seqs[~inside], at[~inside]))

    def result(self) -> Matched:
        """The matching so far, pending receipts left out."""
        return replace(self.found)


def lost_acknowledged(matching: Matching, sent: dict[int, Intervals],
                      acknowledged: Acknowledged) -> int:
    """The measured messages the system acknowledged to their producer that this receiver
    never got, once its matching is final. Only where every miss is lost: not at a
    watched receiver (late misses are unknown), nor matched per connection."""
    lost = 0
    for producer_id in acknowledged:
        producer_sent = sent.get(producer_id)
        if producer_sent is None:
            continue
        stream = matching.streams.setdefault(producer_id, _Stream())
        stream.place(producer_sent)
        missing = _seqs_at(producer_sent, np.flatnonzero(~stream.flags))
        lost += int(np.count_nonzero(acknowledged_rows(
            np.full(len(missing), producer_id), missing, acknowledged)))
    return lost


@dataclass(frozen=True)
class WatchedReceiver:
    """A receiving agent whose misses may be of unknown fate (spark_jobs.delivery
    .Watched), with the files of the senders it expects messages from."""

    copies: int
    ids: tuple[int, int] | None
    relay_died: bool
    senders: tuple[AgentFiles, ...] = ()


#: Messages as columns: (producer ids, seqs, sent times)
Messages = tuple[np.ndarray, np.ndarray, np.ndarray]


def _sends_of(watched: WatchedReceiver, extra: Messages | None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(producer ids, seqs, sent times) of the measured sends a watched receiver expects:
    its senders' own rows and those only receivers recorded; and when each was intended
    (those only receivers recorded: when sent, all that is known of them)."""
    parts = []
    for sender in watched.senders:  # only the columns needed, a batch at a time
        for rows in batches(sender):
            sending = rows.sender & rows.measured
            parts.append((rows.producer_id[sending], rows.seq[sending], rows.sent[sending],
                          rows.intended[sending]))
    if extra is not None:
        parts.append((*extra, extra[2]))
    if not parts:
        return (np.zeros(0, np.int64),) * 4
    producer, seq, sent, intended = (np.concatenate(column)
                                     for column in zip(*parts, strict=True))
    if watched.ids is not None:
        own = (producer >= watched.ids[0]) & (producer < watched.ids[1])
        producer, seq, sent, intended = producer[own], seq[own], sent[own], intended[own]
    return producer, seq, sent, intended


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


def missed(rows: Rows, watched: WatchedReceiver, extra: Messages | None
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(producer ids, intended times, missed copies) of the measured messages sent that a
    watched receiver misses (each expected `copies` times: on that many connections) and
    may have received after the instant its stream is known whole: sent at or after its
    horizon with that producer, or from a producer it kept nothing from."""
    producer, seq, sent, intended = _sends_of(watched, extra)
    if len(producer) == 0:
        return producer, intended, producer
    ids, horizon = _horizons(rows, watched.relay_died)
    got_rows = rows.receipt & rows.measured
    keys = _pack(rows.producer_id[got_rows], rows.seq[got_rows])
    if watched.copies > 1:  # a copy per connection: (message, connection) pairs count
        order = np.lexsort((rows.consumer[got_rows], keys))
        keys, consumers = keys[order], rows.consumer[got_rows][order]
        distinct = np.concatenate([[True], (keys[1:] != keys[:-1])
                                   | (consumers[1:] != consumers[:-1])])
        keys = keys[distinct]
    got_keys, got = np.unique(keys, return_counts=True)
    received = _lookup(got_keys, np.minimum(got, watched.copies), _pack(producer, seq), 0)
    maybe_later = sent >= _lookup(ids, horizon, producer, np.iinfo(np.int64).min)
    return producer[maybe_later], intended[maybe_later], \
        (watched.copies - received)[maybe_later]
