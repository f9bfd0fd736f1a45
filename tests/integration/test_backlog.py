"""A backlog built and drained as a user runs it: the real CLI against Kafka (noida-db) and
RabbitMQ started from their recipes, consumers held while producers keep 1,000 msg/s
until 1,000 messages are queued, then released; and a bound too short for any drain,
which gets its verdict (draining 1,024 messages within 1 ms would take a consumer
receiving a million a second)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from sixnines.formats.chunks import message_files
from sixnines.formats.manifest import Manifest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

RELEASE_S = 1.0  # 1,000 messages at 1,000 msg/s from the start (no warm-up)
SCENARIO = """
name: backlog
systems:
  - {name: kafka, driver: kafka, broker: {recipe: kafka-noida}}
  - {name: rabbitmq, driver: rabbitmq, broker: {recipe: rabbitmq}}
workload: {message_size: 100, rate: 1k, warmup: 0, duration: 2s, drain: 2s}
cases:
  - {name: drains, backlog: {build: 1k messages, drain_within: 1s}}
  - {name: bound, backlog: {build: 100KB, drain_within: 1ms}}
"""


@pytest.fixture(scope="module")
def backlog_runs(tmp_path_factory) -> tuple[Path, str, dict[str, dict]]:
    work = tmp_path_factory.mktemp("backlog")
    (work / "backlog.yaml").write_text(SCENARIO)
    done = subprocess.run([sys.executable, "-m", "sixnines", "run", "backlog.yaml", "--output",
                           str(work / "out")], cwd=work, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    results = Path(done.stdout.strip().splitlines()[-1])
    runs = json.loads((results / "summary.json").read_text())["runs"]
    return results, done.stdout + done.stderr, {run["run_id"]: run for run in runs}


def first_receipt_s(run_dir: Path) -> float:
    """When the consumer's first message came, s after the producer's first intended time
    (the start instant: one producer, no phase, one host's clock)."""
    manifest = Manifest.model_validate_json((run_dir / "manifest.json").read_text())
    column: dict[str, list[int]] = {"producer": [], "consumer": []}
    for agent in manifest.agents:
        if agent.role in column:
            name = "intended_ns" if agent.role == "producer" else "recv_ns"
            for path in message_files(run_dir / "agents" / agent.id):
                column[agent.role] += pq.read_table(path, columns=[name]).column(0).to_pylist()
    return (np.min(column["consumer"]) - np.min(column["producer"])) / 1e9


@pytest.mark.parametrize("system", ["kafka", "rabbitmq"])
def test_the_backlog_builds_while_consumers_hold_then_drains(backlog_runs, system):
    results, console, runs = backlog_runs
    number = {"kafka": "01", "rabbitmq": "03"}[system]
    run = runs[f"{number}-{system}-drains"]
    assert run["status"] == "ok", run["problems"]
    assert run["lost"] == 0 and run["received"] == run["sent"] == 2000
    backlog = run["backlog"]
    # what was sent before the release, none of it read (a send or two may go late)
    assert 950 <= backlog["built_messages"] <= 1000
    assert backlog["built_bytes"] == 100 * backlog["built_messages"]
    assert backlog["released_at_s"] == RELEASE_S and backlog["drain_within_s"] == 1.0
    assert first_receipt_s(results / run["run_id"]) >= RELEASE_S - 0.001
    assert backlog["drained"] is True, backlog["verdict"]
    assert 0 < backlog["drained_in_s"] < 1.0
    assert backlog["drained_at_s"] == pytest.approx(RELEASE_S + backlog["drained_in_s"])
    # (a drain of a few ms may see no send: the producers go at one a ms)
    assert backlog["drain_rate"] > max(backlog["send_rate"], 1000)
    assert backlog["verdict"].startswith(f"drained {backlog['built_messages']:,} messages")
    # the backlog's messages waited for the release (half a second on average), the live
    # ones did not
    held, live = backlog["backlog_latency_us"], backlog["live_latency_us"]
    assert held["count"] == 1000 and held["p50"] > 300_000
    assert live["count"] > 0 and live["p50"] < held["p50"] / 10
    assert "backlog: " in console and "live messages" in console
    assert "backlog 1000 messages, drained within 1 s" in console


@pytest.mark.parametrize("system", ["kafka", "rabbitmq"])
def test_a_drain_longer_than_its_bound_gets_a_verdict(backlog_runs, system):
    """100 KB is 1,024 messages of 100 B, built by 1.024 s; no consumer drains them in
    1 ms."""
    _, _, runs = backlog_runs
    number = {"kafka": "02", "rabbitmq": "04"}[system]
    run = runs[f"{number}-{system}-bound"]
    assert run["status"] == "ok", run["problems"]
    backlog = run["backlog"]
    assert backlog["released_at_s"] == pytest.approx(1.024)
    assert backlog["drained"] is False
    assert backlog["drained_at_s"] is None and backlog["drained_in_s"] is None
    assert backlog["left_messages"] > 0
    assert backlog["verdict"].startswith("not drained within 0.001 s: consumers at")
    assert backlog["live_latency_us"]["count"] == 0
    # it did drain once the bound was past: every message arrived
    assert run["lost"] == 0 and run["received"] == run["sent"]
