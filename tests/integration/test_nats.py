"""The nats driver against real nats-servers: the recipe's (JetStream on), and servers this
module starts itself for authentication, pings and permissions. What is NATS's own is here
(queue-group responders, JetStream streams and acks, logins, pings); what every driver must
do is the conformance suite's (tests/conformance), in core and JetStream mode."""

from __future__ import annotations

import os
import re
import socket
import threading
import time

import numpy as np
import pytest
from nats.js import api

from sixnines.drivers.base import DriverError, Lane, split_address
from sixnines.drivers.nats import NatsDriver, NatsOptions
from sixnines.drivers.nats.connection import manage
from sixnines.formats.payload import frame_dtype
from sixnines.orchestrator.scenario.model import parse_scenario
from sixnines.orchestrator.scenario.problems import ScenarioError
from tests.drivers.certs import self_signed
from tests.integration import support
from tests.integration.support import (
    NATS_AUTH_CONFIG,
    NATS_PASSWORD,
    SIZE,
    assert_every_message_accounted,
    assert_partial_with_loss_counted,
    assert_unreachable_run_fails,
    execute,
    external,
    nats_server,
    one_system,
    parse_options,
    points,
    recipe_server,
    run_with_broker_killed,
    send_in_batches,
)
from tests.integration.support import closing as closing_fixture

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

closing = closing_fixture  # the shared fixture, under its name here

PASSWORD = NATS_PASSWORD
TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with recipe_server("nats", tmp_path_factory.mktemp("nats")) as broker:
        yield broker


_names = iter(range(1_000_000))


def fresh(prefix: str) -> str:
    """A subject/stream name no other test uses (the module shares one server)."""
    return f"{prefix}{os.getpid()}x{next(_names)}"


def make_driver(address: str, mode: str, **options) -> NatsDriver:
    if mode == "jetstream":
        options = {"stream": fresh("s"), **options}
    return NatsDriver(address, NatsOptions(subject=fresh("t"), mode=mode, **options))


@pytest.fixture(params=["core", "jetstream"])
def driver(request, server) -> NatsDriver:
    return make_driver(server.address, request.param)


def frames_of(driver: NatsDriver, producer_id: int, count: int, size: int = SIZE):
    """`count` frames as the framework lays them out, headers stamped (producer_id, seq);
    also returns each message (what a receiver must hand over)."""
    buf, stride = support.frames_of(driver, producer_id, count, size)
    return buf, stride, support.payloads(driver, buf, size)


def collect(receiver, count: int, size: int = SIZE, timeout_s: float = 20.0,
            responders=()) -> list[bytes]:
    """Receive exactly `count` messages through a small buffer (many calls, partial
    messages carried over), relaying through `responders` meanwhile."""
    out = memoryview(bytearray(37 * size))
    got: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count:
        assert time.monotonic() < deadline, f"received {len(got)} of {count}"
        for responder in responders:
            responder.relay(2)
        n = receiver.receive(out, size, 0 if responders else 100)
        got.extend(bytes(out[k * size : (k + 1) * size]) for k in range(n))
    assert len(got) == count
    return got


def producer_and_seq(message: bytes) -> tuple[int, int]:
    fields = np.frombuffer(message, dtype=frame_dtype(0, len(message)))[0]
    return int(fields["producer_id"]), int(fields["seq"])


def wait_for_acks(senders, expected: int) -> int:
    deadline = time.monotonic() + 10
    while sum(s.acked for s in senders) < expected and time.monotonic() < deadline:
        for sender in senders:
            sender.service()
        time.sleep(0.005)
    return sum(s.acked for s in senders)


# --- delivery ---------------------------------------------------------------------------


def test_two_responders_share_the_requests(driver, closing):
    """Two responder connections, as a responder agent with `connections: 2` opens: they
    share the requests (a queue group, or one JetStream consumer), so each is answered
    once."""
    responders = [driver.responder(SIZE, c) for c in range(2)]
    for responder in responders:
        closing(responder)
    pairs = {producer_id: driver.requester(SIZE, producer_id) for producer_id in (3, 12)}
    for sender, receiver in pairs.values():
        closing(sender)
        closing(receiver)
    sent = {}
    for producer_id, (sender, _) in pairs.items():
        buf, stride, sent[producer_id] = frames_of(driver, producer_id, 200)
        send_in_batches(sender, buf, stride, batches=(1, 2, 100, 33))
    for producer_id, (_, receiver) in pairs.items():  # two responders: any order
        got = collect(receiver, 200, responders=responders)
        assert sorted(got) == sorted(sent[producer_id])
    time.sleep(0.1)
    assert sum(responder.relay(0) for responder in responders) == 0
    out = memoryview(bytearray(8 * SIZE))
    assert all(receiver.receive(out, SIZE, 0) == 0 for _, receiver in pairs.values())
    if driver.options.mode == "jetstream":
        assert wait_for_acks([sender for sender, _ in pairs.values()], 400) == 400


