"""Which subject a nats connection's lane uses, which stream subjects take it, and the
framing a lane's sender is given (its own PUB line, sent as laid out), on bytes alone (no
server)."""

from __future__ import annotations

import pytest

from sixnines.drivers.base import SOLE_LANE, Framing, Lane
from sixnines.drivers.nats import NatsDriver, NatsOptions
from sixnines.drivers.nats.wire import covers, keyed_lanes_pattern, lanes_pattern
from sixnines.formats.keys import KeySpace

CRLF = b"\r\n"


def test_one_lane_uses_the_subject_and_several_a_subject_each():
    driver = NatsDriver("127.0.0.1:4222", NatsOptions(subject="a.b"))
    assert driver.lane_subject(SOLE_LANE) == "a.b"
    assert [driver.lane_subject(Lane(i, 2)) for i in range(2)] == ["a.b.0", "a.b.1"]
    assert driver._published(SOLE_LANE) == ["a.b"]
    assert driver._published(Lane(1, 3)) == ["a.b", "a.b.0", "a.b.1", "a.b.2"]


def test_the_stream_takes_every_lane_but_not_the_replies():
    pattern = lanes_pattern("a.b")
    assert all(covers(pattern, f"a.b.{i}") for i in range(30))
    assert not covers(pattern, "a.b")
    assert not covers(pattern, "a.b.reply.7")  # core replies of round trips


def test_a_keyed_run_publishes_below_each_lane_and_its_stream_takes_every_key():
    """With keys each lane's messages go to `<lane subject>.<key>`: a stream made for the
    run takes every subject below the subject; one made without keys takes a keyed run of
    one lane only (its keys are one token below the subject)."""
    driver = NatsDriver("127.0.0.1:4222", NatsOptions(subject="a.b", mode="jetstream"))
    driver.keys = KeySpace(3)
    assert driver._published(SOLE_LANE) == ["a.b.*"]
    assert driver._published(Lane(0, 2)) == ["a.b.0.*", "a.b.1.*"]
    assert driver.framing(5, Lane(1, 2)).key_prefixes == tuple(
        f"PUB a.b.1.k{key} {driver._acks}.1 5\r\n".encode() for key in range(3))
    assert all(covers(keyed_lanes_pattern("a.b"), subject)
               for subject in ["a.b.*", "a.b.0.*", "a.b.1.*"])
    assert covers(lanes_pattern("a.b"), "a.b.*")
    assert not covers(lanes_pattern("a.b"), "a.b.0.*")
    assert not covers("a.b.k0", "a.b.*")  # a stream of one key does not take them all


@pytest.mark.parametrize(("pattern", "subject", "expected"), [
    ("a.b", "a.b", True), ("a.b", "a.b.0", False), ("a.b.0", "a.b", False),
    ("a.*", "a.b", True), ("a.*", "a", False), ("*.b.*", "a.b.3", True),
    ("a.>", "a.b.3", True), ("a.>", "a", False), (">", "a", True), ("a.*.c", "a.b.d", False),
])
def test_stream_subject_patterns(pattern, subject, expected):
    assert covers(pattern, subject) is expected


def test_one_connection_is_framed_as_before():
    """The sole lane's PUB line (also every requester's) names the subject, in JetStream
    mode with the agent's ack inbox as reply subject."""
    core = NatsDriver("127.0.0.1:4222", NatsOptions(subject="a.b"))
    assert core.framing(5) == core.framing(5, SOLE_LANE) == Framing(b"PUB a.b 5\r\n", CRLF)
    js = NatsDriver("127.0.0.1:4222", NatsOptions(subject="a.b", mode="jetstream"))
    assert js.framing(5) == Framing(f"PUB a.b {js._acks} 5\r\n".encode(), CRLF)


def test_a_lane_is_framed_with_its_own_pub_line():
    core = NatsDriver("127.0.0.1:4222", NatsOptions(subject="a.b"))
    assert core.framing(5, Lane(1, 2)) == Framing(b"PUB a.b.1 5\r\n", CRLF)
    assert core.framing(70000, Lane(11, 12)).prefix == b"PUB a.b.11 70000\r\n"
    js = NatsDriver("127.0.0.1:4222", NatsOptions(subject="a.b", mode="jetstream"))
    # JetStream: the lane's own ack inbox, so a producer's connection reads its own acks
    assert js.framing(5, Lane(0, 3)) == Framing(f"PUB a.b.0 {js._acks}.0 5\r\n".encode(), CRLF)
    assert js.framing(5).prefix == f"PUB a.b {js._acks} 5\r\n".encode()


def test_the_receive_framing_is_one_for_all_lanes():
    """Payloads are copied out end to end whatever the lane."""
    assert NatsDriver("127.0.0.1:4222", NatsOptions()).receive_framing(5) == Framing()
