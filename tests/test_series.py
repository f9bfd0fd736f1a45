"""spark_jobs.series on tiny hand-made frames: per-message latency, overheads and throughput
over M messages, density, bytes/s, the curves, and exact medians through Spark."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from sixnines.formats.manifest import Manifest
from sixnines.spark_jobs import frames, series, summarize
from sixnines.spark_jobs.load import OPEN_LOOP

pytestmark = pytest.mark.integration

F = pytest.importorskip("pyspark.sql.functions")

COLUMNS = ("agent_id string, agent_index int, role string, producer_id int, seq long, "
           "size int, intended_ns long, sent_ns long, recv_ns long, consumer_id int, "
           "rx_index long, warmup boolean")
US = 1_000  # ns


def _ints(*columns) -> list[tuple[int, ...]]:
    return [tuple(int(v) for v in row) for row in zip(*columns, strict=True)]


def _sent(agent_index: int, producer: int, intended, sent, size: int = 100) -> list[tuple]:
    return [(f"a{agent_index}", agent_index, "producer", producer, seq, size, i, s, None, None,
             None, False) for seq, (i, s) in enumerate(_ints(intended, sent))]


def _received(agent_index: int, producer: int, intended, sent, recv, connection: int = 0,
              size: int = 100) -> list[tuple]:
    return [(f"a{agent_index}", agent_index, "consumer", producer, seq, size, i, s, r,
             connection, seq, False)
            for seq, (i, s, r) in enumerate(_ints(intended, sent, recv))]


def _df(spark, rows):
    """One run's rows (run_index 0)."""
    return spark.createDataFrame(rows, COLUMNS).withColumn(frames.RUN, F.lit(0))


def _clocks(n_agents: int) -> frames.RunClocks:
    agents = [{"id": f"a{i}", "role": "consumer"} for i in range(n_agents)]
    return frames.RunClocks.from_manifest(Manifest(agents=agents))


def _spans(spark, rows, window: int) -> dict[int, list]:
    """Per side, (span, value) of every message in stream order."""
    table = series.windowed(series.stream_rows(_df(spark, rows)), window).orderBy(
        "side", "stream", "ts").toArrow()
    out: dict[int, list] = {}
    for side, span, value in zip(*(table[c].to_pylist() for c in ("side", "span", "value")),
                                 strict=True):
        out.setdefault(side, []).append((span, value))
    return out


# A producer sending 6 messages and a consumer receiving them, times in µs
INTENDED = [0, 10, 20, 30, 40, 50]
SENT = [0, 10, 30, 60, 100, 150]
RECV = [50, 55, 90, 90, 200, 210]
ONE_STREAM = (_sent(0, 1, [t * US for t in INTENDED], [t * US for t in SENT])
              + _received(1, 1, [t * US for t in INTENDED], [t * US for t in SENT],
                          [t * US for t in RECV]))


def test_latency_per_message(spark):
    """L_n = recv − intended (free of coordinated omission), service time = recv − sent."""
    rows = series.latency_rows(_df(spark, ONE_STREAM), _clocks(2)).orderBy("intended_ns")
    got = [(r["latency"], r["service_time"]) for r in rows.collect()]
    assert got == [((r - i) * US, (r - s) * US) for i, s, r in zip(INTENDED, SENT, RECV,
                                                                    strict=True)]
    assert got[2] == (70 * US, 60 * US)


def test_overheads_and_throughput_over_two_messages(spark):
    """M = 2: SO_n = (O_n − O_{n−2}) / 2, ST_n = 1 / SO_n, undefined for the first two."""
    spans = _spans(spark, ONE_STREAM, window=2)
    sender_spans = [None, None, 30, 50, 70, 90]  # O_n − O_{n−2}, µs
    receiver_spans = [None, None, 40, 35, 110, 120]  # R_n − R_{n−2}
    for side, expected in ((series.SENDER, sender_spans), (series.RECEIVER, receiver_spans)):
        assert [span for span, _ in spans[side]] == [None if e is None else e * US
                                                     for e in expected]
        # ST_n in milli-msg/s: 2 messages / span
        assert [value for _, value in spans[side]] == [
            None if e is None else round(2 / (e * 1e-6) * series.MILLI) for e in expected]
    # SO_4 = 35 µs/message, ST_4 = 28,571.4 msg/s; RO_3 = 17.5 µs, RT_3 = 57,142.9 msg/s
    assert spans[series.SENDER][4][1] == 28_571_429
    assert spans[series.RECEIVER][3][1] == 57_142_857