def test_each_lane_receives_what_its_senders_send(driver, closing):
    """Senders on lanes 0 and 1 of 2 send their lane's framing (`PUB S.<i>`, with the ack
    inbox in JetStream) as it is; each lane's receiver gets exactly that lane's messages,
    and in JetStream every publish is acknowledged."""
    senders = support.assert_each_lane_gets_its_own(driver, closing, collect)
    if driver.options.mode == "jetstream":
        assert wait_for_acks(senders, 600) == 600


def test_a_jetstream_receiver_gets_what_was_published_after_it_was_created(server, closing):
    driver = make_driver(server.address, "jetstream")
    sender = driver.sender(SIZE, 0)
    closing(sender)
    before, _, _ = frames_of(driver, 1, 10)
    sender.send(memoryview(before), 10)
    assert wait_for_acks([sender], 10) == 10  # stored before the receiver exists
    receiver = driver.receiver(SIZE, 0)
    closing(receiver)
    after, _, messages = frames_of(driver, 2, 10)
    sender.send(memoryview(after), 10)
    assert collect(receiver, 10) == messages
    time.sleep(0.05)
    assert receiver.receive(memoryview(bytearray(4 * SIZE)), SIZE, 0) == 0


def test_a_jetstream_receiver_keeps_pulling_past_its_batch(server, closing):
    driver = make_driver(server.address, "jetstream", batch=16)
    receiver = driver.receiver(SIZE, 0)
    closing(receiver)
    sender = driver.sender(SIZE, 0)
    closing(sender)
    buf, stride, messages = frames_of(driver, 1, 500)
    send_in_batches(sender, buf, stride)
    assert collect(receiver, 500) == messages


def test_an_existing_stream_without_our_subject_is_refused(server, closing):
    stream = fresh("s")
    first = make_driver(server.address, "jetstream", stream=stream)
    closing(first.sender(SIZE, 0))  # creates the stream for its subject
    other = make_driver(server.address, "jetstream", stream=stream)
    with pytest.raises(DriverError, match=f"stream '{stream}' exists with subjects"):
        other.sender(SIZE, 0)


def test_an_existing_stream_with_other_storage_is_refused(server, closing):
    stream, subject = fresh("s"), fresh("t")
    first = NatsDriver(server.address, NatsOptions(subject=subject, mode="jetstream",
                                                   stream=stream, storage="memory"))
    closing(first.sender(SIZE, 0))
    again = NatsDriver(server.address, NatsOptions(subject=subject, mode="jetstream",
                                                   stream=stream, max_bytes=1 << 20))
    closing(again.sender(SIZE, 0))  # other limits: the stream is used as it is
    other = NatsDriver(server.address, NatsOptions(subject=subject, mode="jetstream",
                                                   stream=stream, storage="file"))
    with pytest.raises(DriverError, match="exists with storage memory, not file"):
        other.sender(SIZE, 0)


def test_an_existing_stream_without_the_lanes_subjects_serves_one_connection_only(server,
                                                                                  closing):
    """A stream taking only the subject (made by hand, or by an older sixnines) serves
    single-connection runs; lanes publish to `<subject>.<lane>`, so they are refused."""
    stream, subject = fresh("s"), fresh("t")

    async def make(jsm) -> None:
        await jsm.add_stream(api.StreamConfig(name=stream, subjects=[subject],
                                              storage=api.StorageType.MEMORY))
    manage([split_address(server.address, "nats")], {}, "test", make)
    driver = NatsDriver(server.address, NatsOptions(subject=subject, mode="jetstream",
                                                    stream=stream))
    closing(driver.sender(SIZE, 0))
    with pytest.raises(DriverError, match=rf"without '{subject}\.0' \(several connections "
                       rf"publish to '{subject}\.\*'\)"):
        driver.sender(SIZE, 1, Lane(0, 2))


def test_jetstream_on_a_server_without_it_is_named(closing):
    with nats_server() as address:
        driver = make_driver(address, "jetstream")
        with pytest.raises(DriverError, match="JetStream is not enabled"):
            driver.receiver(SIZE, 0)


# --- servers of our own: credentials, pings, permissions ---------------------------------

