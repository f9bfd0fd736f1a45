"""A shaped run's plot (orchestrator/reports/per_run.py `against_shape`): the intended rate,
the rates achieved and latency on one time axis, latency on a right-hand axis in the page
and in the gnuplot script."""

from __future__ import annotations

import re

from sixnines.formats.summary import RunSummary
from sixnines.orchestrator.reports import gnuplot
from sixnines.orchestrator.reports.inputs import RunInputs
from sixnines.orchestrator.reports.per_run import against_shape, figures
from sixnines.orchestrator.reports.svg import render

S = 1_000_000_000
SHAPE = {"kind": "bursts", "label": "100 msg/s, bursts of 1k for 200ms every 1s",
         "segments": [{"start_ns": 0, "end_ns": 1 * S, "rate": 100.0, "to": 100.0},
                      {"start_ns": 1 * S, "end_ns": S + S // 5, "rate": 1000.0, "to": 1000.0},
                      {"start_ns": S + S // 5, "end_ns": 2 * S, "rate": 100.0, "to": 100.0}],
         "steps": []}
SERIES = {"latency": {"n": [0, 50, 100], "t_s": [0.1, 1.1, 1.5], "min_us": [5, 6, 7],
                      "mean_us": [10.0, 900.0, 20.0], "max_us": [20, 2000, 30]},
          "receiver_throughput": {"t_s": [0.5, 1.1, 1.5], "msg_s": [100.0, 950.0, 110.0]}}


def run(shape: dict | None) -> RunInputs:
    params = {"rate": 280.0, **({"shape": shape} if shape else {})}
    return RunInputs(RunSummary(run_id="01-tcp", params=params), series=SERIES)


def test_a_shaped_run_plots_its_intended_rate_against_what_it_got():
    figure = against_shape(run(SHAPE), "run-01")
    assert figure is not None and figure.y2 is not None and figure.y2.scale == "log"
    intended, received, latency = figure.lines
    corners = {(round(x, 6), y) for x, y in zip(intended.xs, intended.ys, strict=True)}
    assert {(0, 100), (1, 100), (1, 1000), (1.2, 1000), (1.2, 100), (2, 100)} <= corners
    assert all(y == (1000 if 1 < x < 1.2 else 100) for x, y in corners if x not in (1, 1.2))
    assert len(intended.xs) >= 400  # a point near wherever the cursor is
    assert received.ys == [100.0, 950.0, 110.0] and not received.right
    assert latency.right and latency.xs == [0.1, 1.1, 1.5]
    assert figure.extent[1][1] >= 1000 and figure.extent_y2 == (10.0, 1000.0)
    page = render(figure)
    assert page.count('data-r="1"') == 1 and "data-y2s=\"log\"" in page
    assert re.search(r'rotate\(90\)" text-anchor="middle">latency \(µs\)</text>', page)
    script = gnuplot.script(figure)
    assert "axes x1y2" in script and "set y2range [10:1000]" in script


def test_a_run_without_a_shape_has_no_such_plot():
    assert against_shape(run(None), "run-01") is None
    assert not [f for f in figures(run(None), "run-01") if f.slug.endswith("-shape")]
    assert figures(run(SHAPE), "run-01")[0].slug == "run-01-shape"


def test_a_shape_that_is_no_shape_draws_no_plot_and_allocates_nothing():
    """summary.json is untrusted: a segment running 30 years before a last one of 1 ns
    would ask for ~10^20 points of the line; unordered or unfinished segments are no
    shape either."""
    far = {**SHAPE, "segments": [{"start_ns": 0, "end_ns": 10**18, "rate": 1.0, "to": 1.0},
                                 {"start_ns": 0, "end_ns": 1, "rate": 1.0, "to": 1.0}]}
    missing = {**SHAPE, "segments": [{"start_ns": 0, "end_ns": S}]}
    for shape in (far, missing, {"segments": "many"}, ["no"]):
        assert against_shape(run(shape), "run-01") is None  # type: ignore[arg-type]
