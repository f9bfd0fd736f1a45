"""What the tests of a run's own broker resources share (tests/integration/
test_run_resources.py, tests/faults/test_broker_resources.py): brokers started from their
recipes once per module and given to runs as external (so every run meets what the runs
before it left), a one-system scenario, `sixnines run` as a user runs it, and what of a
run's names is still on a broker, asked with each system's own client."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pika
import pika.exceptions
import pytest
import redis

from sixnines.drivers.kafka import KafkaDriver, KafkaOptions
from tests.integration.support import external, recipe_server

#: The sweep's second value. 25 (the sweep this guards) passes on Kafka too, but its 25
#: librdkafka consumers and producers take ~150 s to be ready on this 2-core machine
#: (2026-11-28; the agents' ready timeout grows with connections for it): too long for the
#: suite. Four keeps what matters: the second run needs more partitions (lanes) than the
#: first run's topic had.
MANY = 4
RATE = 400  # msg/s over 1 s: a short run, each lane some 100 messages
SYSTEMS = {  # system -> (recipe, options)
    "kafka": ("kafka-noida", "{}"),
    "redis": ("redis", "{mode: streams}"),
    "nats": ("nats", "{mode: jetstream}"),
    "rabbitmq": ("rabbitmq", "{}"),
}


@pytest.fixture(scope="module")
def brokers(tmp_path_factory):
    """A started broker per system, by need: {system: address}."""
    started, stack = {}, []

    def address(system: str) -> str:
        if system not in started:
            server = recipe_server(SYSTEMS[system][0], tmp_path_factory.mktemp(system))
            started[system] = server.__enter__().address
            stack.append(server)
        return started[system]

    yield address
    for server in reversed(stack):
        server.__exit__(None, None, None)


def scenario(path: Path, system: str, address: str, connections: str,
             options: str | None = None, extra: str = "", workload: str = "") -> Path:
    """A one-system scenario against `address`; `extra` adds to the system's mapping,
    `workload` to the workload's."""
    options = options or SYSTEMS[system][1]
    path.write_text(f"""
name: sweep-{system}
systems:
  - {{name: {system}, driver: {system}, broker: {external(address)}, options: {options}{extra}}}
workload: {{message_size: 64, rate: {RATE}, duration: 1s, warmup: 0s, drain: 2s,
           connections: {connections}{workload}}}
""")
    return path


def run(path: Path, out: Path) -> tuple[subprocess.CompletedProcess, list[Path]]:
    """`sixnines run` as a user runs it (analysis apart, in the tests' Spark session); the
    run directories in run order."""
    done = subprocess.run([sys.executable, "-m", "sixnines", "run", str(path), "--output",
                           str(out), "--no-analysis"], capture_output=True, text=True,
                          timeout=240)
    return done, sorted(p.parent for p in out.glob("*/*/*/manifest.json"))


def manifest(run_dir: Path) -> dict:
    return json.loads((run_dir / "manifest.json").read_text())


# --- what is on a broker ------------------------------------------------------------------

def on_broker(system: str, address: str, name: str) -> list[str]:
    """What of a run's name `name` is on the broker (topics, keys, streams, exchanges)."""
    host, port = address.rsplit(":", 1)
    if system == "kafka":
        driver = KafkaDriver(address, KafkaOptions())
        return sorted(t for t in driver.backend.admin.list_topics(timeout=5).topics
                      if t.startswith(name))
    if system == "redis":
        client = redis.Redis(host, int(port))
        try:
            return sorted(k.decode() for k in client.scan_iter(match=f"{name}*"))
        finally:
            client.close()
    if system == "nats":
        return _streams(host, int(port), name)
    return _exchanges(host, int(port), name)


def _streams(host: str, port: int, name: str) -> list[str]:
    import nats

    async def names() -> list[str]:
        client = await nats.connect(f"nats://{host}:{port}")
        try:
            return [s.config.name for s in await client.jsm().streams_info()]
        finally:
            await client.close()

    return sorted(n for n in asyncio.run(names()) if n.startswith(name))


def _exchanges(host: str, port: int, name: str) -> list[str]:
    """The run's exchanges and queues (`name`, a lane's `name.<lane>`, round trip's
    `name.requests`) that still exist."""
    found = []
    lanes = [name, *(f"{name}.{lane}" for lane in range(MANY))]
    connection = pika.BlockingConnection(pika.ConnectionParameters(host, port))
    try:
        for kind, candidate in [*(("exchange", n) for n in lanes),
                                *(("queue", n) for n in [*lanes, f"{name}.requests"])]:
            channel = connection.channel()
            try:
                if kind == "exchange":
                    channel.exchange_declare(candidate, passive=True)
                else:
                    channel.queue_declare(candidate, passive=True)
                found.append(candidate)
                channel.close()
            except pika.exceptions.ChannelClosedByBroker:
                pass  # 404: not there (the broker closed the channel)
    finally:
        connection.close()
    return found
