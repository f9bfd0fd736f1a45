"""What a NATS producer claims the broker acknowledged (`NatsSender.acknowledged`), over a
socket pair standing in for the server: every ack while they come; once messages waited
ACK_WAIT_NS with none, the acks before that and no later one (a cluster's stream between
leaders drops publishes without a word, and the acks after it are for later messages)."""

from __future__ import annotations

import socket

import pytest

from sixnines.drivers.nats import driver as nats_driver
from sixnines.drivers.nats.connection import NatsLink
from sixnines.drivers.nats.driver import ACK_WAIT_NS, SERVICE_NS, NatsSender

ACK_SID = b"2"
ACK = b'{"stream":"S","seq":1}'


class Clock:
    """The driver's clock, moved by hand."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def wire(monkeypatch):
    """(sender, server side of its socket, clock), made a while into the clock's time (as
    a connection made again is)."""
    clock = Clock()
    clock.now = 100 * ACK_WAIT_NS
    monkeypatch.setattr(nats_driver, "clock", clock)
    ours, server = socket.socketpair()
    link = NatsLink(ours, b"", {}, 1, "nats at test")
    link.ack_sid = ACK_SID
    sender = NatsSender(link, reads=True, own_acks=True)
    yield sender, server, clock
    sender.close()
    server.close()


def acks(server: socket.socket, count: int) -> None:
    server.sendall(b"MSG _INBOX.a 2 %d\r\n%s\r\n" % (len(ACK), ACK) * count)


def send(sender: NatsSender, clock: Clock, after_ns: int, count: int = 1) -> None:
    clock.now += after_ns
    sender.send(memoryview(b"x" * count), count)


def test_every_ack_is_claimed_while_they_come(wire):
    sender, server, clock = wire
    send(sender, clock, 0, 3)
    acks(server, 3)
    send(sender, clock, ACK_WAIT_NS - 1)  # slow, but within the wait
    acks(server, 1)
    send(sender, clock, SERVICE_NS)
    sender.service()
    assert sender.acknowledged == 4 and sender.acked == 4


def test_a_connection_sending_at_once_is_not_held_for_the_time_before_it(wire):
    # a connection made again sends within a millisecond of being made, its first look
    # at acks comes after: the wait is counted from when it was made
    sender, server, clock = wire
    send(sender, clock, 0)
    send(sender, clock, SERVICE_NS)
    acks(server, 2)
    send(sender, clock, SERVICE_NS)
    sender.service()
    assert sender.acknowledged == 2


def test_acks_after_a_silence_are_not_claimed(wire):
    sender, server, clock = wire
    send(sender, clock, 0, 2)
    acks(server, 2)
    send(sender, clock, SERVICE_NS)  # the 2 acks seen; this third one is never acked
    send(sender, clock, ACK_WAIT_NS)  # dropped too: messages waited with no ack
    acks(server, 1)  # a later message's (the stream has a leader again)
    send(sender, clock, SERVICE_NS)
    sender.service()
    assert sender.acked == 3  # taken, but which message it was for is not known
    assert sender.acknowledged == 2


def test_no_wait_is_counted_while_nothing_is_due(wire):
    # all acked, then a quiet while longer than the wait, then more: nothing held
    sender, server, clock = wire
    send(sender, clock, 0)
    acks(server, 1)
    send(sender, clock, SERVICE_NS)
    acks(server, 1)
    send(sender, clock, 10 * ACK_WAIT_NS)
    acks(server, 1)
    send(sender, clock, SERVICE_NS)
    sender.service()
    assert sender.acknowledged == 3