def test_a_window_spanning_no_time_has_no_throughput(spark):
    """RECV[2] = RECV[3] (one batch, one timestamp): RO = 0, RT undefined."""
    spans = _spans(spark, ONE_STREAM, window=1)
    assert spans[series.RECEIVER][3] == (0, None)
    assert spans[series.RECEIVER][2] == (35 * US, round(1 / 35e-6 * series.MILLI))


def test_overhead_identity_on_one_stream(spark):
    """One producer → one consumer, FIFO, nothing lost, window M. With S_n = R_n − O_n the
    service time of the n-th message:

        M·(RO_n − SO_n) = (R_n − R_{n−M}) − (O_n − O_{n−M})
                        = (R_n − O_n) − (R_{n−M} − O_{n−M}) = S_n − S_{n−M}

    exactly, in integer ns. The issue writes it with L_n: the latency measured from the
    timestamps O_n that SO is taken over, here sent_ns, so the service time. The
    coordinated-omission-corrected latency L_n = R_n − I_n obeys the same with the
    schedule's own spacing in place of M·SO_n: M·RO_n − (I_n − I_{n−M}) = L_n − L_{n−M}."""
    rng = np.random.default_rng(8)
    n, m = 500, 10
    intended = np.arange(n) * 50 * US
    sent = np.maximum.accumulate(intended + rng.integers(0, 80 * US, n))
    recv = np.maximum.accumulate(sent + rng.integers(20 * US, 400 * US, n))  # FIFO
    rows = _sent(0, 1, intended, sent) + _received(1, 1, intended, sent, recv)
    spans = _spans(spark, rows, window=m)
    so = np.array([s for s, _ in spans[series.SENDER][m:]])
    ro = np.array([s for s, _ in spans[series.RECEIVER][m:]])
    service, latency = recv - sent, recv - intended
    assert np.array_equal(ro - so, service[m:] - service[:-m])
    assert np.array_equal(ro - (intended[m:] - intended[:-m]), latency[m:] - latency[:-m])


def _streams(spark, rows, starts=None) -> series.Streams:
    return series.Streams.of(series.extents(_df(spark, rows)).toArrow().to_pylist(),
                             starts or {})


def test_density_and_bytes_per_second(spark):
    """Receiver streams (a1, connection 0) at 0, 10, 30 µs and (a1, connection 1) at 5,
    45 µs: intervals 10, 20 and 40 µs, mean 70 / 3."""
    a = _received(1, 1, [0, 0, 0], [0, 0, 0], [0, 10 * US, 30 * US], connection=0, size=300)
    b = _received(1, 1, [0, 0], [0, 0], [5 * US, 45 * US], connection=1, size=100)
    sent = _sent(0, 1, [0, 0, 0], [0, 10 * US, 20 * US], size=64)
    streams = _streams(spark, a + b + sent)
    assert series.density_ns(streams) == pytest.approx(70 / 3 * US)
    # per stream: (n − 1) / span × mean size: 2 / 30 µs × 300 B + 1 / 40 µs × 100 B
    assert series.bytes_per_s(streams, series.RECEIVER) == pytest.approx(2e7 + 2.5e6)
    assert series.bytes_per_s(streams, series.SENDER) == pytest.approx(2 / 20e-6 * 64)
    assert series.density_ns(_streams(spark, sent)) is None


def test_streams_start_at_their_agents_t0(spark):
    streams = _streams(spark, ONE_STREAM, starts={0: -1_000 * US, 1: 7 * US})
    assert streams.origins[series.SENDER, 1] == -1_000 * US
    assert streams.origins[series.RECEIVER, 1 << 32] == 7 * US
    assert streams.origins[series.SCHEDULE, 1] == -1_000 * US  # its producer's clock
    axis = streams.axis(series.RECEIVER, 10)
    assert (axis.low, axis.high) == (43 * US, 203 * US)
    # without every agent's t0, one clock from the earliest timestamp
    fallback = _streams(spark, ONE_STREAM, starts={0: 5})
    assert set(fallback.origins.values()) == {0}


