"""A run with faults in the report: its timeline plot with each fault's window shaded
and labelled and its recovery marked, on the page and in the gnuplot files, and its fault
table."""

from __future__ import annotations

from sixnines.formats.summary import RunSummary
from sixnines.orchestrator.reports import gnuplot, per_run, svg, timeline
from sixnines.orchestrator.reports.faults import fault_table
from sixnines.orchestrator.reports.inputs import RunInputs

WINDOW = {"from_s": 0.0, "to_s": 1.0, "count": 100, "p50_us": 50.0, "p90_us": 60.0,
          "p99_us": 80.0, "p99.9_us": 90.0, "max_us": 95.0}
TIMELINE = {"t_s": [0.0, 0.01, 0.02, 0.03], "p50_us": [50.0, 9e5, 4e5, 60.0],
            "p99_us": [80.0, 9.9e5, 4e5, 90.0], "max_us": [90.0, 1e6, 4e5, 95.0],
            "received_msg_s": [1000.0, 0.0, 3000.0, 1000.0]}


def summary(*faults: dict) -> RunSummary:
    return RunSummary.model_validate({"run_id": "01-tcp", "status": "ok", "faults": list(faults)})


def pause(index: int, recovered_s: float | None) -> dict:
    return {"index": index, "action": "pause", "target": "broker", "outcome": "done",
            "at_s": 0.01, "effective_s": 0.01, "end_s": 0.02, "interval_ms": 10.0,
            "before": WINDOW, "during": WINDOW, "after": WINDOW, "max_in_window_us": 1e6,
            "band_us": 1100.0, "recovered": recovered_s is not None,
            "recovered_s": recovered_s, "backlog": 10, "drained_s": 0.01,
            "delivery": {"sent": 10, "delivered": 9, "lost": 1, "unknown": 0,
                         "duplicated": 0, "reordered": 0}}


def test_the_timeline_shades_each_fault_and_marks_its_recovery(tmp_path):
    run = RunInputs(summary(pause(0, 0.01), {"index": 1, "action": "kill",
                                             "target": "consumer-0", "outcome": "failed",
                                             "at_s": 0.03, "note": "no such process"}),
                    {"timeline": TIMELINE})
    figure = timeline.figure(run, "run-01")
    assert figure is not None and figure.slug == "run-01-timeline"
    assert [shade.label for shade in figure.shades] == ["fault 0: pause broker"]
    assert (figure.shades[0].x0, figure.shades[0].x1) == (0.01, 0.02)
    assert [marker.x for marker in figure.markers] == [0.03]
    assert [line.name for line in figure.lines if line.right] == ["received msg/s"]
    page = svg.render(figure)
    assert 'class="shade"' in page and "fault 0: pause broker</text>" in page
    script = gnuplot.script(figure)
    assert "rect from 0.01, graph 0 to 0.02, graph 1" in script
    assert "'0: recovered +10 ms'" in script
    assert per_run.lacking(run, "run-01") == len(per_run.BUILDERS)  # its own plots: none
    assert per_run.figures(run, "run-01") == [figure]


def test_a_fault_that_never_recovered_has_no_marker_and_says_so():
    run = summary(pause(0, None))
    figure = timeline.figure(RunInputs(run, {"timeline": TIMELINE}), "r")
    assert figure is not None
    assert figure.markers == () and "never recovered: fault 0" in figure.caption
    table = fault_table(run)
    assert '<span class="bad">never</span>' in table and "<td>1</td>" in table  # 1 lost


def test_a_run_without_faults_has_no_fault_table():
    assert fault_table(summary()) == ""
