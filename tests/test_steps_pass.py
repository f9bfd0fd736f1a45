"""Figures per step of a shape of steps (spark_jobs/steps_pass.py) through the analysis'
passes over real record files (tests/analysis_rows): a message's latency belongs to the
step it was intended in, sends and receipts to the step they happened in."""

from __future__ import annotations

from sixnines.formats.vocabulary import Metric
from tests.analysis_rows import figures, run_in

#: seq: (intended, sent, recv) in ns from the start instant; warm-up before 100, steps
#: [100, 300) and [300, 500). Seq 3 is received late (in step 2), seq 5 sent late (in step 2).
TIMES = {0: (0, 5, 20), 1: (50, 55, 70), 2: (100, 105, 120), 3: (150, 155, 450),
         4: (200, 205, 220), 5: (250, 310, 325), 6: (300, 305, 320), 7: (350, 355, 370),
         8: (400, 405, 420), 9: (450, 455, 470)}
SHAPE = {"kind": "steps", "label": "steps", "steps": [1, 2], "segments": [
    {"start_ns": 0, "end_ns": 100, "rate": 1.0, "to": 1.0},
    {"start_ns": 100, "end_ns": 300, "rate": 1.0, "to": 1.0},
    {"start_ns": 300, "end_ns": 500, "rate": 2.0, "to": 2.0}]}


def test_each_step_has_its_messages_sends_and_receipts(tmp_path):
    rows = [("p", "producer", 0, seq, i, s, None, None, i < 100)
            for seq, (i, s, _) in TIMES.items()]
    rows += [("c", "consumer", 0, seq, i, s, r, seq, i < 100)
             for seq, (i, s, r) in TIMES.items()]
    agents = [{"id": "c", "role": "consumer", "t0_ns": 0},
              {"id": "p", "role": "producer", "first_id": 0, "t0_ns": 0}]
    run = run_in(tmp_path, rows, agents=agents,
                 workload={"warmup_ns": 100, "duration_ns": 400, "rate": 1.5, "shape": SHAPE})
    (figured,) = figures(run)
    first, second = figured.steps
    assert (first.sent, first.received) == (3, 2)  # sent at 105, 155, 205; got 120, 220
    assert (second.sent, second.received) == (5, 6)
    latency = first.metrics[Metric.LATENCY]
    assert (latency.count, latency.max, latency.total) == (4, 300, 20 + 300 + 20 + 75)
    assert first.metrics[Metric.SEND_LAG].max == 60
    assert second.metrics[Metric.LATENCY].count == 4
    assert second.metrics[Metric.LATENCY].total == 80


def test_a_run_without_steps_has_none(tmp_path):
    rows = [("p", "producer", 0, 0, 100, 105, None, None, False),
            ("c", "consumer", 0, 0, 100, 105, 120, 0, False)]
    agents = [{"id": "c", "role": "consumer", "t0_ns": 0},
              {"id": "p", "role": "producer", "first_id": 0, "t0_ns": 0}]
    (figured,) = figures(run_in(tmp_path, rows, agents=agents,
                                workload={"warmup_ns": 0, "duration_ns": 400, "rate": 1.0}))
    assert figured.steps is None
