"""The series of one agent's records (spark_jobs.series has the definitions; agent_pass
runs these a batch at a time): each stream's extent, the latency curve on the run's
schedule axis, and the throughput windows of its streams on the side's axis, each
stream's last M timestamps carried across batches."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sixnines.formats.vocabulary import Metric
from sixnines.spark_jobs.agent_rows import EXCLUDED, Rows, groups, segments, stream_order
from sixnines.spark_jobs.histograms import Buckets
from sixnines.spark_jobs.series import MILLI, RECEIVER, SCHEDULE, SENDER

#: A position on an axis of a run's curves: (origin ns, low ns, width ns, bins)
Placement = tuple[int, int, float, int]


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


@dataclass
class Curve:
    """A latency curve's aggregates per bucket of the schedule axis."""

    bucket: np.ndarray
    count: np.ndarray
    figures: dict[str, np.ndarray]  # latency_min, latency_max, latency_sum, service_time_…


#: How a curve figure of a bucket is reduced, by its name's suffix: (ufunc, its identity)
REDUCTIONS = {"min": (np.minimum, np.iinfo(np.int64).max),
              "max": (np.maximum, np.iinfo(np.int64).min), "sum": (np.add, 0)}


def _reduced(bucket: np.ndarray, count: np.ndarray, figures: dict[str, np.ndarray]) -> Curve:
    """A curve of the rows (or partial curves) given: counts added and each figure
    reduced per bucket as its suffix says (REDUCTIONS)."""
    used, inverse = groups(bucket)
    counts = np.zeros(len(used), np.int64)
    np.add.at(counts, inverse, count)
    reduced = {}
    for name, values in figures.items():
        ufunc, identity = REDUCTIONS[name.rsplit("_", 1)[1]]
        reduced[name] = np.full(len(used), identity, np.int64)
        ufunc.at(reduced[name], inverse, values)
    return Curve(used, counts, reduced)


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
    metrics = {Metric.LATENCY: recv - intended,
               Metric.SERVICE_TIME: recv - rows.sent[timed][placed]}
    return _reduced(bucket, np.ones(len(bucket), np.int64),
                    {f"{name}_{how}": values for name, values in metrics.items()
                     for how in REDUCTIONS})


def merged_curve(parts: list[Curve | None]) -> Curve | None:
    """One latency curve from several batches' (or agents'): counts and sums added, the
    lowest minimum and the highest maximum of each bucket."""
    curves = [part for part in parts if part is not None]
    if len(curves) <= 1:
        return curves[0] if curves else None
    return _reduced(np.concatenate([curve.bucket for curve in curves]),
                    np.concatenate([curve.count for curve in curves]),
                    {name: np.concatenate([curve.figures[name] for curve in curves])
                     for name in curves[0].figures})


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
    """One stream's windows ending in a batch: its messages placed there, the timestamps
    the windows end at (time order) and for each the span t_n − t_{n−M} of its messages'
    times (series: a timestamp shared by k messages spreads them over the time since the
    stream's timestamp before) and its value M / span in milli-msg/s (0 where undefined: a
    span of 0 ns, or a message of the stream's first timestamp in it). The first M of a
    stream end no window."""

    stream: int
    rows: int
    ends: np.ndarray
    span: np.ndarray
    value: np.ndarray

    @property
    def defined(self) -> np.ndarray:
        return self.span > 0


@dataclass
class Carried:
    """What one stream's windows carry from batch to batch: its last M messages' times
    (each a timestamp less how long before it the message is taken to have come), the
    timestamp before the last one, and the messages of the last one (a read, or a batch
    sent, known whole only at the next timestamp)."""

    stamps: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    before: np.ndarray = field(default_factory=lambda: np.zeros(0))
    previous: int | None = None
    held: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


def _group_starts(stamps: np.ndarray) -> np.ndarray:
    """Where each run of equal timestamps starts (stamps sorted, not empty)."""
    return np.flatnonzero(np.concatenate([[True], stamps[1:] != stamps[:-1]]))


