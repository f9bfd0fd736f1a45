"""The per-message series of a run (spark_jobs.series) as the per-agent passes compute them
(spark_jobs.agent_pass, merged by spark_jobs.run_merge, in this process: no Spark), on tiny
hand-made runs written as real record files (tests/analysis_rows): per-message latency and
service time, sender and receiver overheads and throughput over windows of M messages
(windows spanning no time), the overhead identity on one stream, density and bytes/s,
stream clocks from the agents' t0s, the throughput aggregates and curves, the latency
curve, exact medians (and the buckets too wide for them), a run's whole series, an empty
run's, and runs with other windows analysed together."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from sixnines.formats.vocabulary import Load
from sixnines.spark_jobs import (
    agent_pass,
    agent_rows,
    histograms,
    run_merge,
    series,
    series_pass,
    summarize,
)
from sixnines.spark_jobs.distribution import HumpsFound, bucket_range, median_bucket
from tests.analysis_rows import figures, write_run

US = 1_000  # ns


def _ints(*columns) -> list[tuple[int, ...]]:
    return [tuple(int(v) for v in row) for row in zip(*columns, strict=True)]


def _sent(agent_index: int, producer: int, intended, sent, size: int = 100) -> list[tuple]:
    """Rows of producer agent a<agent_index> (its manifest position when the run's agents
    are the rows', sorted by id)."""
    return [(f"a{agent_index}", "producer", producer, seq, i, s, None, None, False, None, size)
            for seq, (i, s) in enumerate(_ints(intended, sent))]


def _received(agent_index: int, producer: int, intended, sent, recv, connection: int = 0,
              size: int = 100) -> list[tuple]:
    return [(f"a{agent_index}", "consumer", producer, seq, i, s, r, seq, False, connection,
             size)
            for seq, (i, s, r) in enumerate(_ints(intended, sent, recv))]


def _agents(t0_producer: int | None = 0, t0_consumer: int | None = 0) -> list[dict]:
    """Manifest entries of a0 (producer) and a1 (consumer) with their t0s."""
    return [{"id": "a0", "role": "producer", "t0_ns": t0_producer},
            {"id": "a1", "role": "consumer", "t0_ns": t0_consumer}]


def _rows_of(run: run_merge.AnalysedRun, role: str
             ) -> tuple[agent_rows.AgentFiles, agent_rows.Rows]:
    """The run's one agent of this role and its rows, as a pass reads them."""
    (agent,) = [agent for agent in run_merge.agent_files([run]) if agent.role == role]
    return agent, agent_rows.read_rows(agent)


def _spans(run: run_merge.AnalysedRun, window: int) -> dict[int, list]:
    """Per side, (span, value) of every message of its one stream in time order: (None,
    None) for the first M, (span, None) where the window is undefined."""
    out: dict[int, list] = {}
    for agent in run_merge.agent_files([run]):
        rows = agent_rows.read_rows(agent)
        for side in (series.SENDER, series.RECEIVER):
            streams = series_pass.stream_windows(rows, side, agent.agent_index, window)
            if not streams:
                continue
            (mine,) = streams
            out[side] = [(None, None)] * (mine.rows - len(mine.span)) + [
                (float(span), int(value) if span > 0 else None)
                for span, value in zip(mine.span, mine.value, strict=True)]
    return out


# A producer sending 6 messages and a consumer receiving them, times in µs
INTENDED = [0, 10, 20, 30, 40, 50]
SENT = [0, 10, 30, 60, 100, 150]
RECV = [50, 55, 90, 90, 200, 210]
ONE_STREAM = (_sent(0, 1, [t * US for t in INTENDED], [t * US for t in SENT])
              + _received(1, 1, [t * US for t in INTENDED], [t * US for t in SENT],
                          [t * US for t in RECV]))


def test_latency_per_message(tmp_path):
    """L_n = recv − intended (free of coordinated omission), service time = recv − sent."""
    _, rows = _rows_of(write_run(tmp_path, ONE_STREAM), "consumer")
    values = histograms.metric_values(rows, Load.OPEN_LOOP, rows.measured)
    order = np.argsort(rows.intended[rows.timed], kind="stable")
    got = list(zip(values["latency"][order].tolist(), values["service_time"][order].tolist(),
                   strict=True))
    assert got == [((r - i) * US, (r - s) * US) for i, s, r in zip(INTENDED, SENT, RECV,
                                                                    strict=True)]
    assert got[2] == (70 * US, 60 * US)


def test_overheads_and_throughput_over_two_messages(tmp_path):
    """M = 2: SO_n = (O_n − O_{n−2}) / 2, ST_n = 1 / SO_n, undefined for the first two. The
    receiver read messages 2 and 3 at once (90 µs, 35 µs after the read before): they are
    taken at 72.5 and 90 µs."""
    spans = _spans(write_run(tmp_path, ONE_STREAM, window=2), window=2)
    sender_spans = [None, None, 30, 50, 70, 90]  # O_n − O_{n−2}, µs
    receiver_spans = [None, None, 22.5, 35, 127.5, 120]  # t_n − t_{n−2}
    for side, expected in ((series.SENDER, sender_spans), (series.RECEIVER, receiver_spans)):
        assert [span for span, _ in spans[side]] == [None if e is None else e * US
                                                     for e in expected]
        # ST_n in milli-msg/s: 2 messages / span
        assert [value for _, value in spans[side]] == [
            None if e is None else round(2 / (e * 1e-6) * series.MILLI) for e in expected]
    # SO_4 = 35 µs/message, ST_4 = 28,571.4 msg/s; RO_3 = 17.5 µs, RT_3 = 57,142.9 msg/s
    assert spans[series.SENDER][4][1] == 28_571_429
    assert spans[series.RECEIVER][3][1] == 57_142_857


def test_a_read_of_several_messages_spreads_them_since_the_read_before(tmp_path):
    """M = 1. RECV[2] = RECV[3] (one read of two messages, 35 µs after the read before):
    17.5 µs each, not 35 and 0. A stream's first read has no time before it: the windows
    with its messages but its last in them are undefined (counted)."""
    spans = _spans(write_run(tmp_path, ONE_STREAM, window=1), window=1)
    each = (17.5 * US, round(1 / 17.5e-6 * series.MILLI))
    assert spans[series.RECEIVER][2] == spans[series.RECEIVER][3] == each
    at_once = [t * US for t in (50, 50, 90, 90)]  # a first read of two, then one of two
    rows = (_sent(0, 1, at_once, at_once) + _received(1, 1, at_once, at_once, at_once))
    found = _spans(write_run(tmp_path / "first", rows, window=1), window=1)
    first, *rest = found[series.RECEIVER][1:]
    assert np.isnan(first[0]) and first[1] is None
    assert rest == [(20 * US, 50_000_000), (20 * US, 50_000_000)]
    assert found[series.SENDER][2:] == rest  # a batch sent at once likewise


@pytest.mark.parametrize("window", [1, 3, 5, 7, 100])
def test_a_known_rate_is_found_at_any_window_on_both_sides(tmp_path, window):
    """A sender stamping each of its messages, 20 µs apart (50,000 msg/s), and a receiver
    reading them five at a time, every 100 µs, one timestamp per read: every window of
    either side, whatever its M, gives 50,000 msg/s."""
    sent = np.arange(1000) * 20 * US
    recv = (np.arange(1000) // 5 + 1) * 100 * US + 7 * US
    per_message = _per_message(tmp_path, _sent(0, 1, sent, sent)
                               + _received(1, 1, sent, sent, recv), window=window)
    for side in ("sender", "receiver"):
        found = per_message.throughput[side]
        counts = summarize.metric_summary(found.counts, series.MILLI)
        # the receiver's first read has no time before it: 4 of its 5 messages have none
        undefined = 4 if side == "receiver" else 0
        assert found.zero_span == undefined
        assert counts.count == 1000 - window - undefined
        assert counts.max == pytest.approx(50_000, rel=1e-3)
        assert counts.lower_median == pytest.approx(50_000, rel=1e-3)
        assert found.msg_s == pytest.approx([50_000] * len(found.msg_s), rel=1e-6)


def test_overhead_identity_on_one_stream(tmp_path):
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
    # one message per timestamp (a read of several spreads them: series), FIFO
    sent = np.maximum.accumulate(intended + rng.integers(0, 80 * US, n)) + np.arange(n)
    recv = np.maximum.accumulate(sent + rng.integers(20 * US, 400 * US, n)) + np.arange(n)
    rows = _sent(0, 1, intended, sent) + _received(1, 1, intended, sent, recv)
    spans = _spans(write_run(tmp_path, rows, window=m), window=m)
    so = np.array([s for s, _ in spans[series.SENDER][m:]])
    ro = np.array([s for s, _ in spans[series.RECEIVER][m:]])
    service, latency = recv - sent, recv - intended
    assert np.array_equal(ro - so, service[m:] - service[:-m])
    assert np.array_equal(ro - (intended[m:] - intended[:-m]), latency[m:] - latency[:-m])


def _per_message(folder: Path, rows, **run) -> series.PerMessage:
    """One run's series, analysed alone."""
    (found,) = figures(write_run(folder, rows, **run))
    return found.per_message


def _streams(run: run_merge.AnalysedRun) -> series.Streams:
    """The run's streams as the driver places them: round one's merged extents, the
    agents' t0s from the manifest."""
    merged = run_merge.merge_first([agent_pass.first_pass(agent)
                                    for agent in run_merge.agent_files([run])])
    return run_merge.axes(run, merged.extents).streams


def test_density_and_bytes_per_second(tmp_path):
    """Receiver streams (a1, connection 0) at 0, 10, 30 µs and (a1, connection 1) at 5,
    45 µs: intervals 10, 20 and 40 µs, mean 70 / 3."""
    a = _received(1, 1, [0, 0, 0], [0, 0, 0], [0, 10 * US, 30 * US], connection=0, size=300)
    b = _received(1, 1, [0, 0], [0, 0], [5 * US, 45 * US], connection=1, size=100)
    sent = _sent(0, 1, [0, 0, 0], [0, 10 * US, 20 * US], size=64)
    result = _per_message(tmp_path / "all", a + b + sent)
    assert result.density_ns == pytest.approx(70 / 3 * US)
    # per stream: (n − 1) / span × mean size: 2 / 30 µs × 300 B + 1 / 40 µs × 100 B
    assert result.bytes_per_s["receiver"] == pytest.approx(2e7 + 2.5e6)
    assert result.bytes_per_s["sender"] == pytest.approx(2 / 20e-6 * 64)
    assert _per_message(tmp_path / "sent", sent).density_ns is None


def test_streams_start_at_their_agents_t0(tmp_path):
    streams = _streams(write_run(tmp_path / "t0s", ONE_STREAM,
                                 agents=_agents(-1_000 * US, 7 * US)))
    assert streams.origins[series.SENDER, 1] == -1_000 * US
    assert streams.origins[series.RECEIVER, 1 << 32] == 7 * US
    assert streams.origins[series.SCHEDULE, 1] == -1_000 * US  # its producer's clock
    axis = streams.axis(series.RECEIVER, 10)
    assert (axis.low, axis.high) == (43 * US, 203 * US)
    # without every agent's t0, one clock from the earliest timestamp
    fallback = _streams(write_run(tmp_path / "one_t0", ONE_STREAM, agents=_agents(5, None)))
    assert set(fallback.origins.values()) == {0}


def test_throughput_aggregates_by_hand(tmp_path):
    """M = 1, sends 1 ms, 0.5 ms, 0.25 ms, 1 ms apart: ST = 1000, 2000, 4000, 1000 msg/s;
    lower median 1000, mean 2000, robust deviation (0 + 0 + 1000 + 3000) / 4 = 1000."""
    sent = np.cumsum([0, 1000, 500, 250, 1000]) * US
    result = _per_message(tmp_path, _sent(0, 1, sent, sent), window=1).throughput
    found = summarize.metric_summary(result["sender"].counts, series.MILLI)
    assert found.count == 4
    assert found.lower_median == 1000 and found.mean == 2000
    assert found.robust_deviation == 1000
    assert found.max == 4000 and found.p50 == pytest.approx(1000, rel=1e-3)
    assert result["sender"].zero_span == 0 and "receiver" not in result


def test_throughput_curves_add_up_the_streams(tmp_path):
    """Two producers at 1M and 0.5M msg/s for 2 ms; a consumer receives both (one stream
    at 1.5M msg/s). Every curve point sums the streams."""
    fast = np.arange(2000) * US
    slow = np.arange(0, 2000, 2) * US
    rows = _sent(0, 1, fast, fast) + _sent(0, 2, slow, slow)
    merged = np.sort(np.concatenate([fast, slow])) + 5 * US
    rows += _received(1, 1, merged, merged, merged)
    result = _per_message(tmp_path, rows, window=100).throughput
    sender, receiver = result["sender"], result["receiver"]
    assert 1 < len(sender.t_s) <= series.MAX_POINTS
    assert sender.t_s == sorted(sender.t_s) and all(0 <= t < 2.1e-3 for t in sender.t_s)
    # bucket 0 holds no full window of the slow stream yet; the others hold both
    assert sender.msg_s[1:] == pytest.approx([1.5e6] * (len(sender.msg_s) - 1), rel=1e-6)
    # receipts come in pairs every 2 µs, so 100 of them span 66 µs or 67: ±1 %
    assert receiver.msg_s == pytest.approx([1.5e6] * len(receiver.msg_s), rel=0.011)
    assert summarize.metric_summary(sender.counts, series.MILLI).count == 1900 + 900


def test_latency_curve_buckets(tmp_path):
    """Buckets of intended time; n counts the messages before each bucket."""
    run = write_run(tmp_path, ONE_STREAM)
    axis = series.TimeBins(0, 60 * US - 1, 3)
    origin = _streams(run).origins[series.SCHEDULE, 1]
    _, rows = _rows_of(run, "consumer")
    curve = series_pass.latency_curve(rows, {1: (origin, axis.low, axis.width_ns, axis.bins)})
    table = pa.table({"bucket": curve.bucket, "count": curve.count, **curve.figures})
    got = series.latency_json(table)["latency"]
    latency = [r - i for i, r in zip(INTENDED, RECV, strict=True)]  # 50 45 70 60 160 160
    assert got["n"] == [0, 2, 4]
    assert got["min_us"] == [45, 60, 160] and got["max_us"] == [50, 70, 160]
    assert got["mean_us"] == [np.mean(latency[k:k + 2]) for k in (0, 2, 4)]
    assert series.latency_json(None)["service_time"]["n"] == []


def test_a_planned_run_s_curves_are_on_its_schedule(tmp_path):
    """With a duration, a rate and every t0, the axes are the plan's: the latency curve's
    buckets are equal stretches of the measured schedule, the throughput curves' of the
    measured stretch and the drain, at least a planned stream's window each."""
    sent = np.arange(0, 2000, 2) * US  # 500k msg/s for 2 ms after a 1 ms warm-up
    rows = (_sent(0, 1, sent + 1000 * US, sent + 1000 * US)
            + _received(1, 1, sent + 1000 * US, sent + 1000 * US, sent + 1005 * US))
    agents = [{"id": "a0", "role": "producer", "t0_ns": 0, "first_id": 1},
              {"id": "a1", "role": "consumer", "t0_ns": 0}]
    workload = {"warmup_ns": 1000 * US, "duration_ns": 2000 * US, "drain_ns": 1000 * US,
                "rate": 500_000}
    run = write_run(tmp_path, rows, agents=agents, window=100, workload=workload)
    found = run_merge.axes(run, run_merge.merge_first(
        [agent_pass.first_pass(agent) for agent in run_merge.agent_files([run])]).extents)
    assert found.schedule == series.TimeBins(1000 * US, 3000 * US - 1, series.MAX_POINTS)
    # 1,000 messages a stream over 2 ms, 1,500 over 3 ms with the drain: 15 windows
    assert found.throughput[series.SENDER] == series.TimeBins(1000 * US, 4000 * US - 1, 15)
    throughput = figures(run)[0].per_message.throughput
    assert throughput["sender"].t_s == pytest.approx([(1.1 + 0.2 * k) * 1e-3
                                                      for k in range(1, 10)])
    assert throughput["sender"].msg_s == pytest.approx([500_000] * 9)
    # without a rate (rate max), the observed extents
    observed = write_run(tmp_path / "max", rows, agents=agents, window=100,
                         workload={**workload, "rate": "max"})
    assert run_merge.planned(observed.manifest) is None


def test_exact_lower_median(tmp_path):
    """20,000–20,015 ns share one HDR bucket: the median pass finds the sample."""
    values = [20_000, 20_003, 20_009, 20_015, 90_000, 7, 900_000_000]
    latency = values[:5]  # received from producer 2 (sent at their intended 0)
    send_lag = values[5:]  # sent by producer 1, intended at 0
    rows = (_sent(0, 1, [0] * len(send_lag), send_lag)
            + _received(1, 2, [0] * len(latency), [0] * len(latency), latency))
    (found,) = figures(write_run(tmp_path, rows))
    exact = found.metrics
    summary = summarize.metric_summary(exact["latency"])
    assert summary.lower_median == 20.009
    assert summary.robust_deviation == pytest.approx((9 + 6 + 0 + 6 + 69_991) / 5 / 1000)
    assert exact["send_lag"].detail.values.tolist() == [7]
    # a metric without values (an open-loop run's saturation latency) gets no detail
    assert exact["saturation_latency"].detail is None
    assert exact["saturation_latency"].count == 0


def test_median_detail_skips_wide_buckets(tmp_path):
    """A median bucket wider than DETAIL_MAX_WIDTH (5 s: millions of ns) is not counted
    value by value; a narrow range around the same value is."""
    run = write_run(tmp_path, _received(1, 1, [0], [0], [5_000_000_000]))
    (found,) = figures(run)
    latency = found.metrics["latency"]
    low, high = bucket_range(median_bucket(latency.counts)[0])
    assert low <= 5_000_000_000 <= high and high - low >= run_merge.DETAIL_MAX_WIDTH
    assert latency.count == 1 and latency.detail is None
    assert "latency" not in run_merge.medians(found.metrics)
    _, rows = _rows_of(run, "consumer")
    got = histograms.median_detail(rows, Load.OPEN_LOOP,
                                   {"latency": (4_999_999_990, 5_000_000_010)})
    values, counts = got["latency"]
    assert values.tolist() == [5_000_000_000] and counts.tolist() == [1]


def test_per_message_of_one_stream(tmp_path):
    result = _per_message(tmp_path, ONE_STREAM, agents=_agents(), window=2)
    assert result.window == 2
    assert result.latency["latency"]["n"] == list(range(6))
    assert result.density_ns == pytest.approx((210 - 50) / 5 * US)
    assert result.throughput["receiver"].zero_span == 0  # RECV[3] − RECV[1] = 35 µs
    assert series.notes(result) == []
    humps = HumpsFound(2, (50_000.0, 2_000_123.0))
    fields = series.summary_fields(result, humps)
    assert fields["humps"].as_json() == {"count": 2, "modes_us": [50.0, 2000.0]}
    assert series.humps_warnings(humps) == ["latency is multi-modal: modes at 50, 2,000 µs"]
    assert fields["throughput"].sender_msg_s.count == 4
    assert set(fields["throughput"].bytes_per_s.as_json()) == {"sender", "receiver"}


def test_empty_run_has_empty_series(tmp_path):
    result = _per_message(tmp_path, [])
    assert result.throughput == {} and result.density_ns is None
    fields = series.summary_fields(result, HumpsFound(0, ()))
    assert fields["throughput"].receiver_msg_s.count == 0


def _plain(result: series.PerMessage) -> tuple:
    """A PerMessage as plain values (its histograms are numpy arrays)."""
    flows = {side: (flow.t_s, flow.msg_s, flow.zero_span, flow.counts.counts.tolist(),
                    flow.counts.total, flow.counts.max)
             for side, flow in result.throughput.items()}
    return (result.window, result.latency, flows, result.density_ns, result.bytes_per_s)


def test_runs_with_other_windows_get_their_own_series(tmp_path):
    """Runs analysed together (run_index 0 and 1) with different windows M take a window
    pass each, and each run's series is what it gets analysed alone; a run with nothing
    timed beside them keeps empty series."""
    def run(name: str, rows, window: int) -> run_merge.AnalysedRun:
        return write_run(tmp_path / name, rows, agents=_agents(), window=window)

    together = [found.per_message for found in figures(
        run("m2", ONE_STREAM, 2), run("m3", ONE_STREAM, 3),
        run("sent", _sent(0, 1, INTENDED, SENT), 2))]
    alone = [_per_message(tmp_path / f"alone{window}", ONE_STREAM, agents=_agents(),
                          window=window) for window in (2, 3)]
    assert [_plain(result) for result in together[:2]] == [_plain(result) for result in alone]
    assert _plain(together[0]) != _plain(together[1])  # other windows, other throughputs
    assert together[2].latency["latency"]["n"] == [] and "receiver" not in together[2].throughput


def test_a_stream_shorter_than_its_window_has_no_throughput(tmp_path):
    """Six messages, M = 10: no window ends anywhere, on either side."""
    result = figures(write_run(tmp_path, ONE_STREAM, agents=_agents(), window=10))[0]
    for side in ("sender", "receiver"):
        flow = result.per_message.throughput[side]
        assert (flow.counts.count, flow.t_s, flow.zero_span) == (0, [], 0)
