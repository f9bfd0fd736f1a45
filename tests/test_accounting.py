"""The run analysis (spark_jobs.run_merge over spark_jobs.agent_pass and agent_rows) on tiny
hand-made runs, in this process without Spark: the delivery accounting (fan-out, round
trips, dead consumers, requesters, responders and producers, several runs analysed
together), the metric values and their HDR buckets, the clock of every agent and producer
id from the manifest and the clock pairing of receipts (same clock, cross clock corrected
or excluded), out-of-range bucket values, and the send and receive rates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sixnines.formats import hdr
from sixnines.formats.manifest import Manifest
from sixnines.spark_jobs import agent_pass, agent_rows, delivery, histograms, run_merge
from tests.analysis_rows import figures, write_run


def _run(tmp_path: Path, rows: list[tuple], expected: delivery.Expected | None = None,
         agents: list[dict[str, Any]] | None = None, **manifest: Any) -> run_merge.AnalysedRun:
    """A run of these rows, written in a folder of its own under tmp_path (default
    manifest: the rows' agents by id, so agent_index is their sorted order)."""
    folder = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    return write_run(folder, rows, agents=agents, expected=expected, **manifest)


def _counts(tmp_path: Path, rows: list[tuple], expected: delivery.Expected | None = None,
            agents: list[dict[str, Any]] | None = None) -> dict[str, int]:
    """The run's delivery counts (delivery.COUNTS), analysed alone."""
    return figures(_run(tmp_path, rows, expected, agents))[0].counts


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


def test_accounting_fan_out(tmp_path):
    got = _counts(tmp_path, _tiny_rows())
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
    assert _counts(tmp_path, _tiny_rows(), delivery.Expected(3))["lost"] == 1 + 4
    # a third consumer that left no data: its deliveries are unknown, not lost
    third_died = _counts(tmp_path, _tiny_rows(), delivery.Expected(2, 1))
    assert (third_died["lost"], third_died["unknown"]) == (1, 4)


def _lanes_rows() -> list[tuple]:
    """Producers 0 and 1 (one agent, lanes 0 and 1) send seqs 0..3; consumer c's connection
    10 (lane 0) gets producer 0's, 11 (lane 1) producer 1's, except 1's seq 3, which comes
    over connection 10 instead, and 0's seq 2, which comes over both."""
    rows = [("p", "producer", pid, s, 100 * s, 100 * s, None, None, False)
            for pid in (0, 1) for s in range(4)]
    got = [(0, 0, 10), (0, 1, 10), (0, 2, 10), (0, 3, 10), (1, 0, 11), (1, 1, 11),
           (1, 2, 11), (1, 3, 10), (0, 2, 11)]
    rows += [("c", "consumer", pid, s, 100 * s, 100 * s, 100 * s + 9, i, False, consumer)
             for i, (pid, s, consumer) in enumerate(got)]
    return rows


def test_a_consumer_s_connections_divide_the_messages(tmp_path):
    """Each message is expected once per consumer, over any of its connections: one that
    came on two connections is a duplicate, not a delivery to each."""
    agents = [{"id": "c", "role": "consumer", "first_id": 10, "connections": 2},
              {"id": "p", "role": "producer", "first_id": 0, "connections": 2}]
    got = _counts(tmp_path, _lanes_rows(), agents=agents)
    assert (got["sent"], got["received"], got["delivered"]) == (8, 9, 8)
    assert (got["lost"], got["duplicated"], got["unknown"]) == (0, 1, 0)
    # a second consumer that left no data: one copy of each message unknown, not lost
    absent = _counts(tmp_path, _lanes_rows(), delivery.Expected(1, 1), agents=agents)
    assert (absent["lost"], absent["unknown"]) == (0, 8)
    # had c died, its message received twice still stands for one copy, and its last
    # messages it did not get (producer 0's seq 3 kept only) may have come after: unknown
    missing = [row for row in _lanes_rows() if row[:4] != ("c", "consumer", 1, 3)]
    dead = _counts(tmp_path, missing, delivery.Expected(dead=delivery.Dead(
        (delivery.Watched(0, 1),))), agents=agents)
    assert (dead["delivered"], dead["lost"], dead["unknown"]) == (7, 0, 1)


def test_runs_recorded_before_lanes_expect_every_message_on_every_connection(tmp_path):
    """A manifest older than schema 5 recorded fan-out per connection: read so, each of
    the consumer's two connections expects every message."""
    agents = [{"id": "c", "role": "consumer", "first_id": 10, "connections": 2},
              {"id": "p", "role": "producer", "first_id": 0, "connections": 2}]
    run = _run(tmp_path, _lanes_rows(), agents=agents, schema_version=4,
               workload={"connections": 2})
    assert run.manifest.workload.fan_out == "connection"
    got = figures(run)[0].counts
    # connection 10 got 0's four and 1's seq 3; 11 got 1's 0..2 and 0's seq 2
    assert (got["delivered"], got["lost"], got["duplicated"]) == (9, 16 - 9, 0)


def test_a_dead_consumer_s_misses_are_lost_before_its_horizon_unknown_after(tmp_path):
    # consumer c died having kept only seq 2 (recv − sent 15): its horizon with producer 1
    # is 220 − 15 = 205; seq 1 (sent 105) would have needed 115 to come after: lost;
    # seqs 3 and 4 (sent 305, 405) may have come after its last chunk: unknown
    c = ("c", "consumer", 1, 2, 200, 205, 220, 0, False)
    got = _counts(tmp_path, [*_tiny_rows(), c],
                  delivery.Expected(3, dead=delivery.Dead((delivery.Watched(2, 1),))))
    assert (got["lost"], got["unknown"]) == (1 + 1, 2)  # b's seq 3, c's 1


def test_a_dead_consumer_of_a_reordering_system_loses_only_what_no_lateness_explains(tmp_path):
    # seqs 0..5 sent at 100·seq; c got 1 late (latency 300), 2 and 5 (latency 60), then
    # died: horizon 560 − 300 = 260. 3 and 4 may still have come, however far behind 5
    # (a partition lagging): unknown; 0 would have needed a latency over 560: lost
    rows = [("p", "producer", 1, s, 100 * s, 100 * s, None, None, False) for s in range(6)]
    rows += [("c", "consumer", 1, s, 100 * s, 100 * s, 100 * s + late, i, False)
             for i, (s, late) in enumerate([(2, 60), (1, 300), (5, 60)])]
    got = _counts(tmp_path, rows,
                  delivery.Expected(dead=delivery.Dead((delivery.Watched(0, 1),))))
    assert (got["delivered"], got["lost"], got["unknown"]) == (3, 1, 2)


def test_a_dead_consumer_s_lagging_stream_is_unknown_past_its_newest_receipt(tmp_path):
    # producers 1 and 2 send seqs 0..5 at 100·seq; c kept 1's seqs 0..5 and 2's 0..1 (both
    # latency 10: lateness 10), then died at 510. Horizon with 2: min(510 − 10, 100) = 100:
    # 2's stream showed no progress past seq 1, so seqs 2..5 are unknown, not lost, though
    # sent long before c's last receipt (one partition fetched late)
    rows = [("p", "producer", pid, s, 100 * s, 100 * s, None, None, False)
            for pid in (1, 2) for s in range(6)]
    kept = [(1, s) for s in range(6)] + [(2, 0), (2, 1)]
    rows += [("c", "consumer", pid, s, 100 * s, 100 * s, 100 * s + 10, i, False)
             for i, (pid, s) in enumerate(kept)]
    got = _counts(tmp_path, rows,
                  delivery.Expected(dead=delivery.Dead((delivery.Watched(0, 1),))))
    assert (got["delivered"], got["lost"], got["unknown"]) == (8, 0, 4)


def test_a_dead_producer_s_messages_receivers_got_after_its_last_chunk_count_as_sent(tmp_path):
    kept = [row for row in _tiny_rows() if row[1] != "producer" or row[3] < 3]
    got = _counts(tmp_path, kept, delivery.Expected(dead=delivery.Dead(producer_ids=(1,))))
    assert got == _counts(tmp_path, _tiny_rows())
    alive = _counts(tmp_path, kept)
    assert (alive["sent"], alive["unexpected"]) == (2, 1 + 3)  # a: 3, 4, (7, 1); b: 4


def _requests(seqs, producer_id: int = 5, agent: str = "r") -> list[tuple]:
    """A requester's request rows (seq 0 warm-up): sent at 10·seq + 1."""
    return [(agent, "requester", producer_id, s, 10 * s, 10 * s + 1, None, None, s == 0)
            for s in seqs]


def _replies(seqs, lateness: int = 6) -> list[tuple]:
    """Requester r's reply rows, in that order: received `lateness` after the send."""
    return [("r", "requester", 5, s, 10 * s, 10 * s + 1, 10 * s + 1 + lateness, i, s == 0)
            for i, s in enumerate(seqs)]


def _requesters(rows: list[tuple]) -> list[dict[str, Any]]:
    """The manifest entries of the requesters of these rows, by id, each with its first
    producer id (that of its requests): what places the requests a dead one expects."""
    first_ids: dict[str, int] = {}
    for row in rows:
        first_ids.setdefault(row[0], row[2])
    return [{"id": agent, "role": "requester", "first_id": first_ids[agent]}
            for agent in sorted(first_ids)]


def test_accounting_round_trip(tmp_path):
    """Requests and replies are rows of their own: matched as a sender's and a receiver's,
    so a reply twice is duplicated, one to no request unexpected, one overtaken
    reordered."""
    rows = _requests(range(6)) + _replies([0, 1, 4, 3, 5, 5]) + [
        ("r", "requester", 5, 9, 90, 91, 97, 6, False)]  # to no request sent
    got = _counts(tmp_path, rows, agents=_requesters(rows))
    assert got == {"sent": 5, "requests": 5, "received": 6, "delivered": 4, "lost": 1,
                   "unknown": 0, "duplicated": 1, "reordered": 1, "unexpected": 1,
                   "warmup_sent": 1, "warmup_received": 1}


def test_a_dead_requester_is_a_dead_consumer_of_its_own_requests(tmp_path):
    # its request chunks reach seq 7, its reply chunks seq 4 (last receipt 47, lateness 6):
    # horizon 41; seq 2 (sent 21) unanswered is lost, 5..7 (sent 51..) unknown
    dead = delivery.Expected(dead=delivery.Dead((delivery.Watched(0, 1, (5, 6)),),
                                                producer_ids=(5,)))
    rows = _requests(range(8)) + _replies([0, 1, 3, 4])
    got = _counts(tmp_path, rows, dead, _requesters(rows))
    assert (got["sent"], got["delivered"], got["lost"], got["unknown"]) == (7, 3, 1, 3)
    # the reply to seq 4, whose request chunk died with it, counts as sent and delivered
    rows = _requests(range(4)) + _replies([0, 1, 3, 4])
    got = _counts(tmp_path, rows, dead, _requesters(rows))
    assert (got["sent"], got["delivered"], got["lost"], got["unknown"]) == (4, 3, 1, 0)


def test_a_dead_responder_leaves_requests_after_the_last_one_answered_unknown(tmp_path):
    # replies stop after seq 4 (sent 41, lateness 6): horizon 35; seq 2 (sent 21)
    # unanswered is lost, 5..7 unknown; the last receipt (47) plays no part
    rows = _requests(range(8)) + _replies([0, 1, 3, 4])
    dead = delivery.Expected(dead=delivery.Dead((delivery.Watched(0, 1, (5, 6),
                                                                  relay_died=True),)))
    got = _counts(tmp_path, rows, dead, _requesters(rows))
    assert (got["sent"], got["delivered"], got["lost"], got["unknown"]) == (7, 3, 1, 3)
    # another requester's request (id 6) is not this one's to miss: it stays lost here
    rows += _requests([1], producer_id=6, agent="r2")
    got = _counts(tmp_path, rows, dead, _requesters(rows))
    assert (got["sent"], got["lost"], got["unknown"]) == (8, 2, 3)


def _stalled(got: list[int], latency: int = 10) -> list[tuple]:
    """Producer p (id 1) sends seqs 0..9 at 100·seq; consumer c gets those of `got`,
    `latency` after their send."""
    rows = [("p", "producer", 1, s, 100 * s, 100 * s, None, None, False) for s in range(10)]
    return rows + [("c", "consumer", 1, s, 100 * s, 100 * s, 100 * s + latency, i, False)
                   for i, s in enumerate(got)]


def _drained(tmp_path: Path, rows: list[tuple], drain_ended_ns: int, drain_ns: int = 300,
             **manifest: Any) -> run_merge.RunFigures:
    """The figures of a run whose consumer c heard its drain of `drain_ns` out, to
    `drain_ended_ns`, without every message."""
    agents = [{"id": "c", "role": "consumer", "drain_ended_ns": drain_ended_ns},
              {"id": "p", "role": "producer", "first_id": 1}]
    return figures(_run(tmp_path, rows, agents=agents,
                        workload={"drain_ns": drain_ns}, **manifest))[0]


def test_a_drain_that_ran_out_on_a_stalled_system_leaves_its_holdings_unknown(tmp_path):
    # c's last delivery (seq 3) came at 310; its drain of 300 ran from 1700 to 2000: no
    # delivery for more than a drain before it began. Seqs 4..9 were sent after its
    # horizon (310 − 10): the system may still hold them
    found = _drained(tmp_path, _stalled(range(4)), drain_ended_ns=2000)
    assert (found.counts["delivered"], found.counts["lost"], found.counts["unknown"]) == (
        4, 0, 6)
    (line,) = found.drained_out
    assert line.startswith("agent c: no delivery for ") and line.endswith(run_merge.DRAINED_OUT)
    # the broker sixnines started exited during the run: what it held is lost with it
    gone = _drained(tmp_path, _stalled(range(4)), drain_ended_ns=2000, broker_exit=1)
    assert (gone.counts["lost"], gone.counts["unknown"], gone.drained_out) == (6, 0, [])


def test_a_drain_that_ran_out_after_deliveries_caught_up_counts_the_tail_lost(tmp_path):
    # c got seqs 0..8 (the last at 810) and nothing more in its drain of 300 (1100 to
    # 1400), which began within a drain of that delivery: the system had finished
    # delivering, so seq 9, sent after c's horizon, is lost (a lossy system's tail)
    found = _drained(tmp_path, _stalled(range(9)), drain_ended_ns=1400)
    assert (found.counts["lost"], found.counts["unknown"], found.drained_out) == (1, 0, [])


def test_a_drain_that_ran_out_while_deliveries_still_came_leaves_the_backlog_unknown(
        tmp_path):
    # each delivery took 1000 (a backlog): c got seqs 0..5, the last at 1500, during its
    # drain (1300 to 1600). Its horizon is 1500 − 1000 = 500: seqs 6..9 are unknown
    found = _drained(tmp_path, _stalled(range(6), latency=1000), drain_ended_ns=1600)
    assert (found.counts["lost"], found.counts["unknown"]) == (0, 4)
    assert found.drained_out[0].startswith("agent c: still receiving during its drain of ")


def test_a_receiver_cut_short_is_watched_like_a_dead_one(tmp_path):
    """A consumer that reported but was stopped early (cut_short), and a requester too:
    their misses after their horizon are unknown (delivery.Dead.of); one the system cut off
    (no cut_short) is not watched. What receivers got from a sender beyond its records
    cut short counts as sent, as a dead sender's."""
    manifest = Manifest.model_validate({"agents": [
        {"id": "c", "role": "consumer", "status": "partial",
         "cut_short": "stopped early (terminated (SIGTERM))"},
        {"id": "r", "role": "requester", "first_id": 5, "status": "partial",
         "cut_short": "stopped early (interrupted by the user (Ctrl-C))"},
        {"id": "d", "role": "consumer", "status": "partial"},
        {"id": "p", "role": "producer", "first_id": 1, "status": "partial",
         "cut_short": "its records are not all on disk (no space)"},
        {"id": "q", "role": "producer", "first_id": 2, "status": "partial"}]})
    assert delivery.Dead.of(manifest, ["c", "r", "d", "p", "q"]) == delivery.Dead(
        (delivery.Watched(0, 1), delivery.Watched(1, 1, (5, 6))), (5, 1))
    found = figures(_run(tmp_path, _stalled(range(4)), agents=[
        {"id": "c", "role": "consumer", "cut_short": "stopped early (overran the planned end)"},
        {"id": "p", "role": "producer", "first_id": 1}],
        expected=delivery.Expected(dead=delivery.Dead((delivery.Watched(0, 1),)))))[0]
    assert (found.counts["lost"], found.counts["unknown"]) == (0, 6)


def test_drain_verdicts():
    """What a receiver whose drain (here 2 s) ran out says of the system: nothing when it
    caught up and went quiet; a stall, a backlog, or no delivery at all otherwise."""
    s = 1_000_000_000
    assert delivery.drain_verdict(20 * s, 2 * s, 17 * s) is None
    assert delivery.drain_verdict(20 * s, 2 * s, 16 * s + 1) is None
    assert delivery.drain_verdict(20 * s, 2 * s, 12 * s) == (
        "no delivery for 8.0 s before the end; its drain of 2 s ran out first")
    assert delivery.drain_verdict(20 * s, 2 * s, 19 * s) == (
        "still receiving during its drain of 2 s, which ran out first (the last delivery "
        "1.0 s before its end)")
    assert delivery.drain_verdict(20 * s, 2 * s, None) == (
        "nothing was delivered to it before its drain of 2 s ran out")
    # no drain at all: whatever was still on its way is the system's to say
    assert delivery.drain_verdict(20 * s, 0, 19 * s) is not None


def _tiny_agents(clocks: dict[str, dict] | None = None) -> list[dict[str, Any]]:
    """The manifest entries of the _tiny agents, in their agent_index order (a, b, p)."""
    agents: list[dict[str, Any]] = [
        {"id": "a", "role": "consumer"}, {"id": "b", "role": "consumer"},
        {"id": "p", "role": "producer", "first_id": 1}]
    for agent in agents:
        if clocks and agent["id"] in clocks:
            agent["clock"] = clocks[agent["id"]]
    return agents


def _tiny_run(tmp_path: Path, clocks: dict[str, dict] | None = None, **manifest: Any
              ) -> run_merge.AnalysedRun:
    return _run(tmp_path, _tiny_rows(), agents=_tiny_agents(clocks), **manifest)


def _rows_of(run: run_merge.AnalysedRun) -> dict[str, agent_rows.Rows]:
    """Each agent's rows as the passes read them (classified, clock-paired)."""
    return {agent.agent_id: agent_rows.read_rows(agent) for agent in run_merge.agent_files([run])}


def _by_metric(run: run_merge.AnalysedRun) -> dict[str, list[int]]:
    """Each metric's measured values over all the run's agents, sorted."""
    by_metric: dict[str, list[int]] = {}
    for rows in _rows_of(run).values():
        for metric, values in histograms.metric_values(rows, run.load, rows.measured).items():
            by_metric.setdefault(metric, []).extend(values.tolist())
    return {metric: sorted(values) for metric, values in by_metric.items() if values}


def _pairs(run: run_merge.AnalysedRun) -> dict[str, dict]:
    """Each receiving agent's timed receipts by clock pair, and its widest bound."""
    found = {}
    for agent_id, rows in _rows_of(run).items():
        pairs = agent_pass.clock_pairs(rows, agent_id)
        if pairs is not None:
            found[agent_id] = {k: v for k, v in pairs.items() if k != "agent_id"}
    return found


def test_metric_values_and_buckets(tmp_path):
    run = _tiny_run(tmp_path)
    by_metric = _by_metric(run)
    assert by_metric["send_lag"] == [5] * 4
    assert by_metric["latency"] == [20] * 4 + [50] * 5 + [60]
    assert by_metric["service_time"] == [15] * 4 + [45] * 5 + [55]
    counts = figures(run)[0].metrics["latency"].counts  # below 2048 ns: a bucket per value
    assert {int(b): int(counts[b]) for b in np.flatnonzero(counts)} == {20: 4, 50: 5, 60: 1}


def test_run_clocks_from_manifest(tmp_path):
    clock = {"domain": "h1", "offset_ns": 7, "uncertainty_ns": 3}
    agents = [
        {"id": "c", "role": "consumer", "first_id": 0, "clock": clock},
        {"id": "m", "role": "monitor", "clock": {"domain": "broker"}},  # no messages
        {"id": "p0", "role": "producer", "first_id": 0, "clock": clock},
        {"id": "p1", "role": "producer", "first_id": 2},  # older entry: no domain
        {"id": "p2", "role": "producer", "clock": {"domain": None}},  # no first_id, no domain
        # the domain's offset came from another agent's estimate: its bound applies
        {"id": "r", "role": "requester", "first_id": 4,
         "clock": {**clock, "domain_uncertainty_ns": 2}},
    ]
    manifest = {"workload": {"connections": 2}, "cross_host_latency": True}
    assert run_merge.producer_clocks(Manifest.model_validate({"agents": agents, **manifest})) == {
        0: ("h1", 7, 3), 1: ("h1", 7, 3), 2: ("", None, None), 3: ("", None, None),
        4: ("h1", 7, 2), 5: ("h1", 7, 2)}
    # one row for each agent recording messages (the monitor records none)
    rows = [("c", "consumer", 0, 0, 0, 1, 2, 0, False)] + [
        (agent_id, role, 0, 0, 0, 1, None, None, False)
        for agent_id, role in (("p0", "producer"), ("p1", "producer"), ("p2", "producer"),
                               ("r", "requester"))]
    run = _run(tmp_path, rows, agents=agents, **manifest)
    assert run_merge.sole_domain(run.manifest) is None
    found = run_merge.agent_files([run])
    assert [(a.run.run_index, a.agent_index, *a.clock) for a in found] == [
        (0, 0, "h1", 7, 3), (0, 2, "h1", 7, 3), (0, 3, "", None, None), (0, 4, "", None, None),
        (0, 5, "h1", 7, 2)]
    assert found[0].run.cross_host and found[0].run.sole_domain is None
    older = _run(tmp_path, [row for row in rows if row[0] in ("p1", "p2")], agents=agents[3:5])
    assert run_merge.sole_domain(older.manifest) == agent_rows.DEFAULT_DOMAIN
    both = run_merge.agent_files([run, older])
    assert [a.run.cross_host for a in both] == [True] * 5 + [False] * 2
    assert [(a.run.run_index, a.agent_index, *a.clock) for a in both[-2:]] == [
        (1, 0, "", None, None), (1, 1, "", None, None)]
    assert both[-1].run.sole_domain == agent_rows.DEFAULT_DOMAIN


def test_overlapping_producer_ids_are_refused():
    agents = [{"id": "p0", "role": "producer", "first_id": 0},
              {"id": "p1", "role": "requester", "first_id": 1}]
    with pytest.raises(ValueError, match="producer id 1 claimed by agents p0 and p1"):
        run_merge.producer_clocks(
            Manifest.model_validate({"agents": agents, "workload": {"connections": 2}}))


def test_one_domain_times_as_recorded(tmp_path):
    """Offsets play no part within a domain: the figures are those of a manifest without
    clocks, and every timed receipt (the unexpected one too) counts as same_clock."""
    one_domain = _tiny_run(tmp_path, {agent: {"domain": "h", "offset_ns": 1000 * i,
                                              "uncertainty_ns": 9}
                                      for i, agent in enumerate("abp")})
    plain = _tiny_run(tmp_path)
    assert _by_metric(one_domain) == _by_metric(plain)
    expected = {"same_clock": 6, "cross_clock": 0, "excluded": 0, "clock_bound_ns": None}
    assert _pairs(one_domain) == {"a": expected, "b": {**expected, "same_clock": 4}}
    assert _pairs(plain) == _pairs(one_domain)


# p and a share host h1; b is on h2 and its clock reads 30 ns behind p's (−25 vs +5)
SPLIT = {"a": {"domain": "h1", "offset_ns": 5, "uncertainty_ns": 10},
         "b": {"domain": "h2", "offset_ns": -25, "uncertainty_ns": 30},
         "p": {"domain": "h1", "offset_ns": 5, "uncertainty_ns": 20}}


def test_cross_clock_receipts_are_left_out_by_default(tmp_path):
    run = _tiny_run(tmp_path, SPLIT)
    by_metric = _by_metric(run)
    assert by_metric["latency"] == [50] * 5  # a's deliveries from p only
    assert by_metric["service_time"] == [45] * 5
    assert by_metric["send_lag"] == [5] * 4  # one agent's clock: never left out
    # the unexpected (7, 1) has no known producer, so no known clock, in a two-domain run
    assert _pairs(run) == {
        "a": {"same_clock": 5, "cross_clock": 0, "excluded": 1, "clock_bound_ns": None},
        "b": {"same_clock": 0, "cross_clock": 0, "excluded": 4, "clock_bound_ns": None},
    }


def test_cross_clock_receipts_are_corrected_when_asked(tmp_path):
    run = _tiny_run(tmp_path, SPLIT, cross_host_latency=True)
    by_metric = _by_metric(run)
    # b: recv − intended = 20 on the raw clocks; (recv + 25) − (intended − 5) = 50
    assert by_metric["latency"] == [50] * 5 + [50] * 4
    assert by_metric["service_time"] == [45] * 5 + [15 + 30] * 4
    assert _pairs(run) == {
        "a": {"same_clock": 5, "cross_clock": 0, "excluded": 1, "clock_bound_ns": None},
        "b": {"same_clock": 0, "cross_clock": 4, "excluded": 0, "clock_bound_ns": 30 + 20},
    }


def test_cross_clock_needs_both_offsets(tmp_path):
    unmeasured = {**SPLIT, "b": {"domain": "h2"}}
    assert _pairs(_tiny_run(tmp_path, unmeasured, cross_host_latency=True))["b"] == {
        "same_clock": 0, "cross_clock": 0, "excluded": 4, "clock_bound_ns": None}


def test_a_requester_is_its_own_receiver(tmp_path):
    """Round trip reads one clock whatever the manifest places (here: nothing)."""
    rows = [("r", "requester", 5, s, 10 * s, 10 * s + 1, 10 * s + 7, s, False)
            for s in range(3)]
    rows.append(("c", "consumer", 5, 0, 0, 1, 9, 0, False))
    agents = [{"id": "c", "role": "consumer", "clock": {"domain": "h2"}},
              {"id": "r", "role": "requester", "clock": {"domain": "h1"}}]
    pairs = _pairs(_run(tmp_path, rows, agents=agents))
    assert pairs["r"]["same_clock"] == 3 and pairs["c"]["excluded"] == 1


def test_bucket_counts_out_of_range():
    buckets = histograms.Buckets.of(np.array([-3, 7, hdr.HIGHEST + 1], dtype=np.int64))
    top = int(hdr.bucket_indices(np.array([hdr.HIGHEST]))[0])
    assert (buckets.negative, buckets.too_large, buckets.max) == (1, 1, hdr.HIGHEST + 1)
    # clipped into the end buckets, each bucket's raw values summed as they were
    assert dict(zip(buckets.indices.tolist(), buckets.counts.tolist(), strict=True)) == {
        0: 1, 7: 1, top: 1}
    assert dict(zip(buckets.indices.tolist(), buckets.sums.tolist(), strict=True)) == {
        0: -3, 7: 7, top: hdr.HIGHEST + 1}


def test_rates_per_agent_clock(tmp_path):
    rows = [("p", "producer", 1, s, 0, 1_000 * s, None, None, False) for s in range(11)]
    rows += [("c", "consumer", 1, s, 0, 0, 5_000_000 + 2_000 * s, s, False) for s in range(11)]
    rows += [("c", "consumer", 1, 99, 0, 0, 0, 99, True)]  # warm-up: ignored
    got = figures(_run(tmp_path, rows))[0].rate
    assert got["send_rate"] == pytest.approx(1e6)
    assert got["receive_rate"] == pytest.approx(5e5)


def test_runs_accounted_together_equal_each_alone(tmp_path):
    """One analysis of three runs: the _tiny run with a third consumer that died (its
    horizon rule), the plain _tiny run, and a run with no rows at all; each run's counts
    are those of its analysis alone, the empty run's all zeros."""
    c = ("c", "consumer", 1, 2, 200, 205, 220, 0, False)
    dead = delivery.Expected(3, 0, delivery.Dead((delivery.Watched(2, 1),)))
    first = _run(tmp_path, [*_tiny_rows(), c], dead)
    second = _run(tmp_path, _tiny_rows())
    empty = _run(tmp_path, [], agents=_tiny_agents())
    got = [found.counts for found in figures(first, second, empty)]
    assert got[0] == figures(first)[0].counts
    assert got[1] == figures(second)[0].counts
    assert got[2] == dict.fromkeys(delivery.COUNTS, 0)
