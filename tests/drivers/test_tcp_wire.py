"""The relay's wire format on bytes alone: hello `SXN` + role + u32 LE frame length,
frames a u32 LE length then the message (drivers/tcp/wire.py's docstring)."""

from __future__ import annotations

from sixnines.drivers.tcp.wire import (
    ECHO,
    PUBLISH,
    SUBSCRIBE,
    frame_prefix,
    hello,
    parse_hello,
    whole_frames,
)


def test_a_hello_is_magic_role_and_little_endian_length():
    assert hello(PUBLISH, 260) == b"SXNP\x04\x01\x00\x00"
    assert hello(SUBSCRIBE, 68) == b"SXNS\x44\x00\x00\x00"
    assert hello(ECHO, 1 << 24) == b"SXNE\x00\x00\x00\x01"


def test_a_hello_is_read_back_and_anything_else_refused():
    assert parse_hello(b"SXNS\x10\x00\x00\x00") == (b"S", 16)
    assert parse_hello(b"SXNE\x00\x01\x00\x00rest") == (b"E", 256)
    assert parse_hello(b"XYZP\x10\x00\x00\x00") is None  # not our magic
    assert parse_hello(b"SXNQ\x10\x00\x00\x00") is None  # no such role
    assert parse_hello(b"SXNP\x00\x00\x00\x00") is None  # frames of no length


def test_a_frame_starts_with_its_length():
    assert frame_prefix(256) == b"\x00\x01\x00\x00"
    assert frame_prefix(28) == b"\x1c\x00\x00\x00"


def test_only_whole_frames_are_forwarded():
    assert whole_frames(10, 4) == 8
    assert whole_frames(12, 4) == 12
    assert whole_frames(3, 4) == 0
