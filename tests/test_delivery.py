"""The delivery accounting (spark_jobs.delivery, counted per agent by spark_jobs.delivery_pass
and merged per run by spark_jobs.run_merge) on tiny hand-made runs, in this process
without Spark: fan-out, lanes, round trips, dead consumers, requesters, responders and
producers, drains that ran out, receivers cut short, and several runs analysed
together."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sixnines.formats.manifest import Manifest
from sixnines.spark_jobs import delivery, run_merge
from tests.analysis_rows import figures, run_in, tiny_agents, tiny_rows


def _counts(tmp_path: Path, rows: list[tuple], expected: delivery.Expected | None = None,
            agents: list[dict[str, Any]] | None = None) -> dict[str, int]:
    """The run's delivery counts (delivery.COUNTS), analysed alone."""
    return figures(run_in(tmp_path, rows, expected, agents))[0].counts


def test_accounting_fan_out(tmp_path):
    got = _counts(tmp_path, tiny_rows())
    assert got == {
        "sent": 4,
        "requests": 0,
        "received": 6 + 4,  # a: 1,3,2,2,4,(7,1); b: 1,2,2,4
        "delivered": 4 + 3,  # a: 1,2,3,4; b: 1,2,4
        "lost": 1,  # b misses seq 3
        "unknown": 0,
        "duplicated": 2,  # a: 2; b: 2
        "reordered": 2,  # a: 2 after 3, twice
        "key_reordered": 0,  # messages without keys
        "unexpected": 1,
        "lost_acknowledged": 0,  # no producer recorded acknowledgements
        "warmup_sent": 1,
        "warmup_received": 1,
    }
    # a third consumer that received nothing loses every message
    assert _counts(tmp_path, tiny_rows(), delivery.Expected(3))["lost"] == 1 + 4
    # a third consumer that left no data: its deliveries are unknown, not lost
    third_died = _counts(tmp_path, tiny_rows(), delivery.Expected(2, 1))
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
    run = run_in(tmp_path, _lanes_rows(), agents=agents, schema_version=4,
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
    got = _counts(tmp_path, [*tiny_rows(), c],
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
    kept = [row for row in tiny_rows() if row[1] != "producer" or row[3] < 3]
    got = _counts(tmp_path, kept, delivery.Expected(dead=delivery.Dead(producer_ids=(1,))))
    assert got == _counts(tmp_path, tiny_rows())
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


def test_lost_acknowledged_counts_acknowledged_messages_a_consumer_never_got(tmp_path):
    """b misses seq 3: lost, and lost after acknowledgement only when seq 3 is among the
    runs the producer recorded (two connections: seqs 0-1, then 2-4 after a reconnect);
    the warm-up's seq 0 and the runs' overlap count nothing."""
    def lost_acknowledged(runs: list[tuple[int, int]]) -> int:
        agents = tiny_agents()
        agents[2]["acknowledged"] = [{"producer_id": 1, "first_seq": first, "count": count}
                                     for first, count in runs]
        return _counts(tmp_path, tiny_rows(), agents=agents)["lost_acknowledged"]

    assert lost_acknowledged([(0, 2), (2, 3)]) == 1
    assert lost_acknowledged([(0, 3), (1, 2)]) == 0  # seq 3 never acknowledged
    assert lost_acknowledged([(0, 5), (3, 1)]) == 1  # counted once


def test_accounting_round_trip(tmp_path):
    """Requests and replies are rows of their own: matched as a sender's and a receiver's,
    so a reply twice is duplicated, one to no request unexpected, one overtaken
    reordered."""
    rows = _requests(range(6)) + _replies([0, 1, 4, 3, 5, 5]) + [
        ("r", "requester", 5, 9, 90, 91, 97, 6, False)]  # to no request sent
    got = _counts(tmp_path, rows, agents=_requesters(rows))
    assert got == {"sent": 5, "requests": 5, "received": 6, "delivered": 4, "lost": 1,
                   "unknown": 0, "duplicated": 1, "reordered": 1, "key_reordered": 0,
                   "unexpected": 1, "lost_acknowledged": 0, "warmup_sent": 1,
                   "warmup_received": 1}


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
    return figures(run_in(tmp_path, rows, agents=agents,
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
    found = figures(run_in(tmp_path, _stalled(range(4)), agents=[
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


def test_runs_accounted_together_equal_each_alone(tmp_path):
    """One analysis of three runs: the tiny run with a third consumer that died (its
    horizon rule), the plain _tiny run, and a run with no rows at all; each run's counts
    are those of its analysis alone, the empty run's all zeros."""
    c = ("c", "consumer", 1, 2, 200, 205, 220, 0, False)
    dead = delivery.Expected(3, 0, delivery.Dead((delivery.Watched(2, 1),)))
    first = run_in(tmp_path, [*tiny_rows(), c], dead)
    second = run_in(tmp_path, tiny_rows())
    empty = run_in(tmp_path, [], agents=tiny_agents())
    got = [found.counts for found in figures(first, second, empty)]
    assert got[0] == figures(first)[0].counts
    assert got[1] == figures(second)[0].counts
    assert got[2] == dict.fromkeys(delivery.COUNTS, 0)
