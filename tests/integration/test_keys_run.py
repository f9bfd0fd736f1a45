"""`sixnines run` with message keys, as a user runs it: Kafka with Zipf keys over several
partitions (every message of one key in one partition, their order held, the run's own
per-producer reorders counted apart), with one size and with sizes that vary; NATS (core
and JetStream) with a subject per key, Redis with a stream or channel per key, RabbitMQ
with routing keys, and the tcp relay and zmq carrying keys in the message (the summary's
hottest share is the draws'), the relay's also in a ring of sizes that vary."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from sixnines.drivers.nats import NatsDriver, NatsOptions
from sixnines.drivers.rabbitmq import RabbitmqDriver, RabbitmqOptions
from sixnines.formats.chunks import message_files
from sixnines.formats.keys import (
    KEY_OFFSET,
    KeySpace,
    keys_of,
    message_keys,
    period,
    write_keys,
)
from sixnines.formats.layout import MANIFEST_FILE, REPORT_DIR, SUMMARY_FILE
from sixnines.formats.payload import HEADER_STRUCT, build_frames, frame_dtype
from sixnines.formats.sizes import CHOICES, DrawnSizes, Sizes
from sixnines.orchestrator.results.store import find_run_dirs
from tests.faults.support import sixnines
from tests.integration.support import external, missing, recipe_server

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

PARTITIONS, PRODUCERS, SIZE = 4, 2, 64
ZIPF = KeySpace(20, 1.2)
MIX = Sizes(CHOICES, values=(40, 1024, 16384), weights=(0.6, 0.3, 0.1))
MIX_WRITTEN = "{40: 0.6, 1KB: 0.3, 16KB: 0.1}"
SCENARIO = """\
name: keyed
systems:
  - {{name: s, driver: {driver}, broker: {broker}, options: {options}}}
workload:
  message_size: {size}
  keys: {{count: {count}, zipf: {zipf}}}
  rate: 400
  duration: 1s
  warmup: 200ms
  drain: 5s
  producers: {producers}
  seed: 11
"""


def keyed_run(folder: Path, driver: str, broker: str, options: str = "{}",
              size: str = str(SIZE)) -> Path:
    """The run directory of a keyed run of one system, which went well."""
    folder.mkdir(exist_ok=True)
    (folder / "s.yaml").write_text(SCENARIO.format(
        driver=driver, broker=broker, options=options, size=size, count=ZIPF.count,
        zipf=ZIPF.zipf, producers=PRODUCERS))
    done = sixnines("run", "s.yaml", "--output", "runs", cwd=folder)
    assert done.returncode == 0, done.stderr
    assert f"keys {ZIPF.count} zipf(1.2): hottest" in done.stderr  # the console line
    (run_dir,) = find_run_dirs(folder / done.stdout.strip().splitlines()[-1])
    return run_dir


def summary_of(run_dir: Path) -> dict:
    summary = json.loads((run_dir / REPORT_DIR / SUMMARY_FILE).read_text())
    assert summary["status"] == "ok", summary["problems"]
    assert summary["lost"] == summary["duplicated"] == 0
    assert summary["delivered"] == summary["sent"] > 0
    return summary


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    if missing("noida-db"):
        pytest.skip("noida-db not installed")
    with recipe_server("kafka-noida", tmp_path_factory.mktemp("kafka")) as broker:
        yield broker


def partitions_of_keys(address: str, topic: str, expected: int) -> tuple[dict, list]:
    """Every record of `topic` read back: each key's partitions, and (producer, seq, key,
    size) as each frame carries them."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": address, "group.id": uuid.uuid4().hex,
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    partitions: dict[bytes, set[int]] = {}
    frames = []
    deadline = time.monotonic() + 30
    try:
        while len(frames) < expected and time.monotonic() < deadline:
            for record in consumer.consume(500, 1.0):
                if record.error() is not None:
                    continue
                value = record.value()
                assert record.key() == value[KEY_OFFSET : KEY_OFFSET + 4]
                partitions.setdefault(record.key(), set()).add(record.partition())
                producer, seq, _, _ = HEADER_STRUCT.unpack_from(value)
                frames.append((producer, seq, int.from_bytes(record.key(), "little"),
                               len(value)))
    finally:
        consumer.close()
    return partitions, frames


