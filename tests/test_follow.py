"""A run analysed while it goes, its chunks folded in as they close (spark_jobs.follow),
gives the figures of the whole analysis of the same files (spark_jobs.run_merge), whatever
order the agents' chunks close in: receipts of messages whose send is not yet known wait,
and an agent that did not count the final median's bucket is read again for it."""

from __future__ import annotations

import numpy as np
import pytest

from sixnines.spark_jobs import delivery, follow, grid, run_merge
from sixnines.spark_jobs.agent_pass import FirstFold
from tests.analysis_rows import figures, plain, write_run

T0 = 10_000_000
WARMUP, DURATION, DRAIN = 4_000, 400_000, 50_000
AGENTS = [{"id": "a", "role": "consumer", "t0_ns": T0},
          {"id": "b", "role": "consumer", "t0_ns": T0},
          {"id": "p", "role": "producer", "t0_ns": T0, "first_id": 1, "connections": 2}]
WORKLOAD = {"warmup_ns": WARMUP, "duration_ns": DURATION, "drain_ns": DRAIN,
            "rate": 2 * 400 / (DURATION / 1e9)}


def _rows(latency) -> list[tuple]:
    """Producer p (ids 1 and 2) sends 400 messages each, every 1,000 ns from t0; consumer
    a (two connections) gets both producers' messages, some reordered, some twice, some
    never; b gets every other one of producer 1, in bursts stamped at one instant.
    `latency(seq)`: the delay of a message."""
    rng = np.random.default_rng(5)
    rows = []
    for pid in (1, 2):
        for seq in range(400):
            intended = T0 + 1_000 * seq + pid
            rows.append(("p", "producer", pid, seq, intended, intended + 7, None, None,
                         seq < 4))
    order = np.arange(400)
    for start in range(0, 400, 10):  # reordered within tens
        order[start:start + 10] = rng.permutation(order[start:start + 10])
    got = [seq for seq in order if seq % 37 != 5] + [12, 140, 300]  # lost, duplicated
    index = {"a": 0, "b": 0}
    last = 0
    for seq in got:
        for pid, connection in ((1, 0), (2, 0), (1, 1)):
            intended = T0 + 1_000 * int(seq) + pid
            last = max(last + 1, intended + latency(int(seq)))  # receive order
            rows.append(("a", "consumer", pid, int(seq), intended, intended + 7, last,
                         index["a"], seq < 4, connection))
            index["a"] += 1
    last = 0
    for seq in range(0, 400, 2):
        intended = T0 + 1_000 * seq + 1
        last = max(last, T0 + 8_000 * (seq // 8 + 1) + latency(seq))
        rows.append(("b", "consumer", 1, seq, intended, intended + 7, last, index["b"],
                     seq < 4))
        index["b"] += 1
    return rows


def _run(folder, latency, **fields):
    return write_run(folder, _rows(latency), agents=AGENTS, window=5, chunk_rows=97,
                     workload={**WORKLOAD, **fields}, t0_ns=T0)


def _followed(run: run_merge.AnalysedRun, ahead: int) -> tuple[follow.RunFollower, int]:
    """A follower fed the run's chunks as they might close: each round one more of the
    producer's, and `ahead` more of each consumer's; and the most receipts it held pending
    after a round."""
    follower, pending = follow.RunFollower(run), 0
    rounds = max(len(paths) for _, paths in run.messages.values())
    for round_ in range(1, rounds):
        follower.feed({agent_id: paths[:round_ + (ahead if agent_id != "p" else 0)]
                       for agent_id, (_, paths) in run.messages.items()})
        pending = max(pending, _pending(follower))
    return follower, pending


def _pending(follower: follow.RunFollower) -> int:
    return sum(len(part) for fold in follower.second.values()
               for stream in fold.matching.streams.values() for part in stream.pending)


def _rereads(monkeypatch) -> list[dict]:
    """The ranges of every stretch of files read again for the final medians."""
    found: list[dict] = []
    real = follow.histograms.median_detail
    monkeypatch.setattr(follow.histograms, "median_detail",
                        lambda *args: found.append(args[2]) or real(*args))
    return found


@pytest.mark.parametrize("ahead", [0, 2])
def test_a_followed_run_gives_the_figures_of_the_whole(tmp_path, monkeypatch, ahead):
    run = _run(tmp_path, lambda seq: 20_000 + 97 * (seq % 13))
    whole = figures(run)[0]
    assert whole.counts["duplicated"] and whole.counts["lost"] and whole.counts["reordered"]
    reread = _rereads(monkeypatch)
    follower, pending = _followed(run, ahead)
    assert follower.followable
    assert pending  # receipts whose chunk closed before their send was known
    assert plain(follower.finish(run)) == plain(whole)
    assert reread == []  # a steady median: counted as the chunks came


def test_a_median_that_moves_past_the_spread_is_counted_again(tmp_path, monkeypatch):
    run = _run(tmp_path, lambda seq: 5_000 if seq < 150 else 900_000 + 3 * seq)
    whole = figures(run)[0]
    reread = _rereads(monkeypatch)
    follower = _followed(run, 1)[0]
    assert plain(follower.finish(run)) == plain(whole)
    assert reread and "latency" in reread[0]
    assert whole.metrics["latency"].detail is not None
    stretches = follower.second["a"].counted  # counted around the median as it moved
    assert len(stretches) > 1 and stretches[-1].ranges["latency"][0] > 500_000


def test_a_run_is_not_followed_without_a_planned_schedule(tmp_path):
    run = _run(tmp_path, lambda seq: 20_000, rate="max")
    assert not follow.RunFollower(run).followable
    assert follow.RunFollower(run).finish(run) is None


def test_a_run_whose_producer_died_is_analysed_whole(tmp_path):
    run = _run(tmp_path, lambda seq: 20_000)
    follower = _followed(run, 0)[0]
    dead = run_merge.AnalysedRun(run.manifest, run.messages, run.window, run.load,
                                 delivery.Expected(dead=delivery.Dead(producer_ids=(1, 2))))
    assert follower.finish(dead) is None
    assert isinstance(follower.first["p"], FirstFold)


def test_throughput_windows_sum_the_same_whichever_chunks_they_come_in(tmp_path):
    """A consumer reading its messages three at a time, at uneven gaps: each message's
    time is a third of a gap after the one before, so the windows' spans are no multiple
    of a binary fraction, and summed batch by batch a float would round differently
    than summed at once. Followed chunk by chunk, the curves are the whole's, digit for
    digit."""
    rng = np.random.default_rng(11)
    rows, last = [], T0
    for seq in range(800):
        intended = T0 + 500 * seq + 1
        rows.append(("p", "producer", 1, seq, intended, intended, None, None, seq < 8))
    for seq in range(800):
        if seq % 3 == 0:
            last += 1_000 + int(rng.integers(1, 997))
        intended = T0 + 500 * seq + 1
        rows.append(("a", "consumer", 1, seq, intended, intended, last, seq, seq < 8))
    agents = [{"id": "a", "role": "consumer", "t0_ns": T0},
              {"id": "p", "role": "producer", "t0_ns": T0, "first_id": 1}]
    run = write_run(tmp_path, rows, agents=agents, window=50, chunk_rows=97,
                    workload={**WORKLOAD, "rate": 800 / (DURATION / 1e9)}, t0_ns=T0)
    whole = figures(run)[0]
    follower = _followed(run, 0)[0]
    followed = follower.finish(run)
    assert len(followed.per_message.throughput["receiver"].msg_s) > 5  # a curve
    assert plain(followed) == plain(whole)


def test_a_run_with_faults_is_counted_per_interval_as_the_whole(tmp_path, monkeypatch):
    """The counts per interval a run with faults gets (spark_jobs.intervals) fold chunk by
    chunk to the whole analysis', pending receipts settled into their intervals too."""
    monkeypatch.setattr(grid, "RESOLUTION_NS", 10_000)
    fault = {"index": 0, "action": "pause", "target": "broker", "at_ns": 100_000}
    run = write_run(tmp_path, _rows(lambda seq: 20_000 + 97 * (seq % 13)), agents=AGENTS,
                    window=5, chunk_rows=97, workload=WORKLOAD, t0_ns=T0, faults=[fault])
    whole = figures(run)[0]
    assert whole.intervals is not None and len(whole.intervals.latency_max) == 45
    assert int(whole.intervals.counts["unique"].sum()) == whole.counts["delivered"]
    follower, pending = _followed(run, 2)
    assert pending
    assert plain(follower.finish(run)) == plain(whole)
