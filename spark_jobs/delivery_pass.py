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

from dataclasses import dataclass

import numpy as np

from sixnines.formats.vocabulary import Role
from sixnines.spark_jobs.agent_rows import (
    AgentFiles,
    Rows,
    batches,
    groups,
    segments,
    stream_order,
)
from sixnines.spark_jobs.delivery import Matched, Tally

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


def reordered(rows: Rows, highest: dict[int, int] | None = None) -> int:
    """Measured receipts whose seq is below the highest seq received before them in their
    stream: one (connection, producer) pair in receive order. `highest`: each stream's
    highest seq in the batches before this one, updated."""
    highest = {} if highest is None else highest
    mine = rows.receipt & rows.measured
    if not mine.any():
        return 0
    streams = ((rows.consumer[mine] + 1) << 32) + rows.producer_id[mine]
    order = stream_order(streams, rows.rx_index[mine])
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


@dataclass(frozen=True)
class WatchedReceiver:
    """A receiving agent whose misses may be of unknown fate (spark_jobs.delivery
    .Watched), with the files of the senders it expects messages from."""

    connections: int
    ids: tuple[int, int] | None
    relay_died: bool
    senders: tuple[AgentFiles, ...] = ()


#: Messages as columns: (producer ids, seqs, sent times)
Messages = tuple[np.ndarray, np.ndarray, np.ndarray]


def _sends_of(watched: WatchedReceiver, extra: Messages | None) -> Messages:
    """(producer ids, seqs, sent times) of the measured sends a watched receiver expects:
    its senders' own rows and those only receivers recorded."""
    parts = []
    for sender in watched.senders:  # only the columns needed, a batch at a time
        for rows in batches(sender):
            sending = rows.sender & rows.measured
            parts.append((rows.producer_id[sending], rows.seq[sending], rows.sent[sending]))
    if extra is not None:
        parts.append(extra)
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


def late(rows: Rows, watched: WatchedReceiver, extra: Messages | None) -> int:
    """The measured messages sent that a watched receiver's connections miss and may have
    received after the instant its stream is known whole: sent at or after its horizon
    with that producer, or from a producer it kept nothing from."""
    producer, seq, sent = _sends_of(watched, extra)
    if len(producer) == 0:
        return 0
    ids, horizon = _horizons(rows, watched.relay_died)
    got_rows = rows.receipt & rows.measured
    keys = _pack(rows.producer_id[got_rows], rows.seq[got_rows])
    order = np.lexsort((rows.consumer[got_rows], keys))
    keys, consumers = keys[order], rows.consumer[got_rows][order]
    distinct = np.concatenate([[True], (keys[1:] != keys[:-1])
                               | (consumers[1:] != consumers[:-1])])
    got_keys, got = np.unique(keys[distinct], return_counts=True)
    received = _lookup(got_keys, got, _pack(producer, seq), 0)
    maybe_later = sent >= _lookup(ids, horizon, producer, np.iinfo(np.int64).min)
    return int(np.sum((watched.connections - received)[maybe_later]))
