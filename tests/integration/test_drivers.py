"""The builtin drivers against their builtin brokers, each broker in its own process: what
is their own (the tcp relay's wire, addresses, the registry). What every driver must do is
the conformance suite's (tests/conformance)."""

from __future__ import annotations

import signal
import socket
import struct
import threading
import time
from contextlib import contextmanager

import numpy as np
import pytest

from sixnines.drivers import registry
from sixnines.drivers.base import DriverError, Framing
from sixnines.drivers.tcp import TcpDriver, TcpOptions
from sixnines.drivers.tcp.wire import ACK, HELLO, LENGTH, PUBLISH, hello
from sixnines.drivers.zmq import ZmqDriver, ZmqOptions
from sixnines.formats.payload import HEADER_SIZE, build_frames, frame_dtype
from sixnines.testing.brokers import builtin_broker

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

SIZE = 64
DRIVERS = {"tcp": (TcpDriver, TcpOptions), "zmq": (ZmqDriver, ZmqOptions)}


@contextmanager
def broker_process(name: str):
    """`python -m sixnines broker NAME` on a free port; yields (process, address)."""
    with builtin_broker(name) as broker:
        yield broker.process, broker.address


@pytest.fixture(scope="module")
def tcp_address():
    with broker_process("tcp") as (_, address):
        yield address


@pytest.fixture(scope="module")
def zmq_address():
    with broker_process("zmq") as (_, address):
        yield address


@pytest.fixture(params=["tcp", "zmq"])
def driver(request):
    name = request.param
    address = request.getfixturevalue(f"{name}_address")
    cls, options = DRIVERS[name]
    return cls(address, options())


@pytest.fixture
def closing():
    """Collects senders/receivers and closes them after the test."""
    opened = []
    yield opened.append
    for thing in reversed(opened):
        thing.close()


def frames_of(driver, producer_id: int, count: int, size: int = SIZE, seed: int = 0):
    """`count` frames with the driver's prefix, header stamped with (producer_id, seq)."""
    prefix = driver.framing(size).prefix
    buf = build_frames(prefix, size, count, seed=seed + producer_id)
    view = buf.view(frame_dtype(len(prefix), size))
    view["producer_id"] = producer_id
    view["seq"] = np.arange(count, dtype=np.uint64)
    view["intended_ns"] = np.arange(count, dtype=np.int64) * 1000 + producer_id
    view["sent_ns"] = -1
    return buf, len(prefix) + size


def collect(receiver, stride: int, count: int, timeout_s: float = 20.0) -> list[bytes]:
    """Receive exactly `count` whole frames (one buffer reused across calls, as agents do)."""
    out = memoryview(bytearray(37 * stride))  # small: many calls, partial frames carried over
    got: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count:
        assert time.monotonic() < deadline, f"received {len(got)} of {count} frames"
        n = receiver.receive(out, stride, 100)
        got.extend(bytes(out[k * stride : (k + 1) * stride]) for k in range(n))
    assert len(got) == count
    return got


def split(buf: np.ndarray, stride: int) -> list[bytes]:
    raw = buf.tobytes()
    return [raw[k : k + stride] for k in range(0, len(raw), stride)]


def header(frame: bytes, prefix_len: int) -> tuple[int, int]:
    fields = np.frombuffer(frame, dtype=frame_dtype(prefix_len, len(frame) - prefix_len))[0]
    return int(fields["producer_id"]), int(fields["seq"])


# --- pollables (delivery, round trips and the rest: the conformance suite) ---------------


def test_the_driver_waiter_waits_on_its_receivers(driver, closing):
    receivers = [driver.receiver(SIZE, c) for c in range(2)]
    for receiver in receivers:
        closing(receiver)
    waiter = driver.waiter(receivers)
    assert waiter.wait(0) == []
    sender = driver.sender(SIZE, 0)
    closing(sender)
    buf, _ = frames_of(driver, 1, 1)
    sender.send(memoryview(buf), 1)
    woken: set[int] = set()
    deadline = time.monotonic() + 10
    while woken != {0, 1} and time.monotonic() < deadline:
        woken |= set(waiter.wait(1000))
    assert woken == {0, 1}


# --- the tcp relay ----------------------------------------------------------------------


def raw_publisher(address: str, stride: int, hello_pieces: tuple[int, ...], first: bytes):
    """A publisher speaking the wire protocol by hand: the hello in pieces, with `first`
    (some frame bytes) in the same write as the hello's last piece."""
    host, port = address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    opening = hello(PUBLISH, stride)
    start = 0
    for n in hello_pieces:
        sock.sendall(opening[start : start + n])
        start += n
        time.sleep(0.005)
    sock.sendall(opening[start:] + first)
    assert sock.recv(1) == ACK
    return sock


