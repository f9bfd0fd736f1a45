"""The hub's wire format: a hello, then frames of a 4-byte length and the message.

The hello names the connection's lane (sixnines.drivers.base.Lane): the hub relays a
publisher's frames to the subscribers on the same lane only, so a consumer's connections,
one per lane, divide the messages between them."""

import struct

from sixnines.drivers.base import Lane

# magic, role, message size, lane index, lane count, password length (+ password)
HELLO = struct.Struct("<4scIHHH")
MAGIC = b"HUB2"  # HUB1's hello had no lane
PUBLISH, SUBSCRIBE, ECHO = b"P", b"S", b"E"
LENGTH = struct.Struct("<I")
WELCOME, REFUSED = b"+", b"!"


def hello(role: bytes, message_size: int, lane: Lane, secret: bytes) -> bytes:
    """What a connection sends first."""
    return HELLO.pack(MAGIC, role, message_size, lane.index, lane.count, len(secret)) + secret