def test_throughput_aggregates_by_hand(spark):
    """M = 1, sends 1 ms, 0.5 ms, 0.25 ms, 1 ms apart: ST = 1000, 2000, 4000, 1000 msg/s;
    lower median 1000, mean 2000, robust deviation (0 + 0 + 1000 + 3000) / 4 = 1000."""
    sent = np.cumsum([0, 1000, 500, 250, 1000]) * US
    df = _df(spark, _sent(0, 1, sent, sent))
    (result,) = series.throughput(series.stream_rows(df),
                                  [_streams(spark, _sent(0, 1, sent, sent))], window=1)
    figures = summarize.metric_summary(result["sender"].counts, series.MILLI)
    assert figures.count == 4
    assert figures.lower_median == 1000 and figures.mean == 2000
    assert figures.robust_deviation == 1000
    assert figures.max == 4000 and figures.p50 == pytest.approx(1000, rel=1e-3)
    assert result["sender"].zero_span == 0 and "receiver" not in result


def test_throughput_curves_add_up_the_streams(spark):
    """Two producers at 1M and 0.5M msg/s for 2 ms; a consumer receives both (one stream
    at 1.5M msg/s). Every curve point sums the streams."""
    fast = np.arange(2000) * US
    slow = np.arange(0, 2000, 2) * US
    rows = _sent(0, 1, fast, fast) + _sent(0, 2, slow, slow)
    merged = np.sort(np.concatenate([fast, slow])) + 5 * US
    rows += _received(1, 1, merged, merged, merged)
    (result,) = series.throughput(series.stream_rows(_df(spark, rows)),
                                  [_streams(spark, rows)], window=100)
    sender, receiver = result["sender"], result["receiver"]
    assert 1 < len(sender.t_s) <= series.MAX_POINTS
    assert sender.t_s == sorted(sender.t_s) and all(0 <= t < 2.1e-3 for t in sender.t_s)
    # bucket 0 holds no full window of the slow stream yet; the others hold both
    assert sender.msg_s[1:] == pytest.approx([1.5e6] * (len(sender.msg_s) - 1), rel=1e-6)
    # receipts come in pairs every 2 µs, so 100 of them span 66 µs or 67: ±1 %
    assert receiver.msg_s == pytest.approx([1.5e6] * len(receiver.msg_s), rel=0.011)
    assert summarize.metric_summary(sender.counts, series.MILLI).count == 1900 + 900


def test_window_pass_spills_to_disk_alike(spark, monkeypatch):
    """A stream past the spill threshold (after 4,096 rows in memory, every 2,000 rows
    here: a few spill files, each read back through its own buffer) gives the same
    figures, and the session's own setting is back afterwards."""
    sent = np.cumsum(np.random.default_rng(3).integers(1, 50, 12_000)) * US
    rows = _sent(0, 1, sent, sent)
    streams = _streams(spark, rows)

    def figures() -> tuple:
        (result,) = series.throughput(series.stream_rows(_df(spark, rows)), [streams],
                                      window=100)
        side = result["sender"]
        return summarize.metric_summary(side.counts, series.MILLI), side.t_s, side.msg_s

    in_memory = figures()
    before = spark.conf.get(series.WINDOW_SPILL_CONF)
    monkeypatch.setattr(series, "WINDOW_SPILL_ROWS", 2000)
    assert figures() == in_memory
    assert spark.conf.get(series.WINDOW_SPILL_CONF) == before


def test_latency_curve_buckets(spark):
    """Buckets of intended time; n counts the messages before each bucket."""
    rows = ONE_STREAM
    df = _df(spark, rows)
    streams = _streams(spark, rows)
    curve = series.latency_curve(series.latency_rows(df, _clocks(2)),
                                 [(streams, series.Axis(0, 60 * US - 1, 3))]).toArrow()
    got = series.latency_json(curve)["latency"]
    latency = [r - i for i, r in zip(INTENDED, RECV, strict=True)]  # 50 45 70 60 160 160
    assert got["n"] == [0, 2, 4]
    assert got["min_us"] == [45, 60, 160] and got["max_us"] == [50, 70, 160]
    assert got["mean_us"] == [np.mean(latency[k:k + 2]) for k in (0, 2, 4)]
    assert series.latency_json(None)["service_time"]["n"] == []


