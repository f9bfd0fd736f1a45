"""Saturation warnings (spark_jobs/summarize.py): pure rules, no Spark needed."""

from __future__ import annotations

from spark_jobs.summarize import saturation_warnings


def figures(lag_p99_us: float) -> dict:
    return {"send_lag_us": {"p99": lag_p99_us}}


def test_a_large_send_lag_is_flagged():
    warnings = saturation_warnings(figures(5_000), 1000.0, {"rate": 1000, "schedule": "fixed"})
    assert len(warnings) == 1 and "send lag p99 is 5,000 µs" in warnings[0]


def test_a_shortfall_in_rate_is_flagged():
    warnings = saturation_warnings(figures(10), 800.0, {"rate": 1000, "schedule": "fixed"})
    assert len(warnings) == 1 and "sent 800 msg/s of the 1,000" in warnings[0]


def test_on_schedule_is_quiet():
    assert saturation_warnings(figures(10), 999.0, {"rate": 1000, "schedule": "poisson"}) == []


def test_a_closed_loop_waits_on_purpose():
    assert saturation_warnings(figures(50_000), 10.0, {"rate": 1000, "schedule": "closed"}) == []
