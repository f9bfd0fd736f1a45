"""spark_jobs.frames on tiny DataFrames: bucket math, metrics, accounting, rates."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from sixnines.formats import hdr
from sixnines.formats.manifest import Manifest
from sixnines.spark_jobs import delivery, frames

pytestmark = pytest.mark.integration

F = pytest.importorskip("pyspark.sql.functions")


def _edge_values() -> np.ndarray:
    values = {0, 1, 2, 1023, 1024, 2047, 2048, 2049, 4095, 4096, int(3.6e12), hdr.HIGHEST}
    for k in range(1, 42):
        values |= {2**k - 1, 2**k, 2**k + 1}
    return np.array(sorted(v for v in values if v <= hdr.HIGHEST), dtype=np.int64)


def _spark_buckets(spark, values: np.ndarray) -> np.ndarray:
    df = spark.createDataFrame(pa.table({"value": values}).to_pandas())
    out = df.select(frames.bucket_index(F.col("value")).alias("b")).toArrow()
    return out.column("b").to_numpy()


def test_bucket_index_edges(spark):
    values = _edge_values()
    assert np.array_equal(_spark_buckets(spark, values), hdr.bucket_indices(values))


def test_bucket_index_random(spark):
    rng = np.random.default_rng(7)
    values = np.concatenate([
        rng.integers(0, hdr.HIGHEST + 1, 50_000),
        (2.0 ** rng.uniform(0, np.log2(hdr.HIGHEST), 50_000)).astype(np.int64),
    ])
    assert np.array_equal(_spark_buckets(spark, values), hdr.bucket_indices(values))


def test_bucket_index_clips(spark):
    got = _spark_buckets(spark, np.array([-5, hdr.HIGHEST + 10**9], dtype=np.int64))
    assert list(got) == list(hdr.bucket_indices(np.array([0, hdr.HIGHEST])))


def test_bit_length_exact(spark):
    values = np.array([1, 2, 3] + [2**k + d for k in range(2, 53) for d in (-1, 0, 1)])
    df = spark.createDataFrame(pa.table({"v": values}).to_pandas())
    got = df.select(frames.bit_length(F.col("v")).alias("n")).toArrow().column("n").to_numpy()
    assert list(got) == [int(v).bit_length() for v in values]


def _frame(spark, rows):
    schema = ("agent_id string, role string, producer_id int, seq long, intended_ns long, "
              "sent_ns long, recv_ns long, rx_index long, warmup boolean")
    indices = {agent: i for i, agent in enumerate(sorted({row[0] for row in rows}))}
    index = F.create_map(*[F.lit(x) for pair in indices.items() for x in pair])
    df = spark.createDataFrame(rows, schema).withColumn("agent_index", index[F.col("agent_id")])
    # one connection per consumer agent; a requester's replies carry its own id
    consumer_id = (F.when(F.col("role") == "consumer", F.col("agent_index"))
                   .when(F.col("recv_ns").isNotNull(), F.col("producer_id")))
    return df.withColumn("consumer_id", consumer_id.cast("int")).withColumn(
        frames.RUN, F.lit(0))


def _tiny(spark):
    return _frame(spark, _tiny_rows())


def _tiny_rows() -> list[tuple]:
    """1 producer (id 1, seqs 0..4, seq 0 warm-up), 2 consumers, hand-picked mishaps."""
    rows = [("p", "producer", 1, s, 100 * s, 100 * s + 5, None, None, s == 0) for s in range(5)]
    # consumer a: seq 0 (warm-up), 1, 3, 2, 2 (dup, reordered), 4, plus unexpected (7, 1)
    for i, s in enumerate([0, 1, 3, 2, 2, 4]):
        rows.append(("a", "consumer", 1, s, 100 * s, 100 * s + 5, 100 * s + 50, i, s == 0))
    rows.append(("a", "consumer", 7, 1, 100, 105, 160, 6, False))
    # consumer b: seq 1, 2, 2 (dup, in order), 4; seq 3 lost
    for i, s in enumerate([1, 2, 2, 4]):
        rows.append(("b", "consumer", 1, s, 100 * s, 100 * s + 5, 100 * s + 20, i, False))
    return rows


def test_accounting_fan_out(spark):
    got = delivery.accounting(_tiny(spark)).first().asDict()
    assert got == {
        "sent": 4,
        "requests": 0,
        "received": 6 + 4,  # a: 1,3,2,2,4,(7,1); b: 1,2,2,4
        "delivered": 4 + 3,  # a: 1,2,3,4; b: 1,2,4
        "lost": 1,  # b misses seq 3
        "unknown": 0,
        "duplicated": 2,  # a: 2; b: 2
        "reordered": 2,  # a: 2 after 3, twice
        "unexpected": 1,
        "warmup_sent": 1,
        "warmup_received": 1,
    }
    # a third consumer that received nothing loses every message
    assert delivery.accounting(_tiny(spark), consumers=3).first()["lost"] == 1 + 4
    # a third consumer that left no data: its deliveries are unknown, not lost
    third_died = delivery.accounting(_tiny(spark), consumers=2, absent=1).first()
    assert (third_died["lost"], third_died["unknown"]) == (1, 4)


def test_a_dead_consumer_s_misses_are_lost_before_its_horizon_unknown_after(spark):
    # consumer c died having kept only seq 2 (recv − sent 15): its horizon with producer 1
    # is 220 − 15 = 205; seq 1 (sent 105) would have needed 115 to come after: lost;
    # seqs 3 and 4 (sent 305, 405) may have come after its last chunk: unknown
    c = ("c", "consumer", 1, 2, 200, 205, 220, 0, False)
    df = _frame(spark, [*_tiny_rows(), c])
    got = delivery.accounting(df, consumers=3, dead=delivery.Dead((delivery.Watched(2, 1),)))
    assert (got.first()["lost"], got.first()["unknown"]) == (1 + 1, 2)  # b's seq 3, c's 1


def test_a_dead_consumer_of_a_reordering_system_loses_only_what_no_lateness_explains(spark):
    # seqs 0..5 sent at 100·seq; c got 1 late (latency 300), 2 and 5 (latency 60), then
    # died: horizon 560 − 300 = 260. 3 and 4 may still have come, however far behind 5
    # (a partition lagging): unknown; 0 would have needed a latency over 560: lost
    rows = [("p", "producer", 1, s, 100 * s, 100 * s, None, None, False) for s in range(6)]
    rows += [("c", "consumer", 1, s, 100 * s, 100 * s, 100 * s + late, i, False)
             for i, (s, late) in enumerate([(2, 60), (1, 300), (5, 60)])]
    got = delivery.accounting(_frame(spark, rows), dead=delivery.Dead((delivery.Watched(0, 1),)))
    assert (got.first()["delivered"], got.first()["lost"], got.first()["unknown"]) == (3, 1, 2)


def test_a_dead_consumer_s_lagging_stream_is_unknown_past_its_newest_receipt(spark):
    # producers 1 and 2 send seqs 0..5 at 100·seq; c kept 1's seqs 0..5 and 2's 0..1 (both
    # latency 10: lateness 10), then died at 510. Horizon with 2: min(510 − 10, 100) = 100:
    # 2's stream showed no progress past seq 1, so seqs 2..5 are unknown, not lost, though
    # sent long before c's last receipt (one partition fetched late)
    rows = [("p", "producer", pid, s, 100 * s, 100 * s, None, None, False)
            for pid in (1, 2) for s in range(6)]
    kept = [(1, s) for s in range(6)] + [(2, 0), (2, 1)]
    rows += [("c", "consumer", pid, s, 100 * s, 100 * s, 100 * s + 10, i, False)
             for i, (pid, s) in enumerate(kept)]
    got = delivery.accounting(_frame(spark, rows), dead=delivery.Dead((delivery.Watched(0, 1),)))
    assert (got.first()["delivered"], got.first()["lost"], got.first()["unknown"]) == (8, 0, 4)


def test_a_dead_producer_s_messages_receivers_got_after_its_last_chunk_count_as_sent(spark):
    kept = [row for row in _tiny_rows() if row[1] != "producer" or row[3] < 3]
    got = delivery.accounting(_frame(spark, kept), dead=delivery.Dead(producer_ids=(1,)))
    assert got.first().asDict() == delivery.accounting(_tiny(spark)).first().asDict()
    alive = delivery.accounting(_frame(spark, kept)).first()
    assert (alive["sent"], alive["unexpected"]) == (2, 1 + 3)  # a: 3, 4, (7, 1); b: 4


def _requests(seqs, producer_id: int = 5, agent: str = "r") -> list[tuple]:
    """A requester's request rows (seq 0 warm-up): sent at 10·seq + 1."""
    return [(agent, "requester", producer_id, s, 10 * s, 10 * s + 1, None, None, s == 0)
            for s in seqs]


