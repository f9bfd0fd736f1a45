"""The rabbitmq driver against a real RabbitMQ node started once from
deploy/recipes/rabbitmq.yaml (a second one for the node-dies test): fan-out through a fanout
exchange, the default exchange's shared queue, persistence with publisher confirms, round
trips through reply_to queues, classic, quorum and stream queues and what the broker says
of them, at the driver level and end to end through runs, `sixnines run` and Spark.
What every driver must do is the conformance suite's (tests/conformance), for each form:
fan-out, persistent with confirms, auto-ack."""

from __future__ import annotations

import json
import shutil
import time
import uuid
from functools import partial

import numpy as np
import pika
import pika.exceptions
import pytest

from sixnines.drivers.base import DriverError, Lane
from sixnines.drivers.rabbitmq import RabbitmqDriver, RabbitmqOptions
from sixnines.formats.payload import build_frames, frame_dtype
from sixnines.orchestrator.scenario.model import ScenarioError, WorkloadPoint
from tests.faults.support import sixnines
from tests.integration.support import (
    SIZE,
    assert_every_message_accounted,
    assert_partial_with_loss_counted,
    assert_unreachable_run_fails,
    collect,
    execute,
    external,
    frames_of,
    one_system,
    parse_options,
    points,
    recipe_server,
    run_with_broker_killed,
    send_in_batches,
    seqs_by_producer,
)
from tests.integration.support import closing as closing_fixture

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(240),
    pytest.mark.skipif(shutil.which("rabbitmqctl") is None and shutil.which(
        "/usr/lib/rabbitmq/bin/rabbitmq-server") is None, reason="rabbitmq-server not installed"),
]

closing = closing_fixture  # the shared fixture, under its name here

BIG = 300_000  # three body frames at RabbitMQ's frame_max
@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with recipe_server("rabbitmq", tmp_path_factory.mktemp("rabbitmq")) as broker:
        yield broker


