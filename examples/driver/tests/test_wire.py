"""The hub's hello on bytes alone: it carries the connection's lane, which the hub routes by."""

from sixnines.drivers.base import SOLE_LANE, Lane

from sixnines_hub.wire import HELLO, MAGIC, PUBLISH, SUBSCRIBE, hello


def test_the_hello_names_the_lane():
    data = hello(SUBSCRIBE, 64, Lane(1, 3), b"pw")
    assert HELLO.unpack(data[: HELLO.size]) == (MAGIC, SUBSCRIBE, 64, 1, 3, 2)
    assert data[HELLO.size :] == b"pw"


def test_one_connection_is_the_sole_lane():
    _, _, _, index, count, length = HELLO.unpack(hello(PUBLISH, 8, SOLE_LANE, b""))
    assert (index, count, length) == (0, 1, 0)
