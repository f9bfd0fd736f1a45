"""Per-message series of a run: latency in message order, sender and receiver overhead and
throughput over windows of M messages, density; the per-run half, from the merged
per-agent results (the per-agent work: spark_jobs.agent_pass). Only bounded results
(≤ MAX_POINTS per curve, HDR buckets, one row per stream) are kept.

Streams. A sender stream is one producer connection (`producer_id`): its messages in send
order, stamped `sent_ns`. A receiver stream is one receiving connection (agent and consumer
connection): its receipts in receive order, stamped `recv_ns`. A requester row is in both.

A message's time. An agent stamps once per read (a receiver taking several messages from
one read) or per batch sent, so one timestamp may stand for k messages. Those k messages
are taken to have come evenly over the time since the stream's timestamp before: the i-th
of them (i = 1 … k) at p + ⌈i·(s − p)/k⌉, s the shared timestamp and p the one before, a
whole ns as the timestamps are (so a stream's spans, summed per time bucket, are exact
integers: the same sums whichever batches of its files counted them). With one message
per timestamp, its time is its timestamp. Its n-th message's time is O_n for
a sender stream, R_n for a receiver stream; over a window of M messages

    SO_n = (O_n − O_{n−M}) / M      sender overhead, ns per message
    RO_n = (R_n − R_{n−M}) / M      receiver overhead
    ST_n = 1 / SO_n,  RT_n = 1 / RO_n   throughput, msg/s

undefined for the first M of a stream. So both sides give a stream's rate at any M, also
a receiver at saturation that reads hundreds of messages per timestamp (where the raw
timestamps would span 0 ns in most windows): a known rate comes out at every M
(tests/test_series.py). A stream's first timestamp has no time before it: windows holding
one of its messages but its last are undefined, left out and counted
(`Throughput.zero_span`, summary.json's `zero_span_windows`: named when the undefined
windows were those whose raw timestamps spanned 0 ns). Each
timestamp is read on its own agent's clock, so they never mix clocks. The n-th of a stream
is found by sorting on the timestamp. Every stream is whole in its agent's files, so its
windows are one agent's pass (the messages of its last timestamp in a batch wait for the
next batch: k is known only then). With one message per timestamp and FIFO delivery,
M·(RO_n − SO_n) = S_n − S_{n−M} exactly, S the service time (tests/test_series.py).

Aggregates of ST and RT reuse the HDR buckets of the time metrics, on integer milli-msg/s
(3 significant digits from 2 msg/s up, ≤ 3.6e9 msg/s): percentiles, exact max and mean as
for latency. Their lower median and robust deviation take the median's bucket at its mean
(`distribution.robust_centre`, < 0.1 % off): a digit a throughput measured at
one-timestamp-per-batch resolution does not have.

Curves are downsampled to ≤ MAX_POINTS buckets. Latency: buckets of intended time since the
run's start (`t0_ns` of the producer's agent), each an equal stretch of the schedule, hence
of message order, without a global sort; `n` is the exact index of the bucket's first
message, and min, max and mean are kept so peaks stay visible. Throughput: per stream,
1 / its mean overhead over the windows ending in a time bucket (seconds since its own
agent's t0: every agent starts at one instant, so the axes of all agents line up), then
summed over the streams of that side: the rate of the whole fleet, a stalled stream adding
0. A bucket spans at least one window of a typical stream (bucket count ≤ messages per
stream / M), so every stream has windows ending in most buckets and the sum does not
flicker.

The axes are the run's plan (`Planned`) when it has one: the latency curve's is the
measured stretch [warmup, warmup + duration) of the schedule, the throughput curves' that
stretch and the drain after it, in buckets of at least one window of a planned sender
stream; they are known before any record is read, which the analysis of closed chunks
while the run goes needs (docs/design.md), and every run of a scenario shares them. A run
without one (`rate: max`, a manifest of another tool) gets axes over the streams'
observed extents, bucketed by their median message count. Manifests without every agent's
t0 (older or synthetic ones) put every stream on the earliest timestamp seen: one clock
assumed. Each run analysed together has its own axes and its own window M.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from sixnines.formats import hdr, summary
from sixnines.formats.load import HEADLINE
from sixnines.formats.records import DEFAULT_THROUGHPUT_WINDOW
from sixnines.formats.vocabulary import RECEIVER_TIMED, Load, Metric
from sixnines.spark_jobs.distribution import NINES, HumpsFound, nines
from sixnines.spark_jobs.summarize import MetricCounts, metric_summary

SENDER, RECEIVER, SCHEDULE = 0, 1, 2  # stream sides; SCHEDULE: intended times per producer
SIDES = {SENDER: "sender", RECEIVER: "receiver"}
DEFAULT_WINDOW = DEFAULT_THROUGHPUT_WINDOW
MAX_POINTS = 2000
MILLI = 1000  # throughput values: integer milli-msg/s


# --- streams and time axes -------------------------------------------------------------------


@dataclass(frozen=True)
class TimeBins:
    """`bins` equal buckets over [low, high] ns since the origin (both ends included)."""

    low: int
    high: int
    bins: int

    @property
    def width_ns(self) -> float:
        return (self.high - self.low + 1) / self.bins

    def centres_s(self, buckets: np.ndarray) -> np.ndarray:
        return (self.low + (buckets + 0.5) * self.width_ns) / 1e9


@dataclass(frozen=True)
class Streams:
    """A run's streams (one extent row each: side, stream, agent_index, n, first, last,
    bytes; agent_pass.stream_extents) and where each one's clock starts."""

    rows: list[dict[str, Any]]
    origins: dict[tuple[int, int], int]  # (side, stream) → ns on its clock taken as t = 0

    @classmethod
    def of(cls, rows: list[dict[str, Any]], starts: Mapping[int, int],
           owners: Mapping[int, int] | None = None) -> Streams:
        """rows: the run's extent rows; starts: agent_index → t0_ns from its manifest;
        owners: producer id → the agent_index of the sender the manifest gives it. A
        SCHEDULE stream (a producer's intended times) starts with its sender; with t0s, one
        of no known sender (an unexpected producer id) is not placed."""
        senders = {r["stream"]: r["agent_index"] for r in rows if r["side"] == SENDER}
        senders.update(owners or {})
        agent = {(r["side"], r["stream"]): senders.get(r["stream"]) if r["side"] == SCHEDULE
                 else r["agent_index"] for r in rows}
        if all(index in starts for index in agent.values() if index is not None):
            origins = {key: starts[index] for key, index in agent.items() if index is not None}
        else:  # one clock assumed: every stream from the earliest timestamp seen
            earliest = min((r["first"] for r in rows), default=0)
            origins = dict.fromkeys(agent, earliest)
        return cls(rows, origins)

    def side(self, side: int) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["side"] == side and (side, r["stream"]) in self.origins]

    def axis(self, side: int, bins: int) -> TimeBins | None:
        """The span of a side's streams since their origins; None when it has none."""
        mine = self.side(side)
        if not mine:
            return None
        low = min(r["first"] - self.origins[side, r["stream"]] for r in mine)
        high = max(r["last"] - self.origins[side, r["stream"]] for r in mine)
        return TimeBins(low, high, bins)

    def throughput_axis(self, side: int, window: int) -> TimeBins | None:
        """Buckets of at least one window of the median stream (see the module doc)."""
        counts = [r["n"] for r in self.side(side)]
        bins = int(np.clip(np.median(counts) // window, 1, MAX_POINTS)) if counts else 1
        return self.axis(side, bins)


@dataclass(frozen=True)
class Planned:
    """A run's schedule as planned, the same for every agent since its own t0: the
    measured stretch [warmup, warmup + duration), the drain after it, and how many
    messages each sender stream is to send."""

    warmup_ns: int
    duration_ns: int
    drain_ns: int
    per_stream: float

    def schedule_axis(self) -> TimeBins:
        """The latency curve's axis: intended times are the schedule's own."""
        return TimeBins(self.warmup_ns, self.warmup_ns + self.duration_ns - 1, MAX_POINTS)

    def throughput_axis(self, window: int) -> TimeBins:
        """Both sides' axis: the measured stretch and the drain, in buckets of at least one
        window of a planned sender stream (see the module doc)."""
        span = self.duration_ns + self.drain_ns
        messages = self.per_stream * span / self.duration_ns
        bins = int(np.clip(messages // window, 1, MAX_POINTS))
        return TimeBins(self.warmup_ns, self.warmup_ns + span - 1, bins)


def density_ns(streams: Streams) -> float | None:
    """Mean interval between consecutive receipts, per receiver stream (last − first) /
    (n − 1), then overall: every interval of every stream weighs the same."""
    mine = [r for r in streams.rows if r["side"] == RECEIVER and r["n"] > 1]
    intervals = sum(r["n"] - 1 for r in mine)
    return sum(r["last"] - r["first"] for r in mine) / intervals if intervals else None


def bytes_per_s(streams: Streams, side: int) -> float | None:
    """Bytes per second of a side: each stream's message rate (n − 1) / span times its mean
    size (the message rate an agent's is, per stream), summed over streams."""
    rates = [r["bytes"] * (r["n"] - 1) / r["n"] / (r["last"] - r["first"]) * 1e9
             for r in streams.rows if r["side"] == side and r["n"] > 1 and r["last"] > r["first"]]
    return sum(rates) if rates else None


# --- the latency curve -----------------------------------------------------------------------


def latency_json(curve: pa.Table | None, load: Load = Load.OPEN_LOOP,
                 axis: TimeBins | None = None) -> dict[str, dict[str, list]]:
    """series.json "latency", "service_time" and "saturation_latency": n (index of each
    bucket's first message in intended order), t_s (its intended time's bucket centre,
    seconds since the start instant, when the run's schedule was planned; else empty),
    min_us, mean_us, max_us (empty lists when nothing was timed). A saturation run fills
    only "saturation_latency" (recv − sent, its service-time column: intended = sent), an
    open-loop run the other two."""
    empty: dict[str, list] = {"n": [], "t_s": [], "min_us": [], "mean_us": [], "max_us": []}
    if curve is None:
        return dict.fromkeys(RECEIVER_TIMED, empty)
    table = curve.sort_by("bucket")
    count = table.column("count").to_numpy()
    first = (np.cumsum(count) - count).astype(int).tolist()
    t_s = [] if axis is None else axis.centres_s(table.column("bucket").to_numpy()).tolist()

    def of(metric: str) -> dict[str, list]:
        col = {name: table.column(f"{metric}_{name}").to_numpy().astype(np.float64)
               for name in ("min", "max", "sum")}
        return {"n": first, "t_s": t_s, "min_us": (col["min"] / 1000).tolist(),
                "mean_us": (col["sum"] / count / 1000).tolist(),
                "max_us": (col["max"] / 1000).tolist()}

    if load == Load.SATURATION:
        return {Metric.LATENCY: empty, Metric.SERVICE_TIME: empty,
                Metric.SATURATION_LATENCY: of(Metric.SERVICE_TIME)}
    return {Metric.LATENCY: of(Metric.LATENCY), Metric.SERVICE_TIME: of(Metric.SERVICE_TIME),
            Metric.SATURATION_LATENCY: empty}


# --- throughput ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ThroughputSeries:
    """One side's throughput: ST_n (or RT_n) aggregates in HDR buckets of milli-msg/s, the
    curve (t_s, msg/s) and how many windows were undefined (left out)."""

    counts: MetricCounts
    t_s: list[float]
    msg_s: list[float]
    zero_span: int


# --- the series of each run ------------------------------------------------------------------


@dataclass(frozen=True)
class PerMessage:
    """Everything per message of one run (see the module doc)."""

    window: int
    load: Load
    latency: dict[str, dict[str, list]]  # latency_json
    throughput: dict[str, ThroughputSeries]  # by side name
    density_ns: float | None
    bytes_per_s: dict[str, float | None]  # by side name


def notes(result: PerMessage) -> list[str]:
    """Problem lines: windows whose throughput is undefined or out of the bucket range."""
    lines = []
    for name, side in result.throughput.items():
        if side.zero_span:
            lines.append(f"{name} throughput: {side.zero_span:,} windows of {result.window} "
                         "messages undefined (a stream's first read or batch, which has no "
                         "time before it, or a span of 0 ns): left out")
        if side.counts.too_large:
            lines.append(f"{name} throughput: {side.counts.too_large:,} windows above "
                         f"{hdr.HIGHEST / MILLI:,.0f} msg/s counted at that")
    return lines


def _side_counts(result: PerMessage, name: str) -> MetricCounts:
    side = result.throughput.get(name)
    return side.counts if side else MetricCounts()


def _us(ns: float | None) -> float | None:
    return None if ns is None else ns / 1000


def _modes_us(humps: HumpsFound) -> list[float]:
    return [float(f"{mode / 1000:.4g}") for mode in humps.modes_ns]


def summary_fields(result: PerMessage, humps: HumpsFound) -> dict[str, Any]:
    """The summary.json fields of the series (formats.summary: throughput, density_us,
    humps)."""
    return {
        "throughput": summary.Throughput(
            window=result.window,
            **{f"{name}_msg_s": metric_summary(_side_counts(result, name), MILLI)
               for name in SIDES.values()},
            bytes_per_s=summary.BytesPerSecond(**result.bytes_per_s),
            zero_span_windows={name: side.zero_span
                               for name, side in result.throughput.items()}),
        "density_us": _us(result.density_ns),
        "humps": summary.Humps(count=humps.count, modes_us=_modes_us(humps)),
    }


def humps_warnings(humps: HumpsFound, load: Load = Load.OPEN_LOOP) -> list[str]:
    """Multi-modal latency is a defect to flag without anyone reading the plot."""
    if humps.count < 2:
        return []
    modes = ", ".join(f"{mode:,.4g}" for mode in _modes_us(humps))
    label = HEADLINE[load].label
    return [f"{label} is multi-modal: modes at {modes} µs"]


def series_json(result: PerMessage, metrics: Mapping[str, MetricCounts],
                histogram: tuple[np.ndarray, np.ndarray], humps: HumpsFound) -> dict[str, Any]:
    """report/series.json (documented in spark_jobs.run_report): every list ≤ MAX_POINTS long."""
    edges, counts = histogram

    def curve(name: str) -> dict[str, list[float]]:
        side = result.throughput.get(name)
        return {"t_s": side.t_s if side else [], "msg_s": side.msg_s if side else []}

    def nines_us(name: str) -> list[float | None]:
        metric = metrics[name]
        return [_us(v) for v in nines(metric.counts, metric.max)]

    return {
        "window": result.window,
        "load": result.load,
        **result.latency,
        "sender_throughput": curve("sender"),
        "receiver_throughput": curve("receiver"),
        "histogram": {"edges_us": (edges / 1000).tolist(), "counts": counts.tolist()},
        "humps": {"count": humps.count, "modes_us": _modes_us(humps)},
        "nines": {"p": list(NINES),
                  **{metric.summary_field: nines_us(metric) for metric in RECEIVER_TIMED}},
    }