def _replies(seqs, lateness: int = 6) -> list[tuple]:
    """Requester r's reply rows, in that order: received `lateness` after the send."""
    return [("r", "requester", 5, s, 10 * s, 10 * s + 1, 10 * s + 1 + lateness, i, s == 0)
            for i, s in enumerate(seqs)]


def test_accounting_round_trip(spark):
    """Requests and replies are rows of their own: matched as a sender's and a receiver's,
    so a reply twice is duplicated, one to no request unexpected, one overtaken
    reordered."""
    rows = _requests(range(6)) + _replies([0, 1, 4, 3, 5, 5]) + [
        ("r", "requester", 5, 9, 90, 91, 97, 6, False)]  # to no request sent
    got = delivery.accounting(_frame(spark, rows)).first().asDict()
    assert got == {"sent": 5, "requests": 5, "received": 6, "delivered": 4, "lost": 1,
                   "unknown": 0, "duplicated": 1, "reordered": 1, "unexpected": 1,
                   "warmup_sent": 1, "warmup_received": 1}


def test_a_dead_requester_is_a_dead_consumer_of_its_own_requests(spark):
    # its request chunks reach seq 7, its reply chunks seq 4 (last receipt 47, lateness 6):
    # horizon 41; seq 2 (sent 21) unanswered is lost, 5..7 (sent 51..) unknown
    dead = delivery.Dead((delivery.Watched(0, 1, (5, 6)),), producer_ids=(5,))
    rows = _requests(range(8)) + _replies([0, 1, 3, 4])
    got = delivery.accounting(_frame(spark, rows), dead=dead).first()
    assert (got["sent"], got["delivered"], got["lost"], got["unknown"]) == (7, 3, 1, 3)
    # the reply to seq 4, whose request chunk died with it, counts as sent and delivered
    got = delivery.accounting(_frame(spark, _requests(range(4)) + _replies([0, 1, 3, 4])),
                              dead=dead).first()
    assert (got["sent"], got["delivered"], got["lost"], got["unknown"]) == (4, 3, 1, 0)