def test_relay_cuts_at_frame_boundaries(tcp_address, closing):
    driver = TcpDriver(tcp_address, TcpOptions())
    receiver = driver.receiver(SIZE, 0)
    closing(receiver)
    whole = driver.sender(SIZE, 0)  # a second publisher writing whole frames in between
    closing(whole)
    count = 40
    buf, stride = frames_of(driver, 1, count, seed=5)
    other, _ = frames_of(driver, 2, count, seed=6)
    raw = buf.tobytes()
    sock = raw_publisher(tcp_address, stride, (3, 2), raw[:1])
    closing(sock)
    pos = 1
    chunks = [1, 37, stride + stride // 2, stride - 1, 1, 2 * stride + 3, 5]
    k = 0
    while pos < len(raw):
        n = chunks[k % len(chunks)]
        sock.sendall(raw[pos : pos + n])
        pos += n
        # a whole frame of the other publisher lands while this one is mid-frame
        if k < count:
            whole.send(memoryview(other)[k * stride : (k + 1) * stride], 1)
        k += 1
        time.sleep(0.002)
    sent_others = min(k, count)
    got = collect(receiver, stride, count + sent_others)
    mine = [f for f in got if header(f, 4)[0] == 1]
    theirs = [f for f in got if header(f, 4)[0] == 2]
    assert mine == split(buf, stride)
    assert theirs == split(other, stride)[:sent_others]
    for frame in got:
        assert LENGTH.unpack_from(frame)[0] == SIZE


def test_relay_forwards_frames_sent_with_the_hello(tcp_address, closing):
    driver = TcpDriver(tcp_address, TcpOptions())
    receiver = driver.receiver(SIZE, 0)
    closing(receiver)
    buf, stride = frames_of(driver, 4, 3)
    sock = raw_publisher(tcp_address, stride, (), buf.tobytes())  # hello + 3 frames at once
    closing(sock)
    assert collect(receiver, stride, 3) == split(buf, stride)


def test_relay_drops_a_connection_with_a_bad_hello(tcp_address):
    host, port = tcp_address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(HELLO.pack(b"XYZ", PUBLISH, 68, 0, 1))
        assert sock.recv(1) == b""  # closed, no acknowledgement


def test_a_receiver_sees_the_relay_go(closing):
    with broker_process("tcp") as (process, address):
        driver = TcpDriver(address, TcpOptions())
        receiver = driver.receiver(SIZE, 0)
        closing(receiver)
        process.terminate()
        process.wait(10)
        out = memoryview(bytearray(4 * (4 + SIZE)))
        with pytest.raises(DriverError, match=r"closed|lost") as error:
            for _ in range(50):  # each call waits at most 200 ms for the close to show
                receiver.receive(out, 4 + SIZE, 200)
        assert address in str(error.value)


def test_a_dead_subscriber_does_not_cost_the_others_messages(closing):
    with broker_process("tcp") as (process, address):
        driver = TcpDriver(address, TcpOptions())
        doomed = driver.receiver(SIZE, 0)  # first in the relay's subscriber list
        healthy = driver.receiver(SIZE, 0)
        closing(healthy)
        sender = driver.sender(SIZE, 0)
        closing(sender)
        buf, stride = frames_of(driver, 1, 5)
        # Hold the relay still so that the publisher's data and the dead subscriber's reset
        # are seen in one select(), publisher first (the order in which they became ready).
        process.send_signal(signal.SIGSTOP)
        try:
            sender.send(memoryview(buf), 5)
            time.sleep(0.05)
            sock = doomed.pollable  # the TcpReceiver's socket
            linger = struct.pack("ii", 1, 0)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
            doomed.close()  # abortive close: the relay's next send to it fails
            time.sleep(0.05)
        finally:
            process.send_signal(signal.SIGCONT)
        time.sleep(0.1)
        later, _ = frames_of(driver, 2, 5)
        sender.send(memoryview(later), 5)  # so that the healthy receiver gets *something*
        # both batches may arrive in one read: collect them together, in order
        got = collect(healthy, stride, 10)
        assert [header(f, 4) for f in got[:5]] == [(1, seq) for seq in range(5)]
        assert got == split(buf, stride) + split(later, stride)


# --- addresses --------------------------------------------------------------------------


def test_tcp_something_else_listening_is_not_a_relay():
    with socket.create_server(("127.0.0.1", 0)) as server:
        address = f"127.0.0.1:{server.getsockname()[1]}"
        driver = TcpDriver(address, TcpOptions())
        server.settimeout(10)

        def answer() -> None:
            conn, _ = server.accept()
            with conn:
                conn.recv(HELLO.size)
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

        thread = threading.Thread(target=answer)
        thread.start()
        try:
            with pytest.raises(DriverError, match="not a sixnines relay"):
                driver.receiver(SIZE, 0)
        finally:
            thread.join(10)


@pytest.mark.parametrize("address", ["localhost", "127.0.0.1:http", ":"])
def test_a_malformed_address_is_a_driver_error(address):
    with pytest.raises(DriverError, match="HOST:PORT"):
        TcpDriver(address, TcpOptions()).receiver(SIZE, 0)
    with pytest.raises(DriverError, match="HOST:PORT"):
        ZmqDriver(address, ZmqOptions())


# --- registry ---------------------------------------------------------------------------


def test_registry_lists_the_builtin_drivers():
    names = registry.available()
    assert {"tcp", "zmq"} <= set(names)
    assert registry.load("tcp") is TcpDriver
    assert registry.load("zmq") is ZmqDriver


def test_registry_names_installed_drivers_for_an_unknown_one():
    with pytest.raises(LookupError, match="nope") as error:
        registry.load("nope")
    message = str(error.value)
    assert "tcp" in message
    assert "zmq" in message


def test_builtin_drivers_declare_their_brokers():
    for cls in (TcpDriver, ZmqDriver):
        assert cls.has_builtin_broker
    assert TcpDriver("h:1", TcpOptions()).framing(SIZE).prefix == LENGTH.pack(SIZE)
    assert ZmqDriver("h:1", ZmqOptions()).framing(SIZE) == Framing()
    assert HEADER_SIZE < SIZE
