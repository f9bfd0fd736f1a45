"""The CPU part of the HTML report: the per-run CPU table and the "CPU per message over the
run" plot with its gnuplot files, from a synthetic run."""

from __future__ import annotations

import json
from pathlib import Path

from sixnines.formats.summary import RunSummary
from sixnines.orchestrator.reports import write_reports
from tests.test_reports_html import series, summary


def _side(mean: float, cores: float) -> dict:
    figures = {key: mean for key in ("p50", "p90", "p99", "p99.9", "p99.99", "p99.999",
                                     "p99.9999", "max", "lower_median", "robust_deviation")}
    return {"us_per_message": {**figures, "mean": mean, "count": 90}, "cores": cores,
            "empty_intervals": 3}


def test_cpu_table_and_plot(tmp_path: Path) -> None:
    results = tmp_path / "cpu" / "20260101-120000"
    usage = {"sender": _side(501.5, 1.003), "receiver": _side(12.25, 0.0245), "broker": None,
             "interval_ms": 100.0, "notes": ["no broker CPU: the broker is external <b>"]}
    run = summary("01-tcp", "tcp", 64, 70.0, cpu=usage)
    (results / "01-tcp" / "report").mkdir(parents=True)
    curves = {"sender": {"t_s": [1.05, 1.15, 1.25], "us_per_message": [500.0, 502.0, 499.0]},
              "receiver": {"t_s": [1.05, 1.15], "us_per_message": [12.0, 12.5]}}
    (results / "01-tcp" / "report" / "series.json").write_text(
        json.dumps({**series(1, 100, bimodal=False), "cpu": curves}))
    page = write_reports(results, [RunSummary.model_validate(run)]).read_text(encoding="utf-8")
    assert "CPU µs per message" in page and "501.5" in page and "1.003" in page
    assert "12.2" in page  # receiver mean, one decimal like every µs figure
    assert "no samples" in page  # the broker row
    assert "the broker is external &lt;b&gt;" in page
    assert "01-tcp: CPU per message over the run" in page
    data = (results / "report" / "run-01-tcp-cpu.dat").read_text()
    assert "502" in data and "12.5" in data
    assert (results / "report" / "run-01-tcp-cpu.gp").is_file()
