"""The kafka driver against a Kafka-protocol broker started from deploy/recipes/kafka-noida.yaml
(noida-db, not Apache Kafka, which cannot be installed here), through both clients
(confluent-kafka and kafka-python), with manually assigned partitions and with consumer
groups: at the driver level and end to end through runs and the Spark analysis. What
every driver must do is the conformance suite's (tests/conformance), for each client with
and without a consumer group; what is Kafka's own is here."""

from __future__ import annotations

import shutil
import sys
import time
import uuid
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from sixnines.drivers.base import DriverError, Lane, Waiter
from sixnines.drivers.kafka import KafkaDriver, KafkaOptions
from sixnines.formats.payload import build_frames, frame_dtype
from sixnines.orchestrator.scenario.model import ScenarioError
from tests.integration.support import (
    SIZE,
    assert_every_message_accounted,
    assert_partial_with_loss_counted,
    assert_unreachable_run_fails,
    execute,
    external,
    one_system,
    parse_options,
    points,
    recipe_server,
    run_with_broker_killed,
    send_in_batches,
)
from tests.integration.support import closing as closing_fixture

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(240),
    # runs find servers installed from PyPI beside this Python too
    pytest.mark.skipif(shutil.which("noida-db", path=f"{Path(sys.executable).parent}:")
                       is None and shutil.which("noida-db") is None,
                       reason="noida-db not installed"),
]

closing = closing_fixture  # the shared fixture, under its name here


def connected(driver: KafkaDriver, closing, producer_id: int, size: int = SIZE):
    """A receiver (consumer 0) and a sender for `producer_id`, both closed after the test."""
    receiver = driver.receiver(size, 0)
    sender = driver.sender(size, producer_id)
    closing(receiver)
    closing(sender)
    return receiver, sender

