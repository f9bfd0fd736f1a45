"""The sixnines relay's wire format, shared by the tcp driver and the relay itself.

Every connection opens with a 12-byte hello, `b"SXN"`, a role byte, the frame length (u32
LE) and the connection's lane, its index and count (u16 LE each): P publishes, S
subscribes, E asks for an echo (whose lane is always the sole one, 0 of 1). The relay
answers one byte, `K`, once the connection is registered. Frames are a u32 LE length
followed by the message.

The lane is in the hello, not in the frames, so routing is decided once per connection
and the relay forwards bytes without looking at them: a publisher's frames go to the
subscribers that said the same lane (index *and* count, as `Lane.name` gives one lane of
one count a name of its own).
"""

from __future__ import annotations

import struct

from sixnines.drivers.base import SOLE_LANE, Lane

MAGIC = b"SXN"
HELLO = struct.Struct("<3scIHH")
ACK = b"K"
PUBLISH, SUBSCRIBE, ECHO = b"P", b"S", b"E"
ROLES = (PUBLISH, SUBSCRIBE, ECHO)
LENGTH = struct.Struct("<I")
#: Most lanes a hello can carry (its count is a u16).
MAX_LANES = 0xFFFF
#: Set in a hello's frame length when frames vary in length (up to the rest of it): the
#: relay then cuts a publisher's bytes at each frame's own length word.
VARIABLE = 1 << 31


def hello(role: bytes, stride: int, lane: Lane = SOLE_LANE) -> bytes:
    """A connection's first bytes: its role, the length of each of its frames, its lane."""
    return HELLO.pack(MAGIC, role, stride, lane.index, lane.count)


def parse_hello(data: bytes | bytearray) -> tuple[bytes, int, Lane] | None:
    """(role, frame length, lane) of a hello at the start of `data`; None when it is not
    one (a lane outside its count included). The length keeps its `VARIABLE` bit."""
    magic, role, stride, index, count = HELLO.unpack_from(data)
    if magic != MAGIC or role not in ROLES or stride & ~VARIABLE == 0 \
            or not 0 <= index < count:
        return None
    return role, stride, Lane(index, count)


def frame_prefix(message_size: int) -> bytes:
    """What precedes every message on the wire: its length."""
    return LENGTH.pack(message_size)


def whole_frames(length: int, stride: int) -> int:
    """How many of `length` bytes are whole frames (the rest waits for more)."""
    return length - length % stride


def whole_varying_frames(data: bytes) -> int:
    """How many bytes at the start of `data` are whole frames, each as long as its
    length word says (the rest waits for more)."""
    at, end = 0, len(data)
    unpack = LENGTH.unpack_from
    while at + LENGTH.size <= end:
        following = at + LENGTH.size + unpack(data, at)[0]
        if following > end:
            break
        at = following
    return at
