"""The tcp relay's lanes, on loopback with the relay in this process (no server to
install): a publisher's frames reach only the subscribers of its lane, and a subscriber far
behind holds back only the publishers of its own lane."""

from __future__ import annotations

import select
import socket
import threading
import time

import pytest

from sixnines.drivers.base import Lane
from sixnines.drivers.tcp import relay as relay_module
from sixnines.drivers.tcp.connection import connect
from sixnines.drivers.tcp.relay import Relay
from sixnines.drivers.tcp.wire import PUBLISH, SUBSCRIBE, frame_prefix

SIZE = 1020
STRIDE = 4 + SIZE


@pytest.fixture
def relay(monkeypatch):
    """A relay whose high-water mark is small enough to reach in a test."""
    monkeypatch.setattr(relay_module, "HIGH_WATER", 1 << 20)
    monkeypatch.setattr(relay_module, "LOW_WATER", 1 << 18)
    served = Relay("127.0.0.1", 0)
    threading.Thread(target=served.serve, args=(lambda address: None,), daemon=True).start()
    return served


@pytest.fixture
def connecting(relay):
    """Connects to the relay; closes every connection at the end."""
    host, port = relay.address.rsplit(":", 1)
    opened: list[socket.socket] = []

    def open_(role: bytes, lane: Lane) -> socket.socket:
        sock = connect(host, int(port), role, STRIDE, True, "test relay", lane)
        opened.append(sock)
        return sock

    yield open_
    for sock in opened:
        sock.close()


def frames(marker: bytes, count: int) -> bytes:
    return (frame_prefix(SIZE) + marker * SIZE) * count


def read(sock: socket.socket, length: int, timeout_s: float = 10.0) -> bytes:
    """Exactly `length` bytes, then a short look for anything more (there must be none)."""
    got = bytearray()
    deadline = time.monotonic() + timeout_s
    while len(got) < length:
        left = deadline - time.monotonic()
        assert left > 0, f"{len(got)} of {length} bytes arrived"
        if select.select([sock], [], [], left)[0]:
            chunk = sock.recv(1 << 20)
            assert chunk, "connection closed by the relay"
            got += chunk
    assert not select.select([sock], [], [], 0.2)[0], "more than was sent on this lane"
    return bytes(got)


def test_frames_reach_only_the_subscribers_of_the_publishers_lane(relay, connecting):
    subscribers = {lane: connecting(SUBSCRIBE, lane)
                   for lane in (Lane(0, 2), Lane(1, 2), Lane(0, 1))}
    connecting(PUBLISH, Lane(0, 2)).sendall(frames(b"a", 30))
    connecting(PUBLISH, Lane(1, 2)).sendall(frames(b"b", 20))
    assert read(subscribers[Lane(0, 2)], 30 * STRIDE) == frames(b"a", 30)
    assert read(subscribers[Lane(1, 2)], 20 * STRIDE) == frames(b"b", 20)
    assert read(subscribers[Lane(0, 1)], 0) == b""  # lane 0 of 1 is another lane


def test_a_slow_subscriber_holds_back_only_its_own_lanes_publishers(relay, connecting):
    slow = connecting(SUBSCRIBE, Lane(1, 2))  # reads nothing until the end
    fast = connecting(SUBSCRIBE, Lane(0, 2))
    held = connecting(PUBLISH, Lane(1, 2))
    free = connecting(PUBLISH, Lane(0, 2))
    held.setblocking(False)
    chunk = memoryview(frames(b"h", 256))
    sent = 0
    deadline = time.monotonic() + 20
    while not relay._routes[Lane(1, 2)].paused:
        assert time.monotonic() < deadline, f"lane 1 never paused ({sent} bytes sent)"
        try:
            sent += held.send(chunk[sent % len(chunk) :])  # the stream goes on whole
        except BlockingIOError:
            time.sleep(0.01)
    assert not relay._routes[Lane(0, 2)].paused
    free.sendall(frames(b"f", 1000))  # flows while lane 1 waits
    assert read(fast, 1000 * STRIDE) == frames(b"f", 1000)
    assert relay._routes[Lane(1, 2)].paused
    whole = sent - sent % STRIDE  # the relay forwards whole frames only
    got = read(slow, whole, timeout_s=30)  # catching up resumes the held publisher
    assert got == (bytes(chunk) * (sent // len(chunk) + 1))[:whole]
    assert not relay._routes[Lane(1, 2)].paused


def test_a_lane_is_forgotten_once_its_last_connection_closes(relay, connecting):
    subscriber = connecting(SUBSCRIBE, Lane(2, 3))
    publisher = connecting(PUBLISH, Lane(2, 3))
    assert set(relay._routes) == {Lane(2, 3)}
    subscriber.close()
    publisher.close()
    deadline = time.monotonic() + 5
    while relay._routes:
        assert time.monotonic() < deadline, f"lanes left: {list(relay._routes)}"
        time.sleep(0.01)
