"""`sixnines run` with message sizes drawn from a weighted distribution, as a user runs it,
on the builtin tcp relay and zmq proxy, NATS, Redis, RabbitMQ and a Kafka-protocol broker:
every message arrives, each one's recorded size is the size its sender's ring drew for it
(formats.sizes, recomputed here from the seed), the manifest records the distribution and
the drawn histogram, and bytes/s is reported."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from sixnines.formats.layout import MANIFEST_FILE
from sixnines.formats.sizes import CHOICES, DrawnSizes, Sizes
from sixnines.orchestrator.results.store import find_run_dirs
from tests.faults.support import sixnines

pytestmark = pytest.mark.integration

SEED = 11
WEIGHTS = {64: 0.6, 1024: 0.3, 16384: 0.1}
SCENARIO = f"""\
name: sizes
systems: [{{system}}]
workload:
  message_size: {{{{64: 0.6, 1KB: 0.3, 16KB: 0.1}}}}
  rate: 300
  duration: 1s
  warmup: 200ms
  drain: 3s
  seed: {SEED}
"""
SYSTEMS = {
    "tcp": "{name: tcp, driver: tcp, broker: builtin}",
    "zmq": "{name: zmq, driver: zmq, broker: builtin}",
    "nats": "{name: nats, driver: nats, broker: {recipe: nats}}",
    "nats-jetstream": "{name: nats, driver: nats, broker: {recipe: nats}, "
                      "options: {mode: jetstream}}",
    "redis-streams": "{name: redis, driver: redis, broker: {recipe: redis}, "
                     "options: {mode: streams}}",
    "redis-pubsub": "{name: redis, driver: redis, broker: {recipe: redis}}",
    "rabbitmq": "{name: rabbitmq, driver: rabbitmq, broker: {recipe: rabbitmq}}",
    "kafka": "{name: kafka, driver: kafka, broker: {recipe: kafka-noida}}",
}


def records(agent_dir: Path) -> dict[str, np.ndarray]:
    table = pq.read_table(sorted(agent_dir.glob("messages-*.parquet")))
    return {name: table[name].to_numpy() for name in ("producer_id", "seq", "size")}


@pytest.mark.parametrize("system", sorted(SYSTEMS))
def test_every_message_arrives_at_the_size_drawn_for_it(tmp_path: Path, system: str) -> None:
    (tmp_path / "s.yaml").write_text(SCENARIO.format(system=SYSTEMS[system]))
    done = sixnines("run", "s.yaml", "--output", "runs", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "MB/s" in done.stderr and " - MB/s" not in done.stderr
    (run_dir,) = find_run_dirs(tmp_path / done.stdout.strip().splitlines()[-1])
    manifest = json.loads((run_dir / MANIFEST_FILE).read_text())
    assert manifest["status"] == "ok", manifest["problems"]
    (sender,) = [a for a in manifest["agents"] if a["role"] == "producer"]
    (receiver,) = [a for a in manifest["agents"] if a["role"] == "consumer"]
    assert receiver["received"] == sender["sent"] > 0

    drawn = DrawnSizes(Sizes(CHOICES, values=tuple(WEIGHTS), weights=tuple(WEIGHTS.values())),
                       SEED)
    sent, got = (records(run_dir / "agents" / agent["id"]) for agent in (sender, receiver))
    for side in (sent, got):
        assert np.array_equal(side["size"], drawn.column(side["producer_id"], side["seq"]))
    assert Counter(got["size"].tolist()) == Counter(sent["size"].tolist())
    assert set(got["size"].tolist()) == set(WEIGHTS)  # every size of the mix went

    sizes = manifest["sizes"]
    ring = drawn.ring(sender["first_id"])
    assert sizes["distribution"]["values"] == list(WEIGHTS)
    assert sizes["drawn"] == len(ring) and sizes["largest"] == 16384
    assert sum(sizes["histogram"].values()) == len(ring)
    assert sizes["histogram"]["2^14"] == int((ring == 16384).sum())

    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    assert summary["sizes"] == sizes
    received_bytes = summary["throughput"]["bytes_per_s"]["receiver"]
    expected = summary["receive_rate"] * float(got["size"].mean())
    assert received_bytes == pytest.approx(expected, rel=0.25)
