"""The rabbitmq driver against a real RabbitMQ node started once from
deploy/recipes/rabbitmq.yaml (a second one for the node-dies test): fan-out through a fanout
exchange, the default exchange's shared queue, persistence with publisher confirms, round
trips through reply_to queues, at the driver level and end to end through runs and Spark."""

from __future__ import annotations

import shutil
import socket
import threading
import time
import uuid

import numpy as np
import pika
import pytest

from agents.hdr import PERCENTILE_KEYS
from agents.payload import build_frames, frame_dtype
from drivers.base import DriverError
from drivers.rabbitmq import RabbitmqDriver, RabbitmqOptions
from orchestrator.scenario import ScenarioError, Workload, parse_scenario
from spark_jobs.analyze import analyze_run
from tests.integration.support import RecordingView, execute, points, recipe_server

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(240),
    pytest.mark.skipif(shutil.which("rabbitmqctl") is None and shutil.which(
        "/usr/lib/rabbitmq/bin/rabbitmq-server") is None, reason="rabbitmq-server not installed"),
]

SIZE = 64
BIG = 300_000  # three body frames at RabbitMQ's frame_max
FORMS = {
    "fanout": {},
    "fanout-persistent-confirms": {"persistent": True, "confirms": True},
    "auto-ack": {"auto_ack": True, "prefetch": 0},
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with recipe_server("rabbitmq", tmp_path_factory.mktemp("rabbitmq")) as broker:
        yield broker


def fresh(**options) -> RabbitmqOptions:
    """Options with an exchange and queue of their own: tests share one node."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    return RabbitmqOptions(**{"exchange": name, "queue": name, **options})


@pytest.fixture(params=list(FORMS))
def driver(request, server) -> RabbitmqDriver:
    return RabbitmqDriver(server.address, fresh(**FORMS[request.param]))


@pytest.fixture
def closing():
    opened = []
    yield opened.append
    for thing in reversed(opened):
        thing.close()


def frames_of(driver: RabbitmqDriver, producer_id: int, count: int, size: int = SIZE):
    """`count` frames framed for `driver`, headers stamped (producer_id, seq)."""
    framing = driver.framing(size)
    buf = build_frames(framing.prefix, size, count, seed=producer_id, suffix=framing.suffix)
    view = buf.view(frame_dtype(len(framing.prefix), size, len(framing.suffix)))
    view["producer_id"] = producer_id
    view["seq"] = np.arange(count, dtype=np.uint64)
    return buf, framing.stride(size)


def payloads(driver: RabbitmqDriver, buf: np.ndarray, size: int = SIZE) -> list[bytes]:
    framing = driver.framing(size)
    stride, at = framing.stride(size), len(framing.prefix)
    raw = buf.tobytes()
    return [raw[k + at : k + at + size] for k in range(0, len(raw), stride)]


def send_in_batches(sender, buf: np.ndarray, stride: int, batches=(1, 7, 50, 13)) -> None:
    wire = memoryview(buf)
    count = buf.nbytes // stride
    i = k = 0
    while i < count:
        n = min(batches[k % len(batches)], count - i)
        sender.send(wire[i * stride : (i + n) * stride], n)
        i += n
        k += 1


def collect(driver: RabbitmqDriver, receiver, count: int, size: int = SIZE, relay=None,
            timeout_s: float = 20.0) -> list[bytes]:
    """Exactly `count` payloads through a small reused buffer (many calls); `relay`: a
    responder to pump in between."""
    framing = driver.receive_framing(size)
    stride, at = framing.stride(size), len(framing.prefix)
    out = memoryview(bytearray(37 * stride))
    got: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count:
        assert time.monotonic() < deadline, f"received {len(got)} of {count}"
        if relay is not None:
            relay.relay(0)
        n = receiver.receive(out, stride, 0 if relay is not None else 100)
        got.extend(bytes(out[k * stride + at : k * stride + at + size]) for k in range(n))
    assert len(got) == count
    return got


def seqs_by_producer(messages: list[bytes]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for message in messages:
        producer_id, seq = np.frombuffer(message[:12], dtype="<u4,<u8")[0]
        out.setdefault(int(producer_id), []).append(int(seq))
    return out


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def admin(server) -> pika.adapters.blocking_connection.BlockingChannel:
    host, port = server.address.rsplit(":", 1)
    connection = pika.BlockingConnection(pika.ConnectionParameters(host, int(port)))
    return connection.channel()


# --- driver level -----------------------------------------------------------------------


def test_fan_out_delivers_every_message_to_every_receiver(driver, closing):
    receivers = [driver.receiver(SIZE, 10 + c) for c in range(2)]
    senders = [driver.sender(SIZE, p) for p in (1, 2)]
    for thing in receivers + senders:
        closing(thing)
    count = 300
    sent = {}
    for producer_id, sender in zip((1, 2), senders, strict=True):
        buf, stride = frames_of(driver, producer_id, count)
        sent[producer_id] = payloads(driver, buf)
        send_in_batches(sender, buf, stride)
    for receiver in receivers:
        got = collect(driver, receiver, 2 * count)
        assert seqs_by_producer(got) == {1: list(range(count)), 2: list(range(count))}
        assert sorted(got) == sorted(sent[1] + sent[2])  # bytes intact
        assert receiver.receive(memoryview(bytearray(4 * SIZE)), SIZE, 0) == 0
    for sender in senders:
        sender.close()
        assert sender.unconfirmed == 0  # with confirms: every publish confirmed by close


def test_one_large_batch_arrives_complete(driver, closing):
    receiver = driver.receiver(SIZE, 0)
    closing(receiver)
    sender = driver.sender(SIZE, 1)
    closing(sender)
    count = 5000
    buf, _ = frames_of(driver, 1, count)
    sender.send(memoryview(buf), count)
    assert collect(driver, receiver, count) == payloads(driver, buf)


def test_messages_larger_than_a_frame_arrive_intact(driver, closing):
    receiver = driver.receiver(BIG, 0)
    closing(receiver)
    sender = driver.sender(BIG, 1)
    closing(sender)
    assert driver.framing(BIG).prefix == b""  # several body frames: not pre-encoded
    buf, stride = frames_of(driver, 1, 12, size=BIG)
    send_in_batches(sender, buf, stride, batches=(1, 6, 5))
    assert collect(driver, receiver, 12, size=BIG) == payloads(driver, buf, size=BIG)


def test_receive_returns_at_once_when_idle(driver, closing):
    receiver = driver.receiver(SIZE, 0)
    closing(receiver)
    started = time.perf_counter()
    assert receiver.receive(memoryview(bytearray(16 * SIZE)), SIZE, 0) == 0
    assert time.perf_counter() - started < 0.05
    started = time.perf_counter()
    assert receiver.receive(memoryview(bytearray(16 * SIZE)), SIZE, 30) == 0
    assert time.perf_counter() - started >= 0.025


@pytest.mark.parametrize("size", [SIZE, BIG])
def test_round_trip_returns_each_request_to_its_requester(driver, closing, size):
    responder = driver.responder(size, 0)
    closing(responder)
    pairs = [driver.requester(size, producer_id) for producer_id in (3, 4)]
    for sender, receiver in pairs:
        closing(sender)
        closing(receiver)
    count = 200 if size == SIZE else 6
    sent = []
    for producer_id, (sender, _) in zip((3, 4), pairs, strict=True):
        buf, stride = frames_of(driver, producer_id, count, size)
        sent.append(payloads(driver, buf, size))
        send_in_batches(sender, buf, stride, batches=(1, 2, 100, 33))
    for (_, receiver), mine in zip(pairs, sent, strict=True):
        assert collect(driver, receiver, count, size, relay=responder) == mine


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


def test_an_unreachable_node_is_named():
    address = f"127.0.0.1:{free_port()}"
    with pytest.raises(DriverError, match=f"rabbitmq at {address}: cannot connect"):
        RabbitmqDriver(address, RabbitmqOptions()).sender(SIZE, 0)


def test_authentication(server, tmp_path, monkeypatch, closing):
    secret = "not-the-password-123"
    monkeypatch.setenv("SIXNINES_TEST_RMQ", secret)
    wrong = RabbitmqDriver(server.address, fresh(password_env="SIXNINES_TEST_RMQ"))
    with pytest.raises(DriverError, match="authentication failed") as caught:
        wrong.sender(SIZE, 0)
    assert server.address in str(caught.value) and secret not in str(caught.value)
    unset = RabbitmqDriver(server.address, fresh(password_env="SIXNINES_TEST_UNSET"))
    with pytest.raises(DriverError, match="password_env SIXNINES_TEST_UNSET is not set"):
        unset.sender(SIZE, 0)
    (tmp_path / "password").write_text("guest\n")
    right = RabbitmqDriver(server.address, fresh(password_file=str(tmp_path / "password")))
    closing(right.sender(SIZE, 0))


# --- end to end ---------------------------------------------------------------------------

RATE, DURATION_S, PRODUCERS = 800, 1, 2


def scenario(address: str, mode: str, options: str = "{}", consumers: int = 2) -> str:
    return f"""
name: rabbitmq-{mode}
systems:
  - {{name: rmq, driver: rabbitmq, broker: {{external: "{address}"}}, options: {options}}}
workload:
  mode: {mode}
  message_size: 100
  rate: {RATE}
  duration: {DURATION_S}s
  warmup: 200ms
  drain: 3s
  producers: {PRODUCERS}
  consumers: {consumers}
"""


@pytest.mark.parametrize(("mode", "options", "consumers"), [
    ("one-way", "{}", 2),
    ("round-trip", "{}", 1),
    # the secondary forms, two to a run: the tests' runtime is mostly agent start-up
    ("one-way", "{exchange: '', queue: e2e-shared, persistent: true, confirms: true}", 1),
    ("round-trip", "{persistent: true, confirms: true, auto_ack: true}", 1),
])
def test_runs_account_for_every_message(server, tmp_path, spark, mode, options, consumers):
    point = points(scenario(server.address, mode, options, consumers))[0]
    manifest = execute(point, tmp_path / "run")
    assert manifest["status"] == "ok", manifest["problems"]
    summary = analyze_run(spark, tmp_path / "run")
    sent = RATE * DURATION_S
    received = sent * consumers if mode == "one-way" else sent
    assert summary["status"] == "ok"
    assert summary["lost"] == summary["duplicated"] == 0
    assert (summary["sent"], summary["received"]) == (sent, received)
    latency = summary["latency_us"]
    assert latency["count"] == received
    assert all(latency[key] > 0 for key in (*PERCENTILE_KEYS, "max"))


def test_an_unreachable_node_fails_the_run_naming_it(tmp_path):
    address = f"127.0.0.1:{free_port()}"
    point = points(f"""
name: unreachable
systems: [{{name: r, driver: rabbitmq, broker: {{external: "{address}"}}}}]
workload: {{message_size: 64, rate: 100, duration: 1s, warmup: 0s}}
""")[0]
    manifest = execute(point, tmp_path / "run")
    assert manifest["status"] == "failed"
    assert any(f"rabbitmq at {address}: cannot connect" in p
               for p in manifest["problems"]), manifest["problems"]


def test_a_node_dying_mid_run_leaves_partial_data_with_the_loss_counted(tmp_path, spark):
    with recipe_server("rabbitmq", tmp_path / "node") as broker:
        point = points(f"""
name: dies
systems: [{{name: r, driver: rabbitmq, broker: {{external: "{broker.address}"}}}}]
workload: {{message_size: 64, rate: 1000, duration: 3s, warmup: 0s, drain: 1s}}
""")[0]
        view = RecordingView()

        def kill_node() -> None:
            while view.at_ns is None:
                time.sleep(0.001)
            time.sleep(1.0)
            broker.process.kill()

        threading.Thread(target=kill_node, daemon=True).start()
        manifest = execute(point, tmp_path / "run", view)
    assert manifest["status"] == "partial"
    assert any(f"rabbitmq at {broker.address}" in p for p in manifest["problems"])
    for agent in manifest["agents"]:
        assert all(file["verified"] for file in agent["artifacts"].values())
    summary = analyze_run(spark, tmp_path / "run")
    assert summary["status"] == "partial"
    assert 0 < summary["received"] < summary["sent"]
    assert summary["sent"] == summary["received"] + summary["lost"]


# --- options ----------------------------------------------------------------------------


def parse(options: str, workload: str = "message_size: 64") -> None:
    parse_scenario(f"""
name: opts
systems:
  - {{name: r, driver: rabbitmq, broker: {{recipe: rabbitmq}}, options: {options}}}
workload: {{{workload}, rate: 100, duration: 1s}}
""")


def test_an_unknown_option_is_refused_by_name():
    with pytest.raises(ScenarioError, match=r"systems\[0\]\.options\.exchnage"):
        parse("{exchnage: x}")


def test_both_password_sources_are_refused():
    with pytest.raises(ScenarioError, match="not both"):
        parse("{password_env: A, password_file: /b}")


def test_the_documented_options_are_accepted():
    parse("{exchange: '', queue: q, persistent: true, confirms: true, prefetch: 10, "
          "auto_ack: false, username: u, password_env: P, vhost: /v}")


def test_the_shared_queue_refuses_several_receivers():
    with pytest.raises(ScenarioError, match="fan-out"):
        parse("{exchange: ''}", "message_size: 64, consumers: 2")
    with pytest.raises(ScenarioError, match="fan-out"):
        parse("{exchange: ''}", "message_size: 64, connections: 2")
    parse("{exchange: ''}", "message_size: 64, mode: round-trip, producers: 3")
    parse("{}", "message_size: 64, consumers: 3")


def test_workload_problems_refuse_what_rabbitmq_cannot_carry():
    workload = Workload(message_size=200 << 20, rate=10, duration_ns=10**9)
    problems = RabbitmqDriver.workload_problems(RabbitmqOptions(), workload)
    assert any("max_message_size" in problem for problem in problems)
