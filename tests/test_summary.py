"""The result summary's model (formats.summary): what the analysis writes validates against
its shipped schema, a run without its figures does not, and older summaries still load."""

from __future__ import annotations

import json

from sixnines.formats import summary
from sixnines.formats.summary import Figures, ResultsSummary, RunSummary
from tests.result_schemas import SUMMARY, violations

FIGURES = {"p50": 70.0, "p90": 80.0, "p99": 150.0, "p99.9": 1400.0, "p99.99": 3000.0,
           "p99.999": 3500.0, "p99.9999": 3500.0, "max": 3500.0, "mean": 75.5,
           "lower_median": 70.1, "robust_deviation": 4.5, "count": 20_000}
EMPTY = {**dict.fromkeys(FIGURES), "count": 0}
CPU_SIDE = {"us_per_message": FIGURES, "cores": 0.98, "empty_intervals": 0,
            "loop": {"running_s": 9.8, "waiting_s": 0.1, "blocked_s": 0.1}}


def analysed() -> RunSummary:
    """A run summary as the analysis writes it: every field."""
    return RunSummary.model_validate({
        "run_id": "01-tcp", "system": "tcp", "params": {"rate": 2000.0, "message_size": 64},
        "load": "open-loop",
        "broker": {"kind": "builtin", "recipe": None, "version": None, "note": None},
        "status": "ok", "problems": [], "notes": [], "sent": 20_000, "received": 20_000,
        "delivered": 20_000, "lost": 0,
        "unknown": 0, "duplicated": 0, "reordered": 0, "unexpected": 0,
        "warmup": {"sent": 100, "received": 100}, "send_rate": 2000.0, "receive_rate": 1999.9,
        "latency_us": FIGURES, "service_time_us": FIGURES, "send_lag_us": FIGURES,
        "behind_s": 0.0, "saturation_latency_us": EMPTY,
        "out_of_range": {"latency": {"negative": 0, "too_large": 0}},
        "latency_pairs": {"same_clock": 20_000, "cross_clock": 0, "excluded": 0},
        "clock_bound_ns": None, "hlog_agrees": True,
        "throughput": {"window": 100, "sender_msg_s": FIGURES, "receiver_msg_s": FIGURES,
                       "bytes_per_s": {"sender": 128_000.0, "receiver": None},
                       "zero_span_windows": {"sender": 0}},
        "density_us": 500.0, "humps": {"count": 1, "modes_us": [70.0]},
        "steadiness": {"windows": 10, "window_s": 1.0, "p99_low_us": 90.0,
                       "p99_median_us": 95.0, "p99_high_us": 99.0, "p99_max_us": 140.0,
                       "spread": 0.1, "unsteady": False},
        "cpu": {"sender": CPU_SIDE, "receiver": CPU_SIDE, "broker": None,
                "interval_ms": 1000.0, "notes": ["no broker CPU: the broker is external"]},
        "cpu_placement": ["host local: producer-0 on CPU 1; everything else sixnines runs "
                          "there keeps off CPU 1"],
        "warnings": []})


def test_what_the_writers_build_validates_and_keeps_its_shape():
    failed = RunSummary(run_id="02-zmq", system="zmq", params={}, status="failed",
                        problems=["the broker did not start"])
    document = json.loads(ResultsSummary(scenario="s", runs=[analysed(), failed]).text())
    assert violations(document, SUMMARY) == []
    assert document["schema_version"] == summary.SCHEMA_VERSION
    assert list(document["runs"][1]) == ["schema_version", "run_id", "system", "params",
                                         "status", "problems"]  # no figures, not nulls
    assert document["runs"][0]["latency_us"]["p99.9"] == 1400.0
    assert violations(document["runs"][0], SUMMARY, "RunSummary") == []


def test_the_schema_refuses_an_analysed_run_without_its_figures():
    run = analysed().as_json()
    del run["latency_us"], run["schema_version"]
    found = violations(run, SUMMARY, "RunSummary")
    assert any("'latency_us' is a required property" in line for line in found)
    assert any("'schema_version' is a required property" in line for line in found)


def test_older_summaries_still_load():
    """No schema_version (before it existed), no lower median (before the per-message
    analysis), keys a newer sixnines added: read as version 1, figures absent, extras
    ignored."""
    old = {"run_id": "01", "system": "tcp", "params": {}, "status": "ok",
           "latency_us": {"p50": 70, "count": 5}, "someday": 1}
    run = RunSummary.model_validate(old)
    assert run.schema_version == 1 and run.latency_us.lower_median is None
    assert run.latency_us.figure("p50") == 70.0 and run.figures("send_lag_us") == Figures()
    assert "someday" not in run.as_json()