@pytest.mark.parametrize("sizes", [None, MIX], ids=["one-size", "sizes-vary"])
def test_kafka_keys_pick_partitions_and_each_key_keeps_its_order(kafka, tmp_path, sizes):
    """Every record read back has the key its sender drew for it (and, with sizes that
    vary, the size), every key in one partition."""
    topic = f"keys-{uuid.uuid4().hex[:8]}"  # named: the user's topic, kept to read back
    run_dir = keyed_run(tmp_path, "kafka", external(kafka.address),
                        f"{{topic: {topic}, partitions: {PARTITIONS}}}",
                        str(SIZE) if sizes is None else MIX_WRITTEN)
    summary = summary_of(run_dir)
    keys = summary["keys"]
    assert keys["count"] == ZIPF.count and keys["distribution"] == "zipf(1.2)"
    assert keys["reordered"] == 0
    partitions, frames = partitions_of_keys(kafka.address, topic,
                                            summary["sent"] + summary["warmup"]["sent"])
    assert len(frames) == summary["sent"] + summary["warmup"]["sent"]
    assert all(len(found) == 1 for found in partitions.values()), partitions
    assert len(set().union(*partitions.values())) > 1  # the keys spread over partitions
    producer, seq, key, size = (np.array(column) for column in zip(*frames, strict=True))
    manifest = json.loads((run_dir / MANIFEST_FILE).read_text())
    draws = manifest["workload"]["key_draws"]
    largest = SIZE if sizes is None else sizes.largest
    assert draws == {"space": ZIPF.text(), "seed": 11, "period": period(largest)}
    assert np.array_equal(key, message_keys(ZIPF, 11, draws["period"], producer, seq))
    expected = np.full(len(seq), SIZE) if sizes is None else DrawnSizes(
        sizes, 11, draws["period"]).column(producer, seq)
    assert np.array_equal(size, expected)


@pytest.mark.parametrize("driver", ["tcp", "zmq"])
def test_keys_in_the_message_and_the_summary_says_how_hot_the_hottest_was(tmp_path, driver):
    run_dir = keyed_run(tmp_path, driver, "builtin")
    keys = summary_of(run_dir)["keys"]
    drawn = np.concatenate([keys_of(ZIPF, 11, producer, period(SIZE))
                            for producer in range(PRODUCERS)])
    assert keys["hottest_share"] == pytest.approx(np.bincount(drawn).max() / len(drawn))
    assert keys["hottest_share"] == pytest.approx(ZIPF.probabilities()[0], abs=0.01)
    assert keys["reordered"] == 0
    hot, others = keys["hottest_us"]["count"], keys["others_us"]["count"]
    assert hot + others == summary_of(run_dir)["received"]
    assert hot / (hot + others) == pytest.approx(keys["hottest_share"], abs=0.05)


def test_nats_sends_each_key_to_its_own_subject(tmp_path):
    """A keyed ring's frames through the nats driver: a subscriber of one key's subject
    alone gets exactly the messages of that key; the driver's own receiver gets all."""
    with recipe_server("nats", tmp_path / "nats") as server:
        subject = f"keys{uuid.uuid4().hex[:8]}"
        keyed = NatsDriver(server.address, NatsOptions(subject=subject))
        keyed.keys = ZIPF
        hot = NatsDriver(server.address, NatsOptions(subject=f"{subject}.{ZIPF.name(0)}"))
        every, only_hot = keyed.receiver(SIZE, 0), hot.receiver(SIZE, 1)
        sender = keyed.sender(SIZE, 0)
        framing = keyed.framing(SIZE)
        slots, drawn = 64, keys_of(ZIPF, 3, 0, 16)
        frames = build_frames(framing.prefix, SIZE, slots, 3, framing.suffix)
        write_keys(frames, slots, len(framing.prefix), drawn, framing.key_prefixes)
        header = frames.view(frame_dtype(len(framing.prefix), SIZE, len(framing.suffix)))
        header["seq"] = np.arange(slots)
        try:
            sender.send(memoryview(frames), slots)
            hot_seqs = sorted(seq for seq, _ in received(only_hot, int(np.sum(
                drawn[np.arange(slots) % 16] == 0))))
            assert hot_seqs == [s for s in range(slots) if drawn[s % 16] == 0]
            assert sorted(received(every, slots)) == [(s, int(drawn[s % 16]))
                                                      for s in range(slots)]
        finally:
            for connection in (sender, every, only_hot):
                connection.close()


def received(receiver, count: int) -> list[tuple[int, int]]:
    """(seq, key index) of `count` messages, and nothing beyond them."""
    out = memoryview(bytearray(count * SIZE + SIZE))
    got: list[tuple[int, int]] = []
    deadline = time.monotonic() + 10
    while len(got) < count and time.monotonic() < deadline:
        n = receiver.receive(out[: (count - len(got)) * SIZE], SIZE, 100)
        for k in range(n):
            message = bytes(out[k * SIZE : (k + 1) * SIZE])
            _, seq, _, _ = HEADER_STRUCT.unpack_from(message)
            got.append((seq, int.from_bytes(message[KEY_OFFSET : KEY_OFFSET + 4], "little")))
    assert len(got) == count and receiver.receive(out, SIZE, 200) == 0
    return got


