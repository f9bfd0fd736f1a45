"""Agents holding several connections: each consumer connection is its own subscriber
(fan-out within one agent), and the analysis counts them as separate receivers."""

from __future__ import annotations

import pytest

from sixnines.spark_jobs.analyze import analyze_run
from tests.integration.support import execute, points

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("driver", ["tcp", "zmq"])
def test_a_consumer_with_two_connections_gets_everything_twice(driver, tmp_path, spark):
    point = points(f"""
name: conns
systems: [{{name: {driver}, driver: {driver}}}]
workload: {{message_size: 64, rate: 1000, duration: 1s, warmup: 0s, connections: 2,
            producers: 1, consumers: 1}}
""")[0]
    manifest = execute(point, tmp_path / "run")
    assert manifest["status"] == "ok", manifest["problems"]
    summary = analyze_run(spark, tmp_path / "run")
    assert summary["sent"] == 1000
    assert summary["received"] == 2000  # two subscribing connections, every message each
    assert summary["lost"] == summary["duplicated"] == summary["reordered"] == 0


def test_round_trip_over_several_connections(tmp_path, spark):
    point = points("""
name: conns-rt
systems: [{name: tcp, driver: tcp}]
workload: {mode: round-trip, message_size: 64, rate: 1000, duration: 1s, warmup: 0s,
           connections: 3}
""")[0]
    manifest = execute(point, tmp_path / "run")
    assert manifest["status"] == "ok", manifest["problems"]
    summary = analyze_run(spark, tmp_path / "run")
    assert summary["sent"] == summary["received"] == 999  # 333 per connection
    assert summary["lost"] == summary["duplicated"] == 0
