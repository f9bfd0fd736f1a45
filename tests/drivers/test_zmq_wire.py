"""The zmq driver's endpoints and port layout (ZMTP itself is libzmq's)."""

from __future__ import annotations

from sixnines.drivers.zmq.wire import (
    ECHO,
    PUBLISHERS,
    SUBSCRIBERS,
    WELCOME,
    broker_address,
    endpoint,
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