def test_a_dead_responder_leaves_requests_after_the_last_one_answered_unknown(spark):
    # replies stop after seq 4 (sent 41, lateness 6): horizon 35; seq 2 (sent 21)
    # unanswered is lost, 5..7 unknown; the last receipt (47) plays no part
    rows = _requests(range(8)) + _replies([0, 1, 3, 4])
    dead = delivery.Dead((delivery.Watched(0, 1, (5, 6), relay_died=True),))
    got = delivery.accounting(_frame(spark, rows), dead=dead).first()
    assert (got["sent"], got["delivered"], got["lost"], got["unknown"]) == (7, 3, 1, 3)
    # another requester's request (id 6) is not this one's to miss: it stays lost here
    other = _frame(spark, rows + _requests([1], producer_id=6, agent="r2"))
    got = delivery.accounting(other, dead=dead).first()
    assert (got["sent"], got["lost"], got["unknown"]) == (8, 2, 3)


def _tiny_clocks(clocks: dict[str, dict] | None = None, **manifest) -> frames.RunClocks:
    """RunClocks of the _tiny agents, listed in their agent_index order (a, b, p)."""
    agents = [{"id": "a", "role": "consumer"}, {"id": "b", "role": "consumer"},
              {"id": "p", "role": "producer", "first_id": 1}]
    for agent in agents:
        if clocks and agent["id"] in clocks:
            agent["clock"] = clocks[agent["id"]]
    return frames.RunClocks.from_manifest(Manifest.model_validate({"agents": agents, **manifest}))


def _by_metric(values) -> dict[str, list[int]]:
    table = values.toArrow()
    by_metric: dict[str, list[int]] = {}
    for metric, value in zip(table.column("metric").to_pylist(),
                             table.column("value").to_pylist(), strict=True):
        by_metric.setdefault(metric, []).append(value)
    return {metric: sorted(v) for metric, v in by_metric.items()}


def _pairs(df, clocks) -> dict[str, dict]:
    rows = frames.clock_pair_counts(df, clocks).collect()
    return {row["agent_id"]: {k: v for k, v in row.asDict().items()
                              if k not in ("agent_id", frames.RUN)}
            for row in rows}


def test_metric_values_and_buckets(spark):
    values = frames.metric_values(frames.measured(_tiny(spark)), _tiny_clocks())
    by_metric = _by_metric(values)
    assert by_metric["send_lag"] == [5] * 4
    assert by_metric["latency"] == [20] * 4 + [50] * 5 + [60]
    assert by_metric["service_time"] == [15] * 4 + [45] * 5 + [55]
    counts = frames.bucket_counts(values).filter(F.col("metric") == "latency").collect()
    assert {r["bucket"]: r["count"] for r in counts} == {20: 4, 50: 5, 60: 1}


