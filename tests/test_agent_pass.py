"""The per-agent passes (spark_jobs.agent_pass): an agent's files read a few rows at a time
give the figures of reading them whole, what spans batches (reorder maxima, delivered
flags, window tails, consumer connections, extents, sends) carried from one batch to the
next; and each agent's send and receive rates, on its own clock."""

from __future__ import annotations

import numpy as np
import pytest

from sixnines.spark_jobs import agent_rows
from tests.analysis_rows import figures, plain, run_in, write_run

WINDOW = 3


def _rows() -> list[tuple]:
    """Producer p (ids 1 and 2) to consumer a (two connections) and b: a receives
    messages on both connections, some late, some twice, some never; b gets every other
    one, in bursts stamped at one instant. Each stream's timestamps rise in file order,
    as an agent records them."""
    rng = np.random.default_rng(11)
    rows = []
    for pid in (1, 2):
        for seq in range(40):
            intended = 1_000 * seq + pid
            rows.append(("p", "producer", pid, seq, intended, intended + 7, None, None,
                         seq < 4))
    index = {"a": 0, "b": 0}
    for seq in rng.permutation(np.repeat(np.arange(40), 2))[:70]:  # reordered, duplicated
        for pid, connection in ((1, 0), (2, 0), (1, 1)):
            intended = 1_000 * int(seq) + pid
            recv = 40_000 + 300 * index["a"]  # stamped in receive order, as agents do
            rows.append(("a", "consumer", pid, int(seq), intended, intended + 7, recv,
                         index["a"], seq < 4, connection))
            index["a"] += 1
    for seq in range(0, 40, 2):
        intended = 1_000 * seq + 1
        rows.append(("b", "consumer", 1, seq, intended, intended + 7, 5_000 * (seq // 8),
                     index["b"], seq < 4))
        index["b"] += 1
    return rows


@pytest.mark.parametrize("batch_rows", [1, 2, 5, 17])
def test_batches_give_the_figures_of_the_whole(tmp_path, monkeypatch, batch_rows):
    whole = figures(write_run(tmp_path / "whole", _rows(), window=WINDOW))[0]
    assert whole.counts["duplicated"] > 0 and whole.counts["reordered"] > 0
    assert whole.counts["lost"] > 0  # and b's bursts share timestamps across batches
    monkeypatch.setattr(agent_rows, "BATCH_ROWS", batch_rows)
    batched = figures(write_run(tmp_path / "batched", _rows(), window=WINDOW))[0]
    assert plain(batched) == plain(whole)


def test_rates_per_agent_clock(tmp_path):
    rows = [("p", "producer", 1, s, 0, 1_000 * s, None, None, False) for s in range(11)]
    rows += [("c", "consumer", 1, s, 0, 0, 5_000_000 + 2_000 * s, s, False) for s in range(11)]
    rows += [("c", "consumer", 1, 99, 0, 0, 0, 99, True)]  # warm-up: ignored
    got = figures(run_in(tmp_path, rows))[0].rate
    assert got["send_rate"] == pytest.approx(1e6)
    assert got["receive_rate"] == pytest.approx(5e5)