def _spread(stamps: np.ndarray, previous: int | None) -> np.ndarray:
    """How long before its timestamp each message is taken to have come, in whole ns: the
    i-th of the k messages of one timestamp s at p + ⌈i·(s − p)/k⌉, p the timestamp
    before, so every span is a whole number of ns and their sums are exact, whichever
    batches they were counted in. A stream's first timestamp has none before it: its
    messages but the last have no time (NaN), and the windows they are in are undefined."""
    if len(stamps) == 0:
        return np.zeros(0)
    starts = _group_starts(stamps)
    counts = np.diff(np.concatenate([starts, [len(stamps)]]))
    group = np.repeat(np.arange(len(starts)), counts)
    prior = np.concatenate([[stamps[0] if previous is None else previous],
                            stamps[starts[:-1]]])
    later = counts[group] - 1 - (np.arange(len(stamps)) - starts[group])
    gap, k = (stamps[starts] - prior)[group], counts[group]
    before = (later * (gap // k) + later * (gap % k) // k).astype(np.float64)  # ⌊later·gap/k⌋
    if previous is None:
        before[:counts[0] - 1] = np.nan
    return before


def _windows(stream: int, stamps: np.ndarray, carried: Carried, window: int, last: bool
             ) -> StreamWindows:
    """A stream's windows over the timestamps of a batch (`last`: its final batch)."""
    stamps = np.concatenate([carried.held, stamps])
    cut = len(stamps)
    if not last and len(stamps):
        cut = int(_group_starts(stamps)[-1])
    done, carried.held = stamps[:cut], stamps[cut:]
    before = _spread(done, carried.previous)
    joined = np.concatenate([carried.stamps, done])
    earlier = np.concatenate([carried.before, before])
    first = max(window, len(carried.stamps))
    ends = joined[first:]
    start = first - window
    span = (ends - joined[start:start + len(ends)]).astype(np.float64) \
        - (earlier[first:] - earlier[start:start + len(ends)])
    value = np.zeros(len(span), np.int64)
    defined = span > 0
    value[defined] = np.floor(window * 1e9 * MILLI / span[defined] + 0.5)
    if len(done):
        carried.previous = int(done[-1])
    carried.stamps, carried.before = joined[-window:], earlier[-window:]
    return StreamWindows(stream, len(done), ends, span, value)


def stream_windows(rows: Rows, side: int, agent_index: int, window: int,
                   carried: dict[int, Carried] | None = None, last: bool = True
                   ) -> list[StreamWindows]:
    """ST_n (or RT_n) of each of the side's streams in a batch: span = the n-th message's
    time minus the (n − M)-th's in time order, value = M / span (series: the
    definitions). `carried`: each stream's state from the batches before, updated (a
    stream's timestamps are one clock's, in its files' order); `last`: the agent's final
    batch (its streams' last timestamps are whole), else their messages wait for the next."""
    carried = {} if carried is None else carried
    keys, ts = _side_streams(rows, side, agent_index)
    order = stream_order(keys, ts)
    keys, ts = keys[order], ts[order]
    found = []
    for start, end in segments(keys):
        stream = int(keys[start])
        state = carried.setdefault(stream, Carried())
        found.append(_windows(stream, ts[start:end], state, window, last))
    return found


@dataclass
class Windows:
    """One side's throughput windows of an agent: HDR buckets of ST_n (or RT_n), and per
    time bucket the summed rate of its streams (each 1 / its mean overhead there) and
    the windows left undefined."""

    buckets: Buckets
    keys: np.ndarray
    rate: np.ndarray
    defined: np.ndarray
    zero_span: np.ndarray


class WindowPass:
    """One side's throughput windows over an agent's batches, for its streams placed on
    the side's axis: the HDR buckets of the defined values, and per stream and time
    bucket (of each window's end) the windows, their spans and those left undefined."""

    def __init__(self, side: int, agent_index: int, window: int,
                 streams: dict[tuple[int, int], Placement]) -> None:
        self.side, self.agent_index, self.window = side, agent_index, window
        self.streams = streams
        self.carried: dict[int, Carried] = {}
        self.curves: dict[int, list[np.ndarray]] = {}  # stream → [count, spans, zero]
        self.buckets: list[Buckets] = []

    def add(self, rows: Rows) -> None:
        """One batch; its streams' last timestamps wait for the next (or `result`)."""
        for found in stream_windows(rows, self.side, self.agent_index, self.window,
                                    self.carried, last=False):
            self._count(found)

    def _count(self, found: StreamWindows) -> None:
        placement = self.streams.get((self.side, found.stream))
        if placement is None or len(found.span) == 0:
            return
        defined, bins = found.defined, placement[3]
        bucket = axis_bucket(found.ends, placement)
        curve = self.curves.setdefault(found.stream, [np.zeros(bins, np.int64)
                                                      for _ in range(3)])
        curve[0] += np.bincount(bucket[defined], minlength=bins)
        np.add.at(curve[1], bucket[defined], found.span[defined].astype(np.int64))
        curve[2] += np.bincount(bucket[~defined], minlength=bins)
        self.buckets.append(Buckets.of(found.value[defined]))

    def result(self) -> Windows | None:
        """Per time bucket the rate summed over the streams, each 1 / its mean overhead
        there = M · windows / Σ spans (defined where any stream had a window); the streams'
        last timestamps counted first. The spans' sums are whole ns, each divided once and
        the streams added in their order: the same figure however the batches fell."""
        for stream, state in self.carried.items():
            if len(state.held):
                self._count(_windows(stream, np.zeros(0, np.int64), state, self.window, True))
        if not self.curves:
            return None
        bins = len(next(iter(self.curves.values()))[0])
        rate, count, zero = np.zeros(bins), np.zeros(bins, np.int64), np.zeros(bins, np.int64)
        for _, (windows_in, spans, zeros) in sorted(self.curves.items()):
            some = windows_in > 0
            rate[some] += self.window * 1e9 * windows_in[some] / spans[some]
            count += windows_in
            zero += zeros
        used = np.flatnonzero((count > 0) | (zero > 0))
        return Windows(Buckets.merged(self.buckets), used, rate[used], count[used] > 0,
                       zero[used])