@pytest.fixture(scope="module")
def auth_server():
    with nats_server(config=NATS_AUTH_CONFIG) as address:
        yield address


def test_a_missing_login_is_a_clear_error(auth_server, monkeypatch):
    """(A wrong password: the conformance suite, tests/conformance.)"""
    driver = NatsDriver(auth_server, NatsOptions(username="alice",
                                                 password_env="NATS_TEST_PASSWORD"))
    anonymous = NatsDriver(auth_server, NatsOptions())
    with pytest.raises(DriverError, match="wants username"):
        anonymous.receiver(SIZE, 0)
    monkeypatch.delenv("NATS_TEST_PASSWORD", raising=False)
    with pytest.raises(DriverError, match=r"NATS_TEST_PASSWORD .* not set"):
        driver.sender(SIZE, 0)


def test_a_password_file_logs_in_and_pings_are_answered(auth_server, tmp_path, closing):
    """The server pings every 100 ms and drops a client after two unanswered pings: a
    sender that only sends (every 20 ms) and a receiver that only receives stay connected;
    a connection nobody reads is dropped, as the control."""
    secret = tmp_path / "password"
    secret.write_text(PASSWORD + "\n")
    driver = NatsDriver(auth_server, NatsOptions(username="alice", password_file=str(secret)))
    receiver = driver.receiver(SIZE, 0)
    closing(receiver)
    sender = driver.sender(SIZE, 0)
    closing(sender)
    idle = driver.sender(SIZE, 1)
    closing(idle)
    buf, stride, messages = frames_of(driver, 1, 60)
    got: list[bytes] = []
    out = memoryview(bytearray(8 * SIZE))
    for k in range(60):
        sender.send(memoryview(buf)[k * stride : (k + 1) * stride], 1)
        deadline = time.monotonic() + 0.02
        while time.monotonic() < deadline:
            n = receiver.receive(out, SIZE, 5)
            got.extend(bytes(out[i * SIZE : (i + 1) * SIZE]) for i in range(n))
    got += collect(receiver, 60 - len(got))
    assert got == messages
    with pytest.raises(DriverError, match=re.escape(auth_server)):
        for _ in range(100):  # the idle sender's connection is gone by now
            idle.send(memoryview(buf)[:stride], 1)
            idle.service()
            time.sleep(0.01)


def test_a_server_error_reaches_the_sender(auth_server, monkeypatch, closing):
    monkeypatch.setenv("NATS_TEST_PASSWORD", PASSWORD)
    driver = NatsDriver(auth_server, NatsOptions(username="limited",
                                                 password_env="NATS_TEST_PASSWORD"))
    sender = driver.sender(SIZE, 0)
    closing(sender)
    buf, _, _ = frames_of(driver, 1, 1)
    with pytest.raises(DriverError, match="Permissions Violation for Publish"):
        for _ in range(200):
            sender.send(memoryview(buf), 1)
            time.sleep(0.005)


def test_a_token_logs_in_and_a_wrong_one_is_refused(monkeypatch, closing):
    with nats_server("--auth", TOKEN) as address:
        monkeypatch.setenv("NATS_TEST_TOKEN", TOKEN)
        driver = NatsDriver(address, NatsOptions(token_env="NATS_TEST_TOKEN"))
        receiver = driver.receiver(SIZE, 0)
        closing(receiver)
        sender = driver.sender(SIZE, 0)
        closing(sender)
        buf, _, messages = frames_of(driver, 1, 10)
        sender.send(memoryview(buf), 10)
        assert collect(receiver, 10) == messages
        monkeypatch.setenv("NATS_TEST_TOKEN", "wrong")
        with pytest.raises(DriverError, match="authentication failed"):
            driver.sender(SIZE, 0)


def test_something_else_listening_is_not_a_nats_server():
    with socket.create_server(("127.0.0.1", 0)) as listener:
        address = f"127.0.0.1:{listener.getsockname()[1]}"

        def answer() -> None:
            conn, _ = listener.accept()
            with conn:
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
                time.sleep(0.5)

        thread = threading.Thread(target=answer)
        thread.start()
        try:
            with pytest.raises(DriverError, match="not a NATS server"):
                NatsDriver(address, NatsOptions()).receiver(SIZE, 0)
        finally:
            thread.join(10)


# --- runs end to end ---------------------------------------------------------------------

RATE, DURATION_S = 1000, 1