def test_run_clocks_from_manifest():
    clock = {"domain": "h1", "offset_ns": 7, "uncertainty_ns": 3}
    manifest = {
        "workload": {"connections": 2}, "cross_host_latency": True,
        "agents": [
            {"id": "c", "role": "consumer", "first_id": 0, "clock": clock},
            {"id": "m", "role": "monitor", "clock": {"domain": "broker"}},  # no messages
            {"id": "p0", "role": "producer", "first_id": 0, "clock": clock},
            {"id": "p1", "role": "producer", "first_id": 2},  # older entry: no domain
            {"id": "p2", "role": "producer", "clock": {"domain": None}},  # no first_id, no domain
            # the domain's offset came from another agent's estimate: its bound applies
            {"id": "r", "role": "requester", "first_id": 4,
             "clock": {**clock, "domain_uncertainty_ns": 2}},
        ],
    }
    clocks = frames.RunClocks.from_manifest(Manifest.model_validate(manifest))
    run = 0  # the first (only) run of those analysed together
    assert clocks.receivers == tuple((run, *row) for row in (
        (0, "h1", 7, 3), (2, "h1", 7, 3), (3, "", None, None), (4, "", None, None),
        (5, "h1", 7, 2)))
    assert clocks.producers == tuple((run, *row) for row in (
        (0, "h1", 7, 3), (1, "h1", 7, 3), (2, "", None, None), (3, "", None, None),
        (4, "h1", 7, 2), (5, "h1", 7, 2)))
    assert clocks.cross_host == (True,) and clocks.sole_domain(run) is None
    older = Manifest.model_validate({"agents": manifest["agents"][3:5]})
    both = frames.RunClocks.of_runs([Manifest.model_validate(manifest), older])
    assert both.sole_domain(1) == frames.DEFAULT_DOMAIN and both.cross_host == (True, False)
    assert both.receivers[-2:] == ((1, 0, "", None, None), (1, 1, "", None, None))


def test_overlapping_producer_ids_are_refused():
    agents = [{"id": "p0", "role": "producer", "first_id": 0},
              {"id": "p1", "role": "requester", "first_id": 1}]
    with pytest.raises(ValueError, match="producer id 1 claimed by agents p0 and p1"):
        frames.RunClocks.from_manifest(
            Manifest.model_validate({"agents": agents, "workload": {"connections": 2}}))


def test_one_domain_times_as_recorded(spark):
    """Offsets play no part within a domain: the figures are those of a manifest without
    clocks, and every timed receipt (the unexpected one too) counts as same_clock."""
    df = frames.measured(_tiny(spark))
    clocks = _tiny_clocks({agent: {"domain": "h", "offset_ns": 1000 * i, "uncertainty_ns": 9}
                           for i, agent in enumerate("abp")})
    assert _by_metric(frames.metric_values(df, clocks)) == _by_metric(
        frames.metric_values(df, _tiny_clocks()))
    expected = {"same_clock": 6, "cross_clock": 0, "excluded": 0, "clock_bound_ns": None}
    assert _pairs(df, clocks) == {"a": expected, "b": {**expected, "same_clock": 4}}
    assert _pairs(df, _tiny_clocks()) == _pairs(df, clocks)


# p and a share host h1; b is on h2 and its clock reads 30 ns behind p's (−25 vs +5)
SPLIT = {"a": {"domain": "h1", "offset_ns": 5, "uncertainty_ns": 10},
         "b": {"domain": "h2", "offset_ns": -25, "uncertainty_ns": 30},
         "p": {"domain": "h1", "offset_ns": 5, "uncertainty_ns": 20}}


def test_cross_clock_receipts_are_left_out_by_default(spark):
    df = frames.measured(_tiny(spark))
    by_metric = _by_metric(frames.metric_values(df, _tiny_clocks(SPLIT)))
    assert by_metric["latency"] == [50] * 5  # a's deliveries from p only
    assert by_metric["service_time"] == [45] * 5
    assert by_metric["send_lag"] == [5] * 4  # one agent's clock: never left out
    # the unexpected (7, 1) has no known producer, so no known clock, in a two-domain run
    assert _pairs(df, _tiny_clocks(SPLIT)) == {
        "a": {"same_clock": 5, "cross_clock": 0, "excluded": 1, "clock_bound_ns": None},
        "b": {"same_clock": 0, "cross_clock": 0, "excluded": 4, "clock_bound_ns": None},
    }