def fresh(**options) -> RabbitmqOptions:
    """Options with an exchange and queue of their own: tests share one node."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    return RabbitmqOptions(**{"exchange": name, "queue": name, **options})


def admin(server) -> pika.adapters.blocking_connection.BlockingChannel:
    host, port = server.address.rsplit(":", 1)
    connection = pika.BlockingConnection(pika.ConnectionParameters(host, int(port)))
    return connection.channel()


# --- driver level -----------------------------------------------------------------------


def test_settle_waits_for_the_confirms_of_every_publish(server, closing):
    """Throughput mode's per-batch wait: with confirms, settle returns only once the
    broker has confirmed everything sent so far."""
    driver = RabbitmqDriver(server.address, fresh(persistent=True, confirms=True))
    closing(driver.receiver(SIZE, 10))
    sender = driver.sender(SIZE, 1)
    closing(sender)
    buf, _ = frames_of(driver, 1, 2000)
    sender.send(memoryview(buf), 2000)
    sender.settle()
    assert sender.unconfirmed == 0
    sender.send(memoryview(buf), 2000)
    sender.close()
    assert sender.unconfirmed == 0  # close waits for the confirms too


def test_messages_larger_than_a_frame_are_not_pre_encoded():
    """They take several body frames (their delivery: the conformance suite's large
    messages, 300 KB for rabbitmq)."""
    assert RabbitmqDriver("127.0.0.1:5672", fresh()).framing(BIG).prefix == b""


def test_the_default_exchange_shares_one_queue(server, closing):
    driver = RabbitmqDriver(server.address, fresh(exchange=""))
    receiver = driver.receiver(SIZE, 0)
    closing(receiver)
    senders = [driver.sender(SIZE, p) for p in (1, 2)]
    for sender in senders:
        closing(sender)
    for producer_id, sender in zip((1, 2), senders, strict=True):
        buf, stride = frames_of(driver, producer_id, 100)
        send_in_batches(sender, buf, stride)
    assert seqs_by_producer(collect(driver, receiver, 200)) == {
        1: list(range(100)), 2: list(range(100))}


def test_the_default_exchange_gives_each_lane_a_queue_of_its_own(server, closing):
    """Connections divide the load: lane i's senders reach lane i's queue,
    "<queue>.<i>"; each message arrives once, over its lane."""
    options = fresh(exchange="")
    driver = RabbitmqDriver(server.address, options)
    receivers = [driver.receiver(SIZE, c, Lane(c, 2)) for c in range(2)]
    senders = [driver.sender(SIZE, p, Lane(p, 2)) for p in range(2)]
    for thing in [*receivers, *senders]:
        closing(thing)
    for producer_id, sender in enumerate(senders):
        framing = driver.framing(SIZE, Lane(producer_id, 2))  # names the lane's queue
        buf = build_frames(framing.prefix, SIZE, 100, seed=producer_id, suffix=framing.suffix)
        view = buf.view(frame_dtype(len(framing.prefix), SIZE, len(framing.suffix)))
        view["producer_id"] = producer_id
        view["seq"] = np.arange(100, dtype=np.uint64)
        send_in_batches(sender, buf, framing.stride(SIZE))
    for lane, receiver in enumerate(receivers):
        assert seqs_by_producer(collect(driver, receiver, 100)) == {lane: list(range(100))}
    queues = admin(server)
    for lane in range(2):
        assert queues.queue_declare(f"{options.queue}.{lane}", passive=True)


def test_a_consumer_connecting_again_keeps_what_its_queue_holds(server, closing):
    """A reconnect (after a broker restart, say) declares the named queue without emptying
    it: the messages it kept are delivered. A driver of a later run empties it first."""
    driver = RabbitmqDriver(server.address, fresh(exchange=""))
    driver.receiver(SIZE, 0).close()
    sender = driver.sender(SIZE, 1)
    closing(sender)
    buf, stride = frames_of(driver, 1, 100)
    send_in_batches(sender, buf, stride)
    sender.settle()
    again = driver.receiver(SIZE, 0)
    closing(again)
    assert seqs_by_producer(collect(driver, again, 100)) == {1: list(range(100))}
    send_in_batches(sender, buf, stride)
    again.close()
    later = RabbitmqDriver(server.address, driver.options).receiver(SIZE, 0)
    closing(later)
    assert later.receive(memoryview(bytearray(4 * SIZE)), SIZE, 200) == 0


@pytest.mark.parametrize("queue_type", ["quorum", "stream"])
def test_a_fanout_consumer_of_a_durable_queue_type_has_a_named_queue_kept_when_it_reconnects(
        server, closing, queue_type):
    """Quorum and stream queues cannot be exclusive: each consumer connection's queue is
    named after it, and one connecting again finds what its queue kept since (a stream's
    consumer goes on after the last message it handed over: nothing twice)."""
    options = fresh(queue_type=queue_type, persistent=True, confirms=True)
    driver = RabbitmqDriver(server.address, options)
    first = driver.receiver(SIZE, 3)
    sender = driver.sender(SIZE, 1)
    closing(sender)
    buf, stride = frames_of(driver, 1, 100)
    send_in_batches(sender, buf, stride)
    sender.settle()
    assert seqs_by_producer(collect(driver, first, 100)) == {1: list(range(100))}
    first.close()
    assert admin(server).queue_declare(f"{options.queue}.consumer-3", passive=True)
    send_in_batches(sender, buf, stride)  # while no consumer is connected
    sender.settle()
    again = driver.receiver(SIZE, 3)
    closing(again)
    assert seqs_by_producer(collect(driver, again, 100)) == {1: list(range(100))}
    assert again.receive(memoryview(bytearray(4 * SIZE)), SIZE, 300) == 0


def test_the_broker_is_asked_what_the_queue_is_not_told(server, closing):
    """The read-back comes from the broker's own refusals: a queue of the run's name that
    is classic and not durable reads back as such, whatever the options asked."""
    options = fresh(exchange="", queue_type="quorum", persistent=True, confirms=True)
    admin(server).queue_declare(options.queue, durable=False)
    durability = RabbitmqDriver(server.address, options).durability()
    assert durability.asked["x-queue-type"] == "quorum"
    assert durability.actual == {"queue": options.queue, "durable": False,
                                 "x-queue-type": "none"}
    assert durability.label == "confirms, none, transient"


def test_a_deleted_queue_is_a_driver_error(server, closing):
    options = fresh(exchange="")
    driver = RabbitmqDriver(server.address, options)
    receiver = driver.receiver(SIZE, 0)
    closing(receiver)
    admin(server).queue_delete(options.queue)
    with pytest.raises(DriverError, match=f"rabbitmq at {server.address}: .*cancelled"):
        for _ in range(50):
            receiver.receive(memoryview(bytearray(4 * SIZE)), SIZE, 20)


def test_publishing_to_a_deleted_exchange_is_a_driver_error(server, closing):
    options = fresh()
    driver = RabbitmqDriver(server.address, options)
    sender = driver.sender(SIZE, 1)
    closing(sender)
    admin(server).exchange_delete(options.exchange)
    buf, _ = frames_of(driver, 1, 1)
    with pytest.raises(DriverError, match=r"closed the channel \(404 NOT_FOUND"):
        for _ in range(200):
            sender.send(memoryview(buf), 1)
            time.sleep(0.005)


def test_a_message_of_another_size_is_an_error_not_garbage(server, closing):
    options = fresh()
    receiver = RabbitmqDriver(server.address, options).receiver(SIZE, 0)
    closing(receiver)
    admin(server).basic_publish(options.exchange, "", b"x" * (SIZE + 1))
    with pytest.raises(DriverError, match=f"got a {SIZE + 1}-byte message, expected {SIZE}"):
        for _ in range(50):
            receiver.receive(memoryview(bytearray(4 * SIZE)), SIZE, 20)


def test_authentication(server, tmp_path, closing):
    """(A wrong password: the conformance suite, tests/conformance.)"""
    unset = RabbitmqDriver(server.address, fresh(password_env="SIXNINES_TEST_UNSET"))
    with pytest.raises(DriverError, match="password_env SIXNINES_TEST_UNSET is not set"):
        unset.sender(SIZE, 0)
    (tmp_path / "password").write_text("guest\n")
    right = RabbitmqDriver(server.address, fresh(password_file=str(tmp_path / "password")))
    closing(right.sender(SIZE, 0))


# --- end to end ---------------------------------------------------------------------------

RATE, DURATION_S, PRODUCERS = 800, 1, 2


def scenario(address: str, mode: str, options: str = "{}", consumers: int = 2) -> str:
    workload = (f"{{mode: {mode}, message_size: 100, rate: {RATE}, duration: {DURATION_S}s, "
                f"warmup: 200ms, drain: 3s, producers: {PRODUCERS}, consumers: {consumers}}}")
    return one_system("rabbitmq", external(address), workload, options,
                      name=f"rabbitmq-{mode}", system="rmq")


@pytest.mark.parametrize(("mode", "options", "consumers"), [
    ("one-way", "{}", 2),
    ("round-trip", "{}", 1),
    # the secondary forms, two to a run: the tests' runtime is mostly agent start-up
    ("one-way", "{exchange: '', queue: e2e-shared, persistent: true, confirms: true}", 1),
    ("round-trip", "{persistent: true, confirms: true, auto_ack: true}", 1),
])
def test_runs_account_for_every_message(server, tmp_path, spark, mode, options, consumers):
    point = points(scenario(server.address, mode, options, consumers))[0]
    sent = RATE * DURATION_S
    received = sent * consumers if mode == "one-way" else sent
    run_dir = tmp_path / "run"
    assert_every_message_accounted(spark, execute(point, run_dir), run_dir, sent, received)


@pytest.mark.parametrize("queue_type", ["classic", "quorum", "stream"])
def test_every_queue_type_delivers_every_message_once_through_sixnines_run(
        server, tmp_path, queue_type):
    """`sixnines run` through a fanout exchange per lane, two consumers of two connections
    each: every message once to each consumer, the queue type in the label and in what
    the broker said (a classic consumer's queue is exclusive: nobody else can ask it), and
    the run's own queues gone at the end."""
    sent = 300  # the workload's rate, shared by its producers, for 1 s
    (tmp_path / "s.yaml").write_text(
        one_system("rabbitmq", external(server.address),
                   "{message_size: 64, rate: 300, duration: 1s, warmup: 0s, drain: 3s, "
                   "producers: 2, consumers: 2, connections: 2}",
                   f"{{queue_type: {queue_type}, persistent: true, confirms: true}}",
                   name="queue-types", system="rmq"))
    done = sixnines("run", "s.yaml", "--output", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    label = f"confirms, {queue_type}, persistent"
    assert f"rmq ({label})" in done.stderr
    results = tmp_path / done.stdout.strip().splitlines()[-1]
    summary = json.loads((results / "summary.json").read_text())["runs"][0]
    assert (summary["sent"], summary["received"]) == (sent, 2 * sent), summary["problems"]
    assert summary["lost"] == summary["duplicated"] == 0
    manifest = json.loads((next(results.glob("01-*")) / "manifest.json").read_text())
    durability = manifest["durability"]
    assert durability["label"] == label and summary["durability"]["label"] == label
    assert durability["asked"]["x-queue-type"] == queue_type
    name = manifest["resources"]["named"]["queue"]  # the exchanges' too
    exchanges = [f"{name}.0", f"{name}.1"]
    if queue_type == "classic":
        assert durability["actual"] is None and "exclusive" in durability["note"]
        assert manifest["resources"]["removed"] == exchanges
        return
    own = [f"{name}.consumer-{connection}" for connection in range(4)]
    assert durability["actual"] == {"queue": own[0], "durable": True,
                                    "x-queue-type": queue_type}
    assert manifest["resources"]["removed"] == exchanges + own
    for queue in own:
        with pytest.raises(pika.exceptions.ChannelClosedByBroker, match="NOT_FOUND"):
            admin(server).queue_declare(queue, passive=True)


def test_an_unreachable_node_fails_the_run_naming_it(tmp_path):
    assert_unreachable_run_fails("rabbitmq", tmp_path)


def test_a_node_dying_mid_run_leaves_partial_data_with_the_loss_counted(tmp_path, spark):
    manifest, address = run_with_broker_killed(
        "rabbitmq", "rabbitmq", tmp_path,
        "{message_size: 64, rate: 1000, duration: 3s, warmup: 0s, drain: 1s}")
    assert_partial_with_loss_counted(spark, manifest, tmp_path / "run", f"rabbitmq at {address}",
                                     sent_below=3000)


# --- options ----------------------------------------------------------------------------

parse = partial(parse_options, "rabbitmq")


def test_both_password_sources_are_refused():
    with pytest.raises(ScenarioError, match="not both"):
        parse("{password_env: A, password_file: /b}")


def test_the_documented_options_are_accepted():
    parse("{exchange: '', queue: q, queue_type: quorum, persistent: true, confirms: true, "
          "prefetch: 10, auto_ack: false, username: u, password_env: P, vhost: /v}")


def test_the_shared_queue_refuses_several_consumers_not_several_connections():
    """A consumer's connections have a queue each (one per lane); consumers would share."""
    with pytest.raises(ScenarioError, match="fan-out"):
        parse("{exchange: ''}", "message_size: 64, consumers: 2")
    parse("{exchange: ''}", "message_size: 64, connections: 2")
    parse("{exchange: ''}", "message_size: 64, mode: round-trip, producers: 3")
    parse("{}", "message_size: 64, consumers: 3")


def test_workload_problems_refuse_what_rabbitmq_cannot_carry():
    workload = WorkloadPoint(message_size=200 << 20, rate=10, duration_ns=10**9)
    problems = RabbitmqDriver.workload_problems(RabbitmqOptions(), workload)
    assert any("max_message_size" in problem for problem in problems)
