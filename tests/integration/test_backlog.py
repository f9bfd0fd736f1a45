"""A backlog built and drained as a user runs it: the real CLI against Kafka (noida-db) and
RabbitMQ started from their recipes, consumers held while producers keep 1,000 msg/s
until 1,000 messages are queued, then released; a bound too short for any drain, which
gets its verdict (draining 1,024 messages within 1 ms would take a consumer receiving a
million a second); and on Redis streams a backlog of sizes that vary, built in bytes."""

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
from sixnines.formats.sizes import CHOICES, DrawnSizes, Sizes

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


def run_scenario(work: Path, scenario: str) -> tuple[Path, str, dict[str, dict]]:
    """`sixnines run` of `scenario` in `work`, which went well: its results directory,
    its console and its runs' summaries by run id."""
    (work / "backlog.yaml").write_text(scenario)
    done = subprocess.run([sys.executable, "-m", "sixnines", "run", "backlog.yaml", "--output",
                           str(work / "out")], cwd=work, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    results = Path(done.stdout.strip().splitlines()[-1])
    runs = json.loads((results / "summary.json").read_text())["runs"]
    return results, done.stdout + done.stderr, {run["run_id"]: run for run in runs}


@pytest.fixture(scope="module")
def backlog_runs(tmp_path_factory) -> tuple[Path, str, dict[str, dict]]:
    return run_scenario(tmp_path_factory.mktemp("backlog"), SCENARIO)


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


def test_a_backlog_of_sizes_that_vary_is_built_in_bytes_of_their_mean(tmp_path):
    """Redis streams, sizes of 64 and 256 B (3 to 1: a mean of 112 B): a build of 112,000
    bytes is 1,000 messages, released at 1 s; the bytes built are the sizes the producer's
    ring drew for the messages it sent before the release."""
    sizes = Sizes(CHOICES, values=(64, 256), weights=(3.0, 1.0))
    results, console, runs = run_scenario(tmp_path, """
name: sized-backlog
systems:
  - {name: redis, driver: redis, broker: {recipe: redis}, options: {mode: streams}}
workload: {message_size: {64: 3, 256: 1}, rate: 1k, warmup: 0, duration: 2s, drain: 2s,
           seed: 5, backlog: {build: 112000B, drain_within: 1s}}
""")
    ((run_id, run),) = runs.items()
    assert run["status"] == "ok", run["problems"]
    assert run["lost"] == 0 and run["received"] == run["sent"] == 2000
    backlog = run["backlog"]
    assert backlog["released_at_s"] == RELEASE_S
    assert 950 <= backlog["built_messages"] <= 1000
    drawn = DrawnSizes(sizes, 5).column(np.zeros(backlog["built_messages"], np.int32),
                                        np.arange(backlog["built_messages"]))
    assert backlog["built_bytes"] == int(drawn.sum()) != 112 * backlog["built_messages"]
    assert first_receipt_s(results / run_id) >= RELEASE_S - 0.001
    assert backlog["drained"] is True, backlog["verdict"]
    assert "backlog 109.4 KB, drained within 1 s" in console
