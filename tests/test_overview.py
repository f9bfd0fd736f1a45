"""The end of the console output (orchestrator/results/overview.py): the side-by-side
table and its one-word verdicts. The setups it prints are tested through a real run
(tests/integration/test_setup_shared_and_compared.py) and in the report
(tests/test_reports_html.py)."""

from __future__ import annotations

import io

from rich.console import Console

from sixnines.formats.summary import RunSummary
from sixnines.orchestrator.results.overview import side_by_side, verdict
from tests.test_console_tables import FIGURES, SUMMARY


def _case(run_id: str, system: str, **fields) -> RunSummary:
    """A run of SUMMARY's figures (send lag p99 150 µs: on schedule), 64-byte messages."""
    return RunSummary.model_validate({**SUMMARY, "run_id": run_id, "system": system,
                                      "params": {"message_size": 64, "rate": 2000.0},
                                      **fields})


def test_the_side_by_side_table_gives_each_case_a_verdict():
    """A line per system and case: p50 … max, msg/s, MB/s, lost, one word; what each word
    other than a status means is in the caption."""
    late = {**FIGURES, "p99": 4000.0}  # send lag p99 over 1 ms: behind the schedule
    loops = {"running_s": 0.5, "waiting_s": 0.0, "blocked_s": 2.0}  # blocked in sends
    pushed_back = {"sender": {"us_per_message": FIGURES, "cores": 0.2, "empty_intervals": 0,
                              "loop": loops}, "receiver": None, "broker": None,
                   "interval_ms": 1000.0, "notes": []}
    runs = [_case("01-tcp", "tcp"),
            _case("02-zmq", "zmq", lost=3),
            _case("03-nats", "nats", send_lag_us=late, behind_s=1.5, cpu=pushed_back),
            _case("04-kafka", "kafka", status="partial", unknown=40)]
    out = io.StringIO()
    Console(file=out, width=80).print(side_by_side(runs))
    rows = {line.split()[0]: line.split() for line in out.getvalue().splitlines()
            if line.split() and line.split()[0] in ("tcp", "zmq", "nats", "kafka")}
    assert rows["tcp"] == ["tcp", "70.0", "150.0", "1,400.0", "3,500.0", "2,000", "0.122",
                           "0", "ok"]
    assert (rows["zmq"][-2:], rows["nats"][-1], rows["kafka"][-1]) == (
        ["3", "lossy"], "saturated", "partial")
    caption = " ".join(out.getvalue().split())
    assert "lossy: messages lost" in caption and "saturated: the system pushed back" in caption
    assert verdict(_case("05-tcp", "tcp", send_lag_us=late, behind_s=1.5)) == "behind"
