"""What one agent's records tell the delivery accounting (spark_jobs.delivery_pass), on
hand-made seqs and tiny runs' rows: a producer's sends as seq intervals joined across
batches and agents, reordered receipts counted across batches, and receipts matched
against sends known a part at a time (pending until they are known, a gap filled later
keeping what was received)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sixnines.spark_jobs import agent_rows, run_merge
from sixnines.spark_jobs.delivery_pass import Matching, inside, intervals, merged_sends, reordered
from tests.analysis_rows import run_in


def _listed(found: tuple[np.ndarray, np.ndarray]) -> list[tuple[int, int]]:
    return list(zip(found[0].tolist(), found[1].tolist(), strict=True))


def _receipts(tmp_path: Path, seqs: list[int]) -> agent_rows.Rows:
    """A consumer's rows receiving producer 1's `seqs`, in this order."""
    rows = [("c", "consumer", 1, seq, 0, 0, 10 + i, i, False) for i, seq in enumerate(seqs)]
    (agent,) = run_merge.agent_files([run_in(tmp_path, rows)])
    return agent_rows.read_rows(agent)


def test_seqs_become_runs_of_consecutive_values():
    assert _listed(intervals(np.array([5, 3, 4, 9, 9, 10, 1]))) == [(1, 1), (3, 5), (9, 10)]
    assert _listed(intervals(np.arange(1000))) == [(0, 999)]  # sends that went out whole
    assert _listed(intervals(np.zeros(0, np.int64))) == []


def test_intervals_of_batches_and_agents_join_where_they_touch():
    sent = merged_sends([{1: intervals(np.arange(5)), 2: intervals(np.array([7]))},
                         {1: intervals(np.arange(5, 8))},
                         {1: intervals(np.array([1, 2, 20]))}])
    assert {producer: _listed(found) for producer, found in sent.items()} == {
        1: [(0, 7), (20, 20)], 2: [(7, 7)]}
    assert inside(np.array([0, 7, 8, 19, 20]), sent[1]).tolist() == [True, True, False,
                                                                       False, True]
    assert not inside(np.array([0]), None).any()


def test_reordered_receipts_are_counted_across_batches(tmp_path):
    """A receipt below the highest seq its stream received before it is reordered, the
    highest carried from one batch to the next."""
    highest: dict[int, int] = {}
    assert reordered(_receipts(tmp_path, [0, 2, 1, 3]), highest) == 1
    assert reordered(_receipts(tmp_path, [2, 4, 5]), highest) == 1  # 2 after 3
    assert reordered(_receipts(tmp_path, [0, 2, 1, 3, 2, 4, 5])) == 2  # the same at once


def test_receipts_of_sends_not_yet_known_wait_for_them(tmp_path):
    rows = _receipts(tmp_path, [0, 1, 2, 2, 5, 7, 12])
    matching = Matching()
    matching.add(rows, {1: intervals(np.arange(4))}, final=False)
    assert (matching.found.unique, matching.found.duplicated) == (3, 1)
    assert np.concatenate([seqs for seqs, _ in matching.streams[1].pending]).tolist() == [
        5, 7, 12]
    matching.settle({1: intervals(np.arange(10))}, final=False)
    assert matching.found.unique == 5 and matching.found.unexpected == 0
    matching.settle({1: intervals(np.arange(10))}, final=True)  # 12 was never sent
    at_once = Matching()
    at_once.add(rows, {1: intervals(np.arange(10))})
    assert matching.result() == at_once.result()
    assert (at_once.found.unique, at_once.found.duplicated, at_once.found.unexpected) == (
        5, 1, 1)


def test_a_gap_in_the_sends_filled_later_keeps_what_was_received(tmp_path):
    """A dead sender's sends known first with a gap that receivers fill later: the flags
    of what was received move to their new places, so a receipt again is a duplicate."""
    matching = Matching()
    matching.add(_receipts(tmp_path, [0, 8]), {1: intervals(np.array([0, 1, 2, 3, 8, 9]))})
    matching.add(_receipts(tmp_path, [8, 5]), {1: intervals(np.arange(10))})
    assert (matching.found.unique, matching.found.duplicated, matching.found.unexpected) == (
        3, 1, 0)
