"""The relay's wire format on bytes alone: hello `SXN` + role + u32 LE frame length + u16
LE lane index and count, frames a u32 LE length then the message (drivers/tcp/wire.py's
docstring)."""

from __future__ import annotations

from sixnines.drivers.base import Lane
from sixnines.drivers.tcp.wire import (
    ECHO,
    PUBLISH,
    SUBSCRIBE,
    frame_prefix,
    hello,
    parse_hello,
    whole_frames,
)

SOLE = b"\x00\x00\x01\x00"  # lane 0 of 1


def test_a_hello_is_magic_role_little_endian_length_and_lane():
    assert hello(PUBLISH, 260) == b"SXNP\x04\x01\x00\x00" + SOLE
    assert hello(SUBSCRIBE, 68) == b"SXNS\x44\x00\x00\x00" + SOLE
    assert hello(ECHO, 1 << 24) == b"SXNE\x00\x00\x00\x01" + SOLE


def test_a_hello_carries_the_connections_lane():
    assert hello(PUBLISH, 16, Lane(1, 2)) == b"SXNP\x10\x00\x00\x00\x01\x00\x02\x00"
    assert hello(SUBSCRIBE, 16, Lane(300, 1000)) == b"SXNS\x10\x00\x00\x00\x2c\x01\xe8\x03"
    assert parse_hello(hello(SUBSCRIBE, 16, Lane(3, 4))) == (b"S", 16, Lane(3, 4))


def test_a_hello_is_read_back_and_anything_else_refused():
    assert parse_hello(b"SXNS\x10\x00\x00\x00" + SOLE) == (b"S", 16, Lane(0, 1))
    assert parse_hello(b"SXNE\x00\x01\x00\x00" + SOLE + b"rest") == (b"E", 256, Lane())
    assert parse_hello(b"XYZP\x10\x00\x00\x00" + SOLE) is None  # not our magic
    assert parse_hello(b"SXNQ\x10\x00\x00\x00" + SOLE) is None  # no such role
    assert parse_hello(b"SXNP\x00\x00\x00\x00" + SOLE) is None  # frames of no length
    assert parse_hello(b"SXNP\x10\x00\x00\x00\x00\x00\x00\x00") is None  # no lanes
    assert parse_hello(b"SXNP\x10\x00\x00\x00\x02\x00\x02\x00") is None  # lane 2 of 2


def test_a_frame_starts_with_its_length():
    assert frame_prefix(256) == b"\x00\x01\x00\x00"
    assert frame_prefix(28) == b"\x1c\x00\x00\x00"


def test_only_whole_frames_are_forwarded():
    assert whole_frames(10, 4) == 8
    assert whole_frames(12, 4) == 12
    assert whole_frames(3, 4) == 0