@pytest.mark.parametrize(("driver", "options"), [
    ("nats", "{mode: core}"), ("nats", "{mode: jetstream}"), ("redis", "{mode: streams}"),
    ("redis", "{mode: streams, group: true}"), ("redis", "{mode: pubsub}")],
    ids=["nats-core", "nats-jetstream", "redis-streams", "redis-streams-group", "redis-pubsub"])
def test_a_run_with_a_subject_stream_or_channel_per_key_delivers_each_once_in_key_order(
        tmp_path, driver, options):
    """Zipf keys, each its own subject (stream, channel): every message delivered once,
    the order within each key kept (their streams are read in any order between keys)."""
    run_dir = keyed_run(tmp_path, driver, f"{{recipe: {driver}}}", options)
    keys = summary_of(run_dir)["keys"]
    assert keys["count"] == ZIPF.count and keys["reordered"] == 0
    assert keys["hottest_us"]["count"] + keys["others_us"]["count"] == \
        summary_of(run_dir)["received"]


def test_keys_ride_in_a_ring_of_sizes_that_vary(tmp_path):
    """Through the tcp relay: every message arrives at the size its sender's keyed ring
    drew for it, and the keys' figures are the draws'."""
    run_dir = keyed_run(tmp_path, "tcp", "builtin", size=MIX_WRITTEN)
    summary = summary_of(run_dir)
    assert summary["keys"]["reordered"] == 0
    draws = json.loads((run_dir / MANIFEST_FILE).read_text())["workload"]["key_draws"]
    assert draws["period"] == period(MIX.largest)
    drawn = np.concatenate([keys_of(ZIPF, 11, producer, draws["period"])
                            for producer in range(PRODUCERS)])
    assert summary["keys"]["hottest_share"] == pytest.approx(np.bincount(drawn).max()
                                                             / len(drawn))
    (consumer,) = (run_dir / "agents").glob("consumer-*")
    table = pq.read_table(message_files(consumer))
    producer, seq, size = (table[name].to_numpy() for name in ("producer_id", "seq", "size"))
    assert len(seq) == summary["received"] + summary["warmup"]["received"]
    assert np.array_equal(size, DrawnSizes(MIX, 11, draws["period"]).column(producer, seq))
    assert set(size.tolist()) == set(MIX.values)


def test_rabbitmq_publishes_each_key_as_its_routing_key(tmp_path):
    """A keyed ring's frames through the rabbitmq driver: every delivery to a queue bound
    to the exchange carries, as its routing key, the name of the key in its body; then a
    keyed run through the recipe's broker accounts for every message."""
    import pika

    with recipe_server("rabbitmq", tmp_path / "rabbitmq") as server:
        exchange = f"keys{uuid.uuid4().hex[:8]}"
        driver = RabbitmqDriver(server.address, RabbitmqOptions(exchange=exchange),
                                credential=server.credential)
        driver.keys = ZIPF
        sender = driver.sender(SIZE, 0)  # declares the exchange
        host, port = server.address.rsplit(":", 1)
        credential = server.credential_message() or {}
        login = pika.PlainCredentials(credential.get("username", "guest"),
                                      credential.get("password", "guest"))
        connection = pika.BlockingConnection(pika.ConnectionParameters(
            host, int(port), credentials=login))
        channel = connection.channel()
        queue = channel.queue_declare("", exclusive=True).method.queue
        channel.queue_bind(queue, exchange)
        framing = driver.framing(SIZE)
        slots, drawn = 32, keys_of(ZIPF, 5, 0, 16)
        frames = build_frames(framing.prefix, SIZE, slots, 5, framing.suffix)
        write_keys(frames, slots, len(framing.prefix), drawn, framing.key_prefixes)
        try:
            sender.send(memoryview(frames), slots)
            routed = []
            deadline = time.monotonic() + 10
            while len(routed) < slots and time.monotonic() < deadline:
                method, _, body = channel.basic_get(queue, auto_ack=True)
                if method is None:
                    time.sleep(0.05)
                    continue
                key = int.from_bytes(body[KEY_OFFSET : KEY_OFFSET + 4], "little")
                routed.append((method.routing_key, ZIPF.name(key)))
            assert len(routed) == slots
            assert all(routing == name for routing, name in routed), routed
            assert [name for _, name in routed] == [ZIPF.name(int(drawn[s % 16]))
                                                    for s in range(slots)]
        finally:
            sender.close()
            connection.close()
    run_dir = keyed_run(tmp_path / "run", "rabbitmq", "{recipe: rabbitmq}")
    assert summary_of(run_dir)["keys"]["reordered"] == 0