VARIANTS = {
    "confluent": {"client": "confluent"},
    "kafka-python": {"client": "kafka-python"},
    "confluent-group": {"client": "confluent", "group": True},
    "kafka-python-group": {"client": "kafka-python", "group": True},
}
MANUAL = ["confluent", "kafka-python"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with recipe_server("kafka-noida", tmp_path_factory.mktemp("kafka")) as broker:
        yield broker


def fresh_topic() -> str:
    """A topic of its own per test: tests share one broker."""
    return f"t-{uuid.uuid4().hex[:10]}"


def make_driver(address: str, variant: str, **extra) -> KafkaDriver:
    options = KafkaOptions(topic=fresh_topic(), partitions=2, **VARIANTS[variant], **extra)
    return KafkaDriver(address, options)


@pytest.fixture(params=MANUAL)
def manual_driver(request, server) -> KafkaDriver:
    return make_driver(server.address, request.param)


def frames_of(producer_id: int, count: int, size: int = SIZE) -> np.ndarray:
    buf = build_frames(b"", size, count, seed=producer_id)
    view = buf.view(frame_dtype(0, size))
    view["producer_id"] = producer_id
    view["seq"] = np.arange(count, dtype=np.uint64)
    return buf


def collect(receiver, stride: int, count: int, timeout_s: float = 20.0) -> list[bytes]:
    out = memoryview(bytearray(37 * stride))  # small: many calls
    got: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count:
        assert time.monotonic() < deadline, f"received {len(got)} of {count}"
        n = receiver.receive(out, stride, 100)
        got.extend(bytes(out[k * stride : (k + 1) * stride]) for k in range(n))
    assert receiver.receive(out, stride, 200) == 0  # nothing beyond
    return got


def split(buf: np.ndarray, stride: int) -> list[bytes]:
    raw = buf.tobytes()
    return [raw[k : k + stride] for k in range(0, len(raw), stride)]


def producer_of(frame: bytes) -> int:
    return int(np.frombuffer(frame, dtype=frame_dtype(0, len(frame)))[0]["producer_id"])


# --- driver level -----------------------------------------------------------------------


def test_settle_returns_once_the_broker_has_acknowledged_every_message(manual_driver,
                                                                      closing):
    """Throughput mode's per-batch wait (`acks: 1` by default): settle flushes the client
    and waits for every delivery report."""
    receiver, sender = connected(manual_driver, closing, 1)
    buf = frames_of(1, 500)
    sender.send(memoryview(buf), 500)
    sender.settle()
    if manual_driver.options.client == "confluent":
        assert len(sender.producer) == 0  # nothing awaits its delivery report
    assert collect(receiver, SIZE, 500) == split(buf, SIZE)


def test_messages_over_the_default_1mb_record_limit_arrive(manual_driver, closing):
    """The classic 1 MB configuration: topics, producers and consumers are sized for it."""
    size = 1_500_000
    receiver, sender = connected(manual_driver, closing, 4, size)
    buf = frames_of(4, 5, size)
    send_in_batches(sender, buf, size, batches=(1, 4))
    assert collect(receiver, size, 5) == split(buf, size)


def settles(waiter: Waiter, receivers, out: memoryview, tries: int = 5) -> bool:
    """The waiter goes quiet once what woke it is read. librdkafka also signals its queue
    for non-message events, so a wake-up with nothing to receive may come first: it costs
    the agent one empty poll, and is read away here."""
    for _ in range(tries):
        if waiter.wait(200) == []:
            return True
        for receiver in receivers:
            assert receiver.receive(out, SIZE, 0) == 0
    return False


def test_the_confluent_pollable_wakes_a_waiter_when_messages_arrive(server, closing):
    """A multi-connection agent sleeps in the driver's Waiter until a receiver has
    something."""
    driver = make_driver(server.address, "confluent")
    receivers = [driver.receiver(SIZE, c) for c in range(2)]
    sender = driver.sender(SIZE, 1)
    for thing in [*receivers, sender]:
        closing(thing)
    waiter = driver.waiter(receivers)
    out = memoryview(bytearray(100 * SIZE))
    assert settles(waiter, receivers, out)  # idle: the agent sleeps
    sender.send(memoryview(frames_of(1, 3)), 3)
    woken: set = set()
    deadline = time.monotonic() + 10
    while len(woken) < 2 and time.monotonic() < deadline:
        woken |= set(waiter.wait(1000))
    assert woken == {0, 1}
    for receiver in receivers:
        assert receiver.receive(out, SIZE, 0) == 3
    assert settles(waiter, receivers, out)
    # more queued than one call takes: the pollable stays readable for the rest
    sender.send(memoryview(frames_of(1, 50)), 50)
    small = memoryview(bytearray(10 * SIZE))
    got = 0
    while got < 50:
        assert waiter.wait(2000), f"not woken with {50 - got} messages queued"
        got += receivers[0].receive(small, SIZE, 0)
        receivers[1].receive(out, SIZE, 0)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_lanes_divide_a_topic_created_with_one_partition_per_connection(server, closing,
                                                                       variant):
    """Without the partitions option the driver creates the topic with one partition per
    lane; each lane reads its own, whichever sender wrote it."""
    driver = KafkaDriver(server.address, KafkaOptions(topic=fresh_topic(), **VARIANTS[variant]))
    lanes = 3
    receivers = [driver.receiver(SIZE, c, Lane(c, lanes)) for c in range(lanes)]
    senders = [driver.sender(SIZE, p, Lane(p, lanes)) for p in range(lanes)]
    for thing in [*receivers, *senders]:
        closing(thing)
    assert driver.partitions[driver.options.topic] == lanes
    for producer_id, sender in enumerate(senders):
        sender.send(memoryview(frames_of(producer_id, 50)), 50)
        sender.settle()
    for lane, receiver in enumerate(receivers):
        assert {producer_of(frame) for frame in collect(receiver, SIZE, 50)} == {lane}


def test_a_lane_without_a_partition_is_refused(server, closing):
    """An existing topic (here made with one partition) keeps its partitions: a second
    lane would read nothing."""
    topic = fresh_topic()
    one = KafkaDriver(server.address, KafkaOptions(topic=topic))
    closing(one.receiver(SIZE, 0))
    driver = KafkaDriver(server.address, KafkaOptions(topic=topic))
    closing(driver.receiver(SIZE, 0, Lane(0, 2)))
    with pytest.raises(DriverError, match=f"topic {topic!r} has 1 partition, fewer than the "
                                          "2 connections dividing it: connection 1"):
        driver.receiver(SIZE, 1, Lane(1, 2))


def test_a_message_of_another_size_is_an_error_not_garbage(manual_driver, closing):
    receiver, sender = connected(manual_driver, closing, 1)
    sender.send(memoryview(frames_of(1, 1)), 1)
    out = memoryview(bytearray(10 * 2 * SIZE))
    with pytest.raises(DriverError, match="64-byte message, expected 128"):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            receiver.receive(out, 2 * SIZE, 100)


@pytest.mark.parametrize(("client", "codec"), [("confluent", "zstd"), ("confluent", "lz4"),
                                             ("kafka-python", "gzip")])
def test_compressed_batches_arrive_intact(server, closing, client, codec):
    driver = KafkaDriver(server.address, KafkaOptions(
        client=client, topic=fresh_topic(), compression=codec, linger_ms=5, acks="all"))
    receiver, sender = connected(driver, closing, 1)
    buf = frames_of(1, 500)
    send_in_batches(sender, buf, SIZE)
    assert collect(receiver, SIZE, 500) == split(buf, SIZE)


def test_kafka_python_without_a_codec_library_says_so(server):
    pytest.importorskip("kafka")
    try:
        import lz4  # noqa: F401
        pytest.skip("the lz4 package is installed")
    except ImportError:
        pass
    driver = KafkaDriver(server.address, KafkaOptions(client="kafka-python", compression="lz4"))
    with pytest.raises(DriverError, match=f"kafka at {server.address}: .*lz4"):
        driver.sender(SIZE, 0)


# --- errors -----------------------------------------------------------------------------


@pytest.mark.parametrize("client", MANUAL)
def test_sasl_plain_credentials_are_used(server, tmp_path, closing, client):
    (tmp_path / "pw").write_text("secret\n")
    driver = KafkaDriver(server.address, KafkaOptions(
        client=client, topic=fresh_topic(), sasl_mechanism="PLAIN", username="u",
        password_file=tmp_path / "pw"))
    receiver, sender = connected(driver, closing, 1)
    sender.send(memoryview(frames_of(1, 5)), 5)
    assert len(collect(receiver, SIZE, 5)) == 5


def test_a_missing_password_reference_names_it_not_the_secret(server, monkeypatch):
    monkeypatch.delenv("SIXNINES_TEST_KAFKA_NOPE", raising=False)
    driver = KafkaDriver(server.address, KafkaOptions(
        sasl_mechanism="PLAIN", username="u", password_env="SIXNINES_TEST_KAFKA_NOPE"))
    with pytest.raises(DriverError, match="SIXNINES_TEST_KAFKA_NOPE"):
        driver.sender(SIZE, 0)


# --- runs -------------------------------------------------------------------------------

RATE, DURATION_S, PRODUCERS, CONSUMERS = 1000, 1, 2, 2


def workload(mode: str) -> str:
    return (f"{{mode: {mode}, message_size: 256, rate: {RATE}, duration: {DURATION_S}s, "
            f"warmup: 0s, drain: 5s, producers: {PRODUCERS}, consumers: {CONSUMERS}}}")


def scenario(broker: str, options: str, mode: str) -> str:
    return one_system("kafka", broker, workload(mode), options, name=f"kafka-{mode}",
                      system="k")


RUNS = [  # each secondary mode once: kafka-python, consumer groups, several partitions
    ("confluent", "one-way", "{client: confluent, partitions: 2}"),
    ("confluent", "round-trip", "{client: confluent}"),
    ("kafka-python-group", "one-way", "{client: kafka-python, group: true}"),
    ("kafka-python", "round-trip", "{client: kafka-python}"),
]


@pytest.mark.parametrize(("label", "mode", "options"), RUNS,
                         ids=[f"{label}-{mode}" for label, mode, _ in RUNS])
def test_runs_account_for_every_message(server, tmp_path, spark, label, mode, options):
    options = options.replace("{", f"{{topic: {fresh_topic()}, ", 1)
    # the first run starts its own broker from the recipe, as a user's run would
    broker = "{recipe: kafka-noida}" if label == "confluent" and mode == "one-way" else \
        external(server.address)
    point = points(scenario(broker, options, mode))[0]
    manifest = execute(point, tmp_path / "run")
    assert manifest["status"] == "ok", manifest["problems"]
    if "recipe" in broker:
        assert "not Apache Kafka" in manifest["broker"]["note"]
    sent = RATE * DURATION_S
    received = sent * CONSUMERS if mode == "one-way" else sent
    assert_every_message_accounted(spark, manifest, tmp_path / "run", sent, received)


def test_an_unreachable_broker_fails_the_run_naming_it(tmp_path):
    assert_unreachable_run_fails("kafka", tmp_path, workload("one-way"))


@pytest.mark.parametrize("client", MANUAL)
def test_a_broker_dying_mid_run_leaves_partial_data_with_the_loss_counted(
        tmp_path, spark, client):
    manifest, address = run_with_broker_killed(
        "kafka", "kafka-noida", tmp_path,
        "{message_size: 64, rate: 1000, duration: 2s, warmup: 0s, drain: 1s}",
        options=f"{{client: {client}}}", after_s=0.7)
    summary = assert_partial_with_loss_counted(spark, manifest, tmp_path / "run",
                                               f"kafka at {address}")
    assert summary["received"] < summary["sent"]


# --- options ----------------------------------------------------------------------------

parse = partial(parse_options, "kafka", recipe="kafka-noida")


@pytest.mark.parametrize(("options", "message"), [
    ("{client: librdkafka}", "client"),
    ("{acks: 2}", "acks"),
    ("{compression: brotli}", "compression"),
    ("{topic: 'a topic'}", "topic"),
    ("{partitions: 0}", "partitions"),
    ("{username: u}", "need sasl_mechanism"),
    ("{sasl_mechanism: PLAIN, username: u}", "exactly one of"),
    ("{sasl_mechanism: PLAIN, username: u, password_env: A, password_file: /b}",
     "not both"),
])
def test_inconsistent_options_are_refused(options, message):
    with pytest.raises(ScenarioError, match=message):
        parse(options)


def test_every_option_is_accepted():
    parse("{client: kafka-python, topic: bench.1, partitions: 4, replication: 1, acks: all, "
          "linger_ms: 5, batch_size: 65536, compression: gzip, group: true, "
          "fetch_wait_ms: 0, sasl_mechanism: SCRAM-SHA-512, username: u, password_env: PW}")


def test_workload_problems_refuse_messages_over_the_driver_limit():
    with pytest.raises(ScenarioError, match="limit this driver configures"):
        parse("{}", "message_size: 65MiB")


def test_workload_problems_refuse_fewer_partitions_than_connections():
    """A consumer's connections divide the partitions: each needs one."""
    with pytest.raises(ScenarioError, match="set option partitions to at least 4, or leave "
                                            r"it out \(one per connection\)"):
        parse("{partitions: 2}", "message_size: 64, connections: 4")
    parse("{}", "message_size: 64, connections: 4")
    parse("{partitions: 4}", "message_size: 64, connections: 4")
    parse("{partitions: 1}", "message_size: 64, mode: round-trip, connections: 4")