def test_cross_clock_receipts_are_corrected_when_asked(spark):
    df = frames.measured(_tiny(spark))
    clocks = _tiny_clocks(SPLIT, cross_host_latency=True)
    by_metric = _by_metric(frames.metric_values(df, clocks))
    # b: recv − intended = 20 on the raw clocks; (recv + 25) − (intended − 5) = 50
    assert by_metric["latency"] == [50] * 5 + [50] * 4
    assert by_metric["service_time"] == [45] * 5 + [15 + 30] * 4
    assert _pairs(df, clocks) == {
        "a": {"same_clock": 5, "cross_clock": 0, "excluded": 1, "clock_bound_ns": None},
        "b": {"same_clock": 0, "cross_clock": 4, "excluded": 0, "clock_bound_ns": 30 + 20},
    }


def test_cross_clock_needs_both_offsets(spark):
    unmeasured = {**SPLIT, "b": {"domain": "h2"}}
    clocks = _tiny_clocks(unmeasured, cross_host_latency=True)
    assert _pairs(frames.measured(_tiny(spark)), clocks)["b"] == {
        "same_clock": 0, "cross_clock": 0, "excluded": 4, "clock_bound_ns": None}


def test_a_requester_is_its_own_receiver(spark):
    """Round trip reads one clock whatever the manifest places (here: nothing)."""
    rows = [("r", "requester", 5, s, 10 * s, 10 * s + 1, 10 * s + 7, s, False)
            for s in range(3)]
    rows.append(("c", "consumer", 5, 0, 0, 1, 9, 0, False))
    agents = [{"id": "c", "role": "consumer", "clock": {"domain": "h2"}},
              {"id": "r", "role": "requester", "clock": {"domain": "h1"}}]
    clocks = frames.RunClocks.from_manifest(Manifest.model_validate({"agents": agents}))
    pairs = _pairs(_frame(spark, rows), clocks)
    assert pairs["r"]["same_clock"] == 3 and pairs["c"]["excluded"] == 1


def test_bucket_counts_out_of_range(spark):
    df = spark.createDataFrame([("m", -3), ("m", 7), ("m", hdr.HIGHEST + 1)], "metric string, "
                               "value long")
    rows = {r["bucket"]: r.asDict() for r in frames.bucket_counts(df).collect()}
    top = int(hdr.bucket_indices(np.array([hdr.HIGHEST]))[0])
    assert rows[0]["negative"] == 1 and rows[0]["max"] == -3
    assert rows[top]["too_large"] == 1 and rows[top]["max"] == hdr.HIGHEST + 1
    assert rows[7]["negative"] == rows[7]["too_large"] == 0


def test_rates_per_agent_clock(spark):
    rows = [("p", "producer", 1, s, 0, 1_000 * s, None, None, False) for s in range(11)]
    rows += [("c", "consumer", 1, s, 0, 0, 5_000_000 + 2_000 * s, s, False) for s in range(11)]
    rows += [("c", "consumer", 1, 99, 0, 0, 0, 99, True)]  # warm-up: ignored
    got = frames.rates(_frame(spark, rows)).first()
    assert got["send_rate"] == pytest.approx(1e6)
    assert got["receive_rate"] == pytest.approx(5e5)


def test_runs_accounted_together_equal_each_alone(spark):
    """One pass over two runs (run_index 0 and 1): the _tiny run with a third consumer
    that died (its horizon rule) beside the plain _tiny run; each run's row is its own
    accounting's, and a third run with no rows at all still gets a row of zeros."""
    c = ("c", "consumer", 1, 2, 200, 205, 220, 0, False)
    dead = delivery.Expected(3, 0, delivery.Dead((delivery.Watched(2, 1),)))
    first = _frame(spark, [*_tiny_rows(), c])
    second = _tiny(spark).withColumn(frames.RUN, F.lit(1))
    rows = delivery.accounting_of_runs(first.unionByName(second),
                                       [dead, delivery.Expected(), delivery.Expected()])
    got = {row[frames.RUN]: {k: v for k, v in row.asDict().items() if k != frames.RUN}
           for row in rows.collect()}
    assert got[0] == delivery.accounting(first, 3, 0, dead.dead).first().asDict()
    assert got[1] == delivery.accounting(_tiny(spark)).first().asDict()
    assert got[2] == dict.fromkeys(delivery.COUNTS, 0)
