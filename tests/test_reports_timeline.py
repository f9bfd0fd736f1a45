"""A run's timeline plot (orchestrator/reports/timeline.py): latency per interval on the
left, the receive rate against the rate the schedule intended on a right-hand axis, in the
page and in the gnuplot script; a shape read from an untrusted summary.json draws no
intended line when it is no shape."""

from __future__ import annotations

import re

from sixnines.formats.summary import RunSummary
from sixnines.orchestrator.reports import gnuplot, timeline
from sixnines.orchestrator.reports.inputs import RunInputs
from sixnines.orchestrator.reports.per_run import figures, lacking
from sixnines.orchestrator.reports.svg import render

S = 1_000_000_000
#: 0.5 s of warm-up at 100 msg/s, then a burst of 1k from 1 s to 1.2 s of the measured time
SHAPE = {"kind": "bursts", "label": "100 msg/s, bursts of 1k for 200ms every 1s",
         "segments": [{"start_ns": 0, "end_ns": S // 2, "rate": 100.0, "to": 100.0},
                      {"start_ns": S // 2, "end_ns": 3 * S // 2, "rate": 100.0, "to": 100.0},
                      {"start_ns": 3 * S // 2, "end_ns": 17 * S // 10, "rate": 1000.0,
                       "to": 1000.0},
                      {"start_ns": 17 * S // 10, "end_ns": 5 * S // 2, "rate": 100.0,
                       "to": 100.0}],
         "steps": []}
TIMELINE = {"t_s": [0.0, 0.5, 1.0, 1.5], "p50_us": [10.0, 12.0, 900.0, 20.0],
            "p99_us": [15.0, 20.0, 1500.0, 30.0], "max_us": [20.0, 30.0, 2000.0, 40.0],
            "received_msg_s": [100.0, 110.0, 950.0, 100.0]}


def run(params: dict, series: dict | None = None) -> RunInputs:
    return RunInputs(RunSummary(run_id="01-tcp", params={"warmup_ns": S // 2, **params}),
                     series={"timeline": TIMELINE} if series is None else series)


def test_a_shaped_run_plots_latency_and_receive_rate_against_its_intended_rate():
    figure = timeline.figure(run({"rate": 280.0, "shape": SHAPE}), "run-01")
    assert figure is not None and figure.slug == "run-01-timeline"
    assert figure.y.scale == "log" and figure.y2 is not None and figure.y2.scale == "linear"
    p50, p99, highest, received, intended = figure.lines
    assert not (p50.right or p99.right or highest.right) and received.right and intended.right
    assert received.ys == [100.0, 110.0, 950.0, 100.0] and p99.xs == TIMELINE["t_s"]
    # the shape counts from the start instant, the timeline from the measured start: the
    # warm-up's segment is left out and the burst lands at 1 s
    corners = {(round(x, 6), y) for x, y in zip(intended.xs, intended.ys, strict=True)}
    assert {(0, 100), (1, 100), (1, 1000), (1.2, 1000), (1.2, 100), (2, 100)} <= corners
    assert all(y == (1000 if 1 < x < 1.2 else 100) for x, y in corners if x not in (1, 1.2))
    assert min(intended.xs) == 0 and len(intended.xs) >= 300  # a point near the cursor
    assert "100 msg/s, bursts of 1k" in figure.title and "per 500 ms interval" in figure.title
    assert figure.extent_y2 is not None and figure.extent_y2[1] >= 1000
    page = render(figure)
    assert page.count('data-r="1"') == 2 and 'data-y2s="linear"' in page
    assert re.search(r'rotate\(90\)" text-anchor="middle">messages/s</text>', page)
    script = gnuplot.script(figure)
    assert script.count("axes x1y2") == 2 and "set logscale y 10" in script


def test_a_constant_rate_is_drawn_over_the_measured_time():
    figure = timeline.figure(run({"rate": 500, "duration_ns": 2 * S}), "run-01")
    assert figure is not None
    assert (figure.lines[-1].xs, figure.lines[-1].ys) == ([0.0, 2.0], [500.0, 500.0])
    saturation = timeline.figure(run({"rate": "max", "duration_ns": 2 * S}), "run-01")
    assert saturation is not None and [line.name for line in saturation.lines][-1] == \
        "received msg/s"  # nothing scheduled: no intended line


def test_the_timeline_comes_first_and_is_missed_when_a_shaped_run_lacks_it():
    shaped = run({"shape": SHAPE})
    assert [figure.slug for figure in figures(shaped, "run-01")] == ["run-01-timeline"]
    assert lacking(shaped, "run-01") == 4  # the per-message plots' data is absent here
    old = run({"shape": SHAPE}, series={})  # analysed before shapes had a timeline
    assert figures(old, "run-01") == [] and lacking(old, "run-01") == 5
    assert lacking(run({"rate": 100}, series={}), "run-01") == 4  # no timeline expected


def test_a_shape_that_is_no_shape_draws_no_intended_line_and_allocates_nothing():
    """summary.json is untrusted: a segment running 30 years before a last one of 1 ns
    would ask for ~10^20 points of the line; unordered or unfinished segments are no
    shape either."""
    far = {**SHAPE, "segments": [{"start_ns": 0, "end_ns": 10**18, "rate": 1.0, "to": 1.0},
                                 {"start_ns": 0, "end_ns": 1, "rate": 1.0, "to": 1.0}]}
    missing = {**SHAPE, "segments": [{"start_ns": 0, "end_ns": S}]}
    for shape in (far, missing, {"segments": "many"}, ["no"]):
        shaped = run({"shape": shape})
        assert timeline.intended(shaped.summary) is None
        figure = timeline.figure(shaped, "run-01")
        assert figure is not None and "intended msg/s" not in [line.name for line in figure.lines]
