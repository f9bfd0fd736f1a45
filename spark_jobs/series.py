"""Per-message series of a run: latency in message order, sender and receiver overhead and
throughput over windows of M messages, density. Spark column expressions and one window
function; only bounded results (≤ MAX_POINTS per curve, HDR bucket rows, one row per
stream) reach the driver.

Streams. A sender stream is one producer connection (`producer_id`): its messages in send
order, O_n its n-th send time (`sent_ns`). A receiver stream is one receiving connection
(frames' receiver key: agent and consumer connection): its receipts in receive order, R_n
its n-th receive time (`recv_ns`). A requester row is in both. Over a window of M messages

    SO_n = (O_n − O_{n−M}) / M      sender overhead, ns per message
    RO_n = (R_n − R_{n−M}) / M      receiver overhead
    ST_n = 1 / SO_n,  RT_n = 1 / RO_n   throughput, msg/s

undefined for the first M of a stream, and where the window spans 0 ns (a batch of more than
M messages stamped at one instant: the clock cannot tell the rate there, so it is left out
and counted, see `Throughput.zero_span`). Each timestamp is read on its own agent's clock, so
they never mix clocks. The n-th of a stream is found by sorting on the timestamp, which
needs no dense index: ties (a batch stamped at one instant) leave the sorted times, hence
the spans, the same whichever way they fall.

Aggregates of ST and RT reuse the HDR buckets of the time metrics, on integer milli-msg/s
(3 significant digits from 2 msg/s up, ≤ 3.6e9 msg/s): percentiles, exact max and mean as
for latency, in one pass over the window output. Their lower median and robust deviation
take the median's bucket at its mean (`distribution.robust_centre`, < 0.1 % off) rather
than a second, exact pass: that pass would sort every stream again, the costliest step
here, for a digit a throughput measured at one-timestamp-per-batch resolution does not have.

Curves are downsampled to ≤ MAX_POINTS buckets. Latency: buckets of intended time since the
run's start (`t0_ns` of the producer's agent), each an equal stretch of the schedule, hence
of message order, without a global sort; `n` is the exact index of the bucket's first
message, and min, max and mean are kept so peaks stay visible. Throughput: per stream,
1 / its mean overhead over the windows ending in a time bucket (seconds since its own
agent's t0: every agent starts at one instant, so the axes of all agents line up), then
summed over the streams of that side: the rate of the whole fleet, a stalled stream adding
0. A bucket spans at least one window of a typical stream (bucket count ≤ median messages
per stream / M), so every stream has windows ending in most buckets and the sum does not
flicker. Manifests without every agent's t0 (older or synthetic ones) put every stream on
the earliest timestamp seen: one clock assumed.

Every run analysed together goes through the same three passes (spark_jobs.frames: rows
carry `run_index`): a stream is keyed by its run too, each run has its own axes, and the
window pass runs once per distinct window M (one, as a rule: M is a scenario field).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import reduce
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from sixnines.formats import hdr, summary
from sixnines.formats.manifest import Manifest
from sixnines.formats.records import DEFAULT_THROUGHPUT_WINDOW
from sixnines.spark_jobs import frames
from sixnines.spark_jobs.distribution import (
    NINES,
    Detail,
    Humps,
    bucket_range,
    median_bucket,
    nines,
)
from sixnines.spark_jobs.frames import RUN, of_run
from sixnines.spark_jobs.load import HEADLINE, OPEN_LOOP, SATURATION
from sixnines.spark_jobs.summarize import MetricCounts, counts_by, metric_summary

SENDER, RECEIVER, SCHEDULE = 0, 1, 2  # stream sides; SCHEDULE: intended times per producer
SIDES = {SENDER: "sender", RECEIVER: "receiver"}
DEFAULT_WINDOW = DEFAULT_THROUGHPUT_WINDOW
MAX_POINTS = 2000
MILLI = 1000  # throughput values: integer milli-msg/s
CURVE, BUCKETS = 0, 1  # the two groupings of the throughput pass
DETAIL_MAX_WIDTH = 1 << 16  # exact median pass only for buckets this narrow (medians < ~134 ms)
WINDOW_SPILL_CONF = "spark.sql.windowExec.buffer.spill.threshold"
WINDOW_SPILL_ROWS = 1 << 22  # rows a window buffers before spilling (see _spilling_windows)


# --- rows ------------------------------------------------------------------------------------


def stream_rows(df: DataFrame) -> DataFrame:
    """(run_index, side, stream, agent_index, ts, size): every sent message in its sender
    stream, every timed receipt in its receiver stream."""
    sent = df.filter(frames._is_sender()).select(
        RUN, F.lit(SENDER).alias("side"), F.col("producer_id").cast("long").alias("stream"),
        "agent_index", F.col("sent_ns").alias("ts"), "size")
    received = df.filter(frames._timed_receipt()).select(
        RUN, F.lit(RECEIVER).alias("side"), frames._receiver().alias("stream"),
        "agent_index", F.col("recv_ns").alias("ts"), "size")
    return sent.unionByName(received)


def latency_rows(df: DataFrame, clocks: frames.RunClocks) -> DataFrame:
    """(run_index, producer_id, intended_ns, latency, service_time) in ns of every receipt
    that `frames.metric_values` times, by the same clock rules (same clock, or cross-clock
    corrected when asked): L_n = recv − intended, service time = recv − sent."""
    timed = frames.timed_receipts(df, clocks).filter(F.col("clock_pair") != frames.EXCLUDED)
    recv = F.col("recv_ns") - F.col("clock_correction")
    return timed.select(RUN, "producer_id", "intended_ns",
                        (recv - F.col("intended_ns")).alias("latency"),
                        (recv - F.col("sent_ns")).alias("service_time"))


def windowed(rows: DataFrame, window: int) -> DataFrame:
    """rows (run_index, side, stream, ts, …) plus `span` = ts − the ts M messages earlier
    in its stream (M·SO_n or M·RO_n, ns; null for the first M) and `value` = M / span in
    milli-msg/s (ST_n or RT_n; null where span is null or 0)."""
    order = Window.partitionBy(RUN, "side", "stream").orderBy("ts")
    span = F.col("ts") - F.lag("ts", window).over(order)
    value = F.round(F.lit(window * 1e9 * MILLI) / F.when(span > 0, span)).cast("long")
    return rows.select("*", span.alias("span")).select("*", value.alias("value"))


# --- streams and time axes -------------------------------------------------------------------


def extents(df: DataFrame) -> DataFrame:
    """One row per stream (run_index, side, stream, agent_index, n, first, last, bytes);
    side SCHEDULE: per producer, the intended times of its timed receipts (the latency
    curve's axis)."""
    schedule = df.filter(frames._timed_receipt()).select(
        RUN, F.lit(SCHEDULE).alias("side"), F.col("producer_id").cast("long").alias("stream"),
        "agent_index", F.col("intended_ns").alias("ts"), "size")
    return stream_rows(df).unionByName(schedule).groupBy(RUN, "side", "stream").agg(
        F.min("agent_index").alias("agent_index"), F.count(F.lit(1)).alias("n"),
        F.min("ts").alias("first"), F.max("ts").alias("last"),
        F.sum("size").cast("double").alias("bytes"))


@dataclass(frozen=True)
class Axis:
    """`bins` equal buckets over [low, high] ns since the origin (both ends included)."""

    low: int
    high: int
    bins: int

    @property
    def width_ns(self) -> float:
        return (self.high - self.low + 1) / self.bins

    def bucket(self, since_origin: Column) -> Column:
        return _bucket(since_origin, F.lit(self.low), F.lit(self.width_ns), F.lit(self.bins))

    def centres_s(self, buckets: np.ndarray) -> np.ndarray:
        return (self.low + (buckets + 0.5) * self.width_ns) / 1e9


def _bucket(since_origin: Column, low: Column, width_ns: Column, bins: Column) -> Column:
    """The bucket of `bins` equal ones of width_ns from low (Axis) a time falls in, the
    ends clamped: an axis given as literals or as columns of a table of axes."""
    position = F.floor((since_origin - low).cast("double") / width_ns)
    return F.least(F.greatest(position, F.lit(0)), bins - 1).cast("int")


@dataclass(frozen=True)
class Streams:
    """A run's streams (one `extents` row each) and where each one's clock starts; `run`:
    its run_index."""

    rows: list[dict[str, Any]]
    origins: dict[tuple[int, int], int]  # (side, stream) → ns on its clock taken as t = 0
    run: int = 0

    @classmethod
    def of(cls, rows: list[dict[str, Any]], starts: Mapping[int, int], run: int = 0
           ) -> Streams:
        """rows: the run's `extents` rows; starts: agent_index → t0_ns from its manifest. A
        SCHEDULE stream (a producer's intended times) starts with its sender stream; with
        t0s, one without a sender stream (its file missing, or an unexpected producer id)
        is not placed."""
        senders = {r["stream"]: r["agent_index"] for r in rows if r["side"] == SENDER}
        agent = {(r["side"], r["stream"]): senders.get(r["stream"]) if r["side"] == SCHEDULE
                 else r["agent_index"] for r in rows}
        if all(index in starts for index in agent.values() if index is not None):
            origins = {key: starts[index] for key, index in agent.items() if index is not None}
        else:  # one clock assumed: every stream from the earliest timestamp seen
            earliest = min((r["first"] for r in rows), default=0)
            origins = dict.fromkeys(agent, earliest)
        return cls(rows, origins, run)

    def side(self, side: int) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["side"] == side and (side, r["stream"]) in self.origins]

    def axis(self, side: int, bins: int) -> Axis | None:
        """The span of a side's streams since their origins; None when it has none."""
        mine = self.side(side)
        if not mine:
            return None
        low = min(r["first"] - self.origins[side, r["stream"]] for r in mine)
        high = max(r["last"] - self.origins[side, r["stream"]] for r in mine)
        return Axis(low, high, bins)

    def throughput_axis(self, side: int, window: int) -> Axis | None:
        """Buckets of at least one window of the median stream (see the module doc)."""
        counts = [r["n"] for r in self.side(side)]
        bins = int(np.clip(np.median(counts) // window, 1, MAX_POINTS)) if counts else 1
        return self.axis(side, bins)

    def placed(self, side: int, axis: Axis) -> list[tuple]:
        """(run_index, side, stream, origin, low, width_ns, bins) of one side's streams on
        `axis`: rows of the table `_axes_table` broadcasts onto rows."""
        return [(self.run, side, stream, origin, axis.low, axis.width_ns, axis.bins)
                for (s, stream), origin in self.origins.items() if s == side]


def _axes_table(spark: SparkSession, rows: list[tuple], key: str) -> DataFrame:
    """Streams.placed rows of every run and side, `key` naming the stream column."""
    return F.broadcast(spark.createDataFrame(rows, (
        f"{RUN} int, side int, {key} long, origin long, low long, width_ns double, bins int")))


def _axis_bucket(time: Column) -> Column:
    """The bucket of a time on its stream's axis (columns of `_axes_table`)."""
    return _bucket(time - F.col("origin"), F.col("low"), F.col("width_ns"), F.col("bins"))


def density_ns(streams: Streams) -> float | None:
    """Mean interval between consecutive receipts, per receiver stream (last − first) /
    (n − 1), then overall: every interval of every stream weighs the same."""
    mine = [r for r in streams.rows if r["side"] == RECEIVER and r["n"] > 1]
    intervals = sum(r["n"] - 1 for r in mine)
    return sum(r["last"] - r["first"] for r in mine) / intervals if intervals else None


def bytes_per_s(streams: Streams, side: int) -> float | None:
    """Bytes per second of a side: each stream's message rate (n − 1) / span times its mean
    size (the message rate `frames.agent_rates` takes, per stream), summed over streams."""
    rates = [r["bytes"] * (r["n"] - 1) / r["n"] / (r["last"] - r["first"]) * 1e9
             for r in streams.rows if r["side"] == side and r["n"] > 1 and r["last"] > r["first"]]
    return sum(rates) if rates else None


# --- the latency curve -----------------------------------------------------------------------


def latency_curve(rows: DataFrame, axes: Sequence[tuple[Streams, Axis]]) -> DataFrame:
    """Per run and bucket of intended time (run_index, bucket, …): count and min / max /
    sum of latency and service time. axes: each run's streams and its schedule axis."""
    table = _axes_table(rows.sparkSession, [row for streams, axis in axes
                                            for row in streams.placed(SCHEDULE, axis)],
                        "producer_id")
    placed = rows.join(table.drop("side"), [RUN, "producer_id"])
    figures = [agg(F.col(metric)).alias(f"{metric}_{name}")
               for metric in ("latency", "service_time")
               for name, agg in (("min", F.min), ("max", F.max), ("sum", F.sum))]
    return placed.groupBy(RUN, _axis_bucket(F.col("intended_ns")).alias("bucket")).agg(
        F.count(F.lit(1)).alias("count"), *figures)


def latency_json(curve: pa.Table | None, load: str = OPEN_LOOP) -> dict[str, dict[str, list]]:
    """series.json "latency", "service_time" and "saturation_latency": n (index of each
    bucket's first message in intended order), min_us, mean_us, max_us (empty lists when
    nothing was timed). A saturation run fills only "saturation_latency" (recv − sent, its
    service-time column: intended = sent), an open-loop run the other two."""
    empty: dict[str, list] = {"n": [], "min_us": [], "mean_us": [], "max_us": []}
    if curve is None:
        return {"latency": empty, "service_time": empty, "saturation_latency": empty}
    table = curve.sort_by("bucket")
    count = table.column("count").to_numpy()
    first = (np.cumsum(count) - count).astype(int).tolist()

    def of(metric: str) -> dict[str, list]:
        col = {name: table.column(f"{metric}_{name}").to_numpy().astype(np.float64)
               for name in ("min", "max", "sum")}
        return {"n": first, "min_us": (col["min"] / 1000).tolist(),
                "mean_us": (col["sum"] / count / 1000).tolist(),
                "max_us": (col["max"] / 1000).tolist()}

    if load == SATURATION:
        return {"latency": empty, "service_time": empty,
                "saturation_latency": of("service_time")}
    return {"latency": of("latency"), "service_time": of("service_time"),
            "saturation_latency": empty}


# --- throughput ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Throughput:
    """One side's throughput: ST_n (or RT_n) aggregates in HDR buckets of milli-msg/s, the
    curve (t_s, msg/s) and how many windows spanned 0 ns (undefined, left out)."""

    counts: MetricCounts
    t_s: list[float]
    msg_s: list[float]
    zero_span: int


def _keyed(rows: DataFrame, placed: list[tuple]) -> DataFrame:
    """Stream rows with their time bucket: joined to their origin and axis (`placed`:
    Streams.placed rows) before the window, so the sort carries one int more rather than a
    second join after it."""
    table = _axes_table(rows.sparkSession, placed, "stream")
    return rows.join(table, [RUN, "side", "stream"]).select(
        RUN, "side", "stream", "ts", _axis_bucket(F.col("ts")).alias("t_bucket"))


def _grouped(values: DataFrame) -> DataFrame:
    """Each windowed row twice, as a grouping set: (run, side, HDR bucket of its
    throughput) and (run, side, stream, time bucket), aggregated in one pass so the window
    runs once. (An explode, not DataFrame.groupingSets: that needs Spark 4, and measured no
    faster here.)"""
    keys = F.array(
        F.struct(F.lit(BUCKETS).alias("kind"), F.lit(0).cast("long").alias("stream"),
                 F.when(F.col("value").isNotNull(), frames.bucket_index(F.col("value")))
                 .alias("key")),
        F.struct(F.lit(CURVE).alias("kind"), F.col("stream"), F.col("t_bucket").alias("key")))
    value = F.col("value")
    return (values.select(RUN, "side", "span", "value", F.explode(keys).alias("k"))
            .select(RUN, "side", "span", "value", "k.*")
            .groupBy(RUN, "side", "kind", "stream", "key")
            .agg(F.count(value).alias("count"), F.sum(value.cast("double")).alias("sum"),
                 F.max(value).alias("max"),
                 F.count(F.when(value > hdr.HIGHEST, 1)).alias("too_large"),
                 F.sum(F.when(value.isNotNull(), F.col("span"))).alias("spans"),
                 F.count(F.when(F.col("span") == 0, 1)).alias("zero_span")))


def _bucket_rows(grouped: DataFrame) -> pa.Table:
    """The HDR grouping as `summarize.counts_by` reads it (rows of undefined windows, with
    a null bucket, dropped)."""
    return grouped.filter((F.col("kind") == BUCKETS) & F.col("key").isNotNull()).select(
        RUN, "side", F.col("key").alias("bucket"), "count", "sum", "max",
        F.lit(0).alias("negative"), "too_large").toArrow()


def _curve_rows(grouped: DataFrame, window: int) -> pa.Table:
    """Per side and time bucket: the sum over streams of each one's throughput there, taken
    as 1 / its mean overhead (M·count / Σ spans), not as the mean of its ST_n: a mean of
    rates overstates a bursty stream (1/x is convex), and the curve must match messages
    over seconds."""
    stream_rate = F.lit(window * 1e9) * F.col("count") / F.nullif(F.col("spans"), F.lit(0))
    return (grouped.filter(F.col("kind") == CURVE).groupBy(RUN, "side", "key")
            .agg(F.sum(stream_rate).alias("msg_s"), F.sum("zero_span").alias("zero_span"))
            .toArrow())


def _side(side: int, axis: Axis, counts: Mapping[str, MetricCounts], curve: pa.Table
          ) -> Throughput:
    mine = curve.filter(pc.equal(curve["side"], side)).sort_by("key")
    rate = mine["msg_s"].to_numpy(zero_copy_only=False).astype(np.float64)
    defined = ~np.isnan(rate)
    t_s = axis.centres_s(mine["key"].to_numpy()[defined])
    return Throughput(counts.get(str(side), MetricCounts()), t_s.tolist(),
                      rate[defined].tolist(), int(pc.sum(mine["zero_span"]).as_py() or 0))


@contextmanager
def _spilling_windows(spark: SparkSession) -> Iterator[None]:
    """Window partitions spill to disk every WINDOW_SPILL_ROWS rows while inside.

    A window operator buffers each whole partition, here a whole stream, and by default
    (spark.sql.windowExec.buffer.spill.threshold = 2^31) spills only under memory pressure:
    its pointer array then outgrows the heap (one 100M-message stream fails in the default
    1 GB). 4M rows bound that array to 64 MB, while keeping the spill files, each read back
    through a 1 MB buffer at once, few (25 for 100M rows). A lower setting in force is
    kept."""
    before = spark.conf.get(WINDOW_SPILL_CONF)
    spark.conf.set(WINDOW_SPILL_CONF, str(min(int(before), WINDOW_SPILL_ROWS)))
    try:
        yield
    finally:
        spark.conf.set(WINDOW_SPILL_CONF, before)


def throughput(rows: DataFrame, runs: Sequence[Streams], window: int
               ) -> list[dict[str, Throughput]]:
    """ST_n and RT_n of every stream of these runs (rows: stream_rows; runs: each one's
    Streams) in one window pass; per run, by side name."""
    axes = [{side: axis for side in SIDES
             if (axis := streams.throughput_axis(side, window)) is not None}
            for streams in runs]
    placed = [row for streams, mine in zip(runs, axes, strict=True)
              for side, axis in mine.items() for row in streams.placed(side, axis)]
    if not placed:
        return [{} for _ in runs]
    grouped = _grouped(windowed(_keyed(rows, placed), window)).persist()
    try:
        with _spilling_windows(rows.sparkSession):
            buckets = _bucket_rows(grouped)
            curves = _curve_rows(grouped, window)
    finally:
        grouped.unpersist()
    return [{SIDES[side]: _side(side, axis, counts_by(of_run(buckets, streams.run), "side"),
                                of_run(curves, streams.run)) for side, axis in mine.items()}
            for streams, mine in zip(runs, axes, strict=True)]


# --- the exact median pass -------------------------------------------------------------------


Range = tuple[int | None, int | None]


def median_detail(values: DataFrame, ranges: Mapping[tuple[int, str], Range]
                  ) -> dict[tuple[int, str], Detail]:
    """Value counts inside each metric's median bucket (values: frames.metric_values).

    ranges: (run_index, metric) → raw value range of its median's bucket
    (`distribution.bucket_range`). Only bounded buckets no wider than DETAIL_MAX_WIDTH are
    asked for, so at most that many rows per metric and run come back; the others keep the
    bucket-mean estimate.
    """
    wanted = {key: (low, high) for key, (low, high) in ranges.items()
              if low is not None and high is not None and high - low < DETAIL_MAX_WIDTH}
    if not wanted:
        return {}
    value = F.col("value")
    inside = reduce(Column.__or__, [
        (F.col(RUN) == run) & (F.col("metric") == metric) & value.between(low, high)
        for (run, metric), (low, high) in wanted.items()])
    table = (values.filter(inside).groupBy(RUN, "metric", "value")
             .agg(F.count(F.lit(1)).alias("n")).orderBy(RUN, "metric", "value").toArrow())
    details = {}
    for run, metric in wanted:
        mine = table.filter(pc.and_(pc.equal(table[RUN], run), pc.equal(table["metric"], metric)))
        details[run, metric] = Detail(mine["value"].to_numpy(), mine["n"].to_numpy())
    return details


def with_median_detail(values: DataFrame, runs: Sequence[Mapping[str, MetricCounts]]
                       ) -> list[dict[str, MetricCounts]]:
    """Each run's metrics (`runs`, by run_index) with the value counts of each one's median
    bucket attached (one Spark pass over values, frames.metric_values), so their lower
    median and robust deviation are exact."""
    ranges = {(run, name): bucket_range(median_bucket(m.counts)[0])
              for run, metrics in enumerate(runs) for name, m in metrics.items() if m.count}
    details = median_detail(values, ranges)
    return [{name: replace(m, detail=details.get((run, name))) for name, m in metrics.items()}
            for run, metrics in enumerate(runs)]


# --- the series of each run ------------------------------------------------------------------


@dataclass(frozen=True)
class PerMessage:
    """Everything per message of one run (see the module doc)."""

    window: int
    load: str  # spark_jobs.load
    latency: dict[str, dict[str, list]]  # latency_json
    throughput: dict[str, Throughput]  # by side name
    density_ns: float | None
    bytes_per_s: dict[str, float | None]  # by side name


def per_message(df: DataFrame, clocks: frames.RunClocks, manifest: Manifest,
                window: int = DEFAULT_WINDOW, load: str = OPEN_LOOP) -> PerMessage:
    """One run's series (df: its measured rows, run_index 0): see `per_message_of_runs`."""
    return per_message_of_runs(df, clocks, [manifest], [window], [load])[0]


def per_message_of_runs(df: DataFrame, clocks: frames.RunClocks, manifests: Sequence[Manifest],
                        windows: Sequence[int], loads: Sequence[str]) -> list[PerMessage]:
    """Series of the measured rows df of every run (manifests, windows and loads by
    run_index): three Spark jobs whatever the number of runs (stream extents, the latency
    curve, the throughput window pass; one more pass per further distinct window)."""
    table = extents(df).toArrow()
    runs = []
    for run, manifest in enumerate(manifests):
        starts = {index: agent.t0_ns for index, agent in enumerate(manifest.agents)
                  if agent.t0_ns is not None}
        runs.append(Streams.of(of_run(table, run).to_pylist(), starts, run))
    axes = [(streams, axis) for streams in runs
            if (axis := streams.axis(SCHEDULE, MAX_POINTS)) is not None]
    curves = latency_curve(latency_rows(df, clocks), axes).toArrow() if axes else None
    rows = stream_rows(df)
    flows: dict[int, dict[str, Throughput]] = {}
    for window in sorted(set(windows)):
        mine = [streams for streams in runs if windows[streams.run] == window]
        flows |= zip([s.run for s in mine], throughput(rows, mine, window), strict=True)
    timed = {streams.run for streams, _ in axes}
    return [PerMessage(windows[s.run], loads[s.run],
                       latency_json(of_run(curves, s.run) if s.run in timed else None,
                                    loads[s.run]),
                       flows[s.run], density_ns(s),
                       {name: bytes_per_s(s, side) for side, name in SIDES.items()})
            for s in runs]


def notes(result: PerMessage) -> list[str]:
    """Problem lines: windows whose throughput is undefined or out of the bucket range."""
    lines = []
    for name, side in result.throughput.items():
        if side.zero_span:
            lines.append(f"{name} throughput: {side.zero_span:,} windows of {result.window} "
                         "messages spanned 0 ns (one timestamp for the batch): undefined, "
                         "left out")
        if side.counts.too_large:
            lines.append(f"{name} throughput: {side.counts.too_large:,} windows above "
                         f"{hdr.HIGHEST / MILLI:,.0f} msg/s counted at that")
    return lines


def _side_counts(result: PerMessage, name: str) -> MetricCounts:
    side = result.throughput.get(name)
    return side.counts if side else MetricCounts()


def _us(ns: float | None) -> float | None:
    return None if ns is None else ns / 1000


def _modes_us(humps: Humps) -> list[float]:
    return [float(f"{mode / 1000:.4g}") for mode in humps.modes_ns]


def summary_fields(result: PerMessage, humps: Humps) -> dict[str, Any]:
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


def humps_warnings(humps: Humps, load: str = OPEN_LOOP) -> list[str]:
    """Multi-modal latency is a defect to flag without anyone reading the plot."""
    if humps.count < 2:
        return []
    modes = ", ".join(f"{mode:,.4g}" for mode in _modes_us(humps))
    label = HEADLINE[load].replace("_", " ")
    return [f"{label} is multi-modal: modes at {modes} µs"]


def series_json(result: PerMessage, metrics: Mapping[str, MetricCounts],
                histogram: tuple[np.ndarray, np.ndarray], humps: Humps) -> dict[str, Any]:
    """report/series.json (documented in spark_jobs.analyze): every list ≤ MAX_POINTS long."""
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
        "nines": {"p": list(NINES), "latency_us": nines_us("latency"),
                  "service_time_us": nines_us("service_time"),
                  "saturation_latency_us": nines_us("saturation_latency")},
    }
