"""Console tables (orchestrator/report.py)."""

from __future__ import annotations

import io

from rich.console import Console

from orchestrator.report import run_table, supported


def test_a_percentile_needs_a_sample_above_it():
    assert supported("p99.99", 10_000)
    assert not supported("p99.999", 10_000)
    assert supported("p99.9999", 1_000_000)
    assert supported("max", 1)


def test_the_table_shows_every_figure_and_marks_unsupported_ones():
    figures = {"p50": 70.0, "p90": 80.0, "p99": 150.0, "p99.9": 1400.0, "p99.99": 3000.0,
               "p99.999": 3500.0, "p99.9999": 3500.0, "max": 3500.0, "mean": 75.0,
               "count": 20_000}
    summary = {"run_id": "01-tcp", "status": "ok", "sent": 20_000, "received": 20_000,
               "lost": 0, "duplicated": 0, "reordered": 0, "send_rate": 2000.0,
               "receive_rate": 2000.0, "latency_us": figures, "service_time_us": figures,
               "send_lag_us": figures}
    out = io.StringIO()
    Console(file=out, width=140).print(run_table(summary))
    text = out.getvalue()
    for header in ("p50", "p99.9999", "max", "count", "latency", "send lag"):
        assert header in text
    assert "3,500" in text and "20,000" in text
    assert "too few samples" in text