def workload(mode: str, duration: str = f"{DURATION_S}s", warmup: str = "200ms",
             consumers: int = 2) -> str:
    receivers = f"consumers: {consumers}" if mode == "one-way" else "connections: 2"
    return (f"{{mode: {mode}, message_size: 200, rate: {RATE}, duration: {duration}, "
            f"warmup: {warmup}, drain: 3s, {receivers}}}")


def scenario(address: str, mode: str, options: str) -> str:
    return one_system("nats", external(address), workload(mode), options, name="nats",
                      system="nats")


@pytest.mark.parametrize("mode", ["one-way", "round-trip"])
@pytest.mark.parametrize("nats_mode", ["core", "jetstream"])
def test_runs_end_to_end(server, tmp_path, spark, mode, nats_mode):
    options = f"{{subject: {fresh('e')}, mode: {nats_mode}"
    options += f", stream: {fresh('s')}}}" if nats_mode == "jetstream" else "}"
    point = points(scenario(server.address, mode, options))[0]
    sent = RATE * DURATION_S
    received = sent * 2 if mode == "one-way" else sent  # two consumers
    run_dir = tmp_path / "run"
    summary = assert_every_message_accounted(spark, execute(point, run_dir), run_dir, sent,
                                             received)
    latency = summary["latency_us"]
    ladder = [latency[key] for key in ("p50", "p90", "p99", "p99.9", "max")]
    assert ladder == sorted(ladder) and ladder[0] > 0


def test_an_unreachable_server_fails_the_run_naming_it(tmp_path):
    assert_unreachable_run_fails("nats", tmp_path, workload("one-way"))


def test_a_server_dying_mid_run_leaves_partial_data_with_the_loss_counted(tmp_path, spark):
    manifest, address = run_with_broker_killed(
        "nats", "nats", tmp_path, workload("one-way", duration="3s", warmup="0s", consumers=1))
    # the producer stopped at the first error: far fewer than the 3000 planned were sent,
    # and whatever the server took but never delivered is counted as lost
    summary = assert_partial_with_loss_counted(spark, manifest, tmp_path / "run",
                                               f"nats at {address}", sent_below=2500)
    assert summary["duplicated"] == 0


# --- options and workload checks ---------------------------------------------------------


def options_problem(options: str, workload: str = "message_size: 64") -> str:
    with pytest.raises(ScenarioError) as error:
        parse_options("nats", options, workload)
    return str(error.value)


@pytest.mark.parametrize(("options", "expected"), [
    ("{stream: s}", "only for mode: jetstream"),
    ("{mode: jetstream, storage: tape}", "systems[0].options.storage"),
    ("{password_env: P}", "username and a password"),
    ("{username: u, password_env: P, password_file: f}", "not both"),
    ("{username: u, password_env: P, token_env: T}", "not both"),
    ("{subject: 'a.*'}", "without spaces or * and >"),
    ("{mode: jetstream, stream: 'a.b'}", "stream name"),
])
def test_inconsistent_options_are_refused(options, expected):
    assert expected in options_problem(options)


def test_messages_no_nats_server_accepts_are_refused():
    assert "above 64 MiB" in options_problem("{}", "message_size: 65MiB")
    parse_scenario("""
name: fine
systems: [{name: nats, driver: nats, broker: {recipe: nats}, options: {mode: jetstream}}]
workload: {message_size: 1KiB, rate: 100, duration: 1s, consumers: 3, connections: 2,
           mode: [one-way, round-trip]}
""")


# --- TLS --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    """A nats-server that requires TLS, with a certificate made for the test."""
    cert, key = self_signed(tmp_path_factory.mktemp("nats-tls"), "127.0.0.1", "IP:127.0.0.1")
    with nats_server("--tls", "--tlscert", cert, "--tlskey", key) as address:
        yield address, cert


@pytest.mark.parametrize("size", [SIZE, 40_000])  # 40 kB: a message over several records
def test_messages_cross_a_tls_connection_whole_and_in_order(tls_server, closing, size):
    """Over TLS the socket is non-blocking (drivers/sockets.py): a read that finds half a
    TLS record returns nothing instead of blocking the loop, and bytes decrypted ahead
    (`pending`) are taken without waiting for the kernel."""
    address, cert = tls_server
    driver = NatsDriver(address, NatsOptions(subject=fresh("tls"), tls_ca_file=cert))
    receiver = driver.receiver(size, 0)
    closing(receiver)
    sender = driver.sender(size, 1)
    closing(sender)
    count = 300
    buf, stride, messages = frames_of(driver, 1, count, size)
    send_in_batches(sender, buf, stride)
    assert collect(receiver, count, size) == messages
