"""The sixnines relay's wire format, shared by the tcp driver and the relay itself.

Every connection opens with an 8-byte hello, `b"SXN"`, a role byte and the frame length
(u32 LE): P publishes, S subscribes, E asks for an echo. The relay answers one byte, `K`,
once the connection is registered. Frames are a u32 LE length followed by the message.
"""

from __future__ import annotations

import struct

MAGIC = b"SXN"
HELLO = struct.Struct("<3scI")
ACK = b"K"
PUBLISH, SUBSCRIBE, ECHO = b"P", b"S", b"E"
ROLES = (PUBLISH, SUBSCRIBE, ECHO)
LENGTH = struct.Struct("<I")


def hello(role: bytes, stride: int) -> bytes:
    """A connection's first bytes: its role and the length of each of its frames."""
    return HELLO.pack(MAGIC, role, stride)


def parse_hello(data: bytes | bytearray) -> tuple[bytes, int] | None:
    """(role, frame length) of a hello at the start of `data`; None when it is not one."""
    magic, role, stride = HELLO.unpack_from(data)
    if magic != MAGIC or role not in ROLES or stride == 0:
        return None
    return role, stride


def frame_prefix(message_size: int) -> bytes:
    """What precedes every message on the wire: its length."""
    return LENGTH.pack(message_size)


def whole_frames(length: int, stride: int) -> int:
    """How many of `length` bytes are whole frames (the rest waits for more)."""
    return length - length % stride
