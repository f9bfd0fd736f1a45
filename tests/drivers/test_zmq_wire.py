"""The zmq driver's endpoints, port layout and lane topics (ZMTP itself is libzmq's)."""

from __future__ import annotations

from sixnines.drivers.base import SOLE_LANE, Lane
from sixnines.drivers.zmq.wire import (
    ECHO,
    PUBLISHERS,
    SUBSCRIBERS,
    WELCOME,
    broker_address,
    endpoint,
    subscribes_to,
    topic,
)


def test_endpoints_bracket_ipv6_hosts():
    assert endpoint("127.0.0.1", 5555) == "tcp://127.0.0.1:5555"
    assert endpoint("::1", 5555) == "tcp://[::1]:5555"
    assert endpoint("10.0.0.1") == "tcp://10.0.0.1"


def test_a_broker_is_three_consecutive_ports_from_its_address():
    assert (PUBLISHERS, SUBSCRIBERS, ECHO) == (0, 1, 2)
    assert broker_address("::1", 7000) == "[::1]:7000"
    assert broker_address("host", 7000) == "host:7000"
    assert WELCOME == b"sixnines-welcome"


def test_the_sole_lane_has_no_topic_and_others_their_name_ended():
    assert topic(SOLE_LANE) == b""  # single-frame messages, everything subscribed
    assert topic(Lane(0, 2)) == b"lane.0\0"
    assert topic(Lane(10, 12)) == b"lane.10\0"


def test_no_lanes_topic_is_a_prefix_of_anothers():
    topics = [topic(Lane(index, 12)) for index in range(12)]
    assert not [(a, b) for a in topics for b in topics if a != b and b.startswith(a)]


def test_a_sender_waits_for_a_subscription_its_messages_match():
    assert subscribes_to(b"\x01", b"")  # everything: a sole-lane receiver
    assert subscribes_to(b"\x01", b"lane.1\0")
    assert subscribes_to(b"\x01lane.1\0", b"lane.1\0")
    assert not subscribes_to(b"\x01lane.10\0", b"lane.1\0")
    assert not subscribes_to(b"\x01lane.1\0", b"")  # another lane's receivers only
    assert not subscribes_to(b"\x01" + WELCOME, b"lane.1\0")
    assert not subscribes_to(b"\x00lane.1\0", b"lane.1\0")  # an unsubscription
