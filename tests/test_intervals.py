"""A run counted per interval (spark_jobs.intervals) by the agents' passes: the counts
add up to the run's own accounting."""

from __future__ import annotations

from sixnines.spark_jobs import delivery, faults
from sixnines.spark_jobs import grid as grid_module
from tests.analysis_rows import figures as analysed
from tests.analysis_rows import run_in, tiny_rows


def test_the_intervals_account_for_every_message_as_the_run_does(tmp_path, monkeypatch):
    """Counted per interval by the agents' passes, a run's messages add up to its own
    accounting: the same matching, reorder flags and unknown deliveries of a consumer
    that died (tests/test_delivery.py: its seqs 3 and 4 unknown), so a window over the
    whole run counts what the run does."""
    monkeypatch.setattr(grid_module, "RESOLUTION_NS", 100)
    died = ("c", "consumer", 1, 2, 200, 205, 220, 0, False)
    agents = [{"id": name, "role": "consumer", "t0_ns": 0} for name in "abc"]
    agents.append({"id": "p", "role": "producer", "first_id": 1, "t0_ns": 0})
    expected = delivery.Expected(3, dead=delivery.Dead((delivery.Watched(2, 1),)))
    run = run_in(tmp_path, [*tiny_rows(), died], expected, agents=agents,
                 workload={"warmup_ns": 100, "duration_ns": 500},
                 faults=[{"index": 0, "action": "pause", "target": "broker", "at_ns": 0}])
    whole = analysed(run)[0]
    found = whole.intervals
    assert found is not None and len(found.latency_max) == 5
    sums = {name: int(values.sum()) for name, values in found.counts.items()}
    assert sums["late"] == whole.counts["unknown"] == 2
    # all but the receipt of a producer the manifest does not place (unexpected)
    assert sums["timed"] == whole.metrics["latency"].count - whole.counts["unexpected"] == 10
    window = faults.window_delivery(found, (0, 5), run.expected)
    counted = window.model_dump(exclude={"lost_acknowledged"})
    assert counted == {name: whole.counts[name] for name in counted}
    assert window.lost_acknowledged is None  # no producer recorded acknowledgements
    assert (window.lost, window.unknown, window.duplicated) == (2, 2, 2)
