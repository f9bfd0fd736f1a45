"""Agents holding several connections divide the load (docs/design.md, "Connections divide
the load"): a producer's connections share its rate, and each message reaches every
consumer once, over the consumer's connection on its lane; the accounting holds exactly
in every driver with several connections on both sides."""

from __future__ import annotations

from collections import Counter

import pyarrow.parquet as pq
import pytest

from sixnines.formats.manifest import Manifest
from sixnines.spark_jobs.agent_rows import message_paths
from sixnines.spark_jobs.analyze import analyze_run
from tests.integration.support import execute, points

pytestmark = pytest.mark.integration

CONNECTIONS, RATE = 4, 2000
SYSTEMS = {
    "tcp": "{name: tcp, driver: tcp}",
    "zmq": "{name: zmq, driver: zmq}",
    "redis": "{name: redis, driver: redis, broker: {recipe: redis}}",
    "nats": "{name: nats, driver: nats, broker: {recipe: nats}}",
    "rabbitmq": "{name: rabbitmq, driver: rabbitmq, broker: {recipe: rabbitmq}}",
    "kafka": "{name: kafka, driver: kafka, broker: {recipe: kafka-noida}}",
}


def _per_connection(run_dir) -> dict[str, Counter]:
    """Each consumer agent's measured receipts per connection (its consumer ids)."""
    manifest = Manifest.model_validate_json((run_dir / "manifest.json").read_text())
    found = {}
    for agent_id, (role, paths) in message_paths(run_dir, manifest).items():
        if role == "consumer":
            ids = Counter()
            for path in paths:
                ids.update(pq.read_table(path, columns=["consumer_id"])["consumer_id"]
                           .to_pylist())
            found[agent_id] = ids
    return found


@pytest.mark.parametrize("system", list(SYSTEMS))
def test_connections_divide_the_load_and_consumers_fan_out(system, tmp_path, spark):
    """One producer and two consumers with four connections each at 2,000 msg/s: each
    consumer receives the 2,000 messages once (not 8,000), each of its connections a
    producer connection's 500."""
    point = points(f"""
name: lanes
systems: [{SYSTEMS[system]}]
workload: {{message_size: 64, rate: {RATE}, duration: 1s, warmup: 0s,
            connections: {CONNECTIONS}, producers: 1, consumers: 2}}
""")[0]
    run_dir = tmp_path / "run"
    manifest = execute(point, run_dir)
    assert manifest["status"] == "ok", manifest["problems"]
    summary = analyze_run(spark, run_dir)
    assert summary["sent"] == RATE
    assert summary["received"] == summary["delivered"] == 2 * RATE
    assert summary["lost"] == summary["duplicated"] == summary["unexpected"] == 0
    per_connection = _per_connection(run_dir)
    assert len(per_connection) == 2
    for counts in per_connection.values():
        assert sorted(counts.values()) == [RATE // CONNECTIONS] * CONNECTIONS, counts


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