def test_exact_lower_median_through_spark(spark):
    """20,000–20,015 ns share one HDR bucket: the median pass finds the sample."""
    values = [20_000, 20_003, 20_009, 20_015, 90_000, 7, 900_000_000]
    table = spark.createDataFrame([(0, "a", "latency", v) for v in values[:5]]
                                  + [(0, "a", "send_lag", v) for v in values[5:]],
                                  "run_index int, agent_id string, metric string, value long")
    merged, _ = summarize.gather(frames.bucket_counts(table, ("agent_id", "metric")).toArrow())
    (exact,) = series.with_median_detail(table, [merged])
    latency = summarize.metric_summary(exact["latency"])
    assert latency.lower_median == 20.009
    assert latency.robust_deviation == pytest.approx((9 + 6 + 0 + 6 + 69_991) / 5 / 1000)
    assert exact["send_lag"].detail.values.tolist() == [7]
    assert exact["service_time"].detail is None and exact["service_time"].count == 0


def test_median_detail_skips_wide_buckets(spark):
    table = spark.createDataFrame([(0, "latency", 5_000_000_000)],
                                  "run_index int, metric string, value long")
    assert series.median_detail(table, {(0, "latency"): (4_999_000_000, 5_002_000_000)}) == {}
    got = series.median_detail(table, {(0, "latency"): (4_999_999_990, 5_000_000_010)})
    assert got[0, "latency"].values.tolist() == [5_000_000_000]


def test_per_message_of_one_stream(spark):
    manifest = Manifest.model_validate({"agents": [{"id": "a0", "role": "producer", "t0_ns": 0},
                                                   {"id": "a1", "role": "consumer", "t0_ns": 0}]})
    result = series.per_message(_df(spark, ONE_STREAM), _clocks(2), manifest, window=2)
    assert result.window == 2
    assert result.latency["latency"]["n"] == list(range(6))
    assert result.density_ns == pytest.approx((210 - 50) / 5 * US)
    assert result.throughput["receiver"].zero_span == 0  # RECV[3] − RECV[1] = 35 µs
    assert series.notes(result) == []
    humps = series.Humps(2, (50_000.0, 2_000_123.0))
    fields = series.summary_fields(result, humps)
    assert fields["humps"].as_json() == {"count": 2, "modes_us": [50.0, 2000.0]}
    assert series.humps_warnings(humps) == ["latency is multi-modal: modes at 50, 2,000 µs"]
    assert fields["throughput"].sender_msg_s.count == 4
    assert set(fields["throughput"].bytes_per_s.as_json()) == {"sender", "receiver"}


def test_empty_run_has_empty_series(spark):
    result = series.per_message(_df(spark, []), _clocks(0), Manifest())
    assert result.throughput == {} and result.density_ns is None
    fields = series.summary_fields(result, series.Humps(0, ()))
    assert fields["throughput"].receiver_msg_s.count == 0
    empty = pa.table({"bucket": pa.array([], pa.int32())})
    assert summarize.counts_by(empty, "bucket") == {}


def _plain(result: series.PerMessage) -> tuple:
    """A PerMessage as plain values (its histograms are numpy arrays)."""
    flows = {side: (flow.t_s, flow.msg_s, flow.zero_span, flow.counts.counts.tolist(),
                    flow.counts.total, flow.counts.max)
             for side, flow in result.throughput.items()}
    return (result.window, result.latency, flows, result.density_ns, result.bytes_per_s)


def test_runs_with_other_windows_get_their_own_series(spark):
    """Runs analysed together (run_index 0 and 1) with different windows M take a window
    pass each, and each run's series is what it gets analysed alone; a run with nothing
    timed beside them keeps empty series."""
    manifest = Manifest.model_validate({"agents": [{"id": "a0", "role": "producer", "t0_ns": 0},
                                                   {"id": "a1", "role": "consumer", "t0_ns": 0}]})
    one = _df(spark, ONE_STREAM)
    both = one.unionByName(one.withColumn(frames.RUN, F.lit(1))).unionByName(
        _df(spark, _sent(0, 1, INTENDED, SENT)).withColumn(frames.RUN, F.lit(2)))
    clocks = frames.RunClocks.of_runs([manifest] * 3)
    together = series.per_message_of_runs(both, clocks, [manifest] * 3, [2, 3, 2],
                                          [OPEN_LOOP] * 3)
    alone = [series.per_message(one, _clocks(2), manifest, window=window) for window in (2, 3)]
    assert [_plain(result) for result in together[:2]] == [_plain(result) for result in alone]
    assert _plain(together[0]) != _plain(together[1])  # other windows, other throughputs
    assert together[2].latency["latency"]["n"] == [] and "receiver" not in together[2].throughput
